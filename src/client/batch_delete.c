/*
 * batch_delete.c - fx_batch_delete: the keys packed into one
 * ExternalBatchDelete, which the owner forwards to the master as one
 * BatchDelete (deleted in one pass; one answer once every owner holding a
 * dropped version acknowledged it). Each key's result is its own (0,
 * KeyNotFound, FX_EINVAL for an invalid key, which is not sent); every key,
 * deleted or not, leaves this client's weak index, as after fx_delete.
 */
#include <stdlib.h>

#include "client/client.h"

/* One ExternalBatchDelete of keys[slot[j]], j < m; results[slot[j]] set. */
static int delete_call(fx_client *c, size_t m, const size_t *slot, const char *const keys[],
                       const size_t klens[], int results[])
{
    packed_keys pk;
    int err = packed_keys_make(&pk, m, keys, klens, slot);
    if (err)
        return err;
    Fx__BatchDeleteReq req = FX__BATCH_DELETE_REQ__INIT;
    req.keys = (ProtobufCBinaryData){.len = pk.total, .data = pk.bytes};
    req.n_klens = pk.n;
    req.klens = pk.lens;
    ProtobufCMessage *msg;
    err = client_request(c, MSG_EXT_BATCH_DELETE, &req.base, &msg);
    packed_keys_free(&pk);
    if (err) {
        msg_free(msg);
        return err;
    }
    Fx__BatchDeleteResp *resp = (Fx__BatchDeleteResp *)msg;
    if (resp->n_results != m) {
        err = client_fail(FX_EPROTO, "owner answered %zu results for a batch of %zu keys",
                          resp->n_results, m);
        msg_free(msg);
        return err;
    }
    for (size_t j = 0; j < m; j++) {
        size_t i = slot[j];
        results[i] = resp->results[j];
        if (results[i] && results[i] != FX_ENOTFOUND)
            client_fail(results[i], "key %zu: %s", i, fx_strerror(results[i]));
    }
    msg_free(msg);
    return 0;
}

int fx_batch_delete(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                    int results[])
{
    client_clear_error();
    int err = client_check_batch(c, n, 0, keys, klens, results);
    if (err)
        return err;
    if (n == 0)
        return 0;
    size_t *slot = malloc(n * sizeof *slot); /* key sent j -> its index slot[j] */
    if (!slot) {
        err = client_fail(FX_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
            results[i] = err;
        return err;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!(results[i] = client_check_key(keys[i], klens[i])))
            slot[m++] = i;
    if (m && (err = delete_call(c, m, slot, keys, klens, results)) != 0)
        for (size_t j = 0; j < m; j++)
            results[slot[j]] = err; /* not known: the batch's code */
    for (size_t j = 0; j < m; j++)
        holder_index_invalidate(c, keys[slot[j]], klens[slot[j]]);
    free(slot);
    return err;
}
