/*
 * batch_get_call.c - one ExternalBatchGet round trip: the keys a batch get's
 * weak-index pass left, packed into one frame, and the owner's answer of one
 * ExternalGetResp per key, in key order (fx_batch_get, fx_batch_get_into,
 * fx_batch_get_iov).
 *
 * The answer is checked here for its shape only (one result per key); the
 * callers check each holder's range against the segment before they read
 * it. An answer that cannot be used releases every holder it named, so a
 * failed batch never leaves holders pinned at the owner until fx_close.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

/* Releases every holder the results name. */
static void ack_all(fx_client *c, const Fx__ExternalBatchGetResp *r)
{
    uint64_t *ids = malloc((r->n_results ? r->n_results : 1) * sizeof *ids);
    size_t k = 0;
    for (size_t j = 0; ids && j < r->n_results; j++)
        if (r->results[j] && !r->results[j]->status && r->results[j]->holder_id)
            ids[k++] = r->results[j]->holder_id;
    holder_ack_ids(c, ids, k, false); /* out of memory: they stay until fx_close */
    free(ids);
}

int client_batch_get_call(fx_client *c, size_t m, const size_t *slot, const char *const *keys,
                          const size_t *klens, Fx__ExternalBatchGetResp **out)
{
    *out = NULL;
    packed_keys pk;
    int err = packed_keys_make(&pk, m, keys, klens, slot);
    if (err)
        return err;
    Fx__ExternalBatchGetReq req = FX__EXTERNAL_BATCH_GET_REQ__INIT;
    req.keys = (ProtobufCBinaryData){.len = pk.total, .data = pk.bytes};
    req.n_klens = pk.n;
    req.klens = pk.lens;
    ProtobufCMessage *msg;
    err = client_request(c, MSG_EXT_BATCH_GET, &req.base, &msg);
    packed_keys_free(&pk);
    Fx__ExternalBatchGetResp *r = (Fx__ExternalBatchGetResp *)msg;
    if (!err && r->n_results != m) {
        ack_all(c, r);
        err = client_fail(FX_EPROTO, "owner answered %zu results for a batch of %zu keys",
                          r->n_results, m);
    }
    for (size_t j = 0; !err && j < m; j++) {
        if (!r->results[j]) {
            ack_all(c, r);
            err = client_fail(FX_EPROTO, "owner answered an empty result for key %zu", j);
        }
    }
    if (err) {
        msg_free(msg);
        return err;
    }
    *out = r;
    return 0;
}
