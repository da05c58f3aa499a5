/*
 * master_wait.c - the owner's calls to the master on behalf of a client
 * request, made whether or not there is a master right now.
 *
 * Owners outlive the master (docs/decisions.md): when the link drops,
 * master_link.c reconnects and everything local (the segment, the holders,
 * the get cache, the sessions) stays. A client request that needs the master
 * (PutStart, PutDone, a PutRevoke that answers the client, GetStart, GetDone,
 * Delete, Stat, KeyInfo, Lease) goes through owner_master_call(): with a
 * master ready it is an rpc_call; without one its body is packed and queued
 * here with a deadline of master_wait from now. owner_master_ready() sends
 * the queue, each call with the time it has left; a timer fails what reaches
 * its deadline first with FX_EMASTER. Calls already sent when the link drops
 * complete with FX_EMASTER through rpc_fail_all (master_link.c). So every
 * call completes exactly once, with an answer, FX_ETIMEDOUT or FX_EMASTER,
 * never hangs; the queue is bounded (MASTER_WAIT_MAX_CALLS calls and
 * MASTER_WAIT_MAX_BYTES of bodies: beyond either a call
 * is refused at once) and its calls fail at shutdown.
 *
 * The queue is in enqueue order, which is deadline order too (every call
 * waits the same master_wait), so the timer only ever looks at the head. A
 * queued PutStart names its source, this owner, by the node id it had when
 * it was queued; it goes out with the id the owner has when it is sent.
 * One-way notifications do not come here: they describe the old master's
 * state and are dropped while the master is away (their own files).
 */
#include "owner/owner.h"

#include <errno.h>
#include <stdlib.h>

#include "common/log.h"
#include "fluxon/fluxon.h"
#include "net/msg.h"
#include "owner/put_pool.h"

/* Queued calls at most, and their bodies' bytes at most: a single key is at
 * most 4 KiB, but a batch (BatchKeyInfo) may carry 4 MiB of keys. */
#define MASTER_WAIT_MAX_CALLS 4096u
#define MASTER_WAIT_MAX_BYTES (64u << 20)

typedef struct waiting_call {
    uint16_t type;
    uint8_t *body; /* the packed request */
    size_t len;
    uint64_t deadline_ms; /* loop time */
    rpc_cb cb;
    void *ud;
    struct waiting_call *next;
} waiting_call;

struct master_wait {
    uv_timer_t timer; /* first: the close callback frees the whole struct */
    owner *o;
    waiting_call *head, *tail; /* enqueue (= deadline) order */
    size_t count;
    size_t bytes; /* of the queued bodies */
};

static waiting_call *pop(master_wait *w)
{
    waiting_call *c = w->head;
    if (c) {
        w->head = c->next;
        if (!w->head)
            w->tail = NULL;
        w->count--;
        w->bytes -= c->len;
    }
    return c;
}

/* Completes c with status (resp NULL) and frees it; c is already off the queue. */
static void fail_call(waiting_call *c, int status)
{
    c->cb(status, NULL, c->ud);
    free(c->body);
    free(c);
}

static void on_wait_timer(uv_timer_t *t);

/* Arms the timer for the head's deadline (stops it when the queue is empty). */
static void arm(master_wait *w)
{
    if (!w->head) {
        uv_timer_stop(&w->timer);
        return;
    }
    uint64_t now = uv_now(w->o->loop);
    uv_timer_start(&w->timer, on_wait_timer,
                   w->head->deadline_ms > now ? w->head->deadline_ms - now : 0, 0);
}

static void on_wait_timer(uv_timer_t *t)
{
    master_wait *w = t->data;
    uint64_t now = uv_now(w->o->loop);
    size_t failed = 0;
    while (w->head && w->head->deadline_ms <= now) {
        fail_call(pop(w), FX_EMASTER);
        failed++;
    }
    if (failed)
        FX_LOG_LIMITED(WARN, "no master for master_wait (%llu ms): %zu client request(s) failed "
                             "with MasterUnavailable",
                       (unsigned long long)w->o->cfg.master_wait_ms, failed);
    arm(w);
}

int owner_master_wait_init(owner *o)
{
    master_wait *w = calloc(1, sizeof *w);
    if (!w)
        return FX_ENOMEM;
    w->o = o;
    uv_timer_init(o->loop, &w->timer);
    w->timer.data = w;
    o->mwait = w;
    return 0;
}

void owner_master_wait_close(owner *o)
{
    master_wait *w = o->mwait;
    if (!w)
        return;
    o->mwait = NULL; /* calls from the callbacks below are refused */
    waiting_call *c;
    while ((c = pop(w)))
        fail_call(c, FX_EMASTER);
    uv_close((uv_handle_t *)&w->timer, (uv_close_cb)free);
}

/* Packs m and queues it. Returns 0, or FX_EMASTER (closed, full) / FX_ENOMEM. */
static int enqueue(owner *o, uint16_t type, const ProtobufCMessage *m, rpc_cb cb, void *ud)
{
    master_wait *w = o->mwait;
    if (!w)
        return FX_EMASTER;
    if (w->count >= MASTER_WAIT_MAX_CALLS) {
        FX_LOG_LIMITED(WARN, "%u client requests already wait for the master; %s refused with "
                             "MasterUnavailable",
                       MASTER_WAIT_MAX_CALLS, msg_name(type));
        return FX_EMASTER;
    }
    if (m->descriptor != msg_descriptor(type, false))
        return FX_EINVAL; /* as rpc_call would refuse it */
    size_t len = protobuf_c_message_get_packed_size(m);
    if (len > MASTER_WAIT_MAX_BYTES - w->bytes) {
        FX_LOG_LIMITED(WARN, "%zu bytes of client requests already wait for the master; %s "
                             "refused with MasterUnavailable", w->bytes, msg_name(type));
        return FX_EMASTER;
    }
    waiting_call *c = calloc(1, sizeof *c);
    uint8_t *body = c ? malloc(len ? len : 1) : NULL;
    if (!body) {
        free(c);
        return FX_ENOMEM;
    }
    protobuf_c_message_pack(m, body);
    c->type = type;
    c->body = body;
    c->len = len;
    c->deadline_ms = uv_now(o->loop) + o->cfg.master_wait_ms;
    c->cb = cb;
    c->ud = ud;
    if (w->tail)
        w->tail->next = c;
    else
        w->head = c;
    w->tail = c;
    w->bytes += len;
    if (w->count++ == 0)
        arm(w);
    return 0;
}

int owner_master_call(owner *o, uint16_t type, const ProtobufCMessage *m, rpc_cb cb, void *ud)
{
    if (!o->master_ready || !o->mrpc)
        return enqueue(o, type, m, cb, ud);
    int r = rpc_call(o->mrpc, type, m, OWNER_RPC_TIMEOUT_MS, cb, ud);
    if (r == 0)
        return 0;
    return r == -ENOMEM ? FX_ENOMEM : r == -EINVAL ? FX_EINVAL : FX_EMASTER;
}

void owner_master_ready(owner *o)
{
    o->master_ready = true;
    master_wait *w = o->mwait;
    if (!w)
        return;
    uv_timer_stop(&w->timer);
    size_t sent = 0;
    waiting_call *c;
    /* A callback run here (a call past its deadline) may call
     * owner_master_call again: that goes straight to the master. Should the
     * master go again meanwhile, the loop ends and the rest keep waiting. */
    while (o->master_ready && o->mrpc && (c = pop(w))) {
        uint64_t now = uv_now(o->loop);
        if (c->deadline_ms <= now) {
            fail_call(c, FX_EMASTER);
            continue;
        }
        uint64_t left = c->deadline_ms - now;
        ProtobufCMessage *m = msg_decode(c->type, false, c->body, c->len);
        if (m && c->type == MSG_PUT_START) /* names its source, us, by the id of now */
            ((Fx__PutStartReq *)m)->source_node_id = o->node_id;
        int r = m ? rpc_call(o->mrpc, c->type, m, left > UINT32_MAX ? UINT32_MAX : (uint32_t)left,
                             c->cb, c->ud)
                  : -ENOMEM;
        msg_free(m);
        if (r < 0) {
            fail_call(c, r == -ENOMEM ? FX_ENOMEM : FX_EMASTER);
            continue;
        }
        free(c->body);
        free(c);
        sent++;
    }
    if (sent)
        FX_LOG(INFO, "master ready: sent %zu client request(s) that waited for it", sent);
    arm(w);
}

void owner_master_lost(owner *o)
{
    o->master_ready = false;
    o->master_epoch++;
    owner_holder_ack_drop(o); /* ids of the old master's holdings mean nothing to the next */
    owner_put_pool_master_lost(o); /* and neither do its grants */
}
