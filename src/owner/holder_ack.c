/*
 * holder_ack.c - telling the master which holders this owner let go.
 *
 * The master keeps a get's allocation for as long as its holder lives; here a
 * memory_info stands for one master holder (holders.c, owner.h's three
 * layers). When its last reference goes, the master holder id is queued, and
 * the ids go to the master as one BatchDeleteAck (one-way) every
 * OWNER_ACK_BATCH ids or on the next timer tick (1 ms), whichever comes
 * first; master_link.c also flushes at once after the master's invalidation
 * (an eviction may be waiting for the bytes dropped there). The ids name
 * holdings of the master this owner is registered with: while there is no
 * master ready (lost, reconnecting) they are dropped, and those queued when
 * the link drops go too (owner_holder_ack_drop): a restarted master numbers
 * its holdings afresh, and an old id could release one of its own.
 */
#include "owner/owner.h"

#include <stdlib.h>

#include "common/log.h"
#include "common/u64_array.h"
#include "fluxon/fluxon.h"

#define OWNER_ACK_BATCH 256u

void owner_holder_ack_flush(owner *o)
{
    uv_timer_stop(&o->ack_timer);
    if (!o->n_acks || !o->registered || !o->master_ready || !o->mrpc)
        return;
    Fx__BatchDeleteAckReq req = FX__BATCH_DELETE_ACK_REQ__INIT;
    req.n_holder_ids = o->n_acks;
    req.holder_ids = o->acks;
    rpc_notify(o->mrpc, MSG_BATCH_DELETE_ACK, &req.base);
    o->n_acks = 0;
}

static void on_ack_timer(uv_timer_t *t)
{
    owner_holder_ack_flush(t->data);
}

void owner_ack_holder(owner *o, uint64_t master_holder_id)
{
    if (!master_holder_id)
        return; /* a pin the master never numbered */
    if (!o->master_ready) {
        FX_LOG(DEBUG, "holder %llu released while no master is ready; not acknowledged",
               (unsigned long long)master_holder_id);
        return;
    }
    if (u64_array_push(&o->acks, &o->n_acks, &o->cap_acks, OWNER_ACK_BATCH, master_holder_id)) {
        FX_LOG(ERROR, "out of memory queueing a holder ack; holder %llu stays held",
               (unsigned long long)master_holder_id);
        return;
    }
    if (o->n_acks >= OWNER_ACK_BATCH)
        owner_holder_ack_flush(o);
    else if (o->n_acks == 1)
        uv_timer_start(&o->ack_timer, on_ack_timer, 1, 0);
}

void owner_holder_ack_drop(owner *o)
{
    if (o->n_acks)
        FX_LOG(INFO, "dropping %zu holder ack(s) meant for the lost master", o->n_acks);
    o->n_acks = 0;
    if (uv_is_active((uv_handle_t *)&o->ack_timer))
        uv_timer_stop(&o->ack_timer);
}

void owner_holder_ack_init(owner *o)
{
    uv_timer_init(o->loop, &o->ack_timer);
    o->ack_timer.data = o;
}

void owner_holder_ack_close(owner *o)
{
    uv_close((uv_handle_t *)&o->ack_timer, NULL);
}

void owner_holder_ack_free(owner *o)
{
    free(o->acks);
    o->acks = NULL;
    o->n_acks = o->cap_acks = 0;
}
