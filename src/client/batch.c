/*
 * batch.c - fx_batch_get and fx_batch_put: many keys per round trip, with
 * holders out and contiguous values in.
 *
 * fx_batch_get takes the keys the weak index holds from there (they cost
 * nothing, as for fx_get) and sends the rest in one ExternalBatchGet
 * (batch_get_call.c): one frame each way, the owner working on every key at
 * once. Each hit becomes an fx_holder, offered to the weak index like
 * fx_get's. fx_batch_put is the pipelined put of batch_put.c with a
 * contiguous source and no options. Per-key outcomes are per-key results:
 * one key's miss or NoSpace does not fail the others. The copying batch
 * calls are in batch_io.c, fx_batch_delete in batch_delete.c.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

int fx_batch_get(fx_client *c, size_t n, const char *const *keys, const size_t *klens,
                 fx_holder **out, int *results)
{
    client_clear_error();
    int err = client_check_batch(c, n, 1, keys, klens, results);
    if (err)
        return err;
    if (!out)
        return client_fail(FX_EINVAL, "out must not be NULL");
    size_t *slot = malloc(n * sizeof *slot); /* request j -> key slot[j] */
    if (!slot)
        return client_fail(FX_ENOMEM, "out of memory");
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = NULL;
        if ((results[i] = client_check_key(keys[i], klens[i])))
            continue;
        if ((out[i] = holder_index_get(c, keys[i], klens[i])))
            continue; /* results[i] is 0 */
        slot[m++] = i;
    }
    if (m) {
        uint64_t epoch = atomic_load(&c->inval_epoch);
        Fx__ExternalBatchGetResp *r;
        err = client_batch_get_call(c, m, slot, keys, klens, &r);
        if (err)
            goto fail;
        /* Holders the owner handed out that do not become fx_holders (a bad
         * range, out of memory) are released at once. */
        uint64_t *unused = malloc(m * sizeof *unused); /* NULL: they stay until fx_close */
        size_t n_unused = 0;
        for (size_t j = 0; j < m; j++) {
            Fx__ExternalGetResp *g = r->results[j];
            size_t i = slot[j];
            if (g->status) {
                results[i] = g->status;
                continue;
            }
            bool bad_range = !client_range_ok(c, g->offset, g->len);
            if (!bad_range && (out[i] = holder_new(c, keys[i], klens[i], g))) {
                if (g->cacheable)
                    holder_index_offer(c, out[i], epoch);
                continue;
            }
            results[i] = bad_range ? FX_EPROTO : FX_ENOMEM;
            if (unused)
                unused[n_unused++] = g->holder_id;
        }
        holder_ack_ids(c, unused, n_unused, false);
        free(unused);
        msg_free(&r->base);
    }
    free(slot);
    return 0;
fail:
    for (size_t i = 0; i < n; i++) {
        fx_holder_release(out[i]);
        out[i] = NULL;
    }
    free(slot);
    return err;
}

int fx_batch_put(fx_client *c, size_t n, const char *const *keys, const size_t *klens,
                 const void *const *vals, const size_t *lens, int *results)
{
    client_clear_error();
    int err = client_check_batch(c, n, 1, keys, klens, results);
    if (err)
        return err;
    if (!vals || !lens)
        return client_fail(FX_EINVAL, "vals and lens must not be NULL");
    put_source src = {.vals = vals, .lens = lens};
    return client_batch_put(c, n, keys, klens, &src, NULL, results);
}
