/*
 * invalidation.c - the asynchronous invalidation broadcast (see
 * invalidation.h).
 *
 * Delete removes the route first and answers; only then are the owners that
 * cached the old version told (BatchDeleteClientKvMetaCache), and they tell
 * their externals (ExternalInvalidateWeakIndex). Overwrites (PutDone),
 * evictions and expired leases use the same broadcast. Keys are batched per
 * owner and flushed once per loop iteration, after the responses of that
 * iteration were queued, so an owner always sees the response before the
 * invalidation it causes.
 */
#include "master/invalidation.h"

#include <stdlib.h>

#include "common/memdup.h"
#include "fluxon/fluxon.h"
#include "common/log.h"
#include "master/index_sync.h"
#include "master/members.h"

void master_queue_invalidation(member *mb, const char *key, size_t klen)
{
    if (mb->n_pending_inval == mb->cap_pending_inval) {
        size_t cap = mb->cap_pending_inval ? mb->cap_pending_inval * 2 : 16;
        char **keys = realloc(mb->pending_invalidations, cap * sizeof *keys);
        if (!keys)
            return;
        mb->pending_invalidations = keys;
        size_t *lens = realloc(mb->pending_inval_lens, cap * sizeof *lens);
        if (!lens)
            return;
        mb->pending_inval_lens = lens;
        mb->cap_pending_inval = cap;
    }
    char *k = fx_memdup(key, klen);
    if (!k)
        return;
    mb->pending_invalidations[mb->n_pending_inval] = k;
    mb->pending_inval_lens[mb->n_pending_inval++] = klen;
}

void master_invalidate_route(master *m, route *old)
{
    for (size_t i = 0; i < old->n_cached_by; i++) {
        member *mb = master_member(m, old->cached_by[i]);
        if (mb)
            master_queue_invalidation(mb, old->key, old->klen);
    }
}

/* The owner applied batch seq (index ops and invalidations): ud is the
 * member, alive while its rpc client is (member-left frees the client,
 * completing this with FX_ECONN, before the member). */
static void on_batch_resp(int status, ProtobufCMessage *msg, void *ud)
{
    member *mb = ud;
    if (status || msg_status(msg)) {
        if (status != FX_ECONN)
            FX_LOG_LIMITED(WARN, "member %u did not apply an index batch: %s", mb->node_id,
                           status ? fx_strerror(status) : msg_detail(msg));
        return; /* waits on it end when it leaves (index_sync.c's sweep) */
    }
    master_conn *mc = net_conn_data(mb->conn);
    if (mc)
        master_index_acked(mc->m, mb, ((Fx__BatchDeleteClientKvMetaCacheResp *)msg)->seq);
}

void master_flush_invalidations(master *m)
{
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp) {
        if (!mb->n_pending_inval && !mb->batch_dirty)
            continue;
        size_t n = mb->n_pending_inval;
        size_t n_ops = 0;
        Fx__IndexOp **ops = master_index_take_ops(mb, &n_ops);
        ProtobufCBinaryData *keys = malloc((n ? n : 1) * sizeof *keys);
        if (keys && mb->rpc) {
            for (size_t i = 0; i < n; i++)
                keys[i] = (ProtobufCBinaryData){.len = mb->pending_inval_lens[i],
                                                .data = (uint8_t *)mb->pending_invalidations[i]};
            Fx__BatchDeleteClientKvMetaCacheReq req = FX__BATCH_DELETE_CLIENT_KV_META_CACHE_REQ__INIT;
            req.n_keys = n;
            req.keys = keys;
            req.seq = mb->index_seq++;
            req.n_index_ops = n_ops;
            req.index_ops = ops;
            mb->batch_dirty = false;
            if (rpc_call(mb->rpc, MSG_BATCH_DELETE_CLIENT_KV_META_CACHE, &req.base,
                         INDEX_ACK_TIMEOUT_MS, on_batch_resp, mb) < 0)
                FX_LOG_LIMITED(WARN, "cannot send member %u its batch", mb->node_id);
        }
        free(keys);
        master_index_ops_free(ops, n_ops);
        for (size_t i = 0; i < n; i++)
            free(mb->pending_invalidations[i]);
        mb->n_pending_inval = 0;
    }
}

void master_invalidations_free(member *mb)
{
    for (size_t i = 0; i < mb->n_pending_inval; i++)
        free(mb->pending_invalidations[i]);
    free(mb->pending_invalidations);
    free(mb->pending_inval_lens);
}
