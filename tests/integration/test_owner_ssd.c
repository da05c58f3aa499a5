/*
 * test_owner_ssd.c - a real fluxon-owner's SSD tier, driven by a scripted
 * master (this program speaks the master's side of the protocol itself, so
 * every step and its order is visible):
 *
 *   - startup: an SSD tier that cannot be opened (a path that is a file, a
 *     root locked by a running owner) exits 2 naming large_file_paths; without
 *     node_name the root is "default" in every run; a good one registers with kv_ssd_storage=true and heartbeats report its
 *     capacity, then its use;
 *   - SsdReplicaPersist: the owner writes, sends SsdReplicaCommit(key,
 *     put_id, len), answers the persist only after the commit's answer
 *     (persisted=true), persisted=false when the commit is refused, an
 *     error for a range outside the segment; an owner without a tier answers
 *     persisted=false;
 *   - local refill: a GetStart plan with the SSD copy on this owner is read
 *     into the target, GetDone follows, the holder has the value's bytes and
 *     reports source=ssd; the next get is an owner-cache hit reported as
 *     memory; a plan whose copy is gone, or whose ssd_stage_len is short,
 *     sends GetRevoke(drop_ssd_source=true) and GetStart again (at most 3
 *     rounds, then an error); KeyNotFound after a revoke reaches the caller;
 *     a GetStart the master completed (remote refill, done_* fields) gives
 *     the holder without GetDone; a plain remote SSD plan is revoked without
 *     drop and answered FX_ENOTSUP;
 *   - evictions: after the ring wraps, BatchSsdReplicaEvict names the evicted
 *     (key, put_id), only ones that were written; a refused batch is sent
 *     again; an evicted key's refill revokes with drop;
 *   - shutdown with a commit still unanswered exits 0; a restarted owner on
 *     the same paths serves nothing of its previous run.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "net/msg.h"
#include "testlib.h"
#include "values.h"

#define SEG (32ull << 20)
#define SSD_LIMIT (8ull << 20)
#define NODE 7u
#define MIB (1ull << 20)

static char dir[256], yaml[320], nossd_yaml[320], sock[320], log_path[320], ssd_path[320];

/* ---- the scripted master ------------------------------------------------------------------ */

typedef struct fake_master {
    int lfd, fd;
    int port;
    uint64_t next_req;
    int heartbeats;
    uint64_t ssd_capacity, ssd_used;
    int evict_refuse; /* answer this many BatchSsdReplicaEvict with an error */
    int evict_batches;
    char evicted[512][64]; /* "key/time_ms/version" of every entry received */
    int n_evicted;
} fake_master;

static fake_master fm;

static int fm_listen(void)
{
    fm.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (fm.lfd < 0 || bind(fm.lfd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(fm.lfd, 4) < 0 || getsockname(fm.lfd, (struct sockaddr *)&sa, &sl) < 0)
        return -1;
    fm.port = ntohs(sa.sin_port);
    fm.fd = -1;
    return 0;
}

static int read_exact(int fd, uint8_t *buf, size_t n, uint64_t deadline)
{
    size_t got = 0;
    while (got < n) {
        uint64_t now = test_now_ms();
        if (now >= deadline)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)(deadline - now)) <= 0)
            continue;
        ssize_t k = recv(fd, buf + got, n - got, 0);
        if (k <= 0) {
            if (k < 0 && errno == EINTR)
                continue;
            return -2;
        }
        got += (size_t)k;
    }
    return 0;
}

static void fm_send(uint16_t type, uint16_t flags, uint64_t req_id, const ProtobufCMessage *m)
{
    size_t len;
    uint8_t *buf = msg_encode(type, flags, req_id, m, &len);
    REQUIRE(buf && send(fm.fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len, "send %s",
            msg_name(type));
    free(buf);
}

static void fm_reply(const frame_hdr *h, const ProtobufCMessage *m)
{
    fm_send(h->type, FRAME_RESPONSE, h->req_id, m);
}

static void fm_reply_error(const frame_hdr *h, int status, const char *detail)
{
    ProtobufCMessage *e = msg_new_error(msg_descriptor(h->type, true), status, detail);
    fm_reply(h, e);
    msg_free_built(e);
}

static void on_evict_batch(const frame_hdr *h, Fx__BatchSsdReplicaEvictReq *r)
{
    fm.evict_batches++;
    if (fm.evict_refuse > 0) {
        fm.evict_refuse--;
        fm_reply_error(h, FX_EBUSY, "scripted refusal");
        return;
    }
    for (size_t i = 0; i < r->n_evictions && fm.n_evicted < 512; i++) {
        Fx__SsdEviction *e = r->evictions[i];
        snprintf(fm.evicted[fm.n_evicted++], sizeof fm.evicted[0], "%.*s/%" PRIu64 "/%u",
                 (int)e->key.len, (const char *)e->key.data,
                 e->put_id ? e->put_id->time_ms : 0, e->put_id ? e->put_id->version : 0);
    }
    Fx__BatchSsdReplicaEvictResp resp = FX__BATCH_SSD_REPLICA_EVICT_RESP__INIT;
    fm_reply(h, &resp.base);
}

/* Reads the owner's next frame that the script cares about, answering
 * heartbeats and eviction batches and skipping holder acks on the way.
 * Returns 0 with *h and *m, -1 on timeout, -2 when the owner hung up. */
static int fm_next(frame_hdr *h, ProtobufCMessage **m, int timeout_ms)
{
    uint64_t deadline = test_now_ms() + (uint64_t)timeout_ms;
    for (;;) {
        uint8_t hdr[FRAME_HDR_LEN];
        int r = read_exact(fm.fd, hdr, sizeof hdr, deadline);
        if (r < 0)
            return r;
        frame_hdr_decode(hdr, h);
        REQUIRE(h->len <= FRAME_MAX_BODY, "frame length %u", h->len);
        uint8_t *body = malloc(h->len ? h->len : 1);
        REQUIRE(body && read_exact(fm.fd, body, h->len, test_now_ms() + 5000) == 0, "frame body");
        *m = msg_decode(h->type, h->flags & FRAME_RESPONSE, body, h->len);
        free(body);
        REQUIRE(*m, "undecodable %s from the owner", msg_name(h->type));
        bool req = !(h->flags & FRAME_RESPONSE);
        if (req && h->type == MSG_HEARTBEAT) {
            Fx__HeartbeatReq *hb = (Fx__HeartbeatReq *)*m;
            fm.heartbeats++;
            fm.ssd_capacity = hb->ssd_capacity;
            fm.ssd_used = hb->ssd_used;
            Fx__HeartbeatResp resp = FX__HEARTBEAT_RESP__INIT;
            fm_reply(h, &resp.base);
        } else if (req && h->type == MSG_BATCH_SSD_REPLICA_EVICT) {
            on_evict_batch(h, (Fx__BatchSsdReplicaEvictReq *)*m);
        } else if (req && (h->type == MSG_BATCH_DELETE_ACK || h->type == MSG_ACCESS_REPORT)) {
            /* holders released, cache hits reported: nothing to do */
        } else {
            return 0;
        }
        msg_free(*m);
        *m = NULL;
    }
}

/* The next frame must be of type (request, or response when resp). */
static ProtobufCMessage *fm_expect(uint16_t type, bool resp, frame_hdr *h, int timeout_ms)
{
    ProtobufCMessage *m = NULL;
    int r = fm_next(h, &m, timeout_ms);
    REQUIRE(r == 0, "waiting for %s%s: %s", msg_name(type), resp ? " response" : "",
            r == -1 ? "timed out" : "the owner hung up");
    REQUIRE(h->type == type && !!(h->flags & FRAME_RESPONSE) == resp,
            "expected %s%s, got %s%s", msg_name(type), resp ? " response" : "",
            msg_name(h->type), (h->flags & FRAME_RESPONSE) ? " response" : "");
    return m;
}

/* Serves heartbeats and batches for ms; any other frame is a failure. */
static void fm_idle(int ms)
{
    frame_hdr h;
    ProtobufCMessage *m = NULL;
    int r = fm_next(&h, &m, ms);
    CHECK(r == -1, "expected nothing from the owner, got %s",
          r == 0 ? msg_name(h.type) : "a hang-up");
    msg_free(m);
}

/* Accepts the owner's connection and answers Register; returns kv_ssd_storage. */
static bool fm_accept_register(void)
{
    struct pollfd p = {.fd = fm.lfd, .events = POLLIN};
    REQUIRE(poll(&p, 1, 10000) == 1, "the owner did not connect");
    fm.fd = accept4(fm.lfd, NULL, NULL, SOCK_CLOEXEC);
    REQUIRE(fm.fd >= 0, "accept");
    int one = 1;
    setsockopt(fm.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    frame_hdr h;
    Fx__RegisterReq *r = (Fx__RegisterReq *)fm_expect(MSG_REGISTER, false, &h, 10000);
    bool ssd = r->kv_ssd_storage;
    msg_free(&r->base);
    Fx__RegisterResp resp = FX__REGISTER_RESP__INIT;
    resp.node_id = NODE;
    resp.tomb_tag = 1;
    resp.heartbeat_ms = 50;
    fm_reply(&h, &resp.base);
    /* The owner reports (no replicas yet, no pins) and serves once answered. */
    Fx__RecoveryReportReq *rep =
        (Fx__RecoveryReportReq *)fm_expect(MSG_RECOVERY_REPORT, false, &h, 10000);
    CHECK(rep->last && rep->n_entries == 0, "a new owner's report: one chunk, no replicas");
    msg_free(&rep->base);
    Fx__RecoveryReportResp rresp = FX__RECOVERY_REPORT_RESP__INIT;
    fm_reply(&h, &rresp.base);
    return ssd;
}

static void fm_hangup(void)
{
    if (fm.fd >= 0)
        close(fm.fd);
    fm.fd = -1;
}

/* ---- the owner process -------------------------------------------------------------------- */

/* Starts fluxon-owner --config config, with --client-socket other_socket
 * when that is not NULL. */
static pid_t spawn_owner_at(const char *config, const char *other_socket)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    char bin[512];
    snprintf(bin, sizeof bin, "%s", cluster_bin("fluxon-owner"));
    char *argv[] = {bin,       "--config", (char *)config, "--log-level", "info",
                    "--client-socket", (char *)other_socket, NULL};
    if (!other_socket)
        argv[5] = NULL;
    execv(bin, argv);
    _exit(127);
}

static pid_t spawn_owner(const char *config)
{
    return spawn_owner_at(config, NULL);
}

static int wait_owner(pid_t pid, int timeout_ms)
{
    int status;
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        test_sleep_ms(10);
    }
    /* Still running: say where each of its threads waits before it goes. */
    char path[320];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char what[2][128] = {"", ""};
        const char *files[2] = {"comm", "wchan"};
        for (int i = 0; i < 2; i++) {
            snprintf(path, sizeof path, "/proc/%d/task/%s/%s", (int)pid, e->d_name, files[i]);
            FILE *f = fopen(path, "r");
            if (f && fgets(what[i], sizeof what[i], f))
                what[i][strcspn(what[i], "\n")] = 0;
            if (f)
                fclose(f);
        }
        printf("owner %d still running: thread %s (%s) waits in %s\n", (int)pid, e->d_name,
               what[0], what[1]);
    }
    if (d)
        closedir(d);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* Lines of the owners' log that contain needle. */
static int log_count(const char *needle)
{
    FILE *f = fopen(log_path, "r");
    if (!f)
        return 0;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

static bool log_has(const char *needle)
{
    return log_count(needle) > 0;
}

static void write_yaml(const char *path, const char *paths, const char *limits)
{
    FILE *f = fopen(path, "w");
    REQUIRE(f, "write %s", path);
    fprintf(f,
            "cluster_name: test\nmaster: 127.0.0.1:%d\nnode_name: ssdowner\n"
            "data_listen: 127.0.0.1:0\nfluxonkv_spec:\n  memory_size: %llu\n"
            "  client_socket: %s\n  prefault: false\n",
            fm.port, SEG, sock);
    if (paths)
        fprintf(f, "  large_file_paths: [%s]\n  large_limit_size: [%s]\n", paths, limits);
    fclose(f);
}

static fx_client *connect_client(void)
{
    for (int i = 0; i < 500; i++) {
        int err = 0;
        fx_client *c = fx_connect(sock, &err);
        if (c)
            return c;
        /* The owner listens once registered; keep serving its master link. */
        fm_idle(10);
    }
    return NULL;
}

/* ---- client calls on a thread (they wait on the scripted master) ------------------------- */

typedef struct call {
    pthread_t th;
    fx_client *c;
    bool is_put;
    const char *key;
    const uint8_t *val;
    size_t len;
    int rc;
    fx_holder *h;
} call;

static void *call_main(void *arg)
{
    call *x = arg;
    if (x->is_put)
        x->rc = fx_put(x->c, x->key, strlen(x->key), x->val, x->len);
    else
        x->rc = fx_get(x->c, x->key, strlen(x->key), &x->h);
    return NULL;
}

static void call_start(call *x, fx_client *c, bool is_put, const char *key, const uint8_t *val,
                       size_t len)
{
    *x = (call){.c = c, .is_put = is_put, .key = key, .val = val, .len = len};
    REQUIRE(pthread_create(&x->th, NULL, call_main, x) == 0, "pthread_create");
}

static int call_join(call *x)
{
    pthread_join(x->th, NULL);
    return x->rc;
}

/* ---- script steps ------------------------------------------------------------------------- */

static uint8_t *make_value(uint64_t seed, size_t len)
{
    return value_make(seed | 1, len);
}

/* A put through the owner, placed at offset; answers PutStart and PutDone. */
static void put_at(fx_client *c, const char *key, const uint8_t *val, size_t len, uint64_t offset,
                   uint64_t time_ms)
{
    call x;
    call_start(&x, c, true, key, val, len);
    frame_hdr h;
    ProtobufCMessage *m = fm_expect(MSG_PUT_START, false, &h, 10000);
    msg_free(m);
    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = time_ms;
    pid.version = 1;
    Fx__PutStartResp ps = FX__PUT_START_RESP__INIT;
    ps.put_id = &pid;
    ps.target_node_id = NODE;
    ps.target_offset = ps.src_offset = offset;
    fm_reply(&h, &ps.base);
    m = fm_expect(MSG_PUT_DONE, false, &h, 10000);
    msg_free(m);
    Fx__PutDoneResp pd = FX__PUT_DONE_RESP__INIT;
    fm_reply(&h, &pd.base);
    REQUIRE(call_join(&x) == 0, "put %s: %s", key, fx_strerror(x.rc));
}

/* Sends SsdReplicaPersist; returns its req_id. */
static uint64_t persist_send(const char *key, uint64_t time_ms, uint64_t offset, uint64_t len)
{
    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = time_ms;
    pid.version = 1;
    Fx__SsdReplicaPersistReq req = FX__SSD_REPLICA_PERSIST_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = strlen(key), .data = (uint8_t *)key};
    req.put_id = &pid;
    req.target_offset = offset;
    req.len = len;
    uint64_t id = ++fm.next_req;
    fm_send(MSG_SSD_REPLICA_PERSIST, 0, id, &req.base);
    return id;
}

/* Waits for the persist's answer; returns persisted (or -status on an error). */
static int persist_answer(uint64_t id)
{
    frame_hdr h;
    Fx__SsdReplicaPersistResp *r =
        (Fx__SsdReplicaPersistResp *)fm_expect(MSG_SSD_REPLICA_PERSIST, true, &h, 10000);
    CHECK(h.req_id == id, "persist answer for request %" PRIu64 ", expected %" PRIu64,
          h.req_id, id);
    int out = r->status ? -abs(r->status) : r->persisted;
    msg_free(&r->base);
    return out;
}

/* Expects SsdReplicaCommit for (key, time_ms, len) and answers it with status. */
static void commit_answer(const char *key, uint64_t time_ms, uint64_t len, int status)
{
    frame_hdr h;
    Fx__SsdReplicaCommitReq *c =
        (Fx__SsdReplicaCommitReq *)fm_expect(MSG_SSD_REPLICA_COMMIT, false, &h, 10000);
    CHECK(c->key.len == strlen(key) && memcmp(c->key.data, key, c->key.len) == 0,
          "commit names %s", key);
    CHECK(c->put_id && c->put_id->time_ms == time_ms && c->put_id->version == 1,
          "commit carries the put_id");
    CHECK(c->len == len, "commit len %" PRIu64 ", expected %" PRIu64, c->len, len);
    msg_free(&c->base);
    if (status) {
        fm_reply_error(&h, status, "scripted refusal");
    } else {
        Fx__SsdReplicaCommitResp resp = FX__SSD_REPLICA_COMMIT_RESP__INIT;
        resp.published = true;
        fm_reply(&h, &resp.base);
    }
}

/* The whole persist exchange with an OK commit; returns persisted. */
static int persist(const char *key, uint64_t time_ms, uint64_t offset, uint64_t len)
{
    uint64_t id = persist_send(key, time_ms, offset, len);
    commit_answer(key, time_ms, len, 0);
    return persist_answer(id);
}

typedef struct ssd_plan {
    uint32_t src_node;
    uint64_t time_ms;
    uint64_t target_offset, len, stage_len;
} ssd_plan;

static uint64_t next_get_id = 100;

/* Expects GetStart and answers it with an SSD plan; returns the get id. */
static uint64_t answer_get_start_ssd(const ssd_plan *p)
{
    frame_hdr h;
    ProtobufCMessage *m = fm_expect(MSG_GET_START, false, &h, 10000);
    msg_free(m);
    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = p->time_ms;
    pid.version = 1;
    Fx__GetStartResp r = FX__GET_START_RESP__INIT;
    r.get_id = ++next_get_id;
    r.put_id = &pid;
    r.mode = FX__GET_MODE__DURABLE_REPLICA;
    r.src_node_id = p->src_node;
    r.src_offset = p->target_offset;
    r.target_offset = p->target_offset;
    r.len = p->len;
    r.source_kind = FX_SRC_SSD;
    r.ssd_stage_len = p->stage_len;
    r.src_data_addr = p->src_node == NODE ? "" : "127.0.0.1:1";
    fm_reply(&h, &r.base);
    return r.get_id;
}

static void answer_get_start_miss(void)
{
    frame_hdr h;
    ProtobufCMessage *m = fm_expect(MSG_GET_START, false, &h, 10000);
    msg_free(m);
    fm_reply_error(&h, FX_ENOTFOUND, "KeyNotFound");
}

/* Expects GetRevoke for get_id; returns its drop_ssd_source. */
static bool expect_revoke(uint64_t get_id)
{
    frame_hdr h;
    Fx__GetRevokeReq *r = (Fx__GetRevokeReq *)fm_expect(MSG_GET_REVOKE, false, &h, 10000);
    CHECK(r->get_id == get_id, "revoke of get %" PRIu64 ", expected %" PRIu64, r->get_id, get_id);
    bool drop = r->drop_ssd_source;
    msg_free(&r->base);
    return drop;
}

static void answer_get_done(uint64_t get_id, uint64_t holder_id)
{
    frame_hdr h;
    Fx__GetDoneReq *d = (Fx__GetDoneReq *)fm_expect(MSG_GET_DONE, false, &h, 10000);
    CHECK(d->get_id == get_id, "GetDone for get %" PRIu64 ", expected %" PRIu64, d->get_id,
          get_id);
    msg_free(&d->base);
    Fx__GetDoneResp r = FX__GET_DONE_RESP__INIT;
    r.holder_id = holder_id;
    r.mode = FX__GET_MODE__DURABLE_REPLICA;
    r.cacheable = true;
    fm_reply(&h, &r.base);
}

static bool evicted_has(const char *key, uint64_t time_ms)
{
    char want[64];
    snprintf(want, sizeof want, "%.40s/%" PRIu64 "/1", key, time_ms);
    for (int i = 0; i < fm.n_evicted; i++)
        if (strcmp(fm.evicted[i], want) == 0)
            return true;
    return false;
}

/* ---- the test ------------------------------------------------------------------------------ */

static void startup_errors(void)
{
    char file_path[320], bad_yaml[320];
    snprintf(file_path, sizeof file_path, "%s/not-a-dir", dir);
    snprintf(bad_yaml, sizeof bad_yaml, "%s/bad.yaml", dir);
    FILE *f = fopen(file_path, "w");
    REQUIRE(f, "create %s", file_path);
    fclose(f);
    write_yaml(bad_yaml, file_path, "1MB");
    int rc = wait_owner(spawn_owner(bad_yaml), 10000);
    CHECK(rc == 2, "an SSD path that is a file: exit 2 (got %d)", rc);
    CHECK(log_has("fluxonkv_spec.large_file_paths"), "the error names large_file_paths");
}

/* Without node_name the cache root is <path>/test_cluster_kv_ssd_storage/default,
 * the same in every run (a root per process would leak reserved shard files). */
static void default_instance(void)
{
    char noname_yaml[320], root[400], path[320];
    snprintf(noname_yaml, sizeof noname_yaml, "%s/noname.yaml", dir);
    snprintf(path, sizeof path, "%s/noname-ssd", dir);
    snprintf(root, sizeof root, "%s/test_cluster_kv_ssd_storage/default/shard-000", path);
    FILE *f = fopen(noname_yaml, "w");
    REQUIRE(f, "write %s", noname_yaml);
    /* A master nobody answers: the owner keeps trying until it is stopped. */
    fprintf(f,
            "cluster_name: test\nmaster: 127.0.0.1:1\ndata_listen: 127.0.0.1:0\n"
            "fluxonkv_spec:\n  memory_size: 4MB\n  client_socket: %s/noname.sock\n"
            "  prefault: false\n  large_file_paths: [%s]\n  large_limit_size: [1MB]\n",
            dir, path);
    fclose(f);
    for (int run = 0; run < 2; run++) {
        /* "data plane on" is logged once the owner handles SIGTERM. */
        int started = log_count("data plane on");
        unlink(root);
        pid_t pid = spawn_owner(noname_yaml);
        for (int i = 0; i < 500 && log_count("data plane on") == started; i++)
            test_sleep_ms(10);
        struct stat st;
        CHECK(stat(root, &st) == 0, "run %d: the root is named 'default' without node_name",
              run + 1);
        kill(pid, SIGTERM);
        int rc = wait_owner(pid, 20000);
        CHECK(rc == 0, "run %d: SIGTERM while connecting exits 0 (got %d)", run + 1, rc);
        if (rc != 0)
            cluster_print_log_tail(log_path); /* this run's lines: the owner wrote last */
    }
    char parent[400];
    snprintf(parent, sizeof parent, "%s/test_cluster_kv_ssd_storage", path);
    int n = 0;
    DIR *d = opendir(parent);
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK(n == 1, "two runs share one root (%d roots)", n);
}

/* At exit, however the test ended: the owner's log when a check failed,
 * then the directory. */
static void remove_dir(void *arg)
{
    (void)arg;
    if (test_checks_failed)
        cluster_print_log_tail(log_path);
    test_remove_dir(dir);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof dir, "/tmp/fx-owner-ssd-XXXXXX");
    REQUIRE(mkdtemp(dir), "mkdtemp");
    snprintf(log_path, sizeof log_path, "%s/owner.log", dir);
    test_at_exit(remove_dir, NULL);
    snprintf(yaml, sizeof yaml, "%s/owner.yaml", dir);
    snprintf(nossd_yaml, sizeof nossd_yaml, "%s/nossd.yaml", dir);
    snprintf(sock, sizeof sock, "%s/owner.sock", dir);
    snprintf(ssd_path, sizeof ssd_path, "%s/ssd", dir);
    REQUIRE(fm_listen() == 0, "listen");
    write_yaml(yaml, ssd_path, "8MB");
    write_yaml(nossd_yaml, NULL, NULL);

    startup_errors();
    default_instance();

    /* ---- a good tier: registration and heartbeats ---- */
    pid_t owner = spawn_owner(yaml);
    struct pollfd p = {.fd = fm.lfd, .events = POLLIN};
    if (poll(&p, 1, 10000) != 1) {
        int rc = wait_owner(owner, 1000);
        if (log_has("O_DIRECT")) {
            printf("skip: O_DIRECT refused under %s\n", dir);
            return 77;
        }
        REQUIRE(false, "the owner did not connect (exit %d)", rc);
    }
    CHECK(fm_accept_register(), "Register says kv_ssd_storage=true");
    fx_client *c = connect_client();
    REQUIRE(c, "connect to the owner");

    /* A second owner on the same root (its own client socket, or that would
     * be refused first): locked, exit 2 naming the key. */
    {
        char sock2[320];
        snprintf(sock2, sizeof sock2, "%s/second.sock", dir);
        int rc = wait_owner(spawn_owner_at(yaml, sock2), 10000);
        CHECK(rc == 2, "a second owner on a locked root exits 2 (got %d)", rc);
        CHECK(log_has("locked by another owner"), "the error says the root is locked");
    }

    fm_idle(150);
    CHECK(fm.heartbeats > 0, "heartbeats arrive");
    CHECK(fm.ssd_capacity >= SSD_LIMIT - 4096 && fm.ssd_capacity <= SSD_LIMIT,
          "heartbeat ssd_capacity %" PRIu64 " is the 8 MiB tier", fm.ssd_capacity);
    CHECK(fm.ssd_used == 0, "nothing used yet (%" PRIu64 ")", fm.ssd_used);

    /* ---- persist: commit first, answer after its answer ---- */
    size_t alen = 3 * MIB / 2 + 123; /* not a multiple of 512: padding stays internal */
    uint8_t *aval = make_value(1, alen), *bval = make_value(2, MIB), *evval = make_value(3, MIB);
    put_at(c, "a", aval, alen, 0, 1000);
    put_at(c, "b", bval, MIB, 2 * MIB, 1100);
    put_at(c, "ev", evval, MIB, 4 * MIB, 1200);
    uint64_t id = persist_send("a", 1000, 0, alen);
    {
        frame_hdr h;
        Fx__SsdReplicaCommitReq *cm =
            (Fx__SsdReplicaCommitReq *)fm_expect(MSG_SSD_REPLICA_COMMIT, false, &h, 10000);
        CHECK(cm->len == alen && cm->put_id && cm->put_id->time_ms == 1000,
              "commit carries len and put_id");
        msg_free(&cm->base);
        fm_idle(100); /* no persist answer while the commit is unanswered */
        Fx__SsdReplicaCommitResp resp = FX__SSD_REPLICA_COMMIT_RESP__INIT;
        resp.published = true;
        fm_reply(&h, &resp.base);
    }
    CHECK(persist_answer(id) == 1, "persist of a: persisted=true after the commit's answer");
    CHECK(persist("b", 1100, 2 * MIB, MIB) == 1, "persist of b: persisted=true");
    id = persist_send("c", 1300, 2 * MIB, MIB);
    commit_answer("c", 1300, MIB, FX_EBUSY);
    CHECK(persist_answer(id) == 0, "a refused commit answers persisted=false");
    id = persist_send("x", 1400, SEG - 100, 200);
    CHECK(persist_answer(id) == FX_EINVAL, "a range outside the segment is an error");
    id = persist_send("big", 1500, 0, 3 * MIB);
    CHECK(persist_answer(id) == 0, "a value larger than a shard: persisted=false, no commit");
    fm_idle(150);
    CHECK(fm.ssd_used > 0, "heartbeat ssd_used %" PRIu64 " after writes", fm.ssd_used);

    /* ---- local refill ---- */
    call x;
    ssd_plan pa = {NODE, 1000, 8 * MIB, alen, (alen + 511) / 512 * 512};
    call_start(&x, c, false, "a", NULL, 0);
    uint64_t gid = answer_get_start_ssd(&pa);
    answer_get_done(gid, 501);
    REQUIRE(call_join(&x) == 0, "refill of a: %s (%s)", fx_strerror(x.rc), fx_last_error_detail());
    CHECK(fx_holder_len(x.h) == alen && memcmp(fx_holder_data(x.h), aval, alen) == 0,
          "the refilled holder has a's bytes");
    CHECK(fx_holder_source(x.h) == FX_SRC_SSD, "the refilled holder reports source=ssd");
    fx_holder_release(x.h);
    call_start(&x, c, false, "a", NULL, 0);
    fm_idle(100); /* an owner-cache hit asks the master nothing */
    REQUIRE(call_join(&x) == 0, "second get of a: %s", fx_strerror(x.rc));
    CHECK(fx_holder_source(x.h) == FX_SRC_MEMORY, "the next get is a memory hit");
    CHECK(fx_holder_len(x.h) == alen && memcmp(fx_holder_data(x.h), aval, alen) == 0,
          "and has a's bytes");
    fx_holder_release(x.h);

    /* A copy that is not there: revoke with drop, ask again, KeyNotFound. */
    ssd_plan pg = {NODE, 2000, 12 * MIB, 4096, 4096};
    call_start(&x, c, false, "gone", NULL, 0);
    gid = answer_get_start_ssd(&pg);
    CHECK(expect_revoke(gid), "a missing SSD copy revokes with drop_ssd_source");
    answer_get_start_miss();
    CHECK(call_join(&x) == FX_ENOTFOUND, "then KeyNotFound reaches the caller (%s)",
          fx_strerror(x.rc));

    /* Three failed rounds, then an error; no fourth GetStart. */
    call_start(&x, c, false, "gone3", NULL, 0);
    for (int i = 0; i < 3; i++)
        CHECK(expect_revoke(answer_get_start_ssd(&pg)), "round %d revokes with drop", i + 1);
    fm_idle(100);
    int rc = call_join(&x);
    CHECK(rc != 0 && rc != FX_ENOTFOUND, "three failed refills are an error (%s)",
          fx_strerror(rc));

    /* A short ssd_stage_len is a failed stage. */
    ssd_plan pb = {NODE, 1100, 12 * MIB, MIB, MIB - 512};
    call_start(&x, c, false, "b", NULL, 0);
    CHECK(expect_revoke(answer_get_start_ssd(&pb)), "a short stage length revokes with drop");
    pb.stage_len = MIB;
    gid = answer_get_start_ssd(&pb);
    answer_get_done(gid, 502);
    REQUIRE(call_join(&x) == 0, "refill of b on the second round: %s", fx_strerror(x.rc));
    CHECK(fx_holder_len(x.h) == MIB && memcmp(fx_holder_data(x.h), bval, MIB) == 0,
          "the refilled holder has b's bytes");
    fx_holder_release(x.h);

    /* A copy on another owner: not built yet. */
    ssd_plan pr = {NODE + 1, 1100, 12 * MIB, MIB, MIB};
    call_start(&x, c, false, "remote", NULL, 0);
    CHECK(!expect_revoke(answer_get_start_ssd(&pr)), "a remote SSD plan revokes without drop");
    CHECK(call_join(&x) == FX_ENOTSUP, "and answers FX_ENOTSUP (%s)", fx_strerror(x.rc));

    /* A remote refill the master completed: the holder, no GetDone. */
    call_start(&x, c, false, "staged", NULL, 0);
    {
        frame_hdr h;
        ProtobufCMessage *m = fm_expect(MSG_GET_START, false, &h, 10000);
        msg_free(m);
        Fx__PutId pid = FX__PUT_ID__INIT;
        pid.time_ms = 1200;
        pid.version = 1;
        Fx__GetStartResp r = FX__GET_START_RESP__INIT;
        r.get_id = ++next_get_id;
        r.put_id = &pid;
        r.mode = FX__GET_MODE__DURABLE_REPLICA;
        r.src_node_id = NODE + 1;
        r.target_offset = 4 * MIB; /* "pushed" there: ev's bytes */
        r.len = MIB;
        r.source_kind = FX_SRC_SSD;
        r.done = true;
        r.done_holder_id = 504;
        r.done_cacheable = false;
        r.done_mode = FX__GET_MODE__TEMPORARY;
        fm_reply(&h, &r.base);
    }
    fm_idle(100); /* no GetDone, no GetRevoke */
    REQUIRE(call_join(&x) == 0, "completed remote refill: %s", fx_strerror(x.rc));
    CHECK(fx_holder_len(x.h) == MIB && memcmp(fx_holder_data(x.h), evval, MIB) == 0,
          "the completed refill's holder has the target's bytes");
    CHECK(fx_holder_source(x.h) == FX_SRC_SSD, "and reports source=ssd");
    fx_holder_release(x.h);

    /* ---- the ring wraps: eviction notices ---- */
    fm.evict_refuse = 1;
    char keys[24][8];
    for (int i = 0; i < 24; i++) {
        snprintf(keys[i], sizeof keys[i], "e%d", i);
        CHECK(persist(keys[i], 5000 + (uint64_t)i, 4 * MIB, MIB) == 1, "persist of %s", keys[i]);
    }
    for (int waited = 0; waited < 1000 && (fm.evict_batches < 2 || fm.n_evicted < 16);
         waited += 50)
        fm_idle(50);
    CHECK(fm.evict_batches >= 2, "a refused batch is sent again (%d batches)", fm.evict_batches);
    CHECK(fm.n_evicted >= 16, "at least 16 evictions reported (%d)", fm.n_evicted);
    CHECK(evicted_has("e0", 5000), "e0, among the oldest, is reported evicted");
    bool known = true, dups = false;
    for (int i = 0; i < fm.n_evicted; i++) {
        bool k = strncmp(fm.evicted[i], "a/1000/", 7) == 0 ||
                 strncmp(fm.evicted[i], "b/1100/", 7) == 0 ||
                 strncmp(fm.evicted[i], "c/1300/", 7) == 0;
        for (int j = 0; j < 24 && !k; j++)
            k = evicted_has(keys[j], 5000 + (uint64_t)j) &&
                strncmp(fm.evicted[i], keys[j], strlen(keys[j])) == 0 &&
                fm.evicted[i][strlen(keys[j])] == '/';
        known = known && k;
        for (int j = 0; j < i; j++)
            dups = dups || strcmp(fm.evicted[i], fm.evicted[j]) == 0;
    }
    CHECK(known, "every eviction names a (key, put_id) that was written");
    CHECK(!dups, "no eviction is reported twice");

    ssd_plan pe = {NODE, 5000, 16 * MIB, MIB, MIB};
    call_start(&x, c, false, "e0", NULL, 0);
    CHECK(expect_revoke(answer_get_start_ssd(&pe)), "an evicted copy revokes with drop");
    answer_get_start_miss();
    CHECK(call_join(&x) == FX_ENOTFOUND, "then KeyNotFound");
    ssd_plan pl = {NODE, 5023, 20 * MIB, MIB, MIB};
    call_start(&x, c, false, "e23", NULL, 0);
    gid = answer_get_start_ssd(&pl);
    answer_get_done(gid, 503);
    REQUIRE(call_join(&x) == 0, "refill of e23: %s", fx_strerror(x.rc));
    CHECK(fx_holder_len(x.h) == MIB && memcmp(fx_holder_data(x.h), evval, MIB) == 0,
          "the newest copy is read back intact");
    fx_holder_release(x.h);

    /* ---- stop with a commit unanswered: a clean exit ---- */
    persist_send("last", 6000, 4 * MIB, MIB);
    {
        frame_hdr h;
        ProtobufCMessage *m = fm_expect(MSG_SSD_REPLICA_COMMIT, false, &h, 10000);
        msg_free(m);
    }
    fx_close(c);
    kill(owner, SIGTERM);
    rc = wait_owner(owner, 20000);
    CHECK(rc == 0, "SIGTERM with a commit in flight: exit 0 (got %d)", rc);
    fm_hangup();

    /* ---- restart on the same paths: nothing of the previous run ---- */
    owner = spawn_owner(yaml);
    CHECK(fm_accept_register(), "the restarted owner registers with kv_ssd_storage=true");
    c = connect_client();
    REQUIRE(c, "connect to the restarted owner");
    call_start(&x, c, false, "e23", NULL, 0);
    CHECK(expect_revoke(answer_get_start_ssd(&pl)), "a copy of the previous run is not served");
    answer_get_start_miss();
    CHECK(call_join(&x) == FX_ENOTFOUND, "KeyNotFound after the restart");
    fm_idle(150);
    CHECK(fm.ssd_used == 0, "the restarted tier is empty (used %" PRIu64 ")", fm.ssd_used);
    fx_close(c);
    kill(owner, SIGTERM);
    CHECK(wait_owner(owner, 20000) == 0, "the restarted owner exits 0");
    fm_hangup();

    /* ---- an owner without a tier ---- */
    owner = spawn_owner(nossd_yaml);
    CHECK(!fm_accept_register(), "without a tier Register says kv_ssd_storage=false");
    id = persist_send("a", 1000, 0, alen);
    CHECK(persist_answer(id) == 0, "without a tier a persist answers persisted=false");
    kill(owner, SIGTERM);
    CHECK(wait_owner(owner, 20000) == 0, "the memory-only owner exits 0");
    fm_hangup();

    free(aval);
    free(bval);
    free(evval);
    return test_finish(); /* remove_dir runs at exit */
}
