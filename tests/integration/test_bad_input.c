/*
 * test_bad_input.c - hostile bytes on both listening sockets of a real
 * cluster: the owner's Unix socket and the master's TCP port get random
 * garbage, truncated frames, bodies declared over the limit, unknown flags,
 * response frames, unknown types and malformed bodies, and requests from
 * peers that never introduced themselves. Each offending connection must be
 * dropped (or answered with an error status, never served), and after every
 * abuse an ordinary client must still put, get and delete, while a client
 * connected from the start keeps working. Finally both processes must exit
 * cleanly.
 *
 * The frames are built by hand from raw bytes (a tiny protobuf writer), so
 * the test checks the wire as a stranger sees it; net/frame.h and net/msg.h
 * are included only for their constants.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "net/frame.h"
#include "net/msg.h"
#include "sock_probe.h"
#include "testlib.h"

#define WAIT_MS 5000              /* how long a server gets to drop a bad connection */
/* The owner's limit for external connections: FX_BATCH_MAX keys of 4 KiB and framing. */
#define EXT_MAX_BODY ((uint32_t)FX_BATCH_MAX * (4096u + 16u) + (64u * 1024u))
#define EXT_HELLO_MAX_BODY (64u * 1024u) /* ... until their ExternalHello */
#define UNREGISTERED_MAX_BODY (64u * 1024u) /* the master's, until Register */
#define SEG_SIZE (64ull << 20)

static test_cluster tc;
static fx_client *veteran; /* connected before any abuse, used after each */
static int service_round;

/* ---- time, frames, protobuf by hand ---------------------------------------- */

/* Raw headers are written with the codec's own encoder: these tests abuse the
 * values, not the byte order. */
static void hdr_put(uint8_t *p, uint32_t len, uint16_t type, uint16_t flags, uint64_t req_id)
{
    frame_hdr h = {.len = len, .type = type, .flags = flags, .req_id = req_id};
    frame_hdr_encode(&h, p);
}

/* Header + body into out (which has room); returns the frame's length. */
static size_t frame(uint8_t *out, uint16_t type, uint16_t flags, uint64_t req_id,
                    const uint8_t *body, size_t blen)
{
    hdr_put(out, (uint32_t)blen, type, flags, req_id);
    if (blen)
        memcpy(out + FRAME_HDR_LEN, body, blen);
    return FRAME_HDR_LEN + blen;
}

static size_t pb_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static size_t pb_uint(uint8_t *p, unsigned field, uint64_t v)
{
    size_t n = pb_varint(p, (uint64_t)field << 3);
    return n + pb_varint(p + n, v);
}

static size_t pb_bytes(uint8_t *p, unsigned field, const void *data, size_t len)
{
    size_t n = pb_varint(p, (uint64_t)field << 3 | 2);
    n += pb_varint(p + n, len);
    memcpy(p + n, data, len);
    return n + len;
}

static bool pb_read_varint(const uint8_t *b, size_t n, size_t *pos, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *pos < n && shift < 64; shift += 7) {
        uint8_t c = b[(*pos)++];
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return true;
    }
    return false;
}

/* Finds top-level field `field` of a body. Varint fields fill *v; length-
 * delimited ones fill *data and *len. Returns true when found. */
static bool pb_find(const uint8_t *b, size_t n, unsigned field, uint64_t *v, const uint8_t **data,
                    size_t *len)
{
    size_t pos = 0;
    bool found = false;
    while (pos < n) {
        uint64_t tag, x;
        if (!pb_read_varint(b, n, &pos, &tag))
            return false;
        switch (tag & 7) {
        case 0:
            if (!pb_read_varint(b, n, &pos, &x))
                return false;
            if ((tag >> 3) == field && v) {
                *v = x;
                found = true;
            }
            break;
        case 2:
            if (!pb_read_varint(b, n, &pos, &x) || x > n - pos)
                return false;
            if ((tag >> 3) == field && data) {
                *data = b + pos;
                *len = (size_t)x;
                found = true;
            }
            pos += (size_t)x;
            break;
        case 1:
            pos += 8;
            break;
        case 5:
            pos += 4;
            break;
        default:
            return false;
        }
    }
    return found && pos == n;
}

/* ---- raw sockets ------------------------------------------------------------- */

static int wait_io(int fd, short ev, uint64_t deadline)
{
    uint64_t t = test_now_ms();
    if (t >= deadline)
        return -ETIMEDOUT;
    struct pollfd p = {.fd = fd, .events = ev};
    int r = poll(&p, 1, (int)(deadline - t));
    if (r < 0)
        return errno == EINTR ? 0 : -errno;
    return r == 0 ? -ETIMEDOUT : 0;
}

/* Sends all of buf. Returns 0, -EPIPE / -ECONNRESET when the peer closed
 * (expected when it drops us mid-way), -ETIMEDOUT, or another -errno. */
static int send_all(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    uint64_t deadline = test_now_ms() + WAIT_MS;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN)
            return -errno;
        int r = wait_io(fd, POLLOUT, deadline);
        if (r < 0)
            return r;
    }
    return 0;
}

/* One non-blocking receive that also takes (and closes) descriptors passed
 * with SCM_RIGHTS. Returns bytes, 0 at EOF, or -errno. */
static ssize_t recv_fds(int fd, void *buf, size_t n, int *nfds)
{
    struct iovec iov = {.iov_base = buf, .iov_len = n};
    union {
        char b[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                        .msg_controllen = sizeof ctl.b};
    ssize_t r = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (r < 0)
        return -errno;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int passed;
            memcpy(&passed, CMSG_DATA(cm) + i * sizeof(int), sizeof passed);
            close(passed);
            if (nfds)
                (*nfds)++;
        }
    }
    return r;
}

/* Reads and discards until the peer closes. Returns true when it closed (EOF
 * or ECONNRESET) within timeout_ms; *got counts the bytes that came first. */
static bool wait_closed(int fd, int timeout_ms, size_t *got)
{
    uint64_t deadline = test_now_ms() + (uint64_t)timeout_ms;
    uint8_t scratch[4096];
    *got = 0;
    for (;;) {
        ssize_t r = recv_fds(fd, scratch, sizeof scratch, NULL);
        if (r == 0 || r == -ECONNRESET)
            return true;
        if (r > 0) {
            *got += (size_t)r;
            continue;
        }
        if (r != -EAGAIN && r != -EINTR)
            return false;
        if (wait_io(fd, POLLIN, deadline) == -ETIMEDOUT)
            return false;
    }
}

/* True when, for ms milliseconds, the peer neither sends nor closes. */
static bool stays_quiet(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    return poll(&p, 1, ms) == 0;
}

static int read_exact(int fd, uint8_t *buf, size_t n, uint64_t deadline, int *nfds)
{
    size_t off = 0;
    while (off < n) {
        ssize_t r = recv_fds(fd, buf + off, n - off, nfds);
        if (r > 0) {
            off += (size_t)r;
            continue;
        }
        if (r == 0 || r == -ECONNRESET)
            return 0;
        if (r != -EAGAIN && r != -EINTR)
            return (int)r;
        int w = wait_io(fd, POLLIN, deadline);
        if (w < 0)
            return w;
    }
    return 1;
}

typedef struct rframe {
    uint32_t len;
    uint16_t type, flags;
    uint64_t req_id;
    uint8_t *body; /* malloc'd; free with rframe_free */
    int fds;       /* descriptors that rode along (already closed) */
} rframe;

static void rframe_free(rframe *f)
{
    free(f->body);
    f->body = NULL;
}

/* Reads one whole frame. Returns 1, 0 when the peer closed first, or -errno
 * (-ETIMEDOUT after WAIT_MS). */
static int read_frame(int fd, rframe *f)
{
    memset(f, 0, sizeof *f);
    uint64_t deadline = test_now_ms() + WAIT_MS;
    uint8_t h[FRAME_HDR_LEN];
    int r = read_exact(fd, h, sizeof h, deadline, &f->fds);
    if (r <= 0)
        return r;
    frame_hdr fh;
    frame_hdr_decode(h, &fh);
    f->len = fh.len;
    f->type = fh.type;
    f->flags = fh.flags;
    f->req_id = fh.req_id;
    if (f->len > FRAME_MAX_BODY)
        return -EMSGSIZE;
    f->body = malloc(f->len ? f->len : 1);
    if (!f->body)
        return -ENOMEM;
    r = read_exact(fd, f->body, f->len, deadline, &f->fds);
    if (r <= 0)
        rframe_free(f);
    return r;
}

/* The status field of a response body (0 when absent). */
static int32_t resp_status(const rframe *f)
{
    uint64_t v = 0;
    if (!pb_find(f->body, f->len, 1, &v, NULL, NULL))
        return 0;
    return (int32_t)(int64_t)v;
}

/* The detail field, copied into buf for messages. */
static const char *resp_detail(const rframe *f, char *buf, size_t cap)
{
    const uint8_t *d = NULL;
    size_t n = 0;
    buf[0] = 0;
    if (pb_find(f->body, f->len, 2, NULL, &d, &n))
        snprintf(buf, cap, "%.*s", (int)n, (const char *)d);
    return buf;
}

/* Sends one request and reads the frame that answers it. Returns as read_frame. */
static int call(int fd, uint16_t type, uint16_t flags, uint64_t req_id, const uint8_t *body,
                size_t blen, rframe *resp)
{
    uint8_t *buf = malloc(FRAME_HDR_LEN + blen);
    if (!buf)
        return -ENOMEM;
    size_t n = frame(buf, type, flags, req_id, body, blen);
    int r = send_all(fd, buf, n);
    free(buf);
    if (r < 0)
        return r;
    return read_frame(fd, resp);
}

/* ---- the service stays up ---------------------------------------------------- */

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
    unsigned long long s = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)test_rand(&s);
}

/* A fresh client can put, get and delete; the veteran client still can too. */
static void check_service(const char *after)
{
    int round = ++service_round;
    char key[128];
    int klen = snprintf(key, sizeof key, "svc-%d-%s", round, after);
    uint8_t val[3000], want[3000];
    fill(val, sizeof val, (unsigned)round);
    memcpy(want, val, sizeof val);

    int err = 0;
    uint64_t t0 = test_now_ms();
    fx_client *c = fx_connect(tc.socket, &err);
    CHECK(c != NULL, "after %s: fx_connect: %s %s", after, fx_strerror(err),
          fx_last_error_detail());
    if (c) {
        int r = fx_put(c, key, (size_t)klen, val, sizeof val);
        CHECK(r == 0, "after %s: put: %s %s", after, fx_strerror(r), fx_last_error_detail());
        fx_holder *h = NULL;
        r = fx_get(c, key, (size_t)klen, &h);
        CHECK(r == 0, "after %s: get: %s", after, fx_strerror(r));
        if (r == 0) {
            CHECK(fx_holder_len(h) == sizeof want &&
                      memcmp(fx_holder_data(h), want, sizeof want) == 0,
                  "after %s: the value came back different", after);
            fx_holder_release(h);
        }
        r = fx_delete(c, key, (size_t)klen);
        CHECK(r == 0, "after %s: delete: %s", after, fx_strerror(r));
        r = fx_get(c, key, (size_t)klen, &h);
        CHECK(r == FX_ENOTFOUND, "after %s: get after delete: %s", after, fx_strerror(r));
        if (r == 0)
            fx_holder_release(h);
        fx_close(c);
    }
    int r = fx_ping(veteran);
    CHECK(r == 0, "after %s: the veteran client's ping: %s", after, fx_strerror(r));
    r = fx_put(veteran, key, (size_t)klen, val, 100);
    CHECK(r == 0, "after %s: the veteran client's put: %s", after, fx_strerror(r));
    r = fx_delete(veteran, key, (size_t)klen);
    CHECK(r == 0, "after %s: the veteran client's delete: %s", after, fx_strerror(r));
    CHECK(test_now_ms() - t0 < 10000, "after %s: the round took %llu ms", after,
          (unsigned long long)(test_now_ms() - t0));
}

/* A body of exactly len bytes (len >= 16 Ki + 8, so that its padding's length
 * takes a varint of 3 bytes or more): an ExternalHello of version 1 when
 * hello, else empty, padded with unknown field 15. Returns len. */
static size_t padded_body(uint8_t *b, bool hello, size_t len)
{
    size_t n = hello ? pb_uint(b, 1, 1) : 0;
    size_t vlen = 3; /* of the padding's length: 3 bytes below 2 MiB, 4 up to 256 MiB */
    while (len - n - 1 - vlen >= (size_t)1 << (7 * vlen))
        vlen++;
    size_t pad = len - n - 1 - vlen; /* tag + length varint */
    n += pb_varint(b + n, 15u << 3 | 2);
    n += pb_varint(b + n, pad);
    memset(b + n, 0x5a, pad);
    return n + pad;
}

/* ---- one connection, one abuse -------------------------------------------- */

typedef int (*connect_fn)(const char *);

/* Sends bytes on a fresh connection and expects the server to drop it within
 * WAIT_MS without answering. */
static void expect_dropped(const char *who, connect_fn conn, const char *addr, const char *what,
                           const uint8_t *bytes, size_t n)
{
    int fd = conn(addr);
    CHECK(fd >= 0, "%s: %s: connect: %s", who, what, strerror(-fd));
    if (fd < 0)
        return;
    int s = send_all(fd, bytes, n);
    CHECK(s == 0 || s == -EPIPE || s == -ECONNRESET, "%s: %s: send: %s", who, what, strerror(-s));
    size_t got = 0;
    uint64_t t0 = test_now_ms();
    bool closed = wait_closed(fd, WAIT_MS, &got);
    CHECK(closed, "%s: %s: the connection was not closed within %d ms", who, what, WAIT_MS);
    CHECK(got == 0, "%s: %s: %zu bytes of response before the close", who, what, got);
    if (closed && test_now_ms() - t0 > 1000)
        printf("%s: %s: the close took %llu ms\n", who, what, (unsigned long long)(test_now_ms() - t0));
    close(fd);
    char after[160];
    snprintf(after, sizeof after, "%s-%s", who, what);
    for (char *p = after; *p; p++)
        if (*p == ' ')
            *p = '_';
    check_service(after);
}

/* Would a server with this max body accept the first header of buf? */
static bool header_acceptable(const uint8_t *buf, uint32_t max_body)
{
    frame_hdr h;
    frame_hdr_decode(buf, &h);
    return frame_hdr_check(&h, max_body) == 0;
}

/* The abuses both servers must survive: garbage, oversized, unknown flags,
 * response frames, unknown types and malformed bodies. `known` is a request
 * type the server handles, with a well-formed body in good/good_len. */
static void common_abuse(const char *who, connect_fn conn, const char *addr, uint32_t max_body,
                         uint16_t known, const uint8_t *good, size_t good_len)
{
    static uint8_t buf[FRAME_HDR_LEN + 8192];
    unsigned long long seed = 0xbad1bad2bad3ull ^ max_body;

    /* Random garbage (a header that happens to be acceptable is skipped: the
     * server would rightly wait for its body; with fixed seeds it is rare). */
    for (int i = 0; i < 3; i++) {
        size_t n = 64 + (size_t)(test_rand(&seed) % 4000);
        for (size_t j = 0; j < n; j++)
            buf[j] = (uint8_t)test_rand(&seed);
        if (header_acceptable(buf, max_body)) {
            printf("%s: garbage %d has an acceptable header; skipped\n", who, i);
            continue;
        }
        char what[32];
        snprintf(what, sizeof what, "garbage %d", i);
        expect_dropped(who, conn, addr, what, buf, n);
    }

    /* Declared lengths over the maximum: judged from the header alone. */
    hdr_put(buf, UINT32_MAX, known, 0, 1);
    expect_dropped(who, conn, addr, "length 0xffffffff", buf, FRAME_HDR_LEN);
    hdr_put(buf, max_body + 1, known, 0, 1);
    expect_dropped(who, conn, addr, "length max+1", buf, FRAME_HDR_LEN);
    if (max_body < (2u << 20)) {
        hdr_put(buf, 2u << 20, known, 0, 1);
        expect_dropped(who, conn, addr, "length 2 MiB", buf, FRAME_HDR_LEN);
    }
    /* ... also when some body follows. */
    hdr_put(buf, UINT32_MAX, known, 0, 1);
    memset(buf + FRAME_HDR_LEN, 0x41, 4096);
    expect_dropped(who, conn, addr, "length 0xffffffff with body", buf, FRAME_HDR_LEN + 4096);

    /* Unknown flag bits on an otherwise good request. */
    size_t n = frame(buf, known, 0x4, 2, good, good_len);
    expect_dropped(who, conn, addr, "flags 0x4", buf, n);
    n = frame(buf, known, 0x8000 | FRAME_RESPONSE, 2, good, good_len);
    expect_dropped(who, conn, addr, "flags 0x8001", buf, n);

    /* A response where a request belongs. */
    uint8_t resp_body[8];
    size_t rb = pb_uint(resp_body, 1, 0);
    n = frame(buf, known, FRAME_RESPONSE, 3, resp_body, rb);
    expect_dropped(who, conn, addr, "response frame", buf, n);

    /* Unknown types, with and without a body. */
    n = frame(buf, 1000, 0, 4, good, good_len);
    expect_dropped(who, conn, addr, "type 1000", buf, n);
    n = frame(buf, 0, 0, 4, NULL, 0);
    expect_dropped(who, conn, addr, "type 0", buf, n);
    n = frame(buf, 28, 0, 4, NULL, 0);
    expect_dropped(who, conn, addr, "type 28", buf, n);

    /* A known type with a body that is not protobuf: random bytes behind an
     * invalid tag (wire type 7), and a well-formed body cut short inside its
     * own frame (the length field says the frame is whole). */
    uint8_t junk[200];
    for (size_t j = 0; j < sizeof junk; j++)
        junk[j] = (uint8_t)test_rand(&seed);
    junk[0] = 0x0f;
    n = frame(buf, known, 0, 5, junk, sizeof junk);
    expect_dropped(who, conn, addr, "malformed body", buf, n);
    if (good_len > 1) {
        n = frame(buf, known, 0, 5, good, good_len - 1);
        expect_dropped(who, conn, addr, "body cut short", buf, n);
    }

    /* A valid frame split off mid-body, then the client leaves: nothing to
     * answer, and the server must be fine with a peer that leaves halfway. */
    n = frame(buf, known, 0, 6, good, good_len);
    int fd = conn(addr);
    CHECK(fd >= 0, "%s: connect for truncated frame", who);
    if (fd >= 0) {
        CHECK(send_all(fd, buf, n - 1) == 0, "%s: send truncated frame", who);
        CHECK(stays_quiet(fd, 200), "%s: a truncated frame must not be answered or dropped yet", who);
        /* Held open half-way, it must not block anyone else. */
        check_service("truncated-frame-held-open");
        close(fd);
    }
    /* A partial header held open, too. */
    fd = conn(addr);
    if (fd >= 0) {
        CHECK(send_all(fd, buf, 7) == 0, "%s: send partial header", who);
        check_service("partial-header-held-open");
        close(fd);
    }
    check_service("truncated-frame-closed");
}

/* ---- owner specifics ---------------------------------------------------------- */

static size_t hello_body(uint8_t *b, uint32_t version, uint64_t client_id)
{
    size_t n = pb_uint(b, 1, version);
    if (client_id)
        n += pb_uint(b + n, 2, client_id);
    return n;
}

static void owner_abuse(void)
{
    uint8_t hb[32];
    size_t hl = hello_body(hb, 1, 0);
    common_abuse("owner", probe_unix, tc.socket, EXT_HELLO_MAX_BODY, MSG_EXT_HELLO, hb, hl);

    uint8_t buf[256], body[128];
    /* Requests other than ExternalHello first: dropped unanswered. */
    size_t bl = pb_bytes(body, 1, "k", 1);
    bl += pb_uint(body + bl, 2, 10);
    size_t n = frame(buf, MSG_PUT_START, 0, 1, body, bl);
    expect_dropped("owner", probe_unix, tc.socket, "PutStart before hello", buf, n);
    n = frame(buf, MSG_EXT_PUT_START, 0, 1, body, bl);
    expect_dropped("owner", probe_unix, tc.socket, "ExternalPutStart before hello", buf, n);
    n = frame(buf, MSG_EXT_PING, 0, 1, NULL, 0);
    expect_dropped("owner", probe_unix, tc.socket, "ExternalPing before hello", buf, n);
    bl = pb_bytes(body, 1, "owner0", 6);
    n = frame(buf, MSG_REGISTER, 0, 1, body, bl);
    expect_dropped("owner", probe_unix, tc.socket, "Register before hello", buf, n);

    /* A hello cut short, then the client leaves. */
    n = frame(buf, MSG_EXT_HELLO, 0, 1, hb, hl);
    int fd = probe_unix(tc.socket);
    CHECK(fd >= 0, "connect for a truncated hello");
    if (fd >= 0) {
        CHECK(send_all(fd, buf, n - 1) == 0, "send a truncated hello");
        CHECK(stays_quiet(fd, 200), "a truncated hello is neither answered nor dropped");
        close(fd);
    }
    check_service("owner-truncated-hello");

    /* A hello of exactly the 64 KiB limit of strangers (padded with an
     * unknown field) is accepted: the limit is the limit, not less. After
     * it, the limit is EXT_MAX_BODY (about 4 MiB, a batch of the longest
     * keys): a ping of exactly that is answered. */
    uint8_t *big = malloc(FRAME_HDR_LEN + EXT_MAX_BODY);
    REQUIRE(big, "malloc");
    size_t bn = padded_body(big + FRAME_HDR_LEN, true, EXT_HELLO_MAX_BODY);
    hdr_put(big, (uint32_t)bn, MSG_EXT_HELLO, 0, 77);
    fd = probe_unix(tc.socket);
    CHECK(fd >= 0, "connect for a 64 KiB hello");
    if (fd >= 0) {
        rframe f;
        int r = send_all(fd, big, FRAME_HDR_LEN + bn);
        CHECK(r == 0, "send a 64 KiB hello: %s", strerror(-r));
        r = read_frame(fd, &f);
        CHECK(r == 1, "a hello of exactly 64 KiB is answered (%d)", r);
        if (r == 1) {
            CHECK(f.type == MSG_EXT_HELLO && (f.flags & FRAME_RESPONSE) && f.req_id == 77 &&
                      resp_status(&f) == 0,
                  "64 KiB hello: type %u flags %u req %llu status %d", f.type, f.flags,
                  (unsigned long long)f.req_id, resp_status(&f));
            CHECK(f.fds == 1, "the session's hello response carries the segment fd (%d)", f.fds);
            rframe_free(&f);
        }
        bn = padded_body(big + FRAME_HDR_LEN, false, EXT_MAX_BODY);
        hdr_put(big, (uint32_t)bn, MSG_EXT_PING, 0, 78);
        r = send_all(fd, big, FRAME_HDR_LEN + bn);
        CHECK(r == 0, "send a ping of EXT_MAX_BODY after the hello: %s", strerror(-r));
        r = read_frame(fd, &f);
        CHECK(r == 1 && f.type == MSG_EXT_PING && f.req_id == 78 && resp_status(&f) == 0,
              "a ping of exactly EXT_MAX_BODY after the hello is answered (%d)", r);
        if (r == 1)
            rframe_free(&f);
        close(fd);
    }
    /* One byte over the limit of strangers: dropped. */
    bn = padded_body(big + FRAME_HDR_LEN, true, EXT_HELLO_MAX_BODY + 1);
    hdr_put(big, (uint32_t)bn, MSG_EXT_HELLO, 0, 79);
    expect_dropped("owner", probe_unix, tc.socket, "hello of 64 KiB + 1", big,
                   FRAME_HDR_LEN + bn);
    free(big);
    check_service("owner-64KiB-hello");

    /* Error answers on a connection that stays usable. */
    fd = probe_unix(tc.socket);
    CHECK(fd >= 0, "connect for error answers");
    if (fd < 0)
        return;
    char detail[256];
    rframe f;
    int r;
    hl = hello_body(hb, 2, 0);
    r = call(fd, MSG_EXT_HELLO, 0, 10, hb, hl, &f);
    CHECK(r == 1 && f.req_id == 10 && (f.flags & FRAME_RESPONSE) && resp_status(&f) == FX_EPROTO,
          "hello with version 2: status %d (%s)", r == 1 ? resp_status(&f) : 0,
          r == 1 ? resp_detail(&f, detail, sizeof detail) : "no response");
    if (r == 1)
        rframe_free(&f);
    hl = hello_body(hb, 1, 0xdead0000beefull);
    r = call(fd, MSG_EXT_HELLO, 0, 11, hb, hl, &f);
    CHECK(r == 1 && f.req_id == 11 && resp_status(&f) == FX_ESTALE,
          "hello attaching to an unknown session: status %d", r == 1 ? resp_status(&f) : 0);
    if (r == 1)
        rframe_free(&f);
    hl = hello_body(hb, 1, 0);
    r = call(fd, MSG_EXT_HELLO, 0, 12, hb, hl, &f);
    uint64_t client_id = 0;
    CHECK(r == 1 && f.req_id == 12 && resp_status(&f) == 0 &&
              pb_find(f.body, f.len, 3, &client_id, NULL, NULL) && client_id != 0,
          "a good hello after two refused ones opens a session");
    CHECK(r == 1 && f.fds == 1, "with the segment fd");
    if (r == 1)
        rframe_free(&f);
    r = call(fd, MSG_EXT_HELLO, 0, 13, hb, hl, &f);
    CHECK(r == 1 && resp_status(&f) == FX_EPROTO, "a second hello is refused: %d",
          r == 1 ? resp_status(&f) : 0);
    if (r == 1)
        rframe_free(&f);

    /* Bad arguments get error statuses, not service. */
    r = call(fd, MSG_EXT_GET, 0, 20, NULL, 0, &f);
    CHECK(r == 1 && f.req_id == 20 && resp_status(&f) == FX_EINVAL, "get of an empty key: %d",
          r == 1 ? resp_status(&f) : 0);
    if (r == 1)
        rframe_free(&f);
    static uint8_t longkey[4097], lk[4097 + 8];
    memset(longkey, 'L', sizeof longkey);
    size_t lkn = pb_bytes(lk, 1, longkey, sizeof longkey);
    r = call(fd, MSG_EXT_GET, 0, 21, lk, lkn, &f);
    CHECK(r == 1 && resp_status(&f) == FX_EINVAL, "get of a 4097-byte key: %d",
          r == 1 ? resp_status(&f) : 0);
    if (r == 1)
        rframe_free(&f);
    r = call(fd, MSG_EXT_DELETE, 0, 22, lk, lkn, &f);
    CHECK(r == 1 && resp_status(&f) == FX_EINVAL, "delete of a 4097-byte key: %d",
          r == 1 ? resp_status(&f) : 0);
    if (r == 1)
        rframe_free(&f);
    bl = pb_bytes(body, 1, "too-big", 7);
    bl += pb_uint(body + bl, 2, SEG_SIZE + 1);
    r = call(fd, MSG_EXT_PUT_START, 0, 23, body, bl, &f);
    CHECK(r == 1 && resp_status(&f) == FX_ENOSPC, "ExternalPutStart over the segment: %d",
          r == 1 ? resp_status(&f) : 0);
    if (r == 1)
        rframe_free(&f);
    bl = pb_bytes(body, 1, "k", 1);
    bl += pb_uint(body + bl, 2, UINT64_MAX);
    r = call(fd, MSG_EXT_PUT_START, 0, 24, body, bl, &f);
    CHECK(r == 1 && resp_status(&f) == FX_ENOSPC, "ExternalPutStart of 2^64-1 bytes: %d",
          r == 1 ? resp_status(&f) : 0);
    if (r == 1)
        rframe_free(&f);
    /* Ending a put that was never started (PutId {time_ms 1, version 1}). */
    uint8_t pid[16];
    size_t pl = pb_uint(pid, 1, 1);
    pl += pb_uint(pid + pl, 2, 1);
    bl = pb_bytes(body, 1, "never-started", 13);
    bl += pb_bytes(body + bl, 2, pid, pl);
    r = call(fd, MSG_EXT_PUT_TRANSFER_END, 0, 25, body, bl, &f);
    CHECK(r == 1 && resp_status(&f) == FX_ESTALE, "ending a put never started: %d",
          r == 1 ? resp_status(&f) : 0);
    if (r == 1)
        rframe_free(&f);
    /* Releasing holders it never had: one-way, ignored; the next request on
     * the connection gets the next answer. */
    uint8_t ids[32];
    size_t il = pb_varint(ids, 12345);
    il += pb_varint(ids + il, UINT64_MAX);
    bl = pb_bytes(body, 1, ids, il);
    n = frame(buf, MSG_EXT_DELETE_ACK, FRAME_ONEWAY, 26, body, bl);
    CHECK(send_all(fd, buf, n) == 0, "send a DeleteAck of unknown holders");
    r = call(fd, MSG_EXT_PING, 0, 27, NULL, 0, &f);
    CHECK(r == 1 && f.req_id == 27 && resp_status(&f) == 0,
          "ping after unknown holder releases: r %d req %llu", r, (unsigned long long)f.req_id);
    if (r == 1)
        rframe_free(&f);

    /* After the hello, a request that is not external drops the connection. */
    bl = pb_bytes(body, 1, "k", 1);
    bl += pb_uint(body + bl, 2, 10);
    n = frame(buf, MSG_PUT_START, 0, 28, body, bl);
    CHECK(send_all(fd, buf, n) == 0, "send PutStart after hello");
    size_t got = 0;
    CHECK(wait_closed(fd, WAIT_MS, &got) && got == 0,
          "PutStart after hello: dropped unanswered (%zu bytes)", got);
    close(fd);
    check_service("owner-error-answers");
}

/* ---- master specifics ------------------------------------------------------- */

static void master_abuse(void)
{
    uint8_t ps[64];
    size_t pl = pb_bytes(ps, 1, "raw-put-key", 11);
    pl += pb_uint(ps + pl, 2, 100);
    pl += pb_uint(ps + pl, 3, 1);
    common_abuse("master", probe_tcp, tc.master_addr, UNREGISTERED_MAX_BODY, MSG_PUT_START, ps,
                 pl);

    /* A value put by a real client, which the stranger must not be able to
     * touch. */
    const char *victim = "victim-key";
    const char vval[] = "the victim's value";
    int r = fx_put(veteran, victim, strlen(victim), vval, sizeof vval);
    REQUIRE(r == 0, "put the victim: %s", fx_strerror(r));

    int fd = probe_tcp(tc.master_addr);
    CHECK(fd >= 0, "master: connect: %s", strerror(-fd));
    if (fd < 0)
        return;
    rframe f;
    char detail[256];
    uint8_t body[128];
    size_t bl;

    r = call(fd, MSG_PUT_START, 0, 41, ps, pl, &f);
    CHECK(r == 1, "master: PutStart from a stranger gets an answer (%d)", r);
    if (r == 1) {
        CHECK(f.type == MSG_PUT_START && (f.flags & FRAME_RESPONSE) && f.req_id == 41,
              "master: answer header type %u flags %u req %llu", f.type, f.flags,
              (unsigned long long)f.req_id);
        uint64_t off = 0;
        CHECK(resp_status(&f) != 0, "master: PutStart before Register was served (status 0)");
        CHECK(!pb_find(f.body, f.len, 5, &off, NULL, NULL) && !pb_find(f.body, f.len, 3, NULL, NULL, NULL),
              "master: the refusal carries no put plan");
        printf("master: PutStart before Register: status %d (%s)\n", resp_status(&f),
               resp_detail(&f, detail, sizeof detail));
        rframe_free(&f);
    }
    bl = pb_bytes(body, 1, victim, strlen(victim));
    r = call(fd, MSG_DELETE, 0, 42, body, bl, &f);
    CHECK(r == 1 && f.req_id == 42 && resp_status(&f) != 0,
          "master: Delete from a stranger refused (r %d status %d)", r,
          r == 1 ? resp_status(&f) : 0);
    if (r == 1)
        rframe_free(&f);
    r = call(fd, MSG_GET_START, 0, 43, body, bl, &f);
    CHECK(r == 1 && f.req_id == 43 && resp_status(&f) != 0,
          "master: GetStart from a stranger refused (status %d)", r == 1 ? resp_status(&f) : 0);
    if (r == 1)
        rframe_free(&f);
    bl = pb_uint(body, 1, 1);
    r = call(fd, MSG_GET_DONE, 0, 44, body, bl, &f);
    CHECK(r == 1 && resp_status(&f) != 0, "master: GetDone from a stranger refused");
    if (r == 1)
        rframe_free(&f);
    r = call(fd, MSG_STAT, 0, 45, NULL, 0, &f);
    CHECK(r == 1 && f.req_id == 45 && resp_status(&f) != 0, "master: Stat from a stranger refused");
    if (r == 1)
        rframe_free(&f);
    /* Register under another cluster's name: refused, still a stranger. */
    bl = pb_bytes(body, 1, "not-test", 8);
    bl += pb_bytes(body + bl, 2, "intruder", 8);
    bl += pb_uint(body + bl, 3, 1ull << 20);
    r = call(fd, MSG_REGISTER, 0, 46, body, bl, &f);
    CHECK(r == 1 && f.req_id == 46 && resp_status(&f) == FX_EINVAL,
          "master: Register with a foreign cluster name refused (status %d)",
          r == 1 ? resp_status(&f) : 0);
    if (r == 1)
        rframe_free(&f);
    /* A one-way request gets no answer, even an error: the next frame read
     * answers the next request. */
    uint8_t buf[256];
    size_t n = frame(buf, MSG_PUT_START, FRAME_ONEWAY, 47, ps, pl);
    CHECK(send_all(fd, buf, n) == 0, "master: send one-way PutStart");
    r = call(fd, MSG_PUT_START, 0, 48, ps, pl, &f);
    CHECK(r == 1 && f.req_id == 48 && resp_status(&f) != 0,
          "master: after a one-way request, the next answer is for the next request (req %llu)",
          r == 1 ? (unsigned long long)f.req_id : 0ull);
    if (r == 1)
        rframe_free(&f);
    /* An owner-side type sent to the master by a stranger: refused or dropped. */
    n = frame(buf, MSG_EXT_HELLO, 0, 49, NULL, 0);
    CHECK(send_all(fd, buf, n) == 0, "master: send ExternalHello");
    r = read_frame(fd, &f);
    CHECK(r == 0 || (r == 1 && f.req_id == 49 && resp_status(&f) != 0),
          "master: ExternalHello from a stranger: r %d", r);
    if (r == 1)
        rframe_free(&f);
    close(fd);

    fx_holder *h = NULL;
    r = fx_get(veteran, victim, strlen(victim), &h);
    CHECK(r == 0, "the victim survived the stranger's Delete: %s", fx_strerror(r));
    if (r == 0) {
        CHECK(fx_holder_len(h) == sizeof vval && memcmp(fx_holder_data(h), vval, sizeof vval) == 0,
              "the victim's bytes are intact");
        fx_holder_release(h);
    }
    int err;
    fx_client *c = fx_connect(tc.socket, &err);
    CHECK(c != NULL, "connect after master abuse");
    if (c) {
        r = fx_get(c, "raw-put-key", 11, &h);
        CHECK(r == FX_ENOTFOUND, "the stranger's PutStart created nothing: %s", fx_strerror(r));
        if (r == 0)
            fx_holder_release(h);
        fx_close(c);
    }
    CHECK(fx_delete(veteran, victim, strlen(victim)) == 0, "delete the victim");
    check_service("master-strangers");
}

/* ---- values that cannot fit ------------------------------------------------- */

typedef struct waiting_put {
    const uint8_t *v;
    size_t len;
    int r;
    uint64_t ms;
} waiting_put;

static void *put_more(void *arg)
{
    waiting_put *wp = arg;
    uint64_t t0 = test_now_ms();
    wp->r = fx_put(veteran, "more", 4, wp->v, wp->len);
    wp->ms = test_now_ms() - t0;
    return NULL;
}

static void check_nospace(void)
{
    size_t big = (size_t)SEG_SIZE + 4096;
    uint8_t *v = calloc(1, big);
    REQUIRE(v, "calloc");
    const size_t lens[] = {big, (size_t)SEG_SIZE + 1};
    for (size_t i = 0; i < 2; i++) {
        uint64_t t0 = test_now_ms();
        int r = fx_put(veteran, "huge", 4, v, lens[i]);
        uint64_t dt = test_now_ms() - t0;
        CHECK(r == FX_ENOSPC, "put of %zu bytes into a %llu-byte segment: %s", lens[i],
              (unsigned long long)SEG_SIZE, fx_strerror(r));
        CHECK(dt < 3000, "the NoSpace answer took %llu ms", (unsigned long long)dt);
    }
    /* Fits the segment but not the free space. */
    size_t part = (size_t)(SEG_SIZE * 5 / 8);
    int r = fx_put(veteran, "most", 4, v, part);
    CHECK(r == 0, "put %zu bytes: %s %s", part, fx_strerror(r), fx_last_error_detail());
    /* A holder pins it: evicting its replica frees nothing until released. */
    fx_holder *pin = NULL;
    REQUIRE(fx_get(veteran, "most", 4, &pin) == 0, "get most");
    uint64_t t0 = test_now_ms();
    r = fx_put(veteran, "more", 4, v, part);
    CHECK(r == FX_ENOSPC, "a second %zu-byte put: %s", part, fx_strerror(r));
    /* The master waits up to 5 s for room (deletes, released holders) before
     * NoSpace (spec 000 §4.1): bounded, not a hang. */
    CHECK(test_now_ms() - t0 < 5500, "the NoSpace answer came within 5.5 s (%llu ms)",
          (unsigned long long)(test_now_ms() - t0));
    /* While a put waits for room, releasing the pinning holder lets it through. */
    waiting_put wp = {.v = v, .len = part};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, put_more, &wp) == 0, "thread");
    usleep(300 * 1000);
    fx_holder_release(pin);
    pthread_join(th, NULL);
    CHECK(wp.r == 0, "the waiting put went through once the delete freed room: %s",
          fx_strerror(wp.r));
    CHECK(wp.ms >= 250 && wp.ms < 5000, "it waited for the release (%llu ms)",
          (unsigned long long)wp.ms);
    CHECK(fx_delete(veteran, "more", 4) == 0, "delete the waiting put's key");
    r = fx_put(veteran, "most", 4, v, part);
    CHECK(r == 0, "put %zu bytes again: %s", part, fx_strerror(r));
    fx_holder *h = NULL;
    r = fx_get(veteran, "huge", 4, &h);
    CHECK(r == FX_ENOTFOUND, "nothing stored under the refused key: %s", fx_strerror(r));
    if (r == 0)
        fx_holder_release(h);
    CHECK(fx_delete(veteran, "most", 4) == 0, "delete");
    free(v);
    check_service("nospace");
}

/* Regression: a session hello queued behind answers the peer never read must
 * not stall the owner's loop (it used to wait up to 1 s in fdpass_send). */
static void owner_hello_behind_unread_answers(void)
{
    int fd = probe_unix(tc.socket);
    REQUIRE(fd >= 0, "connect");
    uint8_t hb[16], one[64];
    size_t hl = hello_body(hb, 2, 0); /* refused: each one earns an error answer */
    size_t fl = frame(one, MSG_EXT_HELLO, 0, 1, hb, hl);
    size_t count = 20000;
    uint8_t *flood = malloc(fl * count);
    REQUIRE(flood, "malloc");
    for (size_t i = 0; i < count; i++)
        memcpy(flood + i * fl, one, fl);
    CHECK(send_all(fd, flood, fl * count) == 0, "send the refused hellos");
    free(flood);
    usleep(300 * 1000);
    hl = hello_body(hb, 1, 0);
    fl = frame(one, MSG_EXT_HELLO, 0, 2, hb, hl);
    CHECK(send(fd, one, fl, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)fl, "send the good hello");
    usleep(50 * 1000);
    uint64_t t0 = test_now_ms();
    int r = fx_ping(veteran);
    uint64_t dt = test_now_ms() - t0;
    CHECK(r == 0 && dt < 200, "a ping while a peer does not read its answers took %llu ms",
          (unsigned long long)dt);
    close(fd);
    check_service("owner-hello-behind-unread-answers");
}

int main(void)
{
    REQUIRE(cluster_start(&tc, SEG_SIZE) == 0, "cluster start");
    int err = 0;
    veteran = fx_connect(tc.socket, &err);
    REQUIRE(veteran, "connect: %s %s", fx_strerror(err), fx_last_error_detail());
    check_service("start");

    owner_abuse();
    master_abuse();
    check_nospace();
    owner_hello_behind_unread_answers();

    fx_close(veteran);
    CHECK(cluster_stop(&tc) == 0, "both processes alive to the end and exited cleanly");
    return test_finish();
}
