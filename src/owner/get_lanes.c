/*
 * get_lanes.c - get threads: lanes beside the owner's loop that answer
 * clients' gets from the owner-local get cache.
 *
 * A get the get cache answers costs the owner no work of its own, only the
 * wake-ups of a request and an answer; with one loop those are serial, and
 * two client threads wait on one another's. Here get_threads threads (owner
 * YAML, default 2) each run a libuv loop of their own over lanes: one end of
 * a socket pair per client connection that asked for one in its
 * ExternalHello (the other end rides to the client with the answer; see
 * ExternalHelloReq in fluxon.proto). A lane takes three requests:
 *
 * - ExternalGet: a hit in the get cache becomes a holding of the client's
 *   session, answered as the loop would (memory source, cacheable); anything
 *   else is answered with holder_id 0 and the client asks its connection to
 *   the loop, which runs the whole get sequence (ext_get.c).
 * - ExternalDeleteAck: releases holdings of the session, whoever gave them.
 * - ExternalPing.
 * Anything else closes the lane.
 *
 * What a lane shares with the loop is guarded by the owner's hold_lock
 * (holders.c): the get cache, the memory_info refcounts, the session's
 * holdings, conns and dead. A put or a delete drops the key from the cache
 * under that lock before its client hears of the end, so a get on a lane
 * that starts after a put returned cannot see the version before it. What a
 * lane causes on the loop's own state is queued here under the same lock and
 * run by the loop (loop_wake): the reads it served, for the master's
 * eviction policy (access_report.c), the master holders whose last reference
 * it dropped (holder_ack.c), and a session whose last connection was a lane.
 * A lane passes them on at most every LANE_FLUSH_MS, so that the loop does
 * not wake for each get.
 */
#include "owner/extcall.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/u64_array.h"
#include "fluxon/fluxon.h"
#include "net/msg.h"

#define LANE_FLUSH_MS 10u
/* A key, or a release of up to FX_BATCH_MAX holder ids (varints). */
#define LANE_MAX_BODY ((uint32_t)FX_BATCH_MAX * 16u + (64u * 1024u))

struct get_lanes;

/* One client connection's lane (the lane's thread only). */
typedef struct lane_conn {
    struct get_lane *lane;
    net_conn *conn;
    session *s;
    struct lane_conn *prev, *next;
} lane_conn;

/* A socket-pair end handed from the loop to a lane's thread. */
typedef struct lane_handoff {
    int fd;
    session *s;
    struct lane_handoff *next;
} lane_handoff;

typedef struct get_lane {
    struct get_lanes *ls;
    unsigned index;
    uv_loop_t loop;
    uv_thread_t thread;
    bool running;
    uv_async_t wake;  /* handoffs arrived, or stop */
    uv_timer_t flush; /* passes the queued work to the owner's loop */
    pthread_mutex_t inbox_lock;
    lane_handoff *inbox; /* inbox_lock */
    bool stop;           /* inbox_lock */
    lane_conn *conns;    /* the lane's thread only */
} get_lane;

struct get_lanes {
    owner *o;
    unsigned n, next;
    get_lane *lane;
    uv_async_t loop_wake; /* on the owner's loop: queued work to run */
    /* Queued for the loop (hold_lock): */
    uint64_t *acks;
    size_t n_acks, cap_acks;
    uint8_t *access; /* {u32 len, key bytes} per read */
    size_t access_len, access_cap;
    session *reap; /* by reap_next */
    unsigned open; /* lanes open (hold_lock); at most max_client_connections */
};

/* ---- queued for the loop (hold_lock held) ------------------------------- */

static void queue_ack_locked(struct get_lanes *ls, uint64_t master_holder_id)
{
    if (!master_holder_id)
        return;
    if (u64_array_push(&ls->acks, &ls->n_acks, &ls->cap_acks, 256, master_holder_id))
        FX_LOG_LIMITED(ERROR, "out of memory queueing a holder ack; holder %llu stays held",
                       (unsigned long long)master_holder_id);
}

static void queue_access_locked(struct get_lanes *ls, const void *key, size_t klen)
{
    uint32_t len = (uint32_t)klen;
    size_t need = ls->access_len + sizeof len + klen;
    if (need > ls->access_cap) {
        size_t cap = ls->access_cap ? ls->access_cap : 16384;
        while (cap < need)
            cap *= 2;
        uint8_t *n = realloc(ls->access, cap);
        if (!n)
            return; /* advisory: this read goes unreported */
        ls->access = n;
        ls->access_cap = cap;
    }
    memcpy(ls->access + ls->access_len, &len, sizeof len);
    memcpy(ls->access + ls->access_len + sizeof len, key, klen);
    ls->access_len = need;
}

/* On the loop: runs what the lanes queued. */
static void run_queued(struct get_lanes *ls)
{
    owner *o = ls->o;
    pthread_mutex_lock(&o->hold_lock);
    uint64_t *acks = ls->acks;
    size_t n_acks = ls->n_acks;
    uint8_t *access = ls->access;
    size_t access_len = ls->access_len;
    session *reap = ls->reap;
    ls->acks = NULL;
    ls->n_acks = ls->cap_acks = 0;
    ls->access = NULL;
    ls->access_len = ls->access_cap = 0;
    ls->reap = NULL;
    pthread_mutex_unlock(&o->hold_lock);
    for (size_t at = 0; at < access_len;) {
        uint32_t len;
        memcpy(&len, access + at, sizeof len);
        owner_report_access(o, access + at + sizeof len, len);
        at += sizeof len + len;
    }
    for (size_t i = 0; i < n_acks; i++)
        owner_ack_holder(o, acks[i]);
    while (reap) {
        session *s = reap;
        reap = s->reap_next;
        HASH_DEL(o->sessions, s);
        free(s);
    }
    free(acks);
    free(access);
}

static void on_loop_wake(uv_async_t *a)
{
    run_queued(a->data);
}

static void on_flush(uv_timer_t *t)
{
    get_lane *lane = t->data;
    uv_async_send(&lane->ls->loop_wake);
}

/* Soon, not at once: the loop wakes once per LANE_FLUSH_MS at most. */
static void arm_flush(get_lane *lane)
{
    if (!uv_is_active((uv_handle_t *)&lane->flush))
        uv_timer_start(&lane->flush, on_flush, LANE_FLUSH_MS, 0);
}

/* One connection of s is gone; its last one leaves s to the loop to free. */
static void session_leave(struct get_lanes *ls, session *s)
{
    owner *o = ls->o;
    pthread_mutex_lock(&o->hold_lock);
    ls->open--;
    bool last = --s->conns == 0;
    if (last) {
        s->reap_next = ls->reap;
        ls->reap = s;
    }
    pthread_mutex_unlock(&o->hold_lock);
    if (last)
        uv_async_send(&ls->loop_wake);
}

/* ---- the lane's requests (its thread) ----------------------------------- */

static void lane_get(lane_conn *lc, const frame_hdr *h, Fx__ExternalGetReq *req)
{
    if (req->key.len == 0 || req->key.len > MAX_KEY_LEN) {
        net_reply_error(lc->conn, h, FX_EINVAL, "key length %zu is outside 1..%u", req->key.len,
                        MAX_KEY_LEN);
        return;
    }
    uint64_t t0_us = owner_now_us();
    struct get_lanes *ls = lc->lane->ls;
    owner *o = ls->o;
    Fx__ExternalGetResp resp = FX__EXTERNAL_GET_RESP__INIT;
    bool dead, hit = false;
    pthread_mutex_lock(&o->hold_lock);
    dead = lc->s->dead;
    memory_info *mi = dead ? NULL : holders_cache_find(o, req->key.data, req->key.len);
    if (mi) {
        resp.holder_id = holders_session_add_locked(lc->s, mi);
        if (resp.holder_id) {
            hit = true;
            resp.offset = mi->offset;
            resp.len = mi->len;
            queue_access_locked(ls, req->key.data, req->key.len);
        }
    }
    pthread_mutex_unlock(&o->hold_lock);
    if (dead) {
        net_reply_error(lc->conn, h, FX_ECONN, "the external's session connection is closed");
        return;
    }
    if (mi && !hit) {
        net_reply_error(lc->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    if (hit) {
        o->hits_memory++;
        owner_metrics_get_answered(o, t0_us, OP_GET_MEMORY, resp.len);
        resp.source = FX_SRC_MEMORY;
        resp.cacheable = true;
        arm_flush(lc->lane);
    }
    net_reply(lc->conn, h, &resp.base); /* holder_id 0: ask the loop */
}

static void lane_release(lane_conn *lc, Fx__ExternalDeleteAckReq *req)
{
    struct get_lanes *ls = lc->lane->ls;
    owner *o = ls->o;
    size_t unknown = 0;
    bool queued = false;
    pthread_mutex_lock(&o->hold_lock);
    for (size_t i = 0; i < req->n_holder_ids; i++) {
        memory_info *last;
        if (!holders_session_release_locked(lc->s, req->holder_ids[i], &last)) {
            unknown++;
        } else if (last) {
            queue_ack_locked(ls, last->master_holder_id);
            holders_mi_free(last);
            queued = true;
        }
    }
    pthread_mutex_unlock(&o->hold_lock);
    if (queued)
        arm_flush(lc->lane);
    if (unknown)
        FX_LOG_LIMITED(WARN, "external %llu released %zu unknown holder(s)",
                       (unsigned long long)lc->s->client_id, unknown);
}

static void lane_on_frame(net_conn *c, const frame_hdr *h, ProtobufCMessage *msg)
{
    lane_conn *lc = net_conn_data(c);
    if (h->flags & FRAME_RESPONSE) {
        FX_LOG_LIMITED(WARN, "%s: unexpected response frame on a get lane; closing",
                       net_conn_peer(c));
        net_conn_close(c);
        return;
    }
    switch (h->type) {
    case MSG_EXT_GET:
        lane_get(lc, h, (Fx__ExternalGetReq *)msg);
        break;
    case MSG_EXT_DELETE_ACK:
        lane_release(lc, (Fx__ExternalDeleteAckReq *)msg);
        break;
    case MSG_EXT_PING:
        net_reply(c, h, &((Fx__ExternalPingResp)FX__EXTERNAL_PING_RESP__INIT).base);
        break;
    default:
        FX_LOG_LIMITED(WARN, "%s: %s is not served on a get lane; closing", net_conn_peer(c),
                       msg_name(h->type));
        net_conn_close(c);
    }
}

static void lane_on_close(net_conn *c)
{
    lane_conn *lc = net_conn_data(c);
    if (!lc)
        return;
    DL_DELETE(lc->lane->conns, lc);
    session_leave(lc->lane->ls, lc->s);
    net_conn_set_data(c, NULL);
    free(lc);
}

static const net_conn_ops lane_ops = {.on_frame = lane_on_frame, .on_close = lane_on_close};

/* ---- the lane's thread ---------------------------------------------------- */

static void adopt(get_lane *lane, lane_handoff *hd)
{
    lane_conn *lc = calloc(1, sizeof *lc);
    char peer[48];
    snprintf(peer, sizeof peer, "lane%u:%d", lane->index, hd->fd);
    net_conn *c = lc ? net_conn_adopt_unix(&lane->loop, hd->fd, &lane_ops, lc, peer) : NULL;
    if (!c) {
        if (!lc)
            close(hd->fd);
        FX_LOG_LIMITED(WARN, "get thread %u: cannot serve a new lane (out of memory)",
                       lane->index);
        free(lc);
        session_leave(lane->ls, hd->s);
        return;
    }
    lc->lane = lane;
    lc->conn = c;
    lc->s = hd->s;
    net_conn_set_max_body(c, LANE_MAX_BODY);
    DL_APPEND(lane->conns, lc);
}

static void on_lane_wake(uv_async_t *a)
{
    get_lane *lane = a->data;
    pthread_mutex_lock(&lane->inbox_lock);
    lane_handoff *in = lane->inbox;
    bool stop = lane->stop;
    lane->inbox = NULL;
    pthread_mutex_unlock(&lane->inbox_lock);
    while (in) {
        lane_handoff *hd = in;
        in = hd->next;
        if (stop) {
            close(hd->fd);
            session_leave(lane->ls, hd->s);
        } else {
            adopt(lane, hd);
        }
        free(hd);
    }
    if (!stop)
        return;
    lane_conn *lc, *tmp;
    DL_FOREACH_SAFE(lane->conns, lc, tmp)
        net_conn_close(lc->conn);
    uv_close((uv_handle_t *)&lane->wake, NULL);
    uv_close((uv_handle_t *)&lane->flush, NULL);
}

static void lane_main(void *arg)
{
    get_lane *lane = arg;
    char name[16]; /* what top -H and /proc/PID/task/TID/comm show */
    snprintf(name, sizeof name, "fx-get-%u", lane->index);
    pthread_setname_np(pthread_self(), name);
    uv_run(&lane->loop, UV_RUN_DEFAULT);
}

/* ---- the loop's side -------------------------------------------------------- */

static void on_lanes_closed(uv_handle_t *h)
{
    struct get_lanes *ls = h->data;
    free(ls->lane);
    free(ls);
}

/* Stops and joins the first n lanes of ls (started ones). */
static void lanes_join(struct get_lanes *ls, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        get_lane *lane = &ls->lane[i];
        pthread_mutex_lock(&lane->inbox_lock);
        lane->stop = true;
        pthread_mutex_unlock(&lane->inbox_lock);
        uv_async_send(&lane->wake);
    }
    for (unsigned i = 0; i < n; i++) {
        get_lane *lane = &ls->lane[i];
        uv_thread_join(&lane->thread);
        if (uv_loop_close(&lane->loop) != 0)
            FX_LOG(WARN, "get thread %u: its loop still had handles at exit", i);
        pthread_mutex_destroy(&lane->inbox_lock);
    }
}

int owner_get_lanes_start(owner *o, char *err, size_t errlen)
{
    unsigned n = o->cfg.get_threads;
    if (!n)
        return 0;
    struct get_lanes *ls = calloc(1, sizeof *ls);
    if (ls)
        ls->lane = calloc(n, sizeof *ls->lane);
    if (!ls || !ls->lane) {
        free(ls);
        snprintf(err, errlen, "get_threads: out of memory");
        return -1;
    }
    ls->o = o;
    ls->n = n;
    uv_async_init(o->loop, &ls->loop_wake, on_loop_wake);
    ls->loop_wake.data = ls;
    for (unsigned i = 0; i < n; i++) {
        get_lane *lane = &ls->lane[i];
        lane->ls = ls;
        lane->index = i;
        int r = uv_loop_init(&lane->loop);
        if (r == 0) {
            pthread_mutex_init(&lane->inbox_lock, NULL);
            uv_async_init(&lane->loop, &lane->wake, on_lane_wake);
            uv_timer_init(&lane->loop, &lane->flush);
            lane->wake.data = lane->flush.data = lane;
            r = uv_thread_create(&lane->thread, lane_main, lane);
            if (r < 0) {
                uv_close((uv_handle_t *)&lane->wake, NULL);
                uv_close((uv_handle_t *)&lane->flush, NULL);
                uv_run(&lane->loop, UV_RUN_DEFAULT);
                uv_loop_close(&lane->loop);
                pthread_mutex_destroy(&lane->inbox_lock);
            }
        }
        if (r < 0) {
            snprintf(err, errlen, "get_threads: cannot start get thread %u: %s", i,
                     uv_strerror(r));
            lanes_join(ls, i);
            uv_close((uv_handle_t *)&ls->loop_wake, on_lanes_closed);
            return -1;
        }
    }
    o->lanes = ls;
    FX_LOG(INFO, "%u get thread(s) answer gets from the get cache", n);
    return 0;
}

int owner_get_lane_open(owner *o, session *s)
{
    struct get_lanes *ls = o->lanes;
    if (!ls)
        return -1;
    /* A lane outlives the connection that asked for it (it is one of the
     * session's connections), so lanes are bounded on their own: as many as
     * client connections, and the owner's fd limit is raised for both. */
    pthread_mutex_lock(&o->hold_lock);
    bool full = ls->open >= o->cfg.max_client_connections;
    pthread_mutex_unlock(&o->hold_lock);
    if (full) {
        FX_LOG_LIMITED(WARN, "no get lane for external %llu: %u lanes open (max_client_connections)",
                       (unsigned long long)s->client_id, o->cfg.max_client_connections);
        return -1;
    }
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0) {
        FX_LOG_LIMITED(WARN, "no get lane for external %llu: socketpair: %s",
                       (unsigned long long)s->client_id, strerror(errno));
        return -1;
    }
    lane_handoff *hd = malloc(sizeof *hd);
    if (!hd) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    get_lane *lane = &ls->lane[ls->next++ % ls->n];
    hd->fd = fds[0];
    hd->s = s;
    pthread_mutex_lock(&o->hold_lock);
    s->conns++;
    ls->open++;
    pthread_mutex_unlock(&o->hold_lock);
    pthread_mutex_lock(&lane->inbox_lock);
    hd->next = lane->inbox;
    lane->inbox = hd;
    pthread_mutex_unlock(&lane->inbox_lock);
    uv_async_send(&lane->wake);
    return fds[1];
}

void owner_get_lanes_stop(owner *o)
{
    struct get_lanes *ls = o->lanes;
    if (!ls)
        return;
    o->lanes = NULL;
    lanes_join(ls, ls->n);
    run_queued(ls); /* what the lanes left, sessions whose last lane closed among it */
    uv_close((uv_handle_t *)&ls->loop_wake, on_lanes_closed);
}
