/*
 * test_get_lanes.c - the owner's get threads (src/owner/get_lanes.c): a
 * connection that asks for a get lane in its ExternalHello gets one end of a
 * socket pair served by a thread beside the owner's loop, which answers gets
 * from the get cache and nothing the loop must do.
 *
 * One master and one owner (64 MiB segment, default get_threads 2), spoken to
 * with raw frames (util/raw_external.c) beside a C API client `api` that puts
 * and deletes:
 *   lane      an attaching connection that asks gets a lane fd, one that does
 *             not ask gets none;
 *   cached    a key the loop answered (and so cached) is answered on the lane
 *             with the loop's offset and length, source memory; a key never
 *             read, and a missing one, get holder_id 0 (ask the loop), not an
 *             error; the lane's hits reach the owner's hits_memory;
 *   versions  after an overwrite returns, the lane never answers the old
 *             version; after a delete returns, it answers no holder;
 *   release   a lane holding pins the value's memory after a delete, and its
 *             release on the lane frees it;
 *   session   the session's end (its first connection closed) frees what the
 *             lane holds, later lane gets fail with FX_ECONN, and the lane
 *             closing last ends the session (the owner stays up);
 *   refused   a put, an oversized key and a malformed frame on a lane close
 *             it or fail, and the owner goes on;
 *   threads   C API clients on two threads read what they wrote through the
 *             lanes (values checked byte for byte);
 *   hint      a C API client sends a key that missed once straight to the
 *             loop (the get threads, fx-get-N, make no system call for it), and back
 *             to the lanes once the loop has cached the key; the first get
 *             after its own put goes to the loop too, and the holders the
 *             loop gave (single or batch) are released to the loop;
 *   none      with get_threads 0 no lane is given and gets still work;
 *   cap       lanes outlive the connections that asked for them, so they are
 *             bounded on their own (max_client_connections: 4): a fifth is
 *             refused (the connection attaches without one) while the four
 *             still answer, and once one closes a new one is given.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "net/msg.h"
#include "raw_external.h"
#include "testlib.h"

#define SEG (64ull << 20)
#define BIG (1u << 20)
#define WINDOW_MS 3000 /* lanes pass releases on every 10 ms; the master acks soon after */

static test_cluster tc;

static int put_fill(fx_client *c, const char *key, char fill, size_t len)
{
    char *buf = malloc(len);
    if (!buf)
        return FX_ENOMEM;
    memset(buf, fill, len);
    int r = fx_put(c, key, strlen(key), buf, len);
    free(buf);
    return r;
}

typedef struct got {
    int status; /* -1: no answer (the connection closed) */
    uint64_t holder_id, offset, len;
    uint32_t source;
} got;

static got raw_get(int fd, const char *key, size_t klen)
{
    Fx__ExternalGetReq req = FX__EXTERNAL_GET_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)key};
    ProtobufCMessage *m = raw_external_call(fd, MSG_EXT_GET, &req.base);
    got g = {.status = -1};
    if (m) {
        Fx__ExternalGetResp *r = (Fx__ExternalGetResp *)m;
        g = (got){msg_status(m), r->holder_id, r->offset, r->len, r->source};
    }
    msg_free(m);
    return g;
}

static got get_key(int fd, const char *key)
{
    return raw_get(fd, key, strlen(key));
}

/* ExternalDeleteAck of one holder (one-way, as the client sends it). */
static int raw_release(int fd, uint64_t holder_id)
{
    Fx__ExternalDeleteAckReq req = FX__EXTERNAL_DELETE_ACK_REQ__INIT;
    req.n_holder_ids = 1;
    req.holder_ids = &holder_id;
    size_t len;
    uint8_t *buf = msg_encode(MSG_EXT_DELETE_ACK, FRAME_ONEWAY, 0, &req.base, &len);
    int ok = buf && send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len;
    free(buf);
    return ok ? 0 : -1;
}

static bool answers_ping(int fd)
{
    Fx__ExternalPingReq req = FX__EXTERNAL_PING_REQ__INIT;
    ProtobufCMessage *m = raw_external_call(fd, MSG_EXT_PING, &req.base);
    bool ok = m && msg_status(m) == 0;
    msg_free(m);
    return ok;
}

static fx_owner_stat owner_stat(fx_client *c)
{
    fx_owner_stat st = {.memory_used = UINT64_MAX};
    size_t n = 0;
    if (fx_stat(c, &st, 1, &n) != 0 || n < 1)
        st.memory_used = UINT64_MAX;
    return st;
}

/* Polls memory_used until it is want; returns the last value seen. */
static uint64_t wait_memory_used(fx_client *c, uint64_t want)
{
    uint64_t used = UINT64_MAX;
    for (int i = 0; i < WINDOW_MS / 10 && (used = owner_stat(c).memory_used) != want; i++)
        test_sleep_ms(10);
    return used;
}

/* memory_used once it stops moving: what an earlier test's closed session or
 * queued release still frees settles first (two readings 100 ms apart agree). */
static uint64_t settled_memory_used(fx_client *c)
{
    uint64_t used = owner_stat(c).memory_used;
    for (int i = 0; i < WINDOW_MS / 100; i++) {
        test_sleep_ms(100);
        uint64_t again = owner_stat(c).memory_used;
        if (again == used)
            break;
        used = again;
    }
    return used;
}

/* A raw session (its first connection, *session) and one more connection of
 * it with a lane (*conn, *lane). */
static uint64_t open_with_lane(int *session, int *conn, int *lane)
{
    uint64_t id = 0;
    *session = raw_external_open_session(tc.socket, &id);
    REQUIRE(*session >= 0 && id, "a raw session opens");
    *conn = raw_external_attach(tc.socket, id, lane);
    REQUIRE(*conn >= 0, "a connection attaches to session %llu", (unsigned long long)id);
    return id;
}

static void test_lane(void)
{
    int session, conn, lane;
    uint64_t id = open_with_lane(&session, &conn, &lane);
    CHECK(lane >= 0, "the attaching connection that asked got a lane");
    CHECK(lane >= 0 && answers_ping(lane), "the lane answers a ping");
    int plain = raw_external_attach(tc.socket, id, NULL);
    CHECK(plain >= 0 && answers_ping(plain), "one that did not ask attaches without a lane");
    close(plain);
    close(lane);
    close(conn);
    close(session);
}

static void test_cached(fx_client *api)
{
    int session, conn, lane;
    open_with_lane(&session, &conn, &lane);
    REQUIRE(lane >= 0, "a lane");
    REQUIRE(put_fill(api, "lane/a", 'a', 4096) == 0, "put lane/a");

    got g = get_key(lane, "lane/a");
    CHECK(g.status == 0 && g.holder_id == 0, "a key the loop never read: holder 0 (status %d, "
          "holder %llu)", g.status, (unsigned long long)g.holder_id);
    g = get_key(lane, "lane/none");
    CHECK(g.status == 0 && g.holder_id == 0, "a missing key: holder 0, no error (status %d)",
          g.status);
    g = get_key(conn, "lane/none");
    CHECK(g.status == FX_ENOTFOUND, "the loop says the missing key is not found (%d)", g.status);

    got loop = get_key(conn, "lane/a");
    REQUIRE(loop.status == 0 && loop.holder_id && loop.len == 4096, "the loop answers lane/a");
    CHECK(raw_release(conn, loop.holder_id) == 0, "release the loop's holder");

    uint64_t hits_before = owner_stat(api).hits_memory;
    uint64_t ids[8];
    for (int i = 0; i < 8; i++) {
        g = get_key(lane, "lane/a");
        ids[i] = g.holder_id;
        CHECK(g.status == 0 && g.holder_id && g.offset == loop.offset && g.len == loop.len &&
                  g.source == FX_SRC_MEMORY,
              "the lane answers the cached key as the loop did (status %d, holder %llu, "
              "offset %llu/%llu, len %llu, source %u)",
              g.status, (unsigned long long)g.holder_id, (unsigned long long)g.offset,
              (unsigned long long)loop.offset, (unsigned long long)g.len, g.source);
        for (int j = 0; j < i; j++)
            CHECK(ids[j] != ids[i], "every lane holding has its own id");
    }
    for (int i = 0; i < 8; i++)
        raw_release(lane, ids[i]);
    uint64_t hits = owner_stat(api).hits_memory;
    CHECK(hits >= hits_before + 8, "the lane's hits count in hits_memory (%llu -> %llu)",
          (unsigned long long)hits_before, (unsigned long long)hits);
    close(lane);
    close(conn);
    close(session);
}

static void test_versions(fx_client *api)
{
    int session, conn, lane;
    open_with_lane(&session, &conn, &lane);
    REQUIRE(lane >= 0, "a lane");
    for (int round = 0; round < 20; round++) {
        size_t len = 1024 + (size_t)round * 8; /* each version's own length */
        REQUIRE(put_fill(api, "lane/v", (char)('a' + round), len) == 0, "put version %d", round);
        got g = get_key(lane, "lane/v");
        CHECK(g.status == 0 && (g.holder_id == 0 || g.len == len),
              "after version %d returned the lane never answers an older one (len %llu, "
              "want %zu)", round, (unsigned long long)g.len, len);
        if (g.holder_id)
            raw_release(lane, g.holder_id);
        got l = get_key(conn, "lane/v"); /* caches this version */
        REQUIRE(l.status == 0 && l.len == len, "the loop answers version %d", round);
        raw_release(conn, l.holder_id);
        g = get_key(lane, "lane/v");
        CHECK(g.status == 0 && g.holder_id && g.len == len,
              "the lane answers version %d once the loop cached it", round);
        raw_release(lane, g.holder_id);
    }
    REQUIRE(fx_delete(api, "lane/v", strlen("lane/v")) == 0, "delete lane/v");
    got g = get_key(lane, "lane/v");
    CHECK(g.status == 0 && g.holder_id == 0, "after the delete returned: no holder on the lane");
    g = get_key(conn, "lane/v");
    CHECK(g.status == FX_ENOTFOUND, "and the loop says not found (%d)", g.status);
    close(lane);
    close(conn);
    close(session);
}

/* A cached BIG value, held on the lane only; returns the lane's holder id. */
static uint64_t hold_on_lane(fx_client *api, int conn, int lane, const char *key)
{
    REQUIRE(put_fill(api, key, 'b', BIG) == 0, "put %s", key);
    got l = get_key(conn, key);
    REQUIRE(l.status == 0 && l.len == BIG, "the loop answers %s", key);
    raw_release(conn, l.holder_id);
    got g = get_key(lane, key);
    REQUIRE(g.status == 0 && g.holder_id && g.len == BIG, "the lane holds %s", key);
    return g.holder_id;
}

static void test_release(fx_client *api)
{
    int session, conn, lane;
    open_with_lane(&session, &conn, &lane);
    REQUIRE(lane >= 0, "a lane");
    uint64_t before = settled_memory_used(api);
    uint64_t held = hold_on_lane(api, conn, lane, "lane/big");
    REQUIRE(fx_delete(api, "lane/big", strlen("lane/big")) == 0, "delete lane/big");
    test_sleep_ms(200);
    uint64_t used = owner_stat(api).memory_used;
    CHECK(used != UINT64_MAX && used >= before + BIG,
          "the lane's holding pins the deleted value (memory_used %llu, %llu before)",
          (unsigned long long)used, (unsigned long long)before);
    CHECK(raw_release(lane, held) == 0, "release on the lane");
    used = wait_memory_used(api, before);
    CHECK(used == before, "the release freed it (memory_used %llu, %llu before)",
          (unsigned long long)used, (unsigned long long)before);
    close(lane);
    close(conn);
    close(session);
}

static void test_session(fx_client *api)
{
    int session, conn, lane;
    open_with_lane(&session, &conn, &lane);
    REQUIRE(lane >= 0, "a lane");
    uint64_t before = settled_memory_used(api);
    hold_on_lane(api, conn, lane, "lane/big2");
    REQUIRE(fx_delete(api, "lane/big2", strlen("lane/big2")) == 0, "delete lane/big2");
    REQUIRE(put_fill(api, "lane/s", 's', 512) == 0, "put lane/s");
    got l = get_key(conn, "lane/s");
    REQUIRE(l.status == 0 && l.holder_id, "the loop answers lane/s");
    raw_release(conn, l.holder_id);

    close(session); /* the session's end */
    uint64_t used = wait_memory_used(api, before + 512);
    CHECK(used == before + 512, "the session's end freed what the lane held (memory_used %llu, "
          "want %llu)", (unsigned long long)used, (unsigned long long)(before + 512));
    got g = get_key(lane, "lane/s");
    CHECK(g.status == FX_ECONN, "a lane get after the session's end fails with FX_ECONN (%d)",
          g.status);
    close(conn);
    CHECK(answers_ping(lane), "the lane is the session's last connection and still answers");
    close(lane); /* ends the session on the owner's loop */
    int fd = raw_external_open(tc.socket);
    CHECK(fd >= 0 && answers_ping(fd), "the owner goes on after the lane closed last");
    if (fd >= 0)
        close(fd);
}

static void test_refused(fx_client *api)
{
    int session, conn, lane;
    uint64_t id = open_with_lane(&session, &conn, &lane);
    REQUIRE(lane >= 0, "a lane");
    Fx__PutId pid;
    CHECK(raw_external_put_start(lane, "lane/p", 64, &pid) == FX_ECONN,
          "a put on a lane closes it");
    close(lane);

    REQUIRE(raw_external_attach(tc.socket, id, &lane) >= 0 && lane >= 0, "another lane");
    char key[5000]; /* more than MAX_KEY_LEN (4096) */
    memset(key, 'k', sizeof key);
    got g = raw_get(lane, key, sizeof key);
    CHECK(g.status == FX_EINVAL, "an oversized key fails on the lane (%d)", g.status);
    CHECK(answers_ping(lane), "and the lane goes on");
    /* A header claiming more than a lane takes. */
    uint8_t hdr[FRAME_HDR_LEN];
    frame_hdr h = {.len = 64u << 20, .type = MSG_EXT_GET, .flags = 0, .req_id = 7};
    frame_hdr_encode(&h, hdr);
    CHECK(send(lane, hdr, sizeof hdr, MSG_NOSIGNAL) == (ssize_t)sizeof hdr, "send the header");
    char byte;
    CHECK(recv(lane, &byte, 1, 0) <= 0, "the lane is closed after a frame it does not take");
    close(lane);
    CHECK(answers_ping(conn), "the session's connection goes on");
    REQUIRE(put_fill(api, "lane/after", 'x', 100) == 0, "the owner still takes puts");
    close(conn);
    close(session);
}

typedef struct reader {
    fx_client *c;
    int index;
    int bad;
} reader;

static void *read_own_keys(void *arg)
{
    reader *r = arg;
    char key[32], val[4096];
    for (int round = 0; round < 200; round++) {
        snprintf(key, sizeof key, "lane/t%d/%d", r->index, round % 8);
        memset(val, 'A' + (round % 26), sizeof val);
        snprintf(val, 16, "%d/%d", r->index, round);
        if (round % 4 == 0 && fx_put(r->c, key, strlen(key), val, sizeof val) != 0) {
            r->bad++;
            continue;
        }
        if (round % 4 != 0)
            continue;
        for (int i = 0; i < 3; i++) { /* the first get caches, the next come from a lane */
            fx_holder *hd = NULL;
            if (fx_get(r->c, key, strlen(key), &hd) != 0 || fx_holder_len(hd) != sizeof val ||
                memcmp(fx_holder_data(hd), val, sizeof val) != 0)
                r->bad++;
            fx_holder_release(hd);
        }
    }
    return NULL;
}

static void test_threads(void)
{
    int err = 0;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect: %d", err);
    fx_set_near_cache(c, 0);
    reader r[2] = {{c, 0, 0}, {c, 1, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        REQUIRE(pthread_create(&t[i], NULL, read_own_keys, &r[i]) == 0, "thread");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK(r[0].bad == 0 && r[1].bad == 0, "two threads read what they wrote (%d, %d wrong)",
          r[0].bad, r[1].bad);
    fx_owner_stat st = owner_stat(c);
    CHECK(st.hits_memory >= 2 * 50 * 2, "their gets hit memory (%llu)",
          (unsigned long long)st.hits_memory);
    fx_close(c);
}

/* Read and write system calls of the owner's get threads so far
 * (/proc/PID/task/TID/io): a request a get thread serves costs it at least a
 * read, and its answer a write; an idle one makes none. Counted, not timed,
 * so slow builds (ASan) count the same. */
static long lane_syscalls(void)
{
    char path[320];
    snprintf(path, sizeof path, "/proc/%d/task", (int)tc.owner_pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long sum = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char comm[32] = "", line[128];
        snprintf(path, sizeof path, "/proc/%d/task/%s/comm", (int)tc.owner_pid, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        bool lane = fgets(comm, sizeof comm, f) && strncmp(comm, "fx-get-", 7) == 0;
        fclose(f);
        snprintf(path, sizeof path, "/proc/%d/task/%s/io", (int)tc.owner_pid, e->d_name);
        if (!lane || !(f = fopen(path, "r")))
            continue;
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "syscr:", 6) == 0 || strncmp(line, "syscw:", 6) == 0)
                sum += atol(line + 6);
        fclose(f);
    }
    closedir(d);
    return sum;
}

static void test_hint(fx_client *api)
{
    const char *key = "hint/later";
    fx_holder *h = NULL;
    CHECK(fx_get(api, key, strlen(key), &h) == FX_ENOTFOUND, "a missing key misses");
    long before = lane_syscalls();
    REQUIRE(before >= 0, "the owner's get threads are named fx-get-N");
    int misses = 0;
    for (int i = 0; i < 200; i++)
        misses += fx_get(api, key, strlen(key), &h) == FX_ENOTFOUND;
    long after = lane_syscalls();
    CHECK(misses == 200, "every later get misses too (%d of 200)", misses);
    CHECK(after - before < 40, "a key that missed goes straight to the loop: the get threads "
                               "made %ld reads and writes for 200 gets", after - before);
    REQUIRE(put_fill(api, key, 'h', 4096) == 0, "put the key");
    before = lane_syscalls();
    int good = 0;
    for (int i = 0; i < 200; i++) {
        if (fx_get(api, key, strlen(key), &h) == 0 && fx_holder_len(h) == 4096 &&
            ((const char *)fx_holder_data(h))[4095] == 'h')
            good++;
        fx_holder_release(h);
        h = NULL;
    }
    after = lane_syscalls();
    CHECK(good == 200, "once put, every get reads it (%d of 200)", good);
    CHECK(after - before >= 200, "and the gets after the loop cached it go to the get threads "
                                 "again (they made %ld reads and writes for 200 gets)", after - before);

    /* The first get after this client's own put: the owner's get cache lost
     * the key with the put, so it goes to the loop at once. */
    enum { N = 40 };
    char keys[N][32];
    const char *kp[N];
    size_t kl[N];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "hint/own/%d", i);
        kp[i] = keys[i];
        kl[i] = strlen(keys[i]);
        REQUIRE(put_fill(api, keys[i], 'o', 1024) == 0, "put %s", keys[i]);
    }
    before = lane_syscalls();
    good = 0;
    for (int i = 0; i < N; i++) {
        good += fx_get(api, kp[i], kl[i], &h) == 0 && fx_holder_len(h) == 1024;
        fx_holder_release(h); /* a holder of the loop's: released to the loop */
        h = NULL;
    }
    after = lane_syscalls();
    CHECK(good == N, "the gets after the puts read them (%d of %d)", good, N);
    CHECK(after - before < N / 4, "the first get after this client's put, and its release, do "
                                  "not reach the get threads (%ld reads and writes for %d gets)",
          after - before, N);

    /* A batch's holders come from the loop: their release goes there. */
    before = lane_syscalls();
    int batches = 0;
    for (int round = 0; round < N; round++) {
        fx_holder *hs[4] = {0};
        int res[4];
        batches += fx_batch_get(api, 4, kp + (round % (N - 4)), kl + (round % (N - 4)), hs, res) == 0;
        for (int i = 0; i < 4; i++)
            fx_holder_release(hs[i]);
    }
    after = lane_syscalls();
    CHECK(batches == N, "the batch gets work (%d of %d)", batches, N);
    CHECK(after - before < N / 4, "releasing a batch's holders does not reach the get threads "
                                  "(%ld reads and writes for %d batches)", after - before, N);
}

static void test_none(void)
{
    REQUIRE(cluster_start_yaml(&tc, 1, SEG, NULL, "get_threads: 0\n") == 0,
            "a cluster with get_threads 0");
    uint64_t id = 0;
    int session = raw_external_open_session(tc.socket, &id);
    REQUIRE(session >= 0, "a raw session");
    int lane = 0;
    int conn = raw_external_attach(tc.socket, id, &lane);
    CHECK(conn >= 0 && lane == -1, "with get_threads 0 no lane comes (lane fd %d)", lane);
    int err = 0;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect: %d", err);
    REQUIRE(put_fill(c, "none/a", 'n', 2048) == 0, "put");
    for (int i = 0; i < 3; i++) {
        fx_holder *h = NULL;
        CHECK(fx_get(c, "none/a", 6, &h) == 0 && fx_holder_len(h) == 2048 &&
                  ((const char *)fx_holder_data(h))[2047] == 'n',
              "gets work without lanes");
        fx_holder_release(h);
    }
    fx_close(c);
    if (conn >= 0)
        close(conn);
    close(session);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
}

#define LANE_CAP 4

static void test_cap(void)
{
    REQUIRE(cluster_start_yaml(&tc, 1, SEG, NULL, "max_client_connections: 4\n") == 0,
            "a cluster with max_client_connections 4");
    uint64_t id = 0;
    int session = raw_external_open_session(tc.socket, &id);
    REQUIRE(session >= 0, "a raw session");
    int lanes[LANE_CAP];
    for (int i = 0; i < LANE_CAP; i++) {
        int conn = raw_external_attach(tc.socket, id, &lanes[i]);
        REQUIRE(conn >= 0 && lanes[i] >= 0, "attach %d gets a lane", i + 1);
        close(conn); /* its lane stays, one of the session's connections */
    }
    int lane = 0;
    int conn = raw_external_attach(tc.socket, id, &lane);
    CHECK(conn >= 0 && lane == -1, "with %d lanes open the next attach gets none (lane fd %d)",
          LANE_CAP, lane);
    if (conn >= 0)
        CHECK(answers_ping(conn), "and that connection is served");
    if (conn >= 0)
        close(conn);
    if (lane >= 0)
        close(lane);
    int answering = 0;
    for (int i = 0; i < LANE_CAP; i++)
        answering += answers_ping(lanes[i]);
    CHECK(answering == LANE_CAP, "the %d open lanes all answer (%d do)", LANE_CAP, answering);
    close(lanes[0]);
    lane = -1;
    for (int i = 0; i < 100 && lane < 0; i++) { /* the lane's thread sees the close soon */
        conn = raw_external_attach(tc.socket, id, &lane);
        if (conn >= 0)
            close(conn);
        if (lane < 0)
            test_sleep_ms(10);
    }
    CHECK(lane >= 0 && answers_ping(lane), "once a lane closed a new one is given");
    if (lane >= 0)
        close(lane);
    for (int i = 1; i < LANE_CAP; i++)
        close(lanes[i]);
    close(session);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
}

int main(void)
{
    REQUIRE(cluster_start(&tc, SEG) == 0, "cluster starts");
    int err = 0;
    fx_client *api = fx_connect(tc.socket, &err);
    REQUIRE(api, "connect: %d", err);
    fx_set_near_cache(api, 0);
    test_lane();
    test_cached(api);
    test_versions(api);
    test_release(api);
    test_session(api);
    test_refused(api);
    test_threads();
    test_hint(api);
    fx_close(api);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
    test_none();
    test_cap();
    return test_finish();
}
