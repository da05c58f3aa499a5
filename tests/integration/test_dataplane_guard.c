/*
 * test_dataplane_guard.c - a real fluxon-owner's data plane lets in only a
 * live member that proves the pair key of its incarnation and the owner's,
 * refuses what it must, logs it, hangs up, and keeps serving.
 *
 * One master (--heartbeat-timeout 600s, so the silent test-side members stay
 * registered) and one owner, B. Two raw members (tests/util/raw_member.h)
 * register: C, the prober, and A. Each learns the owner's data-plane address
 * and its pair keys from its own copy of the member table (C holds K_BC and
 * K_AC, never K_AB). Raw TCP clients then speak the data-plane wire format
 * (dp_frame.h, dp_raw.h) to the owner:
 *
 *   - a READ and a WRITE before any HELLO: refused with FX_EPROTO;
 *   - a HELLO from a stranger that never registered: refused with FX_ESTALE;
 *   - a stranger claiming C's identity (node id and tomb tag are in every
 *     member's table) with a made-up key: challenged, and its proof refused;
 *   - C claiming to be A, proving with K_BC or with K_AC: the proof is
 *     refused (A itself passes with K_AB);
 *   - C's node id with tomb_tag + 1, a node id nobody has, and a HELLO that
 *     names another server node: refused with FX_ESTALE;
 *   - after a valid handshake: a READ at offset == segment size, a READ whose
 *     offset + len overflows uint64, a WRITE straddling the segment's end, a
 *     WRITE at the end and a WRITE with an overflowing offset: refused with
 *     FX_EINVAL, and the bytes at the segment's end are unchanged;
 *   - after a valid handshake: a READ of the range RouteInfo names for a
 *     value put through the C API returns exactly the value's bytes;
 *   - a third raw member that leaves (its master connection closes): the
 *     owner closes its authenticated data connection at once and refuses its
 *     hellos; registered again (a new incarnation) it passes with its new
 *     keys, and neither its old identity nor its old key do.
 *
 * Every refusal is answered, then the owner hangs up; each kind leaves a
 * WARN line in the owner's log; fx_put / fx_get through the owner still work
 * at the end. The accepted READ shows the refusals are not a dead port.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "cluster.h"
#include "dp_raw.h"
#include "fluxon/fluxon.h"
#include "owner/dataplane/dp_frame.h"
#include "raw_member.h"
#include "testlib.h"
#include "values.h"

#define SEG (64ull << 20)
#define VALUE_LEN 300001u

static test_cluster tc;
static fx_client *cl;
static raw_member rm;   /* C, the prober */
static raw_member rm_a; /* A, whose identity C tries to take */
static uint32_t owner_node;
static uint64_t owner_tomb;
static uint32_t unknown_node; /* a node id nobody registered */
static char dp_host[64];
static int dp_port;

/* ---- values ------------------------------------------------------------------------------ */

static uint8_t *make_value(uint64_t seed, size_t len)
{
    return value_make(seed | 1, len);
}

static bool get_is(const char *key, const uint8_t *want, size_t len)
{
    fx_holder *h = NULL;
    int r = fx_get(cl, key, strlen(key), &h);
    if (r != 0) {
        fprintf(stderr, "  get %s: %s (%s)\n", key, fx_strerror(r), fx_last_error_detail());
        return false;
    }
    bool ok = fx_holder_len(h) == len && memcmp(fx_holder_data(h), want, len) == 0;
    fx_holder_release(h);
    return ok;
}

/* ---- raw data-plane client ---------------------------------------------------------------- */

static int dp_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)dp_port)};
    REQUIRE(inet_pton(AF_INET, dp_host, &sa.sin_addr) == 1, "data-plane host %s", dp_host);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    REQUIRE(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect to the data plane %s:%d: %s",
            dp_host, dp_port, strerror(errno));
    return fd;
}

/* What member m's handshake with the owner claims: m's identity, and the
 * owner's incarnation from m's member table. */
static dp_handshake claim_of(uint32_t node, uint64_t tomb)
{
    return (dp_handshake){.client_node = node, .client_tomb = tomb, .server_node = owner_node,
                          .server_tomb = owner_tomb};
}

/* m's pair key with the owner (m's member table must list the owner). */
static auth_key key_with_owner(const raw_member *m)
{
    auth_key k;
    uint64_t tomb = 0;
    REQUIRE(raw_member_pair_key(m, owner_node, &tomb, &k), "member %u holds a key for the owner",
            m->node_id);
    return k;
}

/* A connection whose handshake as member m passed; -1 when it was refused
 * (the owner may not have the member table with m in it yet). */
static int handshake_as(const raw_member *m)
{
    int fd = dp_connect();
    dp_handshake hs = claim_of(m->node_id, m->tomb_tag);
    auth_key k = key_with_owner(m);
    dp_raw_outcome o;
    if (dp_raw_handshake(fd, &hs, &k, &o) == DP_RAW_ACCEPTED) {
        CHECK(o.server_proved, "the owner proved K with member %u", m->node_id);
        return fd;
    }
    close(fd);
    return -1;
}

/* handshake_as(m), retried while the owner may still be waiting for the
 * member table that lists m. */
static int handshake_as_soon(const raw_member *m)
{
    int fd = -1;
    for (int t = 0; t < 100 && fd < 0; t++) {
        fd = handshake_as(m);
        if (fd < 0)
            usleep(50 * 1000);
    }
    return fd;
}

static int authed_conn(void)
{
    int fd = handshake_as(&rm);
    REQUIRE(fd >= 0, "a handshake as the registered raw member passes");
    return fd;
}

/* Polls m's master connection until its member table lists node. */
static void await_in_table(raw_member *m, uint32_t node)
{
    uint64_t tomb;
    auth_key k;
    for (int t = 0; t < 100 && !raw_member_pair_key(m, node, &tomb, &k); t++)
        raw_member_poll(m, 50);
}

/* ---- 0. setup: who is who, and where the owner's data plane listens -------------------- */

static void setup(void)
{
    fx_owner_stat st[8];
    size_t n = 0;
    REQUIRE(fx_stat(cl, st, 8, &n) == 0, "stat");
    for (size_t i = 0; i < n && i < 8; i++)
        if (strcmp(st[i].name, "owner0") == 0)
            owner_node = st[i].node_id;
    REQUIRE(owner_node != 0, "owner0 has a node id");

    /* Segments of 1 byte: never a placement target. */
    REQUIRE(raw_member_register(&rm, tc.master_addr, "test", "dp-prober", 1) == 0,
            "raw member C registers");
    REQUIRE(raw_member_register(&rm_a, tc.master_addr, "test", "dp-other", 1) == 0,
            "raw member A registers");
    await_in_table(&rm, owner_node);
    await_in_table(&rm, rm_a.node_id);
    await_in_table(&rm_a, owner_node);
    const char *addr = raw_member_data_addr(&rm, owner_node);
    REQUIRE(*addr, "the member table names owner0's data-plane address");
    const char *colon = strrchr(addr, ':');
    REQUIRE(colon && (size_t)(colon - addr) < sizeof dp_host, "data address %s", addr);
    memcpy(dp_host, addr, (size_t)(colon - addr));
    dp_host[colon - addr] = 0;
    dp_port = atoi(colon + 1);
    REQUIRE(dp_port > 0, "data-plane port in %s", addr);
    auth_key k;
    REQUIRE(raw_member_pair_key(&rm, owner_node, &owner_tomb, &k),
            "C's table lists the owner with K_BC");
    auth_key k_ac, k_own;
    uint64_t tomb;
    CHECK(raw_member_pair_key(&rm, rm_a.node_id, &tomb, &k_ac) && tomb == rm_a.tomb_tag,
          "C's table lists A with A's tomb tag and K_AC");
    CHECK(!raw_member_pair_key(&rm, rm.node_id, &tomb, &k_own), "C's own entry carries no key");
    auth_key k_ab = key_with_owner(&rm_a);
    CHECK(memcmp(&k, &k_ab, sizeof k) != 0 && memcmp(&k, &k_ac, sizeof k) != 0 &&
              memcmp(&k_ab, &k_ac, sizeof k) != 0,
          "K_BC, K_AB and K_AC differ");

    /* The owner learns about us from the member table the master pushes. */
    int fd = handshake_as_soon(&rm);
    REQUIRE(fd >= 0, "the owner accepts the raw member's handshake once it knows the member");
    close(fd);
}

/* ---- 1. requests before HELLO ----------------------------------------------------------- */

static void before_hello(void)
{
    int fd = dp_connect();
    dp_raw_send_hdr(fd, DP_READ, 77, 0, 100);
    dp_raw_send_hdr(fd, DP_READ, 78, 100, 100); /* pipelined: must not be answered */
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    bool got = dp_raw_recv_reply(fd, &h, detail, sizeof detail);
    CHECK(got && h.op == DP_READ_DATA && h.id == 77 && h.status == FX_EPROTO,
          "READ before HELLO refused with FX_EPROTO (status %d: %s)", got ? h.status : 0, detail);
    CHECK(dp_raw_hung_up(fd), "READ before HELLO: then the owner hung up");
    close(fd);

    fd = dp_connect();
    uint8_t w[64];
    memset(w, 0xee, sizeof w);
    dp_raw_send_hdr(fd, DP_WRITE, 79, 0, sizeof w);
    dp_raw_send_all(fd, w, sizeof w);
    got = dp_raw_recv_reply(fd, &h, detail, sizeof detail);
    CHECK(got && h.op == DP_WRITE_ACK && h.id == 79 && h.status == FX_EPROTO,
          "WRITE before HELLO refused with FX_EPROTO (status %d: %s)", got ? h.status : 0, detail);
    CHECK(dp_raw_hung_up(fd), "WRITE before HELLO: then the owner hung up");
    close(fd);
}

/* ---- 2. and 3. handshakes that must not pass ---------------------------------------- */

/* Sends one HELLO claiming (node, tomb) and naming server, with a READ right
 * behind it, and expects HELLO_REFUSED with FX_ESTALE, then a hang-up. */
static void refused_hello(const char *what, uint32_t node, uint64_t tomb, uint32_t server)
{
    int fd = dp_connect();
    dp_hello hello = {.client_tomb = tomb, .client_node = node, .server_node = server};
    auth_random(hello.nonce, sizeof hello.nonce);
    dp_raw_send_hello(fd, &hello);
    /* A request right behind the hello must not be served either. */
    dp_raw_send_hdr(fd, DP_READ, 43, 0, 16);
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    bool got = dp_raw_recv_reply(fd, &h, detail, sizeof detail);
    CHECK(got && h.op == DP_HELLO_REFUSED && h.id == DP_RAW_HELLO_ID && h.status == FX_ESTALE,
          "%s: HELLO refused with FX_ESTALE (op %d, status %d: %s)", what, got ? h.op : 0,
          got ? h.status : 0, detail);
    CHECK(dp_raw_hung_up(fd), "%s: then the owner hung up", what);
    close(fd);
}

/* Claims (node, tomb) and proves with key: the owner must challenge (the
 * identity is live), prove a key other than `key`, and refuse the proof. */
static void refused_proof(const char *what, uint32_t node, uint64_t tomb, const auth_key *key)
{
    int fd = dp_connect();
    dp_handshake hs = claim_of(node, tomb);
    dp_raw_outcome o;
    dp_raw_handshake(fd, &hs, key, &o);
    CHECK(!o.server_proved, "%s: the owner's challenge proves another key", what);
    CHECK(o.end == DP_RAW_REFUSED_PROOF && o.status == FX_ESTALE &&
              strstr(o.detail, "failed to prove its pair key"),
          "%s: the proof is refused with FX_ESTALE (end %d, status %d: %s)", what, o.end, o.status,
          o.detail);
    CHECK(dp_raw_hung_up(fd), "%s: then the owner hung up", what);
    close(fd);
}

static void bad_hellos(void)
{
    refused_hello("stranger that never registered", 4242, 1, owner_node);

    /* Node ids and tomb tags are in every member's table: the key is what
     * nobody else holds. */
    auth_key made_up;
    auth_random(&made_up, sizeof made_up);
    refused_proof("stranger claiming C's identity with a made-up key", rm.node_id, rm.tomb_tag,
                  &made_up);
    auth_key k_bc = key_with_owner(&rm), k_ac;
    uint64_t tomb;
    REQUIRE(raw_member_pair_key(&rm, rm_a.node_id, &tomb, &k_ac), "C holds K_AC");
    refused_proof("C claiming to be A with K_BC", rm_a.node_id, rm_a.tomb_tag, &k_bc);
    refused_proof("C claiming to be A with K_AC", rm_a.node_id, rm_a.tomb_tag, &k_ac);
    int fd = handshake_as_soon(&rm_a);
    CHECK(fd >= 0, "A itself passes with K_AB");
    if (fd >= 0)
        close(fd);

    refused_hello("C's node id, tomb_tag + 1", rm.node_id, rm.tomb_tag + 1, owner_node);
    unknown_node = rm.node_id + 1000;
    if (unknown_node == owner_node)
        unknown_node++;
    refused_hello("unknown node id", unknown_node, rm.tomb_tag, owner_node);
    refused_hello("a hello meant for node A", rm.node_id, rm.tomb_tag, rm_a.node_id);
}

/* ---- 4. ranges outside the segment -------------------------------------------------------- */

/* After a valid HELLO, sends a READ of [off, +len) and expects FX_EINVAL + hang-up. */
static void refused_read(const char *what, uint64_t off, uint32_t len)
{
    int fd = authed_conn();
    dp_raw_send_hdr(fd, DP_READ, 90, off, len);
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    bool got = dp_raw_recv_reply(fd, &h, detail, sizeof detail);
    CHECK(got && h.op == DP_READ_DATA && h.id == 90 && h.status == FX_EINVAL && h.offset == off,
          "%s: READ refused with FX_EINVAL (op %d, status %d: %s)", what, got ? h.op : 0,
          got ? h.status : 0, detail);
    CHECK(dp_raw_hung_up(fd), "%s: then the owner hung up", what);
    close(fd);
}

static void refused_write(const char *what, uint64_t off, uint32_t len)
{
    int fd = authed_conn();
    uint8_t *w = malloc(len);
    memset(w, 0xee, len);
    dp_raw_send_hdr(fd, DP_WRITE, 91, off, len);
    dp_raw_send_all(fd, w, len); /* may fail once the owner hangs up: that is fine */
    free(w);
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    bool got = dp_raw_recv_reply(fd, &h, detail, sizeof detail);
    CHECK(got && h.op == DP_WRITE_ACK && h.id == 91 && h.status == FX_EINVAL,
          "%s: WRITE refused with FX_EINVAL (op %d, status %d: %s)", what, got ? h.op : 0,
          got ? h.status : 0, detail);
    CHECK(dp_raw_hung_up(fd), "%s: then the owner hung up", what);
    close(fd);
}

/* Reads [off, +len) of the owner's segment over an accepted connection. */
static bool dp_read(int fd, uint64_t id, uint64_t off, uint32_t len, uint8_t *out)
{
    dp_raw_send_hdr(fd, DP_READ, id, off, len);
    dp_hdr h = {0};
    char detail[DP_DETAIL_MAX + 1];
    if (!dp_raw_recv_reply(fd, &h, detail, sizeof detail) || h.op != DP_READ_DATA || h.id != id ||
        h.status != 0 || h.offset != off || h.len != len) {
        fprintf(stderr, "  READ [%llu, +%u): op %d status %d %s\n", (unsigned long long)off, len,
                h.op, h.status, detail);
        return false;
    }
    return dp_raw_recv_all(fd, out, len);
}

static void bad_ranges(void)
{
    enum { TAIL = 4096 };
    uint8_t before[TAIL], after[TAIL];
    int fd = authed_conn();
    bool ok = dp_read(fd, 1, SEG - TAIL, TAIL, before);
    CHECK(ok, "READ of the segment's last %d bytes is served", TAIL);
    close(fd);

    refused_read("offset == segment size", SEG, 1);
    refused_read("straddling the end", SEG - 10, 20);
    refused_read("offset + len overflows uint64", UINT64_MAX - 7, 16);

    refused_write("WRITE at offset == segment size", SEG, 64);
    refused_write("WRITE straddling the end", SEG - TAIL, 2 * TAIL);
    refused_write("WRITE whose offset + len overflows uint64", UINT64_MAX - 100, 4096);

    fd = authed_conn();
    ok = ok && dp_read(fd, 2, SEG - TAIL, TAIL, after);
    CHECK(ok && memcmp(before, after, TAIL) == 0,
          "the refused WRITEs left the segment's last %d bytes unchanged", TAIL);
    bool any_ee = false;
    for (int i = 0; i < TAIL && ok; i++)
        any_ee |= after[i] == 0xee && before[i] != 0xee;
    CHECK(!any_ee, "no byte of a refused WRITE reached the segment");
    close(fd);
}

/* ---- 5. the accepted path reads exactly the value --------------------------------------- */

static void valid_read(const char *key, const uint8_t *value, size_t len)
{
    Fx__RouteInfoReq req = FX__ROUTE_INFO_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = strlen(key), .data = (uint8_t *)key};
    ProtobufCMessage *m = raw_member_call(&rm, MSG_ROUTE_INFO, &req.base, 5000);
    REQUIRE(m && msg_status(m) == 0, "RouteInfo %s: %s", key, m ? msg_detail(m) : "no answer");
    Fx__RouteInfoResp *r = (Fx__RouteInfoResp *)m;
    CHECK(r->len == len, "RouteInfo length %llu == %zu", (unsigned long long)r->len, len);
    bool found = false;
    uint64_t off = 0;
    for (size_t i = 0; i < r->n_replicas; i++)
        if (r->replicas[i]->node_id == owner_node && r->replicas[i]->memory) {
            found = true;
            off = r->replicas[i]->memory_offset;
        }
    msg_free(m);
    REQUIRE(found, "%s has a memory replica on owner0", key);

    /* Two READs pipelined on one connection: the halves of the value. */
    int fd = authed_conn();
    uint8_t *got = malloc(len);
    uint32_t half = (uint32_t)(len / 2);
    bool ok = dp_read(fd, 10, off, half, got) &&
              dp_read(fd, 11, off + half, (uint32_t)(len - half), got + half);
    CHECK(ok && memcmp(got, value, len) == 0,
          "an accepted READ of [%llu, +%zu) returns exactly the value's bytes",
          (unsigned long long)off, len);
    free(got);
    close(fd);
}

/* ---- 6. a member that leaves, and comes back ---------------------------------------- */

static void departed_member(void)
{
    raw_member old;
    REQUIRE(raw_member_register(&old, tc.master_addr, "test", "dp-leaver", 1) == 0,
            "raw member L registers");
    await_in_table(&old, owner_node);
    int fd = handshake_as_soon(&old);
    REQUIRE(fd >= 0, "L's handshake passes once the owner knows it");
    uint8_t buf[64];
    CHECK(dp_read(fd, 20, 0, sizeof buf, buf), "the owner serves L while it is a member");
    uint32_t old_node = old.node_id;
    uint64_t old_tomb = old.tomb_tag;
    auth_key old_key = key_with_owner(&old);

    raw_member_close(&old); /* it left: the master drops it and tells the owner */
    CHECK(dp_raw_hung_up(fd), "the owner closed L's authenticated data connection when L left");
    close(fd);
    refused_hello("L after it left", old_node, old_tomb, owner_node);

    raw_member again;
    REQUIRE(raw_member_register(&again, tc.master_addr, "test", "dp-leaver", 1) == 0,
            "L registers again");
    CHECK(again.node_id != old_node || again.tomb_tag != old_tomb, "a new incarnation");
    await_in_table(&again, owner_node);
    fd = handshake_as_soon(&again);
    CHECK(fd >= 0, "L's new incarnation passes with its new key");
    if (fd >= 0)
        close(fd);
    refused_hello("L's old incarnation after it registered again", old_node, old_tomb,
                  owner_node);
    refused_proof("L's new identity with its old key", again.node_id, again.tomb_tag, &old_key);
    raw_member_close(&again);
}

/* ---- 7. the owner's log ------------------------------------------------------------------- */

/* True when a WARN line of the log holds both needles. */
static bool log_has(const char *log, const char *a, const char *b)
{
    for (const char *line = log; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char buf[2048];
        if (n >= sizeof buf)
            n = sizeof buf - 1;
        memcpy(buf, line, n);
        buf[n] = 0;
        if (strstr(buf, " WARN ") && strstr(buf, a) && strstr(buf, b))
            return true;
        line = end ? end + 1 : NULL;
    }
    return false;
}

static char *read_owner_log(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/owner0.log", tc.dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    size_t k;
    while ((k = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap)
            s = realloc(s, cap *= 2);
    }
    s[n] = 0;
    fclose(f);
    return s;
}

static void check_log(void)
{
    char *log = read_owner_log();
    REQUIRE(log, "owner0.log readable");
    CHECK(log_has(log, "refused READ", "before a successful HELLO"), "WARN for READ before HELLO");
    CHECK(log_has(log, "refused WRITE", "before a successful HELLO"),
          "WARN for WRITE before HELLO");
    char who[96];
    snprintf(who, sizeof who, "node %u failed to prove its pair key", rm_a.node_id);
    CHECK(log_has(log, "refused HELLO_PROOF", who), "WARN for C claiming A (%s)", who);
    CHECK(log_has(log, "refused HELLO", "node 4242 (tomb 1) is not a live member"),
          "WARN for a stranger");
    snprintf(who, sizeof who, "node %u asked for node %u", rm.node_id, rm_a.node_id);
    CHECK(log_has(log, "refused HELLO", who), "WARN for a hello meant for another node (%s)", who);
    snprintf(who, sizeof who, "node %u (tomb %llu) is not a live member", rm.node_id,
             (unsigned long long)(rm.tomb_tag + 1));
    CHECK(log_has(log, "refused HELLO", who), "WARN for a stale tomb tag (%s)", who);
    snprintf(who, sizeof who, "node %u (tomb %llu) is not a live member", unknown_node,
             (unsigned long long)rm.tomb_tag);
    CHECK(log_has(log, "refused HELLO", who), "WARN for an unknown node (%s)", who);
    CHECK(log_has(log, "refused READ", "outside the segment"), "WARN for a READ out of range");
    CHECK(log_has(log, "refused WRITE", "outside the segment"), "WARN for a WRITE out of range");
    free(log);
}

int main(void)
{
    const char *args[] = {"--heartbeat-timeout", "600s", NULL};
    REQUIRE(cluster_start_n(&tc, 1, SEG, args) == 0, "cluster start");
    int err = 0;
    cl = fx_connect(tc.sockets[0], &err);
    REQUIRE(cl, "connect: %s", fx_strerror(err));

    const char *key = "guarded";
    uint8_t *value = make_value(1, VALUE_LEN);
    int r = fx_put(cl, key, strlen(key), value, VALUE_LEN);
    REQUIRE(r == 0, "put %s: %s (%s)", key, fx_strerror(r), fx_last_error_detail());

    setup();
    before_hello();
    bad_hellos();
    bad_ranges();
    valid_read(key, value, VALUE_LEN);
    departed_member();

    /* The owner still serves its clients. */
    CHECK(get_is(key, value, VALUE_LEN), "fx_get of %s after the probes", key);
    uint8_t *v2 = make_value(2, 70000);
    r = fx_put(cl, "after-probes", 12, v2, 70000);
    CHECK(r == 0, "fx_put after the probes: %s (%s)", fx_strerror(r), fx_last_error_detail());
    CHECK(get_is("after-probes", v2, 70000), "fx_get of a value put after the probes");
    free(v2);

    check_log();

    free(value);
    raw_member_close(&rm);
    raw_member_close(&rm_a);
    fx_close(cl);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
    return test_finish();
}
