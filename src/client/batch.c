/*
 * batch.c - fx_batch_get and fx_batch_put: many keys per round trip.
 *
 * A batch is pipelined on one pooled connection (client_call_many): every
 * request goes out in one write, the owner works on all of them at once
 * (each get or put runs its own flow there: owner cache, master, data plane)
 * and answers each as it completes. A batch get is one round trip; a batch
 * put is two (all ExternalPutStarts, the copies into the staging ranges, all
 * ExternalPutTransferEnds). Per-key outcomes are per-key results: one key's
 * miss or NoSpace does not fail the others. Keys found in the weak index cost
 * nothing, as for fx_get.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/put_copy.h"

/* Checks the batch's shape; 0 or FX_EINVAL with the detail. */
static int check_batch(fx_client *c, size_t n, const char *const *keys, const size_t *klens,
                       const void *results)
{
    if (!c)
        return client_fail(FX_EINVAL, "client is NULL");
    if (n == 0 || n > FX_BATCH_MAX)
        return client_fail(FX_EINVAL, "batch of %zu keys is outside 1..%u", n, FX_BATCH_MAX);
    if (!keys || !klens || !results)
        return client_fail(FX_EINVAL, "keys, klens and results must not be NULL");
    return 0;
}

int fx_batch_get(fx_client *c, size_t n, const char *const *keys, const size_t *klens,
                 fx_holder **out, int *results)
{
    client_clear_error();
    int err = check_batch(c, n, keys, klens, results);
    if (err)
        return err;
    if (!out)
        return client_fail(FX_EINVAL, "out must not be NULL");
    size_t *slot = malloc(n * sizeof *slot); /* request j -> key slot[j] */
    Fx__ExternalGetReq *reqs = malloc(n * sizeof *reqs);
    const ProtobufCMessage **rp = malloc(n * sizeof *rp);
    ProtobufCMessage **resps = malloc(n * sizeof *resps);
    if (!slot || !reqs || !rp || !resps) {
        err = client_fail(FX_ENOMEM, "out of memory");
        goto out;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = NULL;
        if ((results[i] = client_check_key(keys[i], klens[i])))
            continue;
        if ((out[i] = holder_index_get(c, keys[i], klens[i])))
            continue; /* results[i] is 0 */
        fx__external_get_req__init(&reqs[m]);
        reqs[m].key = (ProtobufCBinaryData){.len = klens[i], .data = (uint8_t *)keys[i]};
        rp[m] = &reqs[m].base;
        slot[m++] = i;
    }
    if (m) {
        uint64_t epoch = atomic_load(&c->inval_epoch);
        xconn *x = client_conn_get(c, &err);
        if (!x)
            goto fail;
        err = client_call_many(c, x, MSG_EXT_GET, m, rp, resps);
        client_conn_put(c, x, err != 0);
        /* Holders the owner handed out that do not become fx_holders (the
         * batch failed, a bad range, out of memory) are released at once. */
        uint64_t *unused = malloc(m * sizeof *unused); /* NULL: they stay until fx_close */
        size_t n_unused = 0;
        for (size_t j = 0; j < m; j++) {
            Fx__ExternalGetResp *g = (Fx__ExternalGetResp *)resps[j];
            size_t i = slot[j];
            if (!g || g->status) {
                if (g && !err)
                    results[i] = g->status;
                continue;
            }
            bool bad_range = g->offset > c->seg_size || g->len > c->seg_size - g->offset;
            if (!err && !bad_range && (out[i] = holder_new(c, keys[i], klens[i], g))) {
                if (g->cacheable)
                    holder_index_offer(c, out[i], epoch);
                continue;
            }
            if (!err)
                results[i] = bad_range ? FX_EPROTO : FX_ENOMEM;
            if (unused)
                unused[n_unused++] = g->holder_id;
        }
        holder_ack_ids(c, unused, n_unused);
        free(unused);
        for (size_t j = 0; j < m; j++)
            msg_free(resps[j]);
        if (err)
            goto fail;
    }
    err = 0;
    goto out;
fail:
    for (size_t i = 0; i < n; i++) {
        fx_holder_release(out[i]);
        out[i] = NULL;
    }
out:
    free(slot);
    free(reqs);
    free(rp);
    free(resps);
    return err;
}

/* Whether a started put's staging range lies inside the segment. */
static bool staging_ok(const fx_client *c, const Fx__ExternalPutStartResp *psr, size_t len)
{
    return !psr->status && psr->offset <= c->seg_size && len <= c->seg_size - psr->offset;
}

int fx_batch_put(fx_client *c, size_t n, const char *const *keys, const size_t *klens,
                 const void *const *vals, const size_t *lens, int *results)
{
    client_clear_error();
    int err = check_batch(c, n, keys, klens, results);
    if (err)
        return err;
    if (!vals || !lens)
        return client_fail(FX_EINVAL, "vals and lens must not be NULL");
    size_t *slot = malloc(n * sizeof *slot);
    Fx__ExternalPutStartReq *starts = malloc(n * sizeof *starts);
    Fx__ExternalPutTransferEndReq *ends = malloc(n * sizeof *ends);
    Fx__PutId *pids = malloc(n * sizeof *pids);
    const ProtobufCMessage **rp = malloc(n * sizeof *rp);
    ProtobufCMessage **resps = malloc(n * sizeof *resps);
    xconn *x = NULL;
    size_t m = 0, k = 0;
    if (!slot || !starts || !ends || !pids || !rp || !resps) {
        err = client_fail(FX_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        results[i] = client_check_key(keys[i], klens[i]);
        if (!results[i] && !vals[i] && lens[i])
            results[i] = client_fail(FX_EINVAL, "value %zu is NULL", i);
        if (results[i])
            continue;
        results[i] = FX_ECONN; /* until its end is answered */
        fx__external_put_start_req__init(&starts[m]);
        starts[m].key = (ProtobufCBinaryData){.len = klens[i], .data = (uint8_t *)keys[i]};
        starts[m].len = lens[i];
        rp[m] = &starts[m].base;
        slot[m++] = i;
    }
    if (!m)
        goto out;
    /* Round trip 1: every start. Copy each value into its staging range. */
    x = client_conn_get(c, &err);
    if (!x)
        goto out;
    err = client_call_many(c, x, MSG_EXT_PUT_START, m, rp, resps);
    size_t total = 0;
    for (size_t j = 0; j < m && !err; j++)
        if (staging_ok(c, (Fx__ExternalPutStartResp *)resps[j], lens[slot[j]]))
            total += lens[slot[j]];
    owner_wake w = {.c = c, .x = x};
    put_copy pc;
    put_copy_init(&pc, total, owner_wake_ping, &w);
    for (size_t j = 0; j < m && !err; j++) {
        Fx__ExternalPutStartResp *psr = (Fx__ExternalPutStartResp *)resps[j];
        size_t i = slot[j];
        if (psr->status) {
            results[i] = psr->status;
            continue;
        }
        fx__external_put_transfer_end_req__init(&ends[k]);
        fx__put_id__init(&pids[k]);
        if (psr->put_id) {
            pids[k].time_ms = psr->put_id->time_ms;
            pids[k].version = psr->put_id->version;
        }
        bool in_bounds = staging_ok(c, psr, lens[i]);
        if (in_bounds)
            put_copy_value(&pc, c->base + psr->offset, vals[i], lens[i]);
        ends[k].key = starts[j].key;
        ends[k].put_id = &pids[k];
        ends[k].abort = !in_bounds;
        if (!in_bounds)
            results[i] = FX_EPROTO; /* stays: its end only aborts */
        slot[k] = i; /* k <= j: slot[j] was read above */
        rp[k] = &ends[k].base;
        k++;
    }
    for (size_t j = 0; j < m; j++)
        msg_free(resps[j]);
    if (!err && w.failed) /* the connection may hold part of a frame: no ends on it */
        err = client_fail(FX_ECONN, "writing to the owner at %s failed while the values were "
                                    "copied; the puts are revoked", c->path);
    if (err || !k)
        goto out;
    /* Round trip 2: every end. */
    err = client_call_many(c, x, MSG_EXT_PUT_TRANSFER_END, k, rp, resps);
    for (size_t j = 0; j < k && !err; j++) {
        size_t i = slot[j];
        if (ends[j].abort)
            continue;
        results[i] = msg_status(resps[j]);
        if (results[i])
            client_fail(results[i], "key %zu: %s", i, msg_detail(resps[j]));
    }
    for (size_t j = 0; j < k; j++)
        msg_free(resps[j]);
out:
    if (x)
        client_conn_put(c, x, err != 0);
    /* Overwritten keys must not be served from this client's index again. */
    for (size_t i = 0; i < n; i++)
        if (keys[i] && klens[i] && klens[i] <= CLIENT_MAX_KEY_LEN)
            holder_index_invalidate(c, keys[i], klens[i]);
    free(slot);
    free(starts);
    free(ends);
    free(pids);
    free(rp);
    free(resps);
    return err;
}
