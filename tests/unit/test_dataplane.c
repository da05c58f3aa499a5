/*
 * test_dataplane.c - the owner-to-owner data plane (src/owner/dataplane/):
 * the wire codec (byte layout, round trips, what each op may carry), then
 * engines over their own 64 MiB segments on one libuv loop in this process:
 * pulls and pushes of 0, 1, 4095, 1 MiB+3 and 40 MiB at odd offsets checked
 * byte for byte with the bytes around the target unchanged, the requests of a
 * transfer batched into one write, 16 concurrent
 * transfers over at most two connections, transfers started from inside
 * callbacks, ranges we or the peer refuse, a wrong token, a node the member
 * check refuses and a peer without identity, raw TCP clients that send
 * garbage, truncated or oversized headers, requests before HELLO, half a
 * WRITE, or never hang up after a refusal (the engine goes on serving),
 * strangers past the connection cap (closed at once) or silent past the
 * HELLO deadline (closed then, while a peer whose HELLO passed is served), a
 * peer that closes mid-transfer, timeouts against a socket that never
 * answers, and an orderly close that leaves no handle behind.
 */
#include "owner/dataplane/dataplane.h"
#include "owner/dataplane/dp_frame.h"
#include "dp_raw.h"
#include "testlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fluxon/fluxon.h"

#define SEG (64ull << 20)
#define MIB (1ull << 20)
#define WAIT_MS 30000

static const uint8_t TOKEN[] = "fluxon-data-token-0123456789abcdef";
static uv_loop_t loop;
static uv_timer_t watchdog;

/* ---- segments with a known pattern ---------------------------------------------- */

typedef struct node {
    dp_engine *e;
    uint8_t *seg;
    uint64_t seed;
    uint32_t id;
    uint64_t tomb;
    char addr[64];
} node;

static uint64_t pat_word(uint64_t seed, uint64_t w)
{
    uint64_t x = w * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return x;
}

static uint8_t pat(uint64_t seed, uint64_t o)
{
    return (uint8_t)(pat_word(seed, o >> 3) >> ((o & 7) * 8));
}

static void fill(uint8_t *seg, uint64_t seed, uint64_t off, uint64_t len)
{
    uint64_t o = off, end = off + len;
    for (; o < end && (o & 7); o++)
        seg[o] = pat(seed, o);
    for (; o + 8 <= end; o += 8) {
        uint64_t w = pat_word(seed, o >> 3);
        memcpy(seg + o, &w, 8); /* little-endian: byte i is w >> 8i */
    }
    for (; o < end; o++)
        seg[o] = pat(seed, o);
}

/* True when seg[dst, +len) holds the pattern of seed at [src, +len). */
static bool holds(const uint8_t *seg, uint64_t dst, uint64_t seed, uint64_t src, uint64_t len)
{
    uint64_t w = 0, cached = UINT64_MAX;
    for (uint64_t i = 0; i < len; i++) {
        uint64_t o = src + i;
        if ((o >> 3) != cached) {
            cached = o >> 3;
            w = pat_word(seed, cached);
        }
        if (seg[dst + i] != (uint8_t)(w >> ((o & 7) * 8))) {
            fprintf(stderr, "  byte %llu of [%llu, +%llu) differs\n", (unsigned long long)i,
                    (unsigned long long)dst, (unsigned long long)len);
            return false;
        }
    }
    return true;
}

/* True when n's segment holds its own pattern outside [off, +len). */
static bool intact_outside(const node *n, uint64_t off, uint64_t len)
{
    return holds(n->seg, 0, n->seed, 0, off) &&
           holds(n->seg, off + len, n->seed, off + len, SEG - off - len);
}

static void restore(node *n, uint64_t off, uint64_t len)
{
    fill(n->seg, n->seed, off, len);
}

/* ---- membership the engines check ----------------------------------------------- */

static const struct { uint32_t id; uint64_t tomb; } members[] = {
    {1, 11}, {2, 22}, {3, 33}, {4, 44},
};

static bool member_check(void *ud, uint32_t node_id, uint64_t tomb_tag)
{
    (void)ud;
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++)
        if (members[i].id == node_id && members[i].tomb == tomb_tag)
            return true;
    return false;
}

static void node_start(node *n, uint32_t id, uint64_t tomb, uint64_t seed, bool identity)
{
    memset(n, 0, sizeof *n);
    n->seg = mmap(NULL, SEG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(n->seg != MAP_FAILED, "mmap of a %llu-byte segment", SEG);
    n->id = id;
    n->tomb = tomb;
    n->seed = seed;
    fill(n->seg, seed, 0, SEG);
    int err = 0;
    n->e = dp_engine_new(&loop, n->seg, SEG, "127.0.0.1:0", &err);
    REQUIRE(n->e != NULL, "dp_engine_new: %d", err);
    REQUIRE(dp_engine_port(n->e) > 0, "an ephemeral port was bound");
    snprintf(n->addr, sizeof n->addr, "127.0.0.1:%d", dp_engine_port(n->e));
    dp_engine_set_member_check(n->e, member_check, NULL);
    if (identity)
        CHECK(dp_engine_set_identity(n->e, id, tomb, TOKEN, sizeof TOKEN - 1) == 0,
              "set identity of node %u", id);
}

/* ---- running the loop ------------------------------------------------------------- */

typedef struct result {
    int calls;
    int status;
    char detail[512];
} result;

static void on_done(int status, const char *detail, void *ud)
{
    result *r = ud;
    r->calls++;
    r->status = status;
    snprintf(r->detail, sizeof r->detail, "%s", detail);
}

static void on_watchdog(uv_timer_t *t)
{
    (void)t; /* only wakes the loop so run_until can look at the clock */
}

/* Runs the loop until cond(arg) or ms passed. */
static bool run_until(bool (*cond)(void *), void *arg, uint64_t ms)
{
    uint64_t end = uv_now(&loop) + ms;
    uv_timer_start(&watchdog, on_watchdog, 10, 10);
    while (!cond(arg) && uv_now(&loop) < end)
        uv_run(&loop, UV_RUN_ONCE);
    uv_timer_stop(&watchdog);
    return cond(arg);
}

static bool is_done(void *arg)
{
    return ((result *)arg)->calls > 0;
}

typedef struct many {
    result *r;
    int n;
} many;

static bool all_done(void *arg)
{
    many *m = arg;
    for (int i = 0; i < m->n; i++)
        if (m->r[i].calls == 0)
            return false;
    return true;
}

/* Runs one transfer from `from` with `peer` to its end; returns its status
 * (or dp_transfer's error). */
static int transfer(node *from, const node *peer, bool pull, uint64_t src, uint64_t tgt,
                    uint64_t len, uint32_t timeout_ms, result *r)
{
    memset(r, 0, sizeof *r);
    int rc = dp_transfer(from->e, peer->id, peer->addr, pull, src, tgt, len, timeout_ms, on_done, r);
    if (rc)
        return rc;
    CHECK(r->calls == 0, "the callback never runs inside dp_transfer()");
    bool ok = run_until(is_done, r, WAIT_MS);
    REQUIRE(ok, "transfer of %llu bytes finished within %d ms", (unsigned long long)len, WAIT_MS);
    CHECK(r->calls == 1, "callback ran exactly once (%d)", r->calls);
    return r->status;
}

/* ---- the codec ----------------------------------------------------------------------- */

static void test_codec_layout(void)
{
    dp_hdr h = {.op = DP_WRITE, .flags = 0, .rsvd = 0, .id = 0x1817161514131211ull,
                .offset = 0x2827262524232221ull, .len = 0x34333231u, .status = -3};
    uint8_t b[DP_HDR_LEN];
    dp_hdr_encode(&h, b);
    const uint8_t want[DP_HDR_LEN] = {'F', 'X', 'D', '1', DP_WRITE, 0, 0, 0,
                                      0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
                                      0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
                                      0x31, 0x32, 0x33, 0x34, 0xfd, 0xff, 0xff, 0xff};
    CHECK(memcmp(b, want, DP_HDR_LEN) == 0, "header byte layout (little-endian, magic FXD1)");
    dp_hdr d;
    memset(&d, 0x5a, sizeof d);
    dp_hdr_decode(b, &d);
    CHECK(d.magic == DP_MAGIC && d.op == h.op && d.id == h.id && d.offset == h.offset &&
              d.len == h.len && d.status == -3 && d.flags == 0 && d.rsvd == 0,
          "header round trip");
}

static int check_of(uint8_t op, uint64_t offset, uint32_t len, int32_t status, enum dp_dir dir)
{
    dp_hdr h = {.op = op, .offset = offset, .len = len, .status = status, .id = 7};
    uint8_t b[DP_HDR_LEN];
    dp_hdr_encode(&h, b);
    dp_hdr d;
    dp_hdr_decode(b, &d);
    return dp_hdr_check(&d, dir);
}

static void test_codec_check(void)
{
    const enum dp_dir Q = DP_DIR_REQUEST, P = DP_DIR_REPLY;
    CHECK(check_of(DP_HELLO, 0, DP_HELLO_FIXED, 0, Q) == 0, "smallest HELLO");
    CHECK(check_of(DP_HELLO, 0, DP_HELLO_MAX_BODY, 0, Q) == 0, "largest HELLO");
    CHECK(check_of(DP_HELLO, 0, DP_HELLO_MAX_BODY + 1, 0, Q) == -EMSGSIZE, "HELLO too long");
    CHECK(check_of(DP_HELLO, 0, DP_HELLO_FIXED - 1, 0, Q) == -EPROTO, "HELLO too short");
    CHECK(check_of(DP_HELLO, 5, DP_HELLO_FIXED, 0, Q) == -EPROTO, "HELLO with an offset");
    CHECK(check_of(DP_HELLO, 0, DP_HELLO_FIXED, 0, P) == -EPROTO, "HELLO is not a reply");
    CHECK(check_of(DP_READ, UINT64_MAX, DP_MAX_PAYLOAD, 0, Q) == 0,
          "READ of the largest chunk (the range is the server's business)");
    CHECK(check_of(DP_READ, 0, DP_MAX_PAYLOAD + 1, 0, Q) == -EMSGSIZE, "READ over the maximum");
    CHECK(check_of(DP_READ, 0, 0, 0, Q) == -EPROTO, "READ of nothing");
    CHECK(check_of(DP_WRITE, 3, 1, 0, Q) == 0, "WRITE of one byte");
    CHECK(check_of(DP_WRITE, 3, UINT32_MAX, 0, Q) == -EMSGSIZE, "WRITE of 4 GiB");
    CHECK(check_of(DP_WRITE, 3, 1, FX_EINVAL, Q) == -EPROTO, "a request with a status");
    CHECK(check_of(DP_WRITE, 3, 1, 0, P) == -EPROTO, "WRITE is not a reply");
    CHECK(check_of(DP_HELLO_OK, 0, 0, 0, P) == 0, "HELLO_OK");
    CHECK(check_of(DP_HELLO_OK, 0, 1, 0, P) == -EPROTO, "HELLO_OK with a body");
    CHECK(check_of(DP_HELLO_OK, 0, 0, 0, Q) == -EPROTO, "HELLO_OK is not a request");
    CHECK(check_of(DP_HELLO_REFUSED, 0, DP_DETAIL_MAX, FX_ESTALE, P) == 0, "HELLO_REFUSED");
    CHECK(check_of(DP_HELLO_REFUSED, 0, 0, 0, P) == -EPROTO, "HELLO_REFUSED without a status");
    CHECK(check_of(DP_HELLO_REFUSED, 0, DP_DETAIL_MAX + 1, FX_ESTALE, P) == -EMSGSIZE,
          "a refusal with too much detail");
    CHECK(check_of(DP_READ_DATA, 9, MIB, 0, P) == 0, "READ_DATA");
    CHECK(check_of(DP_READ_DATA, 9, 0, 0, P) == -EPROTO, "READ_DATA of nothing");
    CHECK(check_of(DP_READ_DATA, 9, 12, FX_EINVAL, P) == 0, "READ_DATA refusal with detail");
    CHECK(check_of(DP_READ_DATA, 9, MIB, FX_EINVAL, P) == -EMSGSIZE,
          "a refusal cannot carry a payload");
    CHECK(check_of(DP_WRITE_ACK, 9, 0, 0, P) == 0, "WRITE_ACK");
    CHECK(check_of(DP_WRITE_ACK, 9, 5, 0, P) == -EPROTO, "WRITE_ACK with bytes");
    CHECK(check_of(DP_WRITE_ACK, 9, 0, 1, P) == -EPROTO, "a positive status");
    CHECK(check_of(DP_WRITE_ACK, 9, 0, FX_EINTERNAL - 1, P) == -EPROTO, "an unknown FX_E code");
    CHECK(check_of(0, 0, 0, 0, Q) == -EPROTO && check_of(8, 0, 0, 0, P) == -EPROTO &&
              check_of(255, 0, 0, 0, Q) == -EPROTO,
          "unknown ops");

    dp_hdr h = {.op = DP_READ, .len = 1};
    uint8_t b[DP_HDR_LEN];
    dp_hdr_encode(&h, b);
    for (int i = 0; i < 4; i++) {
        uint8_t c[DP_HDR_LEN];
        memcpy(c, b, sizeof c);
        c[i] ^= 0x20;
        dp_hdr d;
        dp_hdr_decode(c, &d);
        CHECK(dp_hdr_check(&d, Q) == -EPROTO, "a flipped magic byte %d is refused", i);
    }
    uint8_t c[DP_HDR_LEN];
    memcpy(c, b, sizeof c);
    c[5] = 1;
    dp_hdr d;
    dp_hdr_decode(c, &d);
    CHECK(dp_hdr_check(&d, Q) == -EPROTO, "unknown flags are refused");
    memcpy(c, b, sizeof c);
    c[7] = 1;
    dp_hdr_decode(c, &d);
    CHECK(dp_hdr_check(&d, Q) == -EPROTO, "reserved bits are refused");

    CHECK(dp_hdr_body_len(&(dp_hdr){.op = DP_READ, .len = 100}) == 0, "a READ carries no body");
    CHECK(dp_hdr_body_len(&(dp_hdr){.op = DP_WRITE, .len = 100}) == 100, "a WRITE carries len");
    CHECK(dp_hdr_has_payload(&(dp_hdr){.op = DP_READ_DATA, .len = 5}) &&
              !dp_hdr_has_payload(&(dp_hdr){.op = DP_READ_DATA, .len = 5, .status = -3}) &&
              !dp_hdr_has_payload(&(dp_hdr){.op = DP_HELLO, .len = 12}),
          "payload vs detail");
}

static void test_codec_hello_range(void)
{
    uint8_t body[DP_HELLO_MAX_BODY + 1];
    dp_hello h = {.tomb_tag = UINT64_MAX - 1, .node_id = 0xfffffffeu, .token = TOKEN,
                  .token_len = sizeof TOKEN - 1};
    size_t n = dp_hello_encode(&h, body, sizeof body);
    CHECK(n == DP_HELLO_FIXED + sizeof TOKEN - 1, "hello body length %zu", n);
    dp_hello d;
    CHECK(dp_hello_decode(body, n, &d) == 0 && d.tomb_tag == h.tomb_tag &&
              d.node_id == h.node_id && d.token_len == h.token_len &&
              memcmp(d.token, TOKEN, d.token_len) == 0,
          "hello round trip");
    CHECK(dp_hello_decode(body, DP_HELLO_FIXED, &d) == 0 && d.token_len == 0, "empty token");
    CHECK(dp_hello_decode(body, DP_HELLO_FIXED - 1, &d) == -EPROTO, "short hello body");
    CHECK(dp_hello_decode(body, DP_HELLO_MAX_BODY + 1, &d) == -EPROTO, "long hello body");
    uint8_t big[DP_TOKEN_MAX + 1] = {0};
    dp_hello b = {.token = big, .token_len = sizeof big};
    CHECK(dp_hello_encode(&b, body, sizeof body) == 0, "a token over DP_TOKEN_MAX");
    CHECK(dp_hello_encode(&h, body, 20) == 0, "too small an output buffer");

    CHECK(dp_range_ok(100, 0, 100) && dp_range_ok(100, 100, 0) && dp_range_ok(100, 99, 1),
          "ranges inside");
    CHECK(!dp_range_ok(100, 100, 1) && !dp_range_ok(100, 101, 0) && !dp_range_ok(100, 0, 101),
          "ranges past the end");
    CHECK(!dp_range_ok(100, UINT64_MAX, 2) && !dp_range_ok(100, 2, UINT64_MAX) &&
              !dp_range_ok(UINT64_MAX, UINT64_MAX - 1, 2),
          "overflowing ranges");
}

/* ---- transfers that work --------------------------------------------------------------- */

static node A, B, C, D;

static void pull_ok(uint64_t src, uint64_t tgt, uint64_t len)
{
    result r;
    int st = transfer(&A, &B, true, src, tgt, len, 10000, &r);
    CHECK(st == 0, "pull of %llu bytes from %llu to %llu: %d %s", (unsigned long long)len,
          (unsigned long long)src, (unsigned long long)tgt, st, r.detail);
    CHECK(holds(A.seg, tgt, B.seed, src, len), "pulled %llu bytes arrived intact",
          (unsigned long long)len);
    CHECK(intact_outside(&A, tgt, len), "pull of %llu bytes: nothing outside the target changed",
          (unsigned long long)len);
    CHECK(holds(B.seg, src, B.seed, src, len), "the source is unchanged");
    restore(&A, tgt, len);
}

static void push_ok(uint64_t src, uint64_t tgt, uint64_t len)
{
    result r;
    int st = transfer(&A, &B, false, src, tgt, len, 10000, &r);
    CHECK(st == 0, "push of %llu bytes from %llu to %llu: %d %s", (unsigned long long)len,
          (unsigned long long)src, (unsigned long long)tgt, st, r.detail);
    CHECK(holds(B.seg, tgt, A.seed, src, len), "pushed %llu bytes arrived intact",
          (unsigned long long)len);
    CHECK(intact_outside(&B, tgt, len), "push of %llu bytes: nothing outside the target changed",
          (unsigned long long)len);
    restore(&B, tgt, len);
}

static void test_sizes(void)
{
    const uint64_t sizes[] = {0, 1, 4095, MIB + 3, 40 * MIB};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        pull_ok(1000003 + 7 * i, 3000017 + 13 * i, sizes[i]);
        push_ok(2000029 + 5 * i, 5000011 + 3 * i, sizes[i]);
    }
    /* The very ends of both segments. */
    pull_ok(SEG - 4095, SEG - 4095, 4095);
    push_ok(SEG - MIB - 3, SEG - MIB - 3, MIB + 3);
    pull_ok(0, 0, 2 * MIB);
}

/* The requests a transfer has room for leave in one write: a 4 MiB pull is
 * four READs in one packet, a 3 MiB + 1 push four WRITEs (three of 1 MiB,
 * one of a byte) of header and payload in one writev (the bytes still arrive
 * right: pull_ok and push_ok check them). */
/* Checks that A sent `requests` requests in one write since *before, then
 * moves *before on. */
static void expect_one_write(dp_stats *before, uint64_t requests, const char *what)
{
    dp_stats after;
    dp_engine_stats(A.e, &after);
    uint64_t sent = after.requests_sent - before->requests_sent;
    uint64_t writes = after.request_writes - before->request_writes;
    CHECK(sent == requests && writes == 1, "%s sent %llu requests in 1 write (%llu in %llu)",
          what, (unsigned long long)requests, (unsigned long long)sent,
          (unsigned long long)writes);
    *before = after;
}

static void test_batched_requests(void)
{
    dp_stats st;
    dp_engine_stats(A.e, &st);
    pull_ok(123, 4567, 4 * MIB);
    expect_one_write(&st, 4, "a 4 MiB pull");
    push_ok(99, 7 * MIB + 1, 3 * MIB + 1);
    expect_one_write(&st, 4, "a 3 MiB + 1 push");
}

static void test_zero_length_untouched(void)
{
    result r;
    memset(&r, 0, sizeof r);
    CHECK(dp_transfer(A.e, B.id, B.addr, true, 5, SEG, 0, 1000, on_done, &r) == 0,
          "a zero-length pull at the end of the segment is accepted");
    CHECK(r.calls == 0, "and does not complete inside dp_transfer()");
    CHECK(run_until(is_done, &r, WAIT_MS) && r.calls == 1 && r.status == 0,
          "it completes with 0 on the loop (%d)", r.status);
    CHECK(intact_outside(&A, 0, 0), "nothing was written");
}

#define NCONC 16

static void test_concurrent(void)
{
    dp_stats before, after;
    dp_engine_stats(A.e, &before);
    result r[NCONC];
    memset(r, 0, sizeof r);
    uint64_t src[NCONC], tgt[NCONC], len[NCONC];
    for (int i = 0; i < NCONC; i++) {
        bool pull = i % 2 == 0;
        int k = i / 2;
        len[i] = 2 * MIB + (pull ? 7 : 9) * (uint64_t)k;
        src[i] = (pull ? 0 : 32 * MIB) + (uint64_t)k * 4 * MIB + (pull ? 11 : 3);
        tgt[i] = (pull ? 0 : 32 * MIB) + (uint64_t)k * 4 * MIB + (pull ? 101 : 5);
        CHECK(dp_transfer(A.e, B.id, B.addr, pull, src[i], tgt[i], len[i], 20000, on_done, &r[i]) == 0,
              "concurrent transfer %d starts", i);
    }
    many m = {r, NCONC};
    REQUIRE(run_until(all_done, &m, WAIT_MS), "16 concurrent transfers finished");
    for (int i = 0; i < NCONC; i++) {
        bool pull = i % 2 == 0;
        CHECK(r[i].calls == 1 && r[i].status == 0, "concurrent transfer %d: %d calls, status %d %s",
              i, r[i].calls, r[i].status, r[i].detail);
        if (pull)
            CHECK(holds(A.seg, tgt[i], B.seed, src[i], len[i]), "concurrent pull %d intact", i);
        else
            CHECK(holds(B.seg, tgt[i], A.seed, src[i], len[i]), "concurrent push %d intact", i);
    }
    /* Between the targets nothing moved. */
    for (int i = 0; i < NCONC; i++) {
        bool pull = i % 2 == 0;
        node *n = pull ? &A : &B;
        uint64_t gap = tgt[i] + len[i];
        uint64_t next = i + 2 < NCONC ? tgt[i + 2] : (pull ? 32 * MIB : SEG);
        CHECK(holds(n->seg, gap, n->seed, gap, next - gap), "gap after target %d untouched", i);
    }
    CHECK(holds(A.seg, 0, A.seed, 0, tgt[0]) && holds(B.seg, 32 * MIB, B.seed, 32 * MIB, tgt[1] - 32 * MIB),
          "before the first targets untouched");
    dp_engine_stats(A.e, &after);
    CHECK(after.conns_opened - before.conns_opened <= DP_CONNS_PER_PEER,
          "16 transfers to one peer used at most %d new connections (%llu)", DP_CONNS_PER_PEER,
          (unsigned long long)(after.conns_opened - before.conns_opened));
    CHECK(after.transfers_ok - before.transfers_ok == NCONC, "16 transfers counted as done");
    for (int i = 0; i < NCONC; i++)
        restore(i % 2 == 0 ? &A : &B, tgt[i], len[i]);
}

/* A callback that starts the next transfer from inside the previous one. */
typedef struct chain {
    int left;
    int calls;
    int failures;
} chain;

static void on_chain(int status, const char *detail, void *ud)
{
    chain *c = ud;
    c->calls++;
    if (status) {
        c->failures++;
        fprintf(stderr, "  chain: %d %s\n", status, detail);
    }
    if (--c->left > 0 &&
        dp_transfer(A.e, B.id, B.addr, true, 7 * (uint64_t)c->left, 40 * MIB + 3 * (uint64_t)c->left,
                    MIB + 1, 10000, on_chain, c) != 0)
        c->failures++;
}

static bool chain_done(void *arg)
{
    return ((chain *)arg)->left <= 0;
}

static void test_chained(void)
{
    chain c = {.left = 5};
    CHECK(dp_transfer(A.e, B.id, B.addr, true, 0, 40 * MIB, MIB + 1, 10000, on_chain, &c) == 0,
          "first of a chain starts");
    CHECK(run_until(chain_done, &c, WAIT_MS) && c.calls == 5 && c.failures == 0,
          "five transfers started from callbacks all finished (%d calls, %d failures)", c.calls,
          c.failures);
    CHECK(holds(A.seg, 40 * MIB + 3, B.seed, 7, MIB + 1), "the last chained pull arrived");
    restore(&A, 40 * MIB, MIB + 64);
}

/* ---- refusals ---------------------------------------------------------------------------- */

static void test_local_range(void)
{
    result r;
    memset(&r, 0, sizeof r);
    CHECK(dp_transfer(A.e, B.id, B.addr, true, 0, SEG - 1, 2, 1000, on_done, &r) == FX_EINVAL,
          "a pull into a target past our segment is refused");
    CHECK(dp_transfer(A.e, B.id, B.addr, false, SEG - 1, 0, 2, 1000, on_done, &r) == FX_EINVAL,
          "a push from a source past our segment is refused");
    CHECK(dp_transfer(A.e, B.id, B.addr, true, 0, UINT64_MAX, 2, 1000, on_done, &r) == FX_EINVAL,
          "an overflowing target is refused");
    CHECK(dp_transfer(A.e, B.id, B.addr, true, 0, 2, UINT64_MAX, 1000, on_done, &r) == FX_EINVAL,
          "an overflowing length is refused");
    CHECK(dp_transfer(A.e, B.id, "nohost", true, 0, 0, 1, 1000, on_done, &r) == FX_EINVAL &&
              dp_transfer(A.e, B.id, "127.0.0.1:99999", true, 0, 0, 1, 1000, on_done, &r) == FX_EINVAL &&
              dp_transfer(A.e, B.id, "127.0.0.1:", true, 0, 0, 1, 1000, on_done, &r) == FX_EINVAL,
          "malformed peer addresses are refused");
    CHECK(dp_transfer(A.e, B.id, B.addr, true, 0, 0, 1, 1000, NULL, NULL) == FX_EINVAL,
          "no callback is refused");
    uv_run(&loop, UV_RUN_NOWAIT);
    CHECK(r.calls == 0, "no callback for transfers refused up front");
}

static void test_remote_range(void)
{
    result r;
    int st = transfer(&A, &B, true, SEG - 10, 777, 100, 10000, &r);
    CHECK(st == FX_EINVAL, "a pull past the peer's segment fails with FX_EINVAL (%d %s)", st,
          r.detail);
    CHECK(strstr(r.detail, "peer 2") && strstr(r.detail, "outside the segment"),
          "the detail names the peer and what it refused: %s", r.detail);
    CHECK(intact_outside(&A, 0, 0), "the target is untouched");

    st = transfer(&A, &B, false, 777, SEG - 10, 100, 10000, &r);
    CHECK(st == FX_EINVAL, "a push past the peer's segment fails with FX_EINVAL (%d %s)", st,
          r.detail);
    CHECK(intact_outside(&B, 0, 0), "the peer's segment is untouched");

    st = transfer(&A, &B, false, 777, UINT64_MAX - 10, 100, 10000, &r);
    CHECK(st == FX_EINVAL, "a push to an overflowing range fails with FX_EINVAL (%d)", st);
    CHECK(intact_outside(&B, 0, 0), "the peer's segment is still untouched");

    /* The first chunks are fine, a later one runs past the end. */
    st = transfer(&A, &B, true, SEG - MIB - 5, 10 * MIB, 3 * MIB, 10000, &r);
    CHECK(st == FX_EINVAL, "a pull that runs past the peer's end fails (%d %s)", st, r.detail);
    restore(&A, 10 * MIB, 3 * MIB);

    pull_ok(12345, 54321, MIB + 3); /* and the peer goes on serving */
}

static void test_identity(void)
{
    result r;
    /* C presents a wrong token. */
    static const uint8_t wrong[] = "not-the-token";
    CHECK(dp_engine_set_identity(C.e, C.id, C.tomb, wrong, sizeof wrong - 1) == 0,
          "C takes a wrong token");
    dp_stats before, after;
    dp_engine_stats(B.e, &before);
    int st = transfer(&C, &B, true, 100, 200, MIB, 10000, &r);
    CHECK(st == FX_ESTALE, "a pull with a wrong token is refused with FX_ESTALE (%d %s)", st,
          r.detail);
    CHECK(strstr(r.detail, "refused our hello") && strstr(r.detail, "token"),
          "the detail says the hello was refused for the token: %s", r.detail);
    CHECK(intact_outside(&C, 0, 0), "nothing was written into C");
    st = transfer(&C, &B, false, 100, 200, MIB, 10000, &r);
    CHECK(st == FX_ESTALE, "a push with a wrong token is refused (%d %s)", st, r.detail);
    CHECK(intact_outside(&B, 0, 0), "nothing was written into B");
    dp_engine_stats(B.e, &after);
    CHECK(after.refused - before.refused == 2, "B counted two refusals");

    /* Right token, but an incarnation the member check does not know. */
    CHECK(dp_engine_set_identity(C.e, C.id, 999, TOKEN, sizeof TOKEN - 1) == 0, "C's new tomb");
    st = transfer(&C, &B, false, 100, 200, MIB, 10000, &r);
    CHECK(st == FX_ESTALE, "a push from a non-member is refused (%d %s)", st, r.detail);
    CHECK(strstr(r.detail, "not a live member"), "the detail says why: %s", r.detail);
    CHECK(intact_outside(&B, 0, 0), "nothing was written into B");

    /* An engine without identity refuses every hello and cannot start transfers. */
    CHECK(dp_transfer(D.e, B.id, B.addr, true, 0, 0, 1, 1000, on_done, &r) == FX_ESTALE,
          "no transfer before the identity is set");
    st = transfer(&A, &D, true, 100, 200, MIB, 10000, &r);
    CHECK(st == FX_ESTALE && strstr(r.detail, "not registered"),
          "a peer without identity refuses hellos (%d %s)", st, r.detail);
    CHECK(intact_outside(&A, 0, 0), "nothing was written into A");

    /* Fixed up, the same engines work. */
    CHECK(dp_engine_set_identity(C.e, C.id, C.tomb, TOKEN, sizeof TOKEN - 1) == 0, "C fixed");
    CHECK(dp_engine_set_identity(D.e, D.id, D.tomb, TOKEN, sizeof TOKEN - 1) == 0, "D fixed");
    st = transfer(&C, &B, true, 4321, 1234, 3 * MIB + 1, 10000, &r);
    CHECK(st == 0 && holds(C.seg, 1234, B.seed, 4321, 3 * MIB + 1),
          "C pulls once its identity is right (%d %s)", st, r.detail);
    restore(&C, 1234, 3 * MIB + 1);
    st = transfer(&A, &D, false, 4321, 1234, 3 * MIB + 1, 10000, &r);
    CHECK(st == 0 && holds(D.seg, 1234, A.seed, 4321, 3 * MIB + 1),
          "A pushes to D once D has an identity (%d %s)", st, r.detail);
    restore(&D, 1234, 3 * MIB + 1);
    uint8_t big[DP_TOKEN_MAX + 1] = {0};
    CHECK(dp_engine_set_identity(C.e, C.id, C.tomb, big, sizeof big) == FX_EINVAL,
          "a token over DP_TOKEN_MAX is refused");
    CHECK(dp_transfer(C.e, B.id, B.addr, true, 0, 0, 1, 1000, on_done, &r) == FX_ESTALE,
          "and leaves the engine without identity");
    CHECK(dp_engine_set_identity(C.e, C.id, C.tomb, TOKEN, sizeof TOKEN - 1) == 0, "C fixed");
}

/* ---- raw TCP clients ------------------------------------------------------------------------ */

typedef struct raw_job {
    int port;
    volatile int done;
} raw_job;

static int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void raw_garbage(int port)
{
    int fd = raw_connect(port);
    uint8_t junk[DP_HDR_LEN];
    memset(junk, 0xab, sizeof junk);
    dp_raw_send_all(fd, junk, sizeof junk);
    CHECK(dp_raw_hung_up(fd), "garbage: the server hung up");
    close(fd);
}

static void raw_truncated(int port)
{
    int fd = raw_connect(port);
    uint8_t b[DP_HDR_LEN];
    dp_hdr_encode(&(dp_hdr){.op = DP_READ, .id = 1, .len = 10}, b);
    dp_raw_send_all(fd, b, 10);
    shutdown(fd, SHUT_WR);
    CHECK(dp_raw_hung_up(fd), "truncated header: the server hung up");
    close(fd);
}

static void raw_oversized_hello(int port)
{
    int fd = raw_connect(port);
    dp_raw_send_hdr(fd, DP_HELLO, 1, 0, 1u << 30);
    CHECK(dp_raw_hung_up(fd), "a 1 GiB HELLO: the server hung up without reading it");
    close(fd);
}

static void raw_read_before_hello(int port)
{
    int fd = raw_connect(port);
    dp_raw_send_hdr(fd, DP_READ, 77, 0, 100);
    dp_raw_send_hdr(fd, DP_READ, 78, 100, 100); /* pipelined, must not be answered */
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    bool got = dp_raw_recv_reply(fd, &h, detail, sizeof detail);
    CHECK(got && h.op == DP_READ_DATA && h.id == 77 && h.status == FX_EPROTO &&
              strstr(detail, "before"),
          "READ before HELLO: refused with FX_EPROTO (%d) and a detail (%s)", got ? h.status : 0,
          got ? detail : "no reply");
    CHECK(dp_raw_hung_up(fd), "READ before HELLO: then the server hung up");
    close(fd);
}

static void raw_bad_token(int port)
{
    int fd = raw_connect(port);
    static const uint8_t bad[] = "guess";
    dp_raw_send_hello(fd, 1, 11, bad, sizeof bad - 1);
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    bool got = dp_raw_recv_reply(fd, &h, detail, sizeof detail);
    CHECK(got && h.op == DP_HELLO_REFUSED && h.id == 42 && h.status == FX_ESTALE,
          "a raw hello with a bad token is refused (%s)", got ? detail : "no reply");
    CHECK(dp_raw_hung_up(fd), "bad token: then the server hung up");
    close(fd);
}

/* A well-behaved raw client: HELLO, a READ and a WRITE, then a READ out of range. */
static void raw_conforming(int port)
{
    int fd = raw_connect(port);
    dp_raw_send_hello(fd, 1, 11, TOKEN, sizeof TOKEN - 1);
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    CHECK(dp_raw_recv_reply(fd, &h, detail, sizeof detail) && h.op == DP_HELLO_OK && h.id == 42,
          "raw hello accepted");
    dp_raw_send_hdr(fd, DP_READ, 5, 1001, 333);
    uint8_t data[333];
    CHECK(dp_raw_recv_reply(fd, &h, detail, sizeof detail) && h.op == DP_READ_DATA && h.id == 5 &&
              h.status == 0 && h.len == 333 && h.offset == 1001,
          "raw READ answered");
    CHECK(dp_raw_recv_all(fd, data, sizeof data) && holds(data, 0, B.seed, 1001, sizeof data),
          "raw READ payload is the segment's bytes");
    uint8_t w[77];
    memset(w, 0xee, sizeof w);
    dp_raw_send_hdr(fd, DP_WRITE, 6, 9999, sizeof w);
    dp_raw_send_all(fd, w, sizeof w);
    CHECK(dp_raw_recv_reply(fd, &h, detail, sizeof detail) && h.op == DP_WRITE_ACK && h.id == 6 &&
              h.status == 0,
          "raw WRITE acknowledged");
    dp_raw_send_hdr(fd, DP_READ, 7, SEG, 1);
    CHECK(dp_raw_recv_reply(fd, &h, detail, sizeof detail) && h.op == DP_READ_DATA && h.id == 7 &&
              h.status == FX_EINVAL,
          "raw READ past the end refused with FX_EINVAL (%s)", detail);
    CHECK(dp_raw_hung_up(fd), "then the server hung up");
    close(fd);
}

/* Half a WRITE payload, then gone: no ack, the server just closes. */
static void raw_half_write(int port)
{
    int fd = raw_connect(port);
    dp_raw_send_hello(fd, 1, 11, TOKEN, sizeof TOKEN - 1);
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    CHECK(dp_raw_recv_reply(fd, &h, detail, sizeof detail) && h.op == DP_HELLO_OK,
          "hello accepted");
    uint8_t w[100];
    memset(w, 0xcd, sizeof w);
    dp_raw_send_hdr(fd, DP_WRITE, 8, 20000, 1000);
    dp_raw_send_all(fd, w, sizeof w);
    close(fd);
}

/* Refused, but it never hangs up and keeps sending: the server discards
 * what comes and closes on its own after DP_LINGER_MS. */
static void raw_lingering(int port)
{
    int fd = raw_connect(port);
    dp_raw_send_hdr(fd, DP_WRITE, 1, 0, 64);
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    CHECK(dp_raw_recv_reply(fd, &h, detail, sizeof detail) && h.op == DP_WRITE_ACK &&
              h.status == FX_EPROTO,
          "WRITE before HELLO refused");
    uint8_t junk[1024];
    memset(junk, 0x77, sizeof junk);
    bool gone = false;
    for (int i = 0; i < (DP_LINGER_MS + 10000) / 50 && !gone; i++) {
        gone = send(fd, junk, sizeof junk, MSG_NOSIGNAL) < 0;
        usleep(50 * 1000);
    }
    CHECK(gone, "a refused peer that never hangs up is closed by the server");
    close(fd);
}

static void *raw_thread(void *arg)
{
    raw_job *j = arg;
    raw_garbage(j->port);
    raw_truncated(j->port);
    raw_oversized_hello(j->port);
    raw_read_before_hello(j->port);
    raw_bad_token(j->port);
    raw_conforming(j->port);
    raw_half_write(j->port);
    raw_lingering(j->port);
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static bool raw_done(void *arg)
{
    return __atomic_load_n(&((raw_job *)arg)->done, __ATOMIC_ACQUIRE);
}

static bool half_write_landed(void *arg)
{
    (void)arg;
    return B.seg[20099] == 0xcd;
}

/* Runs the raw clients of fn on their own thread against the engine of n,
 * while this thread runs the loop; true when they finished in time. */
static bool run_raw_clients(void *(*fn)(void *), const node *n)
{
    raw_job j = {.port = dp_engine_port(n->e)};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, fn, &j) == 0, "raw client thread");
    bool ok = run_until(raw_done, &j, 60000);
    pthread_join(t, NULL);
    return ok;
}

static void test_raw_clients(void)
{
    CHECK(run_raw_clients(raw_thread, &B), "raw clients finished");
    /* The half WRITE's 100 bytes may still be on their way into B. */
    CHECK(run_until(half_write_landed, NULL, WAIT_MS), "the half WRITE's bytes landed");
    CHECK(holds(B.seg, 0, B.seed, 0, 9999) && holds(B.seg, 9999 + 77, B.seed, 9999 + 77, 20000 - 9999 - 77) &&
              holds(B.seg, 20100, B.seed, 20100, SEG - 20100),
          "raw clients changed nothing but what they wrote");
    uint8_t w[77];
    memset(w, 0xee, sizeof w);
    CHECK(memcmp(B.seg + 9999, w, sizeof w) == 0, "the raw WRITE landed");
    restore(&B, 9999, 77);
    restore(&B, 20000, 100);
    pull_ok(99, 101, 2 * MIB + 1);
    push_ok(99, 101, 2 * MIB + 1);
}

/* ---- strangers: the connection cap and the HELLO deadline --------------------------------------- */

#define STRANGER_CAP 3
#define STRANGER_HELLO_MS 300

static void *strangers_thread(void *arg)
{
    raw_job *j = arg;
    int silent[STRANGER_CAP - 1], fd;
    for (int i = 0; i < STRANGER_CAP - 1; i++)
        silent[i] = raw_connect(j->port);
    int peer = raw_connect(j->port); /* the last place: says HELLO */
    dp_raw_send_hello(peer, 1, 11, TOKEN, sizeof TOKEN - 1);
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    CHECK(dp_raw_recv_reply(peer, &h, detail, sizeof detail) && h.op == DP_HELLO_OK,
          "a peer within the cap says HELLO");
    struct timeval t0, t1;
    gettimeofday(&t0, NULL);
    fd = raw_connect(j->port);
    CHECK(fd >= 0 && dp_raw_hung_up(fd), "the connection over the cap is hung up on");
    gettimeofday(&t1, NULL);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_usec - t0.tv_usec) / 1000;
    CHECK(ms < STRANGER_HELLO_MS, "... at once (%ld ms), not at the HELLO deadline", ms);
    close(fd);
    for (int i = 0; i < STRANGER_CAP - 1; i++) {
        CHECK(dp_raw_hung_up(silent[i]), "a silent stranger is closed at the HELLO deadline");
        close(silent[i]);
    }
    gettimeofday(&t1, NULL);
    ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_usec - t0.tv_usec) / 1000;
    CHECK(ms >= STRANGER_HELLO_MS / 2, "... and not before it (%ld ms)", ms);
    usleep(2 * STRANGER_HELLO_MS * 1000);
    dp_raw_send_hdr(peer, DP_READ, 9, 0, 16);
    uint8_t data[16];
    CHECK(dp_raw_recv_reply(peer, &h, detail, sizeof detail) && h.op == DP_READ_DATA &&
              h.status == 0 && dp_raw_recv_all(peer, data, sizeof data),
          "the peer whose HELLO passed is served past the deadline");
    close(peer);
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_strangers(void)
{
    dp_engine_set_limits(C.e, STRANGER_CAP, STRANGER_HELLO_MS);
    CHECK(run_raw_clients(strangers_thread, &C), "strangers finished");
    dp_engine_set_limits(C.e, DP_DEFAULT_MAX_PEER_CONNS, DP_DEFAULT_HELLO_MS);
    result r;
    CHECK(transfer(&A, &C, true, 0, 0, MIB, 10000, &r) == 0 && holds(A.seg, 0, C.seed, 0, MIB),
          "C still serves its peers: %s", r.detail);
    restore(&A, 0, MIB);
}

/* ---- failures of the peer ----------------------------------------------------------------------- */

typedef struct served {
    const node *n;
    uint64_t at_least;
} served;

static bool has_served(void *arg)
{
    served *s = arg;
    dp_stats st;
    dp_engine_stats(s->n->e, &st);
    return st.bytes_served >= s->at_least;
}

static int silent_listener(int *port);

static void test_peer_closes(void)
{
    int port = 0;
    int fd = silent_listener(&port);
    REQUIRE(fd >= 0, "a silent listener");
    char silent[64];
    snprintf(silent, sizeof silent, "127.0.0.1:%d", port);
    result pull, pending, queued;
    memset(&pull, 0, sizeof pull);
    memset(&pending, 0, sizeof pending);
    memset(&queued, 0, sizeof queued);
    CHECK(dp_transfer(A.e, D.id, D.addr, true, 0, 0, 40 * MIB, 0, on_done, &pull) == 0,
          "a 40 MiB pull from D without timeout starts");
    CHECK(dp_transfer(D.e, 9, silent, false, 0, 0, 8 * MIB, 0, on_done, &pending) == 0,
          "D starts a push of its own to a peer that never answers");
    dp_stats st;
    dp_engine_stats(D.e, &st);
    served s = {&D, st.bytes_served + 1};
    CHECK(run_until(has_served, &s, WAIT_MS), "D started serving the pull");
    CHECK(pull.calls == 0 && pending.calls == 0, "both are still running when D closes");
    CHECK(dp_transfer(D.e, B.id, B.addr, true, 0, 0, MIB, 0, on_done, &queued) == 0,
          "D queues one more");
    dp_engine_close(D.e);
    CHECK(pending.calls == 1 && pending.status == FX_ECONN && queued.calls == 1 &&
              queued.status == FX_ECONN,
          "D's own transfers failed inside dp_engine_close (%d calls %d, %d calls %d)",
          pending.calls, pending.status, queued.calls, queued.status);
    close(fd);
    result late;
    CHECK(dp_transfer(D.e, B.id, B.addr, true, 0, 0, 1, 0, on_done, &late) == FX_ECONN,
          "a closed engine starts nothing");
    CHECK(run_until(is_done, &pull, WAIT_MS), "the pull from the closed peer ended, no hang");
    CHECK(pull.calls == 1 && pull.status == FX_ECONN && strstr(pull.detail, "peer 4"),
          "it failed with FX_ECONN naming the peer (%d %s)", pull.status, pull.detail);
    dp_engine_free(D.e);
    D.e = NULL;
    restore(&A, 0, 40 * MIB);
    pull_ok(3, 5, MIB); /* A goes on working with others */
}

/* A socket that completes handshakes (the kernel's backlog) and never answers. */
static int silent_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t len = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 16) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

static void test_timeouts(void)
{
    int port = 0;
    int fd = silent_listener(&port);
    REQUIRE(fd >= 0, "a silent listener");
    node silent = {.id = 9};
    snprintf(silent.addr, sizeof silent.addr, "127.0.0.1:%d", port);
    result r[3];
    memset(r, 0, sizeof r);
    /* t0 and t1 get a connection each, t2 shares t0's: when t0 times out its
     * connection closes, which fails t2 at once with FX_ECONN. */
    const uint32_t timeouts[3] = {200, 400, 20000};
    for (int i = 0; i < 3; i++)
        CHECK(dp_transfer(A.e, silent.id, silent.addr, i != 1, 0, 100 * (uint64_t)i, MIB,
                          timeouts[i], on_done, &r[i]) == 0,
              "transfer %d to a silent peer starts", i);
    many m = {r, 3};
    CHECK(run_until(all_done, &m, 10000), "all transfers to the silent peer ended");
    CHECK(r[0].status == FX_ETIMEDOUT && strstr(r[0].detail, "timed out") &&
              strstr(r[0].detail, "peer 9"),
          "the first timed out (%d %s)", r[0].status, r[0].detail);
    CHECK(r[1].status == FX_ETIMEDOUT, "the second timed out (%d %s)", r[1].status, r[1].detail);
    CHECK(r[2].status == FX_ECONN, "the third shared the first's connection (%d %s)", r[2].status,
          r[2].detail);
    close(fd);
    CHECK(intact_outside(&A, 0, 0), "nothing was written");

    /* Nobody listening at all. */
    fd = silent_listener(&port);
    close(fd);
    snprintf(silent.addr, sizeof silent.addr, "127.0.0.1:%d", port);
    int st = transfer(&A, &silent, true, 0, 0, 10, 5000, &r[0]);
    CHECK(st == FX_ECONN && strstr(r[0].detail, "connect"),
          "a peer that is not listening fails with FX_ECONN (%d %s)", st, r[0].detail);
}

/* ---- main ------------------------------------------------------------------------------------------ */

static bool loop_idle(void *arg)
{
    (void)arg;
    return !uv_loop_alive(&loop);
}

int main(void)
{
    test_codec_layout();
    test_codec_check();
    test_codec_hello_range();

    signal(SIGPIPE, SIG_IGN); /* as the owner does: libuv writes with write(2) */
    int err = 0;
    REQUIRE(uv_loop_init(&loop) == 0, "loop");
    uv_timer_init(&loop, &watchdog);
    CHECK(dp_engine_new(&loop, NULL, 0, "not an address", &err) == NULL && err == -EINVAL,
          "a malformed listen address is refused (%d)", err);

    node_start(&A, 1, 11, 0xA11CE, true);
    node_start(&B, 2, 22, 0xB0B, true);
    node_start(&C, 3, 33, 0xC0FFEE, true);
    node_start(&D, 4, 44, 0xD00D, false);
    int berr = 0;
    CHECK(dp_engine_new(&loop, A.seg, SEG, A.addr, &berr) == NULL && berr == UV_EADDRINUSE,
          "a second engine on a port in use is refused (%d)", berr);

    test_sizes();
    test_batched_requests();
    test_zero_length_untouched();
    test_concurrent();
    test_chained();
    test_local_range();
    test_remote_range();
    test_identity();
    test_raw_clients();
    test_strangers();
    test_peer_closes();
    test_timeouts();

    /* Orderly close: every handle goes, the loop ends by itself. */
    dp_engine_close(A.e);
    dp_engine_close(B.e);
    dp_engine_close(C.e);
    dp_engine_free(A.e);
    dp_engine_free(B.e);
    dp_engine_free(C.e);
    uv_close((uv_handle_t *)&watchdog, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(loop_idle(NULL), "no handle left after close");
    CHECK(uv_loop_close(&loop) == 0, "the loop closes cleanly");
    munmap(A.seg, SEG);
    munmap(B.seg, SEG);
    munmap(C.seg, SEG);
    munmap(D.seg, SEG);
    return test_finish();
}
