/*
 * alloc_wait.c - bounded waiting for room (spec 000 §4.1, steps 3-4).
 *
 * A PutStart or GetStart whose ranges do not fit even after eviction is not
 * answered NoSpace at once: it waits while routes are deleted, owner caches
 * drop evicted replicas and holders are released, and is replayed every
 * ALLOC_RETRY_MS. Only after ALLOC_WAIT_MS does it get NoSpace (with the
 * owner's total and free bytes). Released holders replay the waiters at once
 * (master_alloc_wait_kick): under steady eviction a refill waits for the
 * owner's ack of the evicted replica, not for the next timer tick.
 * Waiting never raises an owner's capacity.
 * A waiter whose requester left is dropped (its connection is gone).
 *
 * Like a blocked client in Redis (blocked.c), a waiter keeps its request as
 * it arrived (the packed body and the frame header) and is replayed through
 * the handler the parking flow stored with it; this file knows no flow by
 * name.
 */
#include "master/master.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "master/members.h"

#define ALLOC_RETRY_MS 2u
#define ALLOC_WAIT_MS 5000u

struct alloc_waiter {
    uint16_t type;
    uint32_t node_id;
    uint64_t tomb_tag;
    net_conn *conn; /* referenced */
    frame_hdr hdr;
    uint8_t *body;
    size_t len;
    uint64_t deadline_ms;
    alloc_replay_fn replay; /* the parking flow's handler, and its context */
    void *replay_ctx;
    struct alloc_waiter *prev, *next;
};

static void waiter_free(alloc_waiter *w)
{
    net_conn_unref(w->conn);
    free(w->body);
    free(w);
}

static void on_retry(uv_timer_t *t);

bool master_alloc_defer(master *m, member *mb, net_conn *c, const frame_hdr *h, uint16_t type,
                        const ProtobufCMessage *req, alloc_replay_fn replay, void *replay_ctx)
{
    uint64_t now = master_now_ms(m);
    alloc_waiter *w = m->alloc_replaying;
    if (w) { /* a replay that still does not fit */
        if (now >= w->deadline_ms)
            return false;
        m->alloc_requeued = true;
        DL_APPEND(m->alloc_waiters, w);
    } else {
        w = calloc(1, sizeof *w);
        size_t len = protobuf_c_message_get_packed_size(req);
        if (w)
            w->body = malloc(len ? len : 1);
        if (!w || !w->body) {
            free(w);
            return false;
        }
        protobuf_c_message_pack(req, w->body);
        w->len = len;
        w->type = type;
        w->node_id = mb->node_id;
        w->tomb_tag = mb->tomb_tag;
        w->conn = c;
        net_conn_ref(c);
        w->hdr = *h;
        w->deadline_ms = now + ALLOC_WAIT_MS;
        w->replay = replay;
        w->replay_ctx = replay_ctx;
        DL_APPEND(m->alloc_waiters, w);
    }
    if (!uv_is_active((uv_handle_t *)&m->alloc_timer))
        uv_timer_start(&m->alloc_timer, on_retry, ALLOC_RETRY_MS, 0);
    return true;
}

/* Replays every waiter once, oldest first. */
static void on_retry(uv_timer_t *t)
{
    master *m = t->data;
    alloc_waiter *batch = m->alloc_waiters;
    m->alloc_waiters = NULL;
    while (batch) {
        alloc_waiter *w = batch;
        DL_DELETE(batch, w);
        member *mb = master_member(m, w->node_id);
        ProtobufCMessage *req = NULL;
        if (mb && mb->tomb_tag == w->tomb_tag && net_conn_is_open(w->conn))
            req = msg_decode(w->type, false, w->body, w->len);
        if (!req) {
            waiter_free(w);
            continue;
        }
        m->alloc_replaying = w;
        m->alloc_requeued = false;
        w->replay(w->replay_ctx, mb, w->conn, &w->hdr, req);
        m->alloc_replaying = NULL;
        msg_free(req);
        if (!m->alloc_requeued)
            waiter_free(w);
    }
    if (m->alloc_waiters)
        uv_timer_start(&m->alloc_timer, on_retry, ALLOC_RETRY_MS, 0);
}

void master_alloc_wait_kick(master *m)
{
    if (m->alloc_waiters && !m->alloc_replaying)
        uv_timer_start(&m->alloc_timer, on_retry, 0, 0);
}

void master_alloc_wait_init(master *m)
{
    uv_timer_init(m->loop, &m->alloc_timer);
    m->alloc_timer.data = m;
}

void master_alloc_wait_close(master *m)
{
    while (m->alloc_waiters) {
        alloc_waiter *w = m->alloc_waiters;
        DL_DELETE(m->alloc_waiters, w);
        waiter_free(w);
    }
    uv_timer_stop(&m->alloc_timer);
    uv_close((uv_handle_t *)&m->alloc_timer, NULL);
}
