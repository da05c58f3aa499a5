/*
 * adapter_redis.c - redis 7 under the pressure benchmark (spec 000 §8), over
 * RESP2.
 *
 * One pr_conn is one blocking TCP connection (netio.c) and is used by one
 * thread. put sends SET as an array of bulk strings and must be answered
 * `+OK`; get sends GET and is answered with a bulk string `$<n>` plus the
 * value, or `$-1` on a miss. As for memcached, the whole value (and its CRLF)
 * is received into the connection's own buffer, which grows to the largest
 * value seen: that is the HOLDER point; BYTES then copies it into the
 * caller's buffer and reads its first and last bytes. redis keeps values in
 * DRAM only, so hits are PR_SRC_UNKNOWN, window_ssd_hits is NULL, and the
 * coordinator counts every redis hit as a DRAM hit.
 *
 * Every length the server sends is checked against RD_VALUE_MAX before any
 * buffer is sized from it, and every reply line is bounded. An error reply
 * (`-ERR ...`, `-OOM ...`) is returned as an error and leaves the connection
 * usable; a reply that does not parse leaves the stream out of sync, so the
 * connection is marked broken and every later call on it fails.
 */
#include "adapter.h"
#include "netio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RD_CONNECT_MS 5000
#define RD_IO_MS 30000
#define RD_VALUE_MAX (16u << 20) /* the largest value the benchmark uses */
#define RD_LINE_MAX 4096         /* status, error and bulk-length lines */
#define RD_READER_CAP (64u << 10)

/* The adapter's connection; handed out as an opaque pr_conn. */
typedef struct rd_conn {
    int fd;
    int broken;     /* the stream lost sync: every later call fails */
    netio_reader rd;
    netio_buf val;  /* the last value plus its CRLF; grows, never shrinks */
    volatile uint8_t sink; /* BYTES mode reads land here so they are kept */
} rd_conn;

static rd_conn *rd_of(pr_conn *c)
{
    return (rd_conn *)c;
}

static pr_conn *rd_connect(const char *addr, char *err, size_t errlen)
{
    rd_conn *c = calloc(1, sizeof *c);
    if (!c) {
        netio_errf(err, errlen, "redis: out of memory");
        return NULL;
    }
    c->fd = netio_connect(addr, RD_CONNECT_MS, RD_IO_MS, err, errlen);
    if (c->fd < 0)
        goto fail;
    if (netio_reader_init(&c->rd, c->fd, RD_READER_CAP) < 0) {
        netio_errf(err, errlen, "redis: out of memory");
        goto fail;
    }
    return (pr_conn *)c;
fail:
    if (c->fd >= 0)
        close(c->fd);
    netio_reader_free(&c->rd);
    free(c);
    return NULL;
}

static void rd_close(pr_conn *pc)
{
    rd_conn *c = rd_of(pc);
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    netio_reader_free(&c->rd);
    netio_buf_free(&c->val);
    free(c);
}

/* Marks c broken and reports an I/O or protocol failure (rc < 0). */
static int io_fail(rd_conn *c, int rc, const char *what, char *err, size_t errlen)
{
    c->broken = 1;
    netio_errf(err, errlen, "redis: %s: %s", what, strerror(-rc));
    return -1;
}

static int broken_fail(char *err, size_t errlen)
{
    netio_errf(err, errlen, "redis: connection unusable after an earlier error");
    return -1;
}

/* Parses a decimal length: digits only, no sign, at most max, and nothing
 * after it. 0 or -1. */
static int parse_len(const char *s, size_t max, size_t *out)
{
    size_t v = 0;
    if (*s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        size_t d = (size_t)(*s - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (*s != '\0')
        return -1;
    *out = v;
    return 0;
}

/* Reports an unexpected reply line: an error reply keeps the stream in
 * sync, anything else breaks it. */
static int reply_fail(rd_conn *c, const char *cmd, const char *line, char *err, size_t errlen)
{
    if (line[0] == '-') {
        netio_errf(err, errlen, "redis: %s: %s", cmd, line + 1);
    } else {
        c->broken = 1;
        netio_errf(err, errlen, "redis: %s: unexpected reply '%s'", cmd, line);
    }
    return -1;
}

static int rd_put(pr_conn *pc, const char *key, size_t klen, const void *val, size_t len,
                  char *err, size_t errlen)
{
    rd_conn *c = rd_of(pc);
    if (c->broken)
        return broken_fail(err, errlen);
    if ((klen && !key) || (len && !val) || len > RD_VALUE_MAX) {
        netio_errf(err, errlen, "redis: bad put (key %zu bytes, value %zu bytes, max %u)", klen,
                   len, RD_VALUE_MAX);
        return -1;
    }
    char pre[64], mid[32];
    int plen = snprintf(pre, sizeof pre, "*3\r\n$3\r\nSET\r\n$%zu\r\n", klen);
    int mlen = snprintf(mid, sizeof mid, "\r\n$%zu\r\n", len);
    struct iovec iov[5] = {
        {.iov_base = pre, .iov_len = (size_t)plen},
        {.iov_base = (void *)key, .iov_len = klen},
        {.iov_base = mid, .iov_len = (size_t)mlen},
        {.iov_base = (void *)val, .iov_len = len},
        {.iov_base = "\r\n", .iov_len = 2},
    };
    int rc = netio_sendv(c->fd, iov, 5);
    if (rc < 0)
        return io_fail(c, rc, "send SET", err, errlen);
    char *line;
    ssize_t n = netio_read_line(&c->rd, RD_LINE_MAX, &line);
    if (n < 0)
        return io_fail(c, (int)n, "read SET reply", err, errlen);
    if (strcmp(line, "+OK") == 0)
        return 0;
    return reply_fail(c, "SET", line, err, errlen);
}

/* EXISTS KEY: ":1" when stored, ":0" when not. */
static int rd_resident(pr_conn *pc, const char *key, size_t klen, char *err, size_t errlen)
{
    rd_conn *c = rd_of(pc);
    if (c->broken)
        return broken_fail(err, errlen);
    if (klen && !key) {
        netio_errf(err, errlen, "redis: NULL key");
        return -1;
    }
    char pre[64];
    int plen = snprintf(pre, sizeof pre, "*2\r\n$6\r\nEXISTS\r\n$%zu\r\n", klen);
    struct iovec iov[3] = {
        {.iov_base = pre, .iov_len = (size_t)plen},
        {.iov_base = (void *)key, .iov_len = klen},
        {.iov_base = "\r\n", .iov_len = 2},
    };
    int rc = netio_sendv(c->fd, iov, 3);
    if (rc < 0)
        return io_fail(c, rc, "send EXISTS", err, errlen);
    char *line;
    ssize_t n = netio_read_line(&c->rd, RD_LINE_MAX, &line);
    if (n < 0)
        return io_fail(c, (int)n, "read EXISTS reply", err, errlen);
    if (strcmp(line, ":1") == 0)
        return 1;
    if (strcmp(line, ":0") == 0)
        return 0;
    return reply_fail(c, "EXISTS", line, err, errlen);
}

static int rd_get(pr_conn *pc, const char *key, size_t klen, int mode, uint8_t *out, size_t cap,
                  size_t *len, int *source, char *err, size_t errlen)
{
    rd_conn *c = rd_of(pc);
    if (c->broken)
        return broken_fail(err, errlen);
    if (mode != PR_MODE_HOLDER && mode != PR_MODE_BYTES) {
        netio_errf(err, errlen, "redis: unknown output mode %d", mode);
        return -1;
    }
    if (klen && !key) {
        netio_errf(err, errlen, "redis: NULL key");
        return -1;
    }
    char pre[64];
    int plen = snprintf(pre, sizeof pre, "*2\r\n$3\r\nGET\r\n$%zu\r\n", klen);
    struct iovec iov[3] = {
        {.iov_base = pre, .iov_len = (size_t)plen},
        {.iov_base = (void *)key, .iov_len = klen},
        {.iov_base = "\r\n", .iov_len = 2},
    };
    int rc = netio_sendv(c->fd, iov, 3);
    if (rc < 0)
        return io_fail(c, rc, "send GET", err, errlen);
    char *line;
    ssize_t n = netio_read_line(&c->rd, RD_LINE_MAX, &line);
    if (n < 0)
        return io_fail(c, (int)n, "read GET reply", err, errlen);
    if (strcmp(line, "$-1") == 0)
        return 0;
    size_t vlen;
    if (line[0] != '$' || parse_len(line + 1, RD_VALUE_MAX, &vlen) < 0)
        return reply_fail(c, "GET", line, err, errlen);
    rc = netio_read_exact(&c->rd, &c->val, vlen + 2, (size_t)RD_VALUE_MAX + 2);
    if (rc < 0)
        return io_fail(c, rc, "read value", err, errlen);
    if (c->val.p[vlen] != '\r' || c->val.p[vlen + 1] != '\n')
        return io_fail(c, -EPROTO, "value not followed by CRLF", err, errlen);
    /* HOLDER point: the whole value is in c->val. */
    if (mode == PR_MODE_BYTES) {
        if (vlen > cap || (vlen && !out)) {
            netio_errf(err, errlen, "redis: value of %zu bytes does not fit out (%zu)", vlen,
                       cap);
            return -1;
        }
        if (vlen) {
            memcpy(out, c->val.p, vlen);
            c->sink = out[0];
            c->sink = out[vlen - 1];
        }
    }
    *len = vlen;
    *source = PR_SRC_UNKNOWN;
    return 1;
}

const pr_adapter pr_adapter_redis = {
    .name = "redis",
    .connect = rd_connect,
    .close = rd_close,
    .put = rd_put,
    .get = rd_get,
    .resident = rd_resident,
    .window_ssd_hits = NULL,
};
