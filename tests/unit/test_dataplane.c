/*
 * test_dataplane.c - the owner-to-owner data plane (src/owner/dataplane/):
 * the wire codec (byte layout, round trips, what each op may carry), then
 * engines over their own 64 MiB segments on one libuv loop in this process:
 * pulls and pushes of 0, 1, 4095, 1 MiB+3 and 40 MiB at odd offsets checked
 * byte for byte with the bytes around the target unchanged, the requests of a
 * transfer batched into one write, 16 concurrent
 * transfers over at most two connections, transfers started from inside
 * callbacks, ranges we or the peer refuse; the handshake: the transcript's
 * bytes, a client holding the wrong pair key, a wrong incarnation, an unknown
 * node, a hello meant for another node, a peer without identity, a forged
 * data plane that cannot prove the key (the client sends it no request), and
 * a peer that left losing its inbound connections at once; raw TCP clients
 * that send garbage, truncated or oversized headers, requests before the
 * handshake passed, a proof made with the wrong key, half a WRITE, or never
 * hang up after a refusal (the engine goes on serving), a peer that closes
 * mid-transfer, strangers past the connection cap (closed at once) or silent
 * past the handshake deadline (closed then, while a peer whose handshake
 * passed is served), timeouts against a socket that never answers, peers dialled
 * by name (an asynchronous lookup) and over IPv6 ([::1], when the machine has
 * it), a name that does not resolve, a peer forgotten while its name is looked
 * up, and an orderly close that leaves no handle behind.
 */
#include "owner/dataplane/dataplane.h"
#include "owner/dataplane/dp_frame.h"
#include "owner/dataplane/dp_handshake.h"
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

static uv_loop_t loop;
static uv_timer_t watchdog;

/* ---- segments with a known pattern ---------------------------------------------- */

typedef struct node {
    dp_engine *e;
    uint8_t *seg;
    uint64_t seed;
    uint32_t id;
    uint64_t tomb;
    char addr[80];
    bool wrong_keys; /* its key lookup derives from a root the others do not use */
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

/* ---- membership and pair keys the engines look up -------------------------------- */

static const struct { uint32_t id; uint64_t tomb; } members[] = {
    {1, 11}, {2, 22}, {3, 33}, {4, 44}, {5, 55}, {6, 66},
};
static auth_key root;       /* what the "master" derives the pair keys from */
static auth_key wrong_root; /* what a node with wrong_keys derives them from */

static bool member_tomb(uint32_t id, uint64_t *tomb)
{
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++)
        if (members[i].id == id) {
            *tomb = members[i].tomb;
            return true;
        }
    return false;
}

static void node_start_on(node *n, uint32_t id, uint64_t tomb, uint64_t seed, bool identity,
                          const char *host);
/* One key per pair of members, the same seen from either side. */
static void pair_key(const auth_key *from, uint32_t a, uint32_t b, auth_key *out)
{
    uint32_t ids[2] = {a < b ? a : b, a < b ? b : a};
    auth_key_derive(from, (const uint8_t *)ids, sizeof ids, out);
}

/* dp_peer_key_fn of node ud: the member table above and its pair keys. */
static bool peer_key(void *ud, uint32_t peer, uint64_t *tomb, auth_key *key)
{
    const node *self = ud;
    if (!member_tomb(peer, tomb))
        return false;
    pair_key(self->wrong_keys ? &wrong_root : &root, self->id, peer, key);
    return true;
}

static void node_start(node *n, uint32_t id, uint64_t tomb, uint64_t seed, bool identity)
{
    node_start_on(n, id, tomb, seed, identity, "127.0.0.1");
}

/* A node whose engine listens on host (a name, an IPv4 or an [IPv6] literal)
 * at an ephemeral port; peers dial it as "host:port". */
static void node_start_on(node *n, uint32_t id, uint64_t tomb, uint64_t seed, bool identity,
                          const char *host)
{
    memset(n, 0, sizeof *n);
    n->seg = mmap(NULL, SEG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(n->seg != MAP_FAILED, "mmap of a %llu-byte segment", SEG);
    n->id = id;
    n->tomb = tomb;
    n->seed = seed;
    fill(n->seg, seed, 0, SEG);
    int err = 0;
    char listen[sizeof n->addr];
    snprintf(listen, sizeof listen, "%s:0", host);
    n->e = dp_engine_new(&loop, n->seg, SEG, listen, &err);
    REQUIRE(n->e != NULL, "dp_engine_new on %s: %d", listen, err);
    REQUIRE(dp_engine_port(n->e) > 0, "an ephemeral port was bound");
    snprintf(n->addr, sizeof n->addr, "%s:%d", host, dp_engine_port(n->e));
    dp_engine_set_peer_keys(n->e, peer_key, n);
    if (identity)
        dp_engine_set_identity(n->e, id, tomb);
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
    CHECK(check_of(DP_HELLO, 0, DP_HELLO_LEN, 0, Q) == 0, "HELLO");
    CHECK(check_of(DP_HELLO, 0, DP_HELLO_LEN + 1, 0, Q) == -EMSGSIZE, "HELLO too long");
    CHECK(check_of(DP_HELLO, 0, DP_HELLO_LEN - 1, 0, Q) == -EPROTO, "HELLO too short");
    CHECK(check_of(DP_HELLO, 5, DP_HELLO_LEN, 0, Q) == -EPROTO, "HELLO with an offset");
    CHECK(check_of(DP_HELLO, 0, DP_HELLO_LEN, 0, P) == -EPROTO, "HELLO is not a reply");
    CHECK(check_of(DP_HELLO_CHALLENGE, 0, DP_CHALLENGE_LEN, 0, P) == 0, "HELLO_CHALLENGE");
    CHECK(check_of(DP_HELLO_CHALLENGE, 0, DP_CHALLENGE_LEN - 1, 0, P) == -EPROTO &&
              check_of(DP_HELLO_CHALLENGE, 0, DP_CHALLENGE_LEN + 1, 0, P) == -EMSGSIZE,
          "HELLO_CHALLENGE of another length");
    CHECK(check_of(DP_HELLO_CHALLENGE, 0, DP_CHALLENGE_LEN, FX_ESTALE, P) == -EPROTO,
          "HELLO_CHALLENGE with a status");
    CHECK(check_of(DP_HELLO_CHALLENGE, 1, DP_CHALLENGE_LEN, 0, P) == -EPROTO,
          "HELLO_CHALLENGE with an offset");
    CHECK(check_of(DP_HELLO_CHALLENGE, 0, DP_CHALLENGE_LEN, 0, Q) == -EPROTO,
          "HELLO_CHALLENGE is not a request");
    CHECK(check_of(DP_HELLO_PROOF, 0, DP_PROOF_LEN, 0, Q) == 0, "HELLO_PROOF");
    CHECK(check_of(DP_HELLO_PROOF, 0, DP_PROOF_LEN - 1, 0, Q) == -EPROTO &&
              check_of(DP_HELLO_PROOF, 0, DP_PROOF_LEN + 1, 0, Q) == -EMSGSIZE,
          "HELLO_PROOF of another length");
    CHECK(check_of(DP_HELLO_PROOF, 0, DP_PROOF_LEN, 0, P) == -EPROTO,
          "HELLO_PROOF is not a reply");
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
    CHECK(check_of(0, 0, 0, 0, Q) == -EPROTO && check_of(10, 0, 0, 0, P) == -EPROTO &&
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
              !dp_hdr_has_payload(&(dp_hdr){.op = DP_HELLO, .len = DP_HELLO_LEN}),
          "payload vs detail");
}

static void test_codec_handshake_range(void)
{
    dp_hello h = {.client_tomb = 0x0807060504030201ull, .client_node = 0x0c0b0a09u,
                  .server_node = 0x100f0e0du};
    for (unsigned i = 0; i < DP_NONCE_LEN; i++)
        h.nonce[i] = (uint8_t)(0x11 + i);
    uint8_t body[DP_HELLO_LEN + 1];
    dp_hello_encode(&h, body);
    bool layout = true;
    for (unsigned i = 0; i < DP_HELLO_LEN; i++)
        layout &= body[i] == (uint8_t)(i + 1);
    CHECK(layout, "hello body layout: tomb, node, server node (little-endian), nonce");
    dp_hello d;
    CHECK(dp_hello_decode(body, DP_HELLO_LEN, &d) == 0 && d.client_tomb == h.client_tomb &&
              d.client_node == h.client_node && d.server_node == h.server_node &&
              memcmp(d.nonce, h.nonce, DP_NONCE_LEN) == 0,
          "hello round trip");
    CHECK(dp_hello_decode(body, DP_HELLO_LEN - 1, &d) == -EPROTO &&
              dp_hello_decode(body, DP_HELLO_LEN + 1, &d) == -EPROTO,
          "a hello body of another length");

    dp_challenge ch, dc;
    for (unsigned i = 0; i < DP_NONCE_LEN; i++)
        ch.nonce[i] = (uint8_t)i;
    for (unsigned i = 0; i < DP_PROOF_LEN; i++)
        ch.proof[i] = (uint8_t)(0x80 + i);
    uint8_t cb[DP_CHALLENGE_LEN];
    dp_challenge_encode(&ch, cb);
    CHECK(memcmp(cb, ch.nonce, DP_NONCE_LEN) == 0 &&
              memcmp(cb + DP_NONCE_LEN, ch.proof, DP_PROOF_LEN) == 0,
          "challenge body layout: nonce, proof");
    CHECK(dp_challenge_decode(cb, sizeof cb, &dc) == 0 && memcmp(&dc, &ch, sizeof ch) == 0,
          "challenge round trip");
    CHECK(dp_challenge_decode(cb, sizeof cb - 1, &dc) == -EPROTO, "a short challenge body");

    CHECK(dp_range_ok(100, 0, 100) && dp_range_ok(100, 100, 0) && dp_range_ok(100, 99, 1),
          "ranges inside");
    CHECK(!dp_range_ok(100, 100, 1) && !dp_range_ok(100, 101, 0) && !dp_range_ok(100, 0, 101),
          "ranges past the end");
    CHECK(!dp_range_ok(100, UINT64_MAX, 2) && !dp_range_ok(100, 2, UINT64_MAX) &&
              !dp_range_ok(UINT64_MAX, UINT64_MAX - 1, 2),
          "overflowing ranges");
}

/* The transcript's bytes, and what a proof is bound to: the key, the side
 * that made it, every identity and both nonces. */
static void test_transcript_proofs(void)
{
    dp_handshake hs = {.client_node = 0x04030201u, .client_tomb = 0x0c0b0a0908070605ull,
                       .server_node = 0x100f0e0du, .server_tomb = 0x1817161514131211ull};
    for (unsigned i = 0; i < DP_NONCE_LEN; i++) {
        hs.client_nonce[i] = (uint8_t)(0x19 + i);
        hs.server_nonce[i] = (uint8_t)(0x39 + i);
    }
    uint8_t t[DP_TRANSCRIPT_LEN];
    dp_transcript(&hs, t);
    bool layout = DP_TRANSCRIPT_LEN == 12 + 24 + 64 && memcmp(t, "fluxon-dp-v1", 12) == 0;
    for (unsigned i = 12; i < DP_TRANSCRIPT_LEN; i++)
        layout &= t[i] == (uint8_t)(i - 11);
    CHECK(layout, "transcript: label, client node, client tomb, server node, server tomb "
                  "(little-endian), client nonce, server nonce");

    auth_key k, other;
    pair_key(&root, 1, 2, &k);
    pair_key(&root, 1, 3, &other);
    uint8_t proof[DP_PROOF_LEN], want[DP_PROOF_LEN];
    dp_handshake_prove(&k, DP_SIDE_SERVER, &hs, proof);
    auth_proof(&k, "dp-server", t, sizeof t, want);
    CHECK(memcmp(proof, want, sizeof want) == 0, "the server proof is auth_proof(K, dp-server, T)");
    dp_handshake_prove(&k, DP_SIDE_CLIENT, &hs, proof);
    auth_proof(&k, "dp-client", t, sizeof t, want);
    CHECK(memcmp(proof, want, sizeof want) == 0, "the client proof is auth_proof(K, dp-client, T)");
    CHECK(dp_handshake_check(&k, DP_SIDE_CLIENT, &hs, proof), "a client proof checks out");
    CHECK(!dp_handshake_check(&k, DP_SIDE_SERVER, &hs, proof),
          "a client proof is no server proof (reflection)");
    CHECK(!dp_handshake_check(&other, DP_SIDE_CLIENT, &hs, proof), "another pair's key");
    dp_handshake moved = hs;
    moved.client_tomb++;
    CHECK(!dp_handshake_check(&k, DP_SIDE_CLIENT, &moved, proof), "another client incarnation");
    moved = hs;
    moved.server_node++;
    CHECK(!dp_handshake_check(&k, DP_SIDE_CLIENT, &moved, proof), "another server");
    moved = hs;
    moved.server_nonce[7] ^= 1;
    CHECK(!dp_handshake_check(&k, DP_SIDE_CLIENT, &moved, proof), "another server nonce");
}

/* ---- transfers that work --------------------------------------------------------------- */

static node A, B, C, D;

/* A pulls [src, +len) of peer's segment into its [tgt, +len), checked. */
static void pull_ok_from(node *peer, uint64_t src, uint64_t tgt, uint64_t len)
{
    result r;
    int st = transfer(&A, peer, true, src, tgt, len, 10000, &r);
    CHECK(st == 0, "pull of %llu bytes from %llu to %llu (%s): %d %s", (unsigned long long)len,
          (unsigned long long)src, (unsigned long long)tgt, peer->addr, st, r.detail);
    CHECK(holds(A.seg, tgt, peer->seed, src, len), "pulled %llu bytes arrived intact",
          (unsigned long long)len);
    CHECK(intact_outside(&A, tgt, len), "pull of %llu bytes: nothing outside the target changed",
          (unsigned long long)len);
    CHECK(holds(peer->seg, src, peer->seed, src, len), "the source is unchanged");
    restore(&A, tgt, len);
}

/* A pushes its [src, +len) into peer's [tgt, +len), checked. */
static void push_ok_to(node *peer, uint64_t src, uint64_t tgt, uint64_t len)
{
    result r;
    int st = transfer(&A, peer, false, src, tgt, len, 10000, &r);
    CHECK(st == 0, "push of %llu bytes from %llu to %llu (%s): %d %s", (unsigned long long)len,
          (unsigned long long)src, (unsigned long long)tgt, peer->addr, st, r.detail);
    CHECK(holds(peer->seg, tgt, A.seed, src, len), "pushed %llu bytes arrived intact",
          (unsigned long long)len);
    CHECK(intact_outside(peer, tgt, len),
          "push of %llu bytes: nothing outside the target changed", (unsigned long long)len);
    restore(peer, tgt, len);
}

static void pull_ok(uint64_t src, uint64_t tgt, uint64_t len)
{
    pull_ok_from(&B, src, tgt, len);
}

static void push_ok(uint64_t src, uint64_t tgt, uint64_t len)
{
    push_ok_to(&B, src, tgt, len);
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

/* C has no connection to B yet, so every transfer below starts with a
 * handshake (connections are reused once it passed). */
static void test_handshake(void)
{
    result r;
    dp_stats before, after;

    /* C holds keys the master never gave it: B's challenge does not prove
     * them, so C fails before B gets anything from it but the hello. */
    C.wrong_keys = true;
    dp_engine_stats(B.e, &before);
    int st = transfer(&C, &B, true, 100, 200, MIB, 10000, &r);
    CHECK(st == FX_ESTALE && strstr(r.detail, "peer 2 did not prove the pair key"),
          "a pull with the wrong pair key fails with FX_ESTALE (%d %s)", st, r.detail);
    CHECK(intact_outside(&C, 0, 0), "nothing was written into C");
    st = transfer(&C, &B, false, 100, 200, MIB, 10000, &r);
    CHECK(st == FX_ESTALE && strstr(r.detail, "did not prove"),
          "a push with the wrong pair key fails (%d %s)", st, r.detail);
    CHECK(intact_outside(&B, 0, 0), "nothing was written into B");
    dp_engine_stats(B.e, &after);
    CHECK(after.bytes_served == before.bytes_served, "B served nothing");
    C.wrong_keys = false;

    /* Right keys, but an incarnation the member table does not list. */
    dp_engine_stats(B.e, &before);
    dp_engine_set_identity(C.e, C.id, 999);
    st = transfer(&C, &B, false, 100, 200, MIB, 10000, &r);
    CHECK(st == FX_ESTALE && strstr(r.detail, "refused our hello") &&
              strstr(r.detail, "node 3 (tomb 999) is not a live member"),
          "a push from another incarnation is refused (%d %s)", st, r.detail);
    CHECK(intact_outside(&B, 0, 0), "nothing was written into B");

    /* A node the table does not list at all. */
    dp_engine_set_identity(C.e, 7, 77);
    st = transfer(&C, &B, true, 100, 200, MIB, 10000, &r);
    CHECK(st == FX_ESTALE && strstr(r.detail, "node 7 (tomb 77) is not a live member"),
          "a pull from an unknown node is refused (%d %s)", st, r.detail);
    CHECK(intact_outside(&C, 0, 0), "nothing was written into C");

    /* A hello meant for node 1 that reached B. */
    dp_engine_set_identity(C.e, C.id, C.tomb);
    node b_as_a = {.id = A.id};
    snprintf(b_as_a.addr, sizeof b_as_a.addr, "%s", B.addr);
    st = transfer(&C, &b_as_a, true, 100, 200, MIB, 10000, &r);
    CHECK(st == FX_ESTALE && strstr(r.detail, "asked for node 1; this is node 2"),
          "a hello for another node is refused (%d %s)", st, r.detail);
    dp_engine_stats(B.e, &after);
    CHECK(after.refused - before.refused == 3, "B counted three refusals (%llu)",
          (unsigned long long)(after.refused - before.refused));
    CHECK(after.bytes_served == before.bytes_served, "and served nothing");

    /* An engine without identity refuses every hello and cannot start transfers. */
    CHECK(dp_transfer(D.e, B.id, B.addr, true, 0, 0, 1, 1000, on_done, &r) == FX_ESTALE,
          "no transfer before the identity is set");
    st = transfer(&A, &D, true, 100, 200, MIB, 10000, &r);
    CHECK(st == FX_ESTALE && strstr(r.detail, "not registered"),
          "a peer without identity refuses hellos (%d %s)", st, r.detail);
    CHECK(intact_outside(&A, 0, 0), "nothing was written into A");

    /* Fixed up, the same engines work. */
    dp_engine_set_identity(D.e, D.id, D.tomb);
    st = transfer(&C, &B, true, 4321, 1234, 3 * MIB + 1, 10000, &r);
    CHECK(st == 0 && holds(C.seg, 1234, B.seed, 4321, 3 * MIB + 1),
          "C pulls once its identity and keys are right (%d %s)", st, r.detail);
    restore(&C, 1234, 3 * MIB + 1);
    st = transfer(&A, &D, false, 4321, 1234, 3 * MIB + 1, 10000, &r);
    CHECK(st == 0 && holds(D.seg, 1234, A.seed, 4321, 3 * MIB + 1),
          "A pushes to D once D has an identity (%d %s)", st, r.detail);
    restore(&D, 1234, 3 * MIB + 1);
}

/* ---- a forged data plane ---------------------------------------------------------------- */

/* Listens where a client expects node 2, answers its HELLO with a challenge
 * made with a key it does not share with the client, and counts every byte
 * the client sends after the HELLO until it hangs up. */
typedef struct forged {
    int lfd;
    bool got_hello;
    size_t after_hello;
    volatile int done;
} forged;

static void *forged_server(void *arg)
{
    forged *f = arg;
    int fd = accept(f->lfd, NULL, NULL);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    uint8_t b[DP_HDR_LEN + DP_HELLO_LEN];
    dp_hdr h;
    dp_hello hello;
    if (fd >= 0 && dp_raw_recv_all(fd, b, sizeof b)) {
        dp_hdr_decode(b, &h);
        f->got_hello = h.op == DP_HELLO && dp_hello_decode(b + DP_HDR_LEN, DP_HELLO_LEN, &hello) == 0;
        dp_handshake hs = {.client_node = hello.client_node, .client_tomb = hello.client_tomb,
                           .server_node = hello.server_node, .server_tomb = 22};
        memcpy(hs.client_nonce, hello.nonce, DP_NONCE_LEN);
        auth_random(hs.server_nonce, DP_NONCE_LEN);
        auth_key k;
        pair_key(&wrong_root, hello.client_node, hello.server_node, &k);
        dp_challenge ch;
        memcpy(ch.nonce, hs.server_nonce, DP_NONCE_LEN);
        dp_handshake_prove(&k, DP_SIDE_SERVER, &hs, ch.proof);
        uint8_t body[DP_CHALLENGE_LEN];
        dp_challenge_encode(&ch, body);
        dp_raw_send_hdr(fd, DP_HELLO_CHALLENGE, h.id, 0, DP_CHALLENGE_LEN);
        dp_raw_send_all(fd, body, sizeof body);
        uint8_t junk[4096];
        ssize_t n;
        while ((n = recv(fd, junk, sizeof junk, 0)) > 0)
            f->after_hello += (size_t)n;
    }
    if (fd >= 0)
        close(fd);
    __atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static bool forged_done(void *arg)
{
    return __atomic_load_n(&((forged *)arg)->done, __ATOMIC_ACQUIRE);
}

static int silent_listener(int *port);

static void test_forged_server(void)
{
    forged f = {0};
    int port = 0;
    f.lfd = silent_listener(&port);
    REQUIRE(f.lfd >= 0, "a listener for the forged data plane");
    node fake = {.id = B.id};
    snprintf(fake.addr, sizeof fake.addr, "127.0.0.1:%d", port);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, forged_server, &f) == 0, "forged server thread");
    result r;
    int st = transfer(&A, &fake, true, 0, 0, 2 * MIB, 10000, &r);
    CHECK(st == FX_ESTALE && strstr(r.detail, "peer 2 did not prove the pair key"),
          "a data plane that cannot prove the pair key fails the pull (%d %s)", st, r.detail);
    CHECK(run_until(forged_done, &f, WAIT_MS), "the client hung up on the forged data plane");
    pthread_join(t, NULL);
    close(f.lfd);
    CHECK(f.got_hello, "the forged data plane got a well-formed HELLO");
    CHECK(f.after_hello == 0, "and nothing after it: no proof, no READ (%zu bytes)",
          f.after_hello);
    CHECK(intact_outside(&A, 0, 0), "nothing was written into A");
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

/* Expects the next reply on fd to refuse request id with (op, FX_EPROTO) and
 * a detail holding needle, then the server to hang up; closes fd. */
static void expect_protocol_refusal(int fd, const char *what, uint8_t op, uint64_t id,
                                    const char *needle)
{
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    bool got = dp_raw_recv_reply(fd, &h, detail, sizeof detail);
    CHECK(got && h.op == op && h.id == id && h.status == FX_EPROTO && strstr(detail, needle),
          "%s: refused with FX_EPROTO (%d) and a detail (%s)", what, got ? h.status : 0,
          got ? detail : "no reply");
    CHECK(dp_raw_hung_up(fd), "%s: then the server hung up", what);
    close(fd);
}

static void raw_read_before_hello(int port)
{
    int fd = raw_connect(port);
    dp_raw_send_hdr(fd, DP_READ, 77, 0, 100);
    dp_raw_send_hdr(fd, DP_READ, 78, 100, 100); /* pipelined, must not be answered */
    expect_protocol_refusal(fd, "READ before HELLO", DP_READ_DATA, 77, "before");
}

/* What a raw client claims when it speaks to B as node `id` of the table. */
static dp_handshake claim_to_b(uint32_t id, uint64_t tomb)
{
    return (dp_handshake){.client_node = id, .client_tomb = tomb, .server_node = B.id,
                          .server_tomb = B.tomb};
}

/* A connection to B whose handshake as node id passed (-1 if it did not). */
static int raw_authed(int port, uint32_t id)
{
    uint64_t tomb = 0;
    member_tomb(id, &tomb);
    auth_key k;
    pair_key(&root, id, B.id, &k);
    int fd = raw_connect(port);
    dp_handshake hs = claim_to_b(id, tomb);
    dp_raw_outcome o;
    if (dp_raw_handshake(fd, &hs, &k, &o) == DP_RAW_ACCEPTED && o.server_proved)
        return fd;
    fprintf(stderr, "  raw handshake as node %u: end %d, status %d, %s\n", id, o.end, o.status,
            o.detail);
    close(fd);
    return -1;
}

static void raw_stranger(int port)
{
    int fd = raw_connect(port);
    auth_key made_up;
    auth_random(&made_up, sizeof made_up);
    dp_handshake hs = claim_to_b(4242, 1);
    dp_raw_outcome o;
    dp_raw_handshake(fd, &hs, &made_up, &o);
    CHECK(o.end == DP_RAW_REFUSED_HELLO && o.status == FX_ESTALE &&
              strstr(o.detail, "not a live member"),
          "a stranger's hello is refused with FX_ESTALE (end %d: %s)", o.end, o.detail);
    CHECK(dp_raw_hung_up(fd), "stranger: then the server hung up");
    close(fd);
}

/* Node 1's identity with a key that is not K_12: B's proof does not check
 * out, and the proof made anyway is refused. */
static void raw_wrong_proof(int port)
{
    int fd = raw_connect(port);
    auth_key k;
    pair_key(&wrong_root, 1, B.id, &k);
    dp_handshake hs = claim_to_b(1, 11);
    dp_raw_outcome o;
    dp_raw_handshake(fd, &hs, &k, &o);
    CHECK(!o.server_proved, "B's challenge does not prove a key B does not hold");
    CHECK(o.end == DP_RAW_REFUSED_PROOF && o.status == FX_ESTALE &&
              strstr(o.detail, "node 1 failed to prove its pair key"),
          "a proof made with the wrong key is refused with FX_ESTALE (end %d: %s)", o.end,
          o.detail);
    CHECK(dp_raw_hung_up(fd), "wrong proof: then the server hung up");
    close(fd);
}

/* A READ after the challenge, without the proof: refused like one before HELLO. */
static void raw_read_after_challenge(int port)
{
    int fd = raw_connect(port);
    dp_raw_send_hello(fd, &(dp_hello){.client_tomb = 11, .client_node = 1, .server_node = B.id});
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    uint8_t body[DP_CHALLENGE_LEN];
    CHECK(dp_raw_recv_reply(fd, &h, detail, sizeof detail) && h.op == DP_HELLO_CHALLENGE &&
              h.id == DP_RAW_HELLO_ID && dp_raw_recv_all(fd, body, sizeof body),
          "a member's hello is challenged");
    dp_raw_send_hdr(fd, DP_READ, 9, 0, 100);
    expect_protocol_refusal(fd, "READ before the proof", DP_READ_DATA, 9,
                            "before a successful HELLO");
}

static void raw_proof_before_hello(int port)
{
    int fd = raw_connect(port);
    uint8_t proof[DP_PROOF_LEN] = {0};
    dp_raw_send_hdr(fd, DP_HELLO_PROOF, 3, 0, DP_PROOF_LEN);
    dp_raw_send_all(fd, proof, sizeof proof);
    expect_protocol_refusal(fd, "HELLO_PROOF before HELLO", DP_HELLO_REFUSED, 3,
                            "without a pending HELLO_CHALLENGE");
}

/* A well-behaved raw client: the handshake, a READ and a WRITE, then a READ out of range. */
static void raw_conforming(int port)
{
    int fd = raw_authed(port, 1);
    CHECK(fd >= 0, "raw handshake as node 1 with K_12 passes, and B proved K_12");
    if (fd < 0)
        return;
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
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
    int fd = raw_authed(port, 1);
    CHECK(fd >= 0, "handshake passed");
    if (fd < 0)
        return;
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
    raw_stranger(j->port);
    raw_wrong_proof(j->port);
    raw_read_after_challenge(j->port);
    raw_proof_before_hello(j->port);
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

/* ---- a peer that left ------------------------------------------------------------------------ */

/* Node 1 and node 3 hold authenticated connections to B; when B forgets
 * node 1 (it left the member table), node 1's connection closes at once and
 * node 3's is served on. */
typedef struct leaver {
    int port;
    int stage; /* 1: both connections passed (thread); 2: B forgot node 1 (main); 3: done */
} leaver;

static void *leaver_thread(void *arg)
{
    leaver *l = arg;
    int gone = raw_authed(l->port, 1);
    int stays = raw_authed(l->port, 3);
    CHECK(gone >= 0 && stays >= 0, "node 1 and node 3 connected to B");
    __atomic_store_n(&l->stage, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&l->stage, __ATOMIC_ACQUIRE) < 2)
        usleep(1000);
    if (gone >= 0) {
        CHECK(dp_raw_hung_up(gone), "B closed node 1's authenticated connection when it left");
        close(gone);
    }
    if (stays >= 0) {
        dp_raw_send_hdr(stays, DP_READ, 12, 4096, 64);
        dp_hdr h;
        char detail[DP_DETAIL_MAX + 1];
        uint8_t data[64];
        CHECK(dp_raw_recv_reply(stays, &h, detail, sizeof detail) && h.op == DP_READ_DATA &&
                  h.status == 0 && dp_raw_recv_all(stays, data, sizeof data) &&
                  holds(data, 0, B.seed, 4096, sizeof data),
              "node 3's connection is served on");
        close(stays);
    }
    __atomic_store_n(&l->stage, 3, __ATOMIC_RELEASE);
    return NULL;
}

static bool leaver_ready(void *arg)
{
    return __atomic_load_n(&((leaver *)arg)->stage, __ATOMIC_ACQUIRE) >= 1;
}

static bool leaver_done(void *arg)
{
    return __atomic_load_n(&((leaver *)arg)->stage, __ATOMIC_ACQUIRE) >= 3;
}

static void test_forget_peer(void)
{
    leaver l = {.port = dp_engine_port(B.e)};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, leaver_thread, &l) == 0, "leaver thread");
    bool ready = run_until(leaver_ready, &l, WAIT_MS);
    CHECK(ready, "the raw connections passed their handshakes");
    dp_engine_forget_peer(B.e, A.id);
    __atomic_store_n(&l.stage, 2, __ATOMIC_RELEASE);
    CHECK(run_until(leaver_done, &l, WAIT_MS), "the leaver thread finished");
    pthread_join(t, NULL);
    /* A's own connections to B went the same way; B's table still lists A,
     * so A connects and proves itself afresh. */
    pull_ok(77, 7777, MIB + 5);
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
    int peer = raw_authed(j->port, 1); /* the last place: passes the handshake */
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    CHECK(peer >= 0, "a peer within the cap passes the handshake");
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
    /* B: the raw handshake helpers speak to B. A's own connections to B are
     * open already and stay within the cap. */
    dp_engine_set_limits(B.e, STRANGER_CAP + DP_CONNS_PER_PEER, STRANGER_HELLO_MS);
    CHECK(run_raw_clients(strangers_thread, &B), "strangers finished");
    dp_engine_set_limits(B.e, DP_DEFAULT_MAX_PEER_CONNS, DP_DEFAULT_HELLO_MS);
    result r;
    CHECK(transfer(&A, &B, true, 0, 0, MIB, 10000, &r) == 0 && holds(A.seg, 0, B.seed, 0, MIB),
          "B still serves its peers: %s", r.detail);
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

/* ---- addresses: names and IPv6 ------------------------------------------------------- */

/* A peer listening on "localhost" is dialled by name (an asynchronous lookup
 * before the connect), one on "[::1]" over IPv6; a name that does not
 * resolve fails the transfer, and a peer forgotten while its name is looked
 * up fails its transfer at once (the engine still closes cleanly at the end). */
static void test_addresses(node *named, node *v6)
{
    pull_ok_from(named, 4099, 8 * MIB + 5, MIB + 3);
    push_ok_to(named, 77, 3 * MIB, 2 * MIB + 1);
    if (v6->e) {
        CHECK(strncmp(v6->addr, "[::1]:", 6) == 0, "the IPv6 peer is dialled as %s", v6->addr);
        pull_ok_from(v6, 12345, 9 * MIB, 3 * MIB + 7);
        push_ok_to(v6, 5, 11 * MIB + 1, MIB);
    } else {
        printf("no IPv6 loopback here: no transfer over [::1]\n");
    }

    node nowhere = {.id = 5};
    snprintf(nowhere.addr, sizeof nowhere.addr, "nosuch.invalid:1");
    result r;
    int st = transfer(&A, &nowhere, true, 0, 0, 10, 5000, &r);
    CHECK(st == FX_ECONN && strstr(r.detail, "resolve") && strstr(r.detail, "nosuch.invalid"),
          "a name that does not resolve fails with FX_ECONN naming it (%d %s)", st, r.detail);

    /* A fresh connection (the peer's others are gone with forget_peer). */
    dp_engine_forget_peer(A.e, named->id);
    memset(&r, 0, sizeof r);
    CHECK(dp_transfer(A.e, named->id, named->addr, true, 0, 0, MIB, 5000, on_done, &r) == 0,
          "a transfer to %s starts", named->addr);
    uv_run(&loop, UV_RUN_NOWAIT); /* starts it: the name is being looked up */
    dp_engine_forget_peer(A.e, named->id);
    CHECK(run_until(is_done, &r, WAIT_MS) && r.calls == 1 && r.status == FX_ECONN,
          "forgotten while connecting: FX_ECONN (%d calls, %d %s)", r.calls, r.status, r.detail);
    CHECK(intact_outside(&A, 0, 0), "nothing was written");
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
    test_codec_handshake_range();
    REQUIRE(auth_init() == 0, "libsodium starts");
    auth_random(&root, sizeof root);
    auth_random(&wrong_root, sizeof wrong_root);
    test_transcript_proofs();

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
    test_handshake();
    test_forged_server();
    test_raw_clients();
    test_forget_peer();
    test_strangers();
    test_peer_closes();
    test_timeouts();
    node E, F = {0};
    node_start_on(&E, 5, 55, 0xE1E, true, "localhost");
    if (test_ipv6_loopback())
        node_start_on(&F, 6, 66, 0xF00, true, "[::1]");
    test_addresses(&E, &F);

    /* Orderly close: every handle goes, the loop ends by itself. */
    dp_engine_close(A.e);
    dp_engine_close(B.e);
    dp_engine_close(C.e);
    dp_engine_free(A.e);
    dp_engine_free(B.e);
    dp_engine_free(C.e);
    dp_engine_close(E.e);
    dp_engine_free(E.e);
    dp_engine_close(F.e);
    dp_engine_free(F.e);
    uv_close((uv_handle_t *)&watchdog, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(loop_idle(NULL), "no handle left after close");
    CHECK(uv_loop_close(&loop) == 0, "the loop closes cleanly");
    munmap(A.seg, SEG);
    munmap(B.seg, SEG);
    munmap(C.seg, SEG);
    munmap(D.seg, SEG);
    munmap(E.seg, SEG);
    if (F.seg)
        munmap(F.seg, SEG);
    return test_finish();
}
