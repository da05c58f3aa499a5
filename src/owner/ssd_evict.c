/*
 * ssd_evict.c - the SSD ring's evictions, batched to the master (spec 000
 * §7.1).
 *
 * When the ring's tail passes committed entries, the engine queues their
 * (key, put_id) (bounded: when full it drops and counts, and writes never
 * wait). Every SSD_EVICT_TICK_MS a timer moves up to SSD_EVICT_BATCH of them
 * into the pending batch and sends it as BatchSsdReplicaEvict, so the master
 * clears those routes' ssd fields. One batch is in flight at a time; a failed
 * batch stays and is sent again on the next tick; a successful one is
 * followed at once by the next when more evictions are queued. What is not
 * sent when the owner stops is dropped: the master tombs this incarnation's
 * replicas when it leaves, and a stale route that slips through is caught by
 * the read fallback (GetRevoke with drop_ssd_source).
 */
#include "owner/ssd_tier.h"

#include <stdlib.h>

#include "common/log.h"
#include "fluxon/fluxon.h"

static void send_batch(ssd_tier *t);

static void batch_clear(ssd_tier *t)
{
    for (size_t i = 0; i < t->n_batch; i++)
        free(t->batch[i].key);
    t->n_batch = 0;
}

static void on_evict_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ssd_tier *t = ud;
    t->batch_in_flight = false;
    if (!t->evict_timer_init)
        return; /* stopped meanwhile: the batch is gone */
    if (status || msg_status(msg)) {
        if (t->batch_failures++ == 0)
            FX_LOG(WARN, "BatchSsdReplicaEvict of %zu entries failed (%s%s%s); retrying",
                   t->n_batch, fx_strerror(status ? status : msg_status(msg)),
                   status ? "" : ": ", status ? "" : msg_detail(msg));
        return;
    }
    if (t->batch_failures)
        FX_LOG(INFO, "BatchSsdReplicaEvict went through after %u failures", t->batch_failures);
    t->batch_failures = 0;
    batch_clear(t);
    send_batch(t);
}

/* Tops the batch up from the engine's queue and sends it when it has entries. */
static void send_batch(ssd_tier *t)
{
    owner *o = t->o;
    if (t->batch_in_flight || o->stopping)
        return;
    if (t->n_batch < SSD_EVICT_BATCH) {
        size_t n = ssd_pop_evictions(t->store, t->batch + t->n_batch, SSD_EVICT_BATCH - t->n_batch);
        /* Our replica index forgets them now, master or not. */
        for (size_t i = t->n_batch; i < t->n_batch + n; i++)
            owner_index_ssd(o, t->batch[i].key, t->batch[i].klen, t->batch[i].pid.time_ms,
                            t->batch[i].pid.version, false, 0);
        t->n_batch += n;
    }
    if (!t->n_batch)
        return;
    if (!o->registered || !o->mrpc) {
        batch_clear(t); /* no master: the next one learns our SSD copies from our index */
        return;
    }
    Fx__PutId pids[SSD_EVICT_BATCH];
    Fx__SsdEviction evs[SSD_EVICT_BATCH];
    Fx__SsdEviction *ptrs[SSD_EVICT_BATCH];
    for (size_t i = 0; i < t->n_batch; i++) {
        fx__put_id__init(&pids[i]);
        pids[i].time_ms = t->batch[i].pid.time_ms;
        pids[i].version = t->batch[i].pid.version;
        fx__ssd_eviction__init(&evs[i]);
        evs[i].key = (ProtobufCBinaryData){.len = t->batch[i].klen,
                                           .data = (uint8_t *)t->batch[i].key};
        evs[i].put_id = &pids[i];
        ptrs[i] = &evs[i];
    }
    Fx__BatchSsdReplicaEvictReq req = FX__BATCH_SSD_REPLICA_EVICT_REQ__INIT;
    req.n_evictions = t->n_batch;
    req.evictions = ptrs;
    /* rpc_call encodes at once: the arrays above may go when it returns. */
    if (rpc_call(o->mrpc, MSG_BATCH_SSD_REPLICA_EVICT, &req.base, OWNER_RPC_TIMEOUT_MS,
                 on_evict_resp, t) == 0)
        t->batch_in_flight = true;
}

static void on_evict_timer(uv_timer_t *timer)
{
    send_batch(timer->data);
}

void ssd_evict_start(ssd_tier *t)
{
    uv_timer_init(t->o->loop, &t->evict_timer);
    t->evict_timer.data = t;
    t->evict_timer_init = true;
    uv_timer_start(&t->evict_timer, on_evict_timer, SSD_EVICT_TICK_MS, SSD_EVICT_TICK_MS);
}

void ssd_evict_stop(ssd_tier *t)
{
    if (t->evict_timer_init) {
        uv_timer_stop(&t->evict_timer);
        uv_close((uv_handle_t *)&t->evict_timer, NULL);
        t->evict_timer_init = false;
    }
    batch_clear(t);
}
