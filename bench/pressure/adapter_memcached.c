/*
 * adapter_memcached.c - memcached 1.6 under the pressure benchmark (spec 000
 * §8), over the meta text protocol.
 *
 * One pr_conn is one blocking TCP connection (netio.c) and is used by one
 * thread. put is `ms <key> <len> T0` (no expiry) and must be answered `HD`;
 * get is `mg <key> v`, answered `VA <len> ...` plus the value, or `EN` on a
 * miss. The whole value (and its CRLF) is received into the connection's own
 * buffer, which grows to the largest value seen: that is the HOLDER point;
 * BYTES then copies it into the caller's buffer and reads its first and last
 * bytes. memcached does not say per get whether the value came from RAM or
 * from extstore, so every hit is PR_SRC_UNKNOWN and the coordinator splits
 * the window's hits with window_ssd_hits(), which reads the server's stats.
 *
 * Every length the server sends is checked against MC_VALUE_MAX before any
 * buffer is sized from it, and every reply line is bounded. A reply that
 * does not parse leaves the stream out of sync, so the connection is marked
 * broken and every later call on it fails; a well-formed error reply
 * (SERVER_ERROR out of memory, NS, ...) is returned as an error and the
 * connection stays usable.
 */
#include "adapter.h"
#include "netio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MC_CONNECT_MS 5000
#define MC_IO_MS 30000
#define MC_KEY_MAX 250            /* memcached's KEY_MAX_LENGTH */
#define MC_VALUE_MAX (16u << 20)  /* the largest value the benchmark uses */
#define MC_LINE_MAX 1024          /* reply lines: VA/HD/EN, errors, STAT lines */
#define MC_READER_CAP (64u << 10)
#define MC_STATS_LINES_MAX 10000  /* a stats reply that never ends is an error */

/* The adapter's connection; handed out as an opaque pr_conn. */
typedef struct mc_conn {
    int fd;
    int broken;     /* the stream lost sync: every later call fails */
    netio_reader rd;
    netio_buf val;  /* the last value plus its CRLF; grows, never shrinks */
    volatile uint8_t sink; /* BYTES mode reads land here so they are kept */
} mc_conn;

static mc_conn *mc_of(pr_conn *c)
{
    return (mc_conn *)c;
}

static pr_conn *mc_connect(const char *addr, char *err, size_t errlen)
{
    mc_conn *c = calloc(1, sizeof *c);
    if (!c) {
        netio_errf(err, errlen, "memcached: out of memory");
        return NULL;
    }
    c->fd = netio_connect(addr, MC_CONNECT_MS, MC_IO_MS, err, errlen);
    if (c->fd < 0)
        goto fail;
    if (netio_reader_init(&c->rd, c->fd, MC_READER_CAP) < 0) {
        netio_errf(err, errlen, "memcached: out of memory");
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

static void mc_close(pr_conn *pc)
{
    mc_conn *c = mc_of(pc);
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    netio_reader_free(&c->rd);
    netio_buf_free(&c->val);
    free(c);
}

/* memcached keys: 1..250 printable bytes, no space or control character
 * (anything else would split or inject a command). */
static int key_ok(const char *key, size_t klen, char *err, size_t errlen)
{
    if (!key || klen == 0 || klen > MC_KEY_MAX) {
        netio_errf(err, errlen, "memcached: key length %zu not in 1..%d", klen, MC_KEY_MAX);
        return 0;
    }
    for (size_t i = 0; i < klen; i++) {
        unsigned char ch = (unsigned char)key[i];
        if (ch <= ' ' || ch >= 0x7f) {
            netio_errf(err, errlen, "memcached: key byte %zu (0x%02x) not printable ASCII", i,
                       ch);
            return 0;
        }
    }
    return 1;
}

/* Marks c broken and reports an I/O or protocol failure (rc < 0). */
static int io_fail(mc_conn *c, int rc, const char *what, char *err, size_t errlen)
{
    c->broken = 1;
    netio_errf(err, errlen, "memcached: %s: %s", what, strerror(-rc));
    return -1;
}

static int broken_fail(char *err, size_t errlen)
{
    netio_errf(err, errlen, "memcached: connection unusable after an earlier error");
    return -1;
}

/* Parses a decimal length: digits only, no sign, at most max. Sets *end to
 * the first byte after the digits. 0 or -1. */
static int parse_len(const char *s, size_t max, size_t *out, const char **end)
{
    size_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        size_t d = (size_t)(*p - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    *end = p;
    return 0;
}

/* True for the replies after which memcached has consumed the whole
 * request, so the stream is still in sync. */
static int in_sync_error(const char *line)
{
    return strncmp(line, "SERVER_ERROR", 12) == 0 || strcmp(line, "NS") == 0 ||
           strcmp(line, "EX") == 0 || strcmp(line, "NF") == 0;
}

static int mc_put(pr_conn *pc, const char *key, size_t klen, const void *val, size_t len,
                  char *err, size_t errlen)
{
    mc_conn *c = mc_of(pc);
    if (c->broken)
        return broken_fail(err, errlen);
    if (!key_ok(key, klen, err, errlen))
        return -1;
    if (len > MC_VALUE_MAX || (len && !val)) {
        netio_errf(err, errlen, "memcached: value of %zu bytes refused (max %u)", len,
                   MC_VALUE_MAX);
        return -1;
    }
    char hdr[MC_KEY_MAX + 64];
    int hlen = snprintf(hdr, sizeof hdr, "ms %.*s %zu T0\r\n", (int)klen, key, len);
    struct iovec iov[3] = {
        {.iov_base = hdr, .iov_len = (size_t)hlen},
        {.iov_base = (void *)val, .iov_len = len},
        {.iov_base = "\r\n", .iov_len = 2},
    };
    int rc = netio_sendv(c->fd, iov, 3);
    if (rc < 0)
        return io_fail(c, rc, "send ms", err, errlen);
    char *line;
    ssize_t n = netio_read_line(&c->rd, MC_LINE_MAX, &line);
    if (n < 0)
        return io_fail(c, (int)n, "read ms reply", err, errlen);
    if (strcmp(line, "HD") == 0)
        return 0;
    if (!in_sync_error(line))
        c->broken = 1;
    netio_errf(err, errlen, "memcached: ms %.*s: %s", (int)klen, key, line);
    return -1;
}

/* "mg KEY" without flags: HD when stored (RAM or extstore), EN when not;
 * no value moves and no extstore read happens. */
static int mc_resident(pr_conn *pc, const char *key, size_t klen, char *err, size_t errlen)
{
    mc_conn *c = mc_of(pc);
    if (c->broken)
        return broken_fail(err, errlen);
    if (!key_ok(key, klen, err, errlen))
        return -1;
    char req[MC_KEY_MAX + 16];
    int rlen = snprintf(req, sizeof req, "mg %.*s\r\n", (int)klen, key);
    int rc = netio_send(c->fd, req, (size_t)rlen);
    if (rc < 0)
        return io_fail(c, rc, "send mg", err, errlen);
    char *line;
    ssize_t n = netio_read_line(&c->rd, MC_LINE_MAX, &line);
    if (n < 0)
        return io_fail(c, (int)n, "read mg reply", err, errlen);
    if (strcmp(line, "HD") == 0)
        return 1;
    if (strcmp(line, "EN") == 0)
        return 0;
    if (!in_sync_error(line))
        c->broken = 1;
    netio_errf(err, errlen, "memcached: mg %.*s: unexpected reply '%s'", (int)klen, key, line);
    return -1;
}

static int mc_get(pr_conn *pc, const char *key, size_t klen, int mode, uint8_t *out, size_t cap,
                  size_t *len, int *source, char *err, size_t errlen)
{
    mc_conn *c = mc_of(pc);
    if (c->broken)
        return broken_fail(err, errlen);
    if (mode != PR_MODE_HOLDER && mode != PR_MODE_BYTES) {
        netio_errf(err, errlen, "memcached: unknown output mode %d", mode);
        return -1;
    }
    if (!key_ok(key, klen, err, errlen))
        return -1;
    char req[MC_KEY_MAX + 16];
    int rlen = snprintf(req, sizeof req, "mg %.*s v\r\n", (int)klen, key);
    int rc = netio_send(c->fd, req, (size_t)rlen);
    if (rc < 0)
        return io_fail(c, rc, "send mg", err, errlen);
    char *line;
    ssize_t n = netio_read_line(&c->rd, MC_LINE_MAX, &line);
    if (n < 0)
        return io_fail(c, (int)n, "read mg reply", err, errlen);
    if (strcmp(line, "EN") == 0)
        return 0;
    size_t vlen;
    const char *end;
    if (strncmp(line, "VA ", 3) != 0 || parse_len(line + 3, MC_VALUE_MAX, &vlen, &end) < 0 ||
        (*end != '\0' && *end != ' ')) {
        if (in_sync_error(line)) {
            netio_errf(err, errlen, "memcached: mg %.*s: %s", (int)klen, key, line);
        } else {
            c->broken = 1;
            netio_errf(err, errlen, "memcached: mg %.*s: unexpected reply '%s'", (int)klen,
                       key, line);
        }
        return -1;
    }
    rc = netio_read_exact(&c->rd, &c->val, vlen + 2, (size_t)MC_VALUE_MAX + 2);
    if (rc < 0)
        return io_fail(c, rc, "read value", err, errlen);
    if (c->val.p[vlen] != '\r' || c->val.p[vlen + 1] != '\n')
        return io_fail(c, -EPROTO, "value not followed by CRLF", err, errlen);
    /* HOLDER point: the whole value is in c->val. */
    if (mode == PR_MODE_BYTES) {
        if (vlen > cap || (vlen && !out)) {
            netio_errf(err, errlen, "memcached: value of %zu bytes does not fit out (%zu)",
                       vlen, cap);
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

/*
 * The counter: memcached 1.6.18's `stats` has get_extstore, bumped when a
 * get finds an item whose value lives in extstore and a read is issued
 * (memcached's own comment calls it "a good gauge on how often we request
 * out to flash", not a hit count). Such a read can still end as a miss (the
 * page was evicted or compacted away: miss_from_extstore, which also counts
 * badcrc_from_extstore) or be abandoned before it was dispatched
 * (get_aborted_extstore); the client sees no hit for those. The coordinator takes the window's delta as the SSD hits
 * and requires it to be at most the client's hits, so the count reported is
 * the reads that returned a value:
 *     get_extstore - miss_from_extstore - get_aborted_extstore.
 * (extstore_objects_read counts IO-level object reads, including compaction
 * and recache traffic, so it is not a per-get count.) A memcached started
 * without ext_path prints none of the extstore stats; it has no SSD tier and
 * the count is 0.
 */
static int mc_window_ssd_hits(const char *addr, uint64_t *out, char *err, size_t errlen)
{
    static const char *const names[] = {"get_extstore", "miss_from_extstore",
                                        "get_aborted_extstore"};
    uint64_t vals[3] = {0, 0, 0};
    int found[3] = {0, 0, 0};
    int ext_stats = 0; /* saw any extstore_* stat: extstore is enabled */
    int ret = -1;
    pr_conn *pc = mc_connect(addr, err, errlen);
    if (!pc)
        return -1;
    mc_conn *c = mc_of(pc);
    int rc = netio_send(c->fd, "stats\r\n", 7);
    if (rc < 0) {
        io_fail(c, rc, "send stats", err, errlen);
        goto out;
    }
    for (int lines = 0;; lines++) {
        char *line;
        ssize_t n = netio_read_line(&c->rd, MC_LINE_MAX, &line);
        if (n < 0) {
            io_fail(c, (int)n, "read stats", err, errlen);
            goto out;
        }
        if (strcmp(line, "END") == 0)
            break;
        if (strncmp(line, "STAT ", 5) != 0 || lines >= MC_STATS_LINES_MAX) {
            netio_errf(err, errlen, "memcached: stats: unexpected reply '%s'", line);
            goto out;
        }
        if (strncmp(line + 5, "extstore_", 9) == 0)
            ext_stats = 1;
        for (int i = 0; i < 3; i++) {
            size_t nl = strlen(names[i]);
            if (strncmp(line + 5, names[i], nl) != 0 || line[5 + nl] != ' ')
                continue;
            const char *v = line + 5 + nl + 1, *end;
            size_t x;
            if (parse_len(v, SIZE_MAX, &x, &end) < 0 || *end != '\0') {
                netio_errf(err, errlen, "memcached: stats: bad value in '%s'", line);
                goto out;
            }
            vals[i] = x;
            found[i] = 1;
        }
    }
    if (!found[0] && !ext_stats) {
        *out = 0; /* started without ext_path: no SSD tier, every hit is DRAM */
        ret = 0;
        goto out;
    }
    if (!found[0]) {
        netio_errf(err, errlen, "memcached: extstore is on but stats has no get_extstore");
        goto out;
    }
    uint64_t lost = vals[1] + vals[2];
    /* A read and its miss are counted by the same worker thread, read issued
     * first, so lost <= get_extstore; the clamp only guards that invariant. */
    *out = vals[0] > lost ? vals[0] - lost : 0;
    ret = 0;
out:
    mc_close(pc);
    return ret;
}

const pr_adapter pr_adapter_memcached = {
    .name = "memcached",
    .connect = mc_connect,
    .close = mc_close,
    .put = mc_put,
    .get = mc_get,
    .resident = mc_resident,
    .window_ssd_hits = mc_window_ssd_hits,
};
