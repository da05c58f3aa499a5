/*
 * batch_put.c - the pipelined put of a batch (fx_batch_put, fx_batch_put_from,
 * fx_batch_put_iov): two round trips on one pooled connection whatever the
 * number of keys.
 *
 * A batch whose values are all small (FX_PUT_INLINE_MAX each, BATCH_INLINE_MAX
 * in all) takes one round trip: every ExternalPut, value included, in one
 * write (put_inline); the owner writes each into its range and commits it.
 * Gathered iovecs are joined into one buffer first.
 *
 * Otherwise round trip 1 sends every ExternalPutStart in one write (each with the
 * batch's options: reject_if_exists, lease_id, reject_if_inflight_same_key);
 * the owner works on all of them at once and answers each with its staging
 * range. Each value is then copied once, straight from its source into its
 * range: a contiguous buffer, or the concatenation of an iovec array (the
 * gather form, for example one segment per layer). Round trip 2 sends every
 * ExternalPutTransferEnd. A key refused at its start (AlreadyExists, NoSpace,
 * Busy...) or at its commit has that code in its result alone; a range
 * outside the segment aborts that key's put. The copies wake the owner
 * before their tail (put_copy.h).
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/put_copy.h"

#define BATCH_INLINE_MAX (8u << 20)

/* Key i's value length from src, or FX_EINVAL (with the detail) when its
 * source is NULL where bytes are due or its iovecs add up past SIZE_MAX. */
static int source_len(const put_source *src, size_t i, size_t *len)
{
    if (src->vals) {
        *len = src->lens[i];
        if (!src->vals[i] && src->lens[i])
            return client_fail(FX_EINVAL, "value %zu is NULL", i);
        return 0;
    }
    size_t cnt = src->iovcnts[i], total = 0;
    const struct iovec *iov = src->iovs[i];
    if (!iov && cnt)
        return client_fail(FX_EINVAL, "iovs[%zu] is NULL", i);
    for (size_t k = 0; k < cnt; k++) {
        if (!iov[k].iov_base && iov[k].iov_len)
            return client_fail(FX_EINVAL, "iovs[%zu][%zu] is NULL", i, k);
        if (iov[k].iov_len > SIZE_MAX - total)
            return client_fail(FX_EINVAL, "the iovecs of value %zu add up past SIZE_MAX", i);
        total += iov[k].iov_len;
    }
    *len = total;
    return 0;
}

/* Copies key i's value from src to dst, in order. */
static void source_copy(put_copy *pc, uint8_t *dst, const put_source *src, size_t i)
{
    if (src->vals) {
        put_copy_value(pc, dst, src->vals[i], src->lens[i]);
        return;
    }
    const struct iovec *iov = src->iovs[i];
    for (size_t k = 0; k < src->iovcnts[i]; k++) {
        put_copy_value(pc, dst, iov[k].iov_base, iov[k].iov_len);
        dst += iov[k].iov_len;
    }
}

/* The batch in one round trip: the m keys slot[] names (their results set to
 * FX_ECONN until answered), values of vlen[] bytes, total bytes in all.
 * Returns 0 or the batch's own error. */
static int put_inline(fx_client *c, const char *const *keys, const size_t *klens,
                      const put_source *src, const Fx__PutOptions *opts, int *results,
                      const size_t *slot, size_t m, const size_t *vlen, size_t total)
{
    int err = 0;
    Fx__ExternalPutReq *reqs = malloc(m * sizeof *reqs);
    const ProtobufCMessage **rp = malloc(m * sizeof *rp);
    ProtobufCMessage **resps = calloc(m, sizeof *resps);
    uint8_t *joined = src->vals ? NULL : malloc(total ? total : 1);
    xconn *x = NULL;
    if (!reqs || !rp || !resps || (!src->vals && !joined)) {
        err = client_fail(FX_ENOMEM, "out of memory");
        goto out;
    }
    size_t at = 0;
    for (size_t j = 0; j < m; j++) {
        size_t i = slot[j];
        fx__external_put_req__init(&reqs[j]);
        reqs[j].key = (ProtobufCBinaryData){.len = klens[i], .data = (uint8_t *)keys[i]};
        reqs[j].options = (Fx__PutOptions *)opts;
        const uint8_t *val = src->vals ? src->vals[i] : joined + at;
        if (!src->vals) {
            for (size_t k = 0; k < src->iovcnts[i]; k++) {
                if (src->iovs[i][k].iov_len)
                    memcpy(joined + at, src->iovs[i][k].iov_base, src->iovs[i][k].iov_len);
                at += src->iovs[i][k].iov_len;
            }
        }
        reqs[j].value = (ProtobufCBinaryData){.len = vlen[i], .data = (uint8_t *)val};
        rp[j] = &reqs[j].base;
    }
    x = client_conn_get(c, &err);
    if (!x)
        goto out;
    err = client_call_many(c, x, MSG_EXT_PUT, m, rp, resps);
    for (size_t j = 0; j < m && !err; j++) {
        size_t i = slot[j];
        results[i] = msg_status(resps[j]);
        if (results[i])
            client_fail(results[i], "key %zu: %s", i, msg_detail(resps[j]));
    }
    for (size_t j = 0; j < m; j++)
        msg_free(resps[j]);
out:
    if (x)
        client_conn_put(c, x, err != 0);
    free(reqs);
    free(rp);
    free(resps);
    free(joined);
    return err;
}

int client_batch_put(fx_client *c, size_t n, const char *const *keys, const size_t *klens,
                     const put_source *src, const fx_put_options *opts, int *results)
{
    int err = 0;
    size_t *slot = malloc((n ? n : 1) * sizeof *slot);
    size_t *vlen = malloc((n ? n : 1) * sizeof *vlen);
    Fx__ExternalPutStartReq *starts = malloc((n ? n : 1) * sizeof *starts);
    Fx__ExternalPutTransferEndReq *ends = malloc((n ? n : 1) * sizeof *ends);
    Fx__PutId *pids = malloc((n ? n : 1) * sizeof *pids);
    const ProtobufCMessage **rp = malloc((n ? n : 1) * sizeof *rp);
    ProtobufCMessage **resps = malloc((n ? n : 1) * sizeof *resps);
    xconn *x = NULL;
    size_t m = 0, k = 0;
    if (!slot || !vlen || !starts || !ends || !pids || !rp || !resps) {
        err = client_fail(FX_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
            results[i] = err;
        goto out;
    }
    Fx__PutOptions wire_opts;
    Fx__PutOptions *wire = client_put_options(opts, &wire_opts);
    size_t small_total = 0;
    bool all_small = true;
    for (size_t i = 0; i < n; i++) {
        results[i] = client_check_key(keys[i], klens[i]);
        if (!results[i])
            results[i] = source_len(src, i, &vlen[i]);
        if (results[i])
            continue;
        all_small = all_small && vlen[i] <= FX_PUT_INLINE_MAX &&
                    vlen[i] <= BATCH_INLINE_MAX - small_total;
        if (all_small)
            small_total += vlen[i];
        results[i] = FX_ECONN; /* until its end is answered */
        fx__external_put_start_req__init(&starts[m]);
        starts[m].key = (ProtobufCBinaryData){.len = klens[i], .data = (uint8_t *)keys[i]};
        starts[m].len = vlen[i];
        starts[m].options = wire;
        rp[m] = &starts[m].base;
        slot[m++] = i;
    }
    if (!m)
        goto out;
    if (all_small) {
        err = put_inline(c, keys, klens, src, wire, results, slot, m, vlen, small_total);
        goto out;
    }
    /* Round trip 1: every start. Copy each value into its staging range. */
    x = client_conn_get(c, &err);
    if (!x)
        goto out;
    err = client_call_many(c, x, MSG_EXT_PUT_START, m, rp, resps);
    size_t total = 0;
    for (size_t j = 0; j < m && !err; j++) {
        Fx__ExternalPutStartResp *psr = (Fx__ExternalPutStartResp *)resps[j];
        if (!psr->status && client_range_ok(c, psr->offset, vlen[slot[j]]))
            total += vlen[slot[j]];
    }
    owner_wake w = {.c = c, .x = x};
    put_copy pc;
    put_copy_init(&pc, total, owner_wake_ping, &w);
    for (size_t j = 0; j < m && !err; j++) {
        Fx__ExternalPutStartResp *psr = (Fx__ExternalPutStartResp *)resps[j];
        size_t i = slot[j];
        if (psr->status) {
            results[i] = client_fail(psr->status, "key %zu: %s", i, psr->detail);
            continue;
        }
        fx__external_put_transfer_end_req__init(&ends[k]);
        fx__put_id__init(&pids[k]);
        if (psr->put_id) {
            pids[k].time_ms = psr->put_id->time_ms;
            pids[k].version = psr->put_id->version;
        }
        bool in_bounds = client_range_ok(c, psr->offset, vlen[i]);
        if (in_bounds)
            source_copy(&pc, c->base + psr->offset, src, i);
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
    for (size_t i = 0; err && i < n; i++)
        if (results[i] == FX_ECONN) /* not known: the batch's own error */
            results[i] = err;
    /* Overwritten keys must not be served from this client's index again. */
    for (size_t i = 0; i < n; i++)
        if (keys[i] && klens[i] && klens[i] <= CLIENT_MAX_KEY_LEN)
            holder_index_invalidate(c, keys[i], klens[i]);
    free(slot);
    free(vlen);
    free(starts);
    free(ends);
    free(pids);
    free(rp);
    free(resps);
    return err;
}
