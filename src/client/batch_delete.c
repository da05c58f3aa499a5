/*
 * batch_delete.c - fx_batch_delete: ExternalDelete for every key, pipelined
 * on one pooled connection (client_call_many): one write out, the owner
 * deleting every key at once through the master, one answer per key.
 * Each key's result is its own (0, KeyNotFound...); every key, deleted or
 * not, leaves this client's weak index, as after fx_delete.
 */
#include <stdlib.h>

#include "client/client.h"

int fx_batch_delete(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                    int results[])
{
    client_clear_error();
    int err = client_check_batch(c, n, 0, keys, klens, results);
    if (err)
        return err;
    size_t *slot = malloc((n ? n : 1) * sizeof *slot);
    Fx__ExternalDeleteReq *reqs = malloc((n ? n : 1) * sizeof *reqs);
    const ProtobufCMessage **rp = malloc((n ? n : 1) * sizeof *rp);
    ProtobufCMessage **resps = calloc(n ? n : 1, sizeof *resps);
    size_t m = 0;
    if (!slot || !reqs || !rp || !resps) {
        err = client_fail(FX_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
            results[i] = err;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if ((results[i] = client_check_key(keys[i], klens[i])))
            continue;
        fx__external_delete_req__init(&reqs[m]);
        reqs[m].key = (ProtobufCBinaryData){.len = klens[i], .data = (uint8_t *)keys[i]};
        rp[m] = &reqs[m].base;
        slot[m++] = i;
    }
    if (m) {
        xconn *x = client_conn_get(c, &err);
        if (x) {
            err = client_call_many(c, x, MSG_EXT_DELETE, m, rp, resps);
            client_conn_put(c, x, err != 0);
        }
        for (size_t j = 0; j < m; j++) {
            size_t i = slot[j];
            results[i] = err ? err : msg_status(resps[j]);
            if (!err && results[i] && results[i] != FX_ENOTFOUND)
                client_fail(results[i], "key %zu: %s", i, msg_detail(resps[j]));
            msg_free(resps[j]);
            holder_index_invalidate(c, keys[i], klens[i]);
        }
    }
out:
    free(slot);
    free(reqs);
    free(rp);
    free(resps);
    return err;
}
