/*
 * batch_io.c - batches that copy values in and out: fx_batch_get_into,
 * fx_batch_get_iov, fx_batch_put_from and fx_batch_put_iov.
 *
 * A get copies each value into the caller's memory and keeps no holder: keys
 * the weak index holds are copied from there; the rest go in one
 * ExternalBatchGet (batch_get_call.c), and every holder the owner handed out
 * is released in one ExternalDeleteAck once its bytes are copied. Each range
 * the owner names is checked against the segment before it is read. The
 * contiguous form is the scatter form with one iovec per key: a value fills
 * the iovecs in order and may end inside any of them; a value longer than
 * their total is that key's InvalidArgument, nothing written, lens[i] the
 * length needed.
 *
 * A put is the pipelined put of batch_put.c, with the caller's options and
 * the values as buffers or as iovec gathers.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

/* Where the values of one batch get go. */
typedef struct get_sink {
    const struct iovec *const *iovs;
    const size_t *iovcnts;
    size_t *lens;
    int *results;
} get_sink;

/* The bytes key i's iovecs take, or FX_EINVAL (with the detail) when an
 * iovec is NULL where bytes are due. A total past SIZE_MAX saturates. */
static int sink_capacity(const get_sink *s, size_t i, size_t *cap)
{
    const struct iovec *iov = s->iovs[i];
    size_t cnt = s->iovcnts[i], total = 0;
    if (!iov && cnt)
        return client_fail(FX_EINVAL, "iovs[%zu] is NULL", i);
    for (size_t k = 0; k < cnt; k++) {
        if (!iov[k].iov_base && iov[k].iov_len)
            return client_fail(FX_EINVAL, "iovs[%zu][%zu] is NULL", i, k);
        total = iov[k].iov_len > SIZE_MAX - total ? SIZE_MAX : total + iov[k].iov_len;
    }
    *cap = total;
    return 0;
}

/* Copies key i's value (len bytes at data) into its iovecs, or records that
 * they are too small (cap: their total). */
static void sink_deliver(const get_sink *s, size_t i, size_t cap, const uint8_t *data, size_t len)
{
    s->lens[i] = len;
    if (len > cap) {
        s->results[i] = client_fail(FX_EINVAL, "key %zu: buffer of %zu bytes is too small for "
                                                "the %zu-byte value", i, cap, len);
        return;
    }
    const struct iovec *iov = s->iovs[i];
    for (size_t k = 0; len; k++) {
        size_t take = iov[k].iov_len < len ? iov[k].iov_len : len;
        memcpy(iov[k].iov_base, data, take);
        data += take;
        len -= take;
    }
    s->results[i] = 0;
}

static int batch_get_sink(fx_client *c, size_t n, const char *const *keys, const size_t *klens,
                          const get_sink *s)
{
    size_t *slot = malloc((n ? n : 1) * sizeof *slot); /* request j -> key slot[j] */
    size_t *caps = malloc((n ? n : 1) * sizeof *caps);
    uint64_t *ids = malloc((n ? n : 1) * sizeof *ids);
    int err = 0;
    if (!slot || !caps || !ids) {
        err = client_fail(FX_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
            s->results[i] = err;
        goto out;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        s->lens[i] = 0;
        if ((s->results[i] = client_check_key(keys[i], klens[i])) ||
            (s->results[i] = sink_capacity(s, i, &caps[i])))
            continue;
        fx_holder *h = holder_index_get(c, keys[i], klens[i]);
        if (h) {
            sink_deliver(s, i, caps[i], h->data, h->len);
            fx_holder_release(h);
            continue;
        }
        slot[m++] = i;
    }
    if (!m)
        goto out;
    Fx__ExternalBatchGetResp *r;
    err = client_batch_get_call(c, m, slot, keys, klens, &r);
    if (err) {
        for (size_t j = 0; j < m; j++)
            s->results[slot[j]] = err;
        goto out;
    }
    size_t n_ids = 0;
    for (size_t j = 0; j < m; j++) {
        const Fx__ExternalGetResp *g = r->results[j];
        size_t i = slot[j];
        if (g->status) {
            s->results[i] = g->status;
            continue;
        }
        ids[n_ids++] = g->holder_id;
        if (!client_range_ok(c, g->offset, g->len)) {
            s->results[i] = client_fail(FX_EPROTO, "key %zu: owner answered a range outside its "
                                                   "segment", i);
            continue;
        }
        sink_deliver(s, i, caps[i], c->base + g->offset, g->len);
    }
    holder_ack_ids(c, ids, n_ids, false);
    msg_free(&r->base);
out:
    free(slot);
    free(caps);
    free(ids);
    return err;
}

int fx_batch_get_iov(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                     const struct iovec *const iovs[], const size_t iovcnts[], size_t lens[],
                     int results[])
{
    client_clear_error();
    int err = client_check_batch(c, n, 0, keys, klens, results);
    if (err)
        return err;
    if (n && (!iovs || !iovcnts || !lens))
        return client_fail(FX_EINVAL, "iovs, iovcnts and lens must not be NULL");
    get_sink s = {.iovs = iovs, .iovcnts = iovcnts, .lens = lens, .results = results};
    return batch_get_sink(c, n, keys, klens, &s);
}

int fx_batch_get_into(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                      void *const bufs[], const size_t caps[], size_t lens[], int results[])
{
    client_clear_error();
    int err = client_check_batch(c, n, 0, keys, klens, results);
    if (err)
        return err;
    if (n && (!bufs || !caps || !lens))
        return client_fail(FX_EINVAL, "bufs, caps and lens must not be NULL");
    /* One iovec per key: the scatter path with a single piece. */
    struct iovec *one = malloc((n ? n : 1) * sizeof *one);
    const struct iovec **iovs = malloc((n ? n : 1) * sizeof *iovs);
    size_t *cnts = malloc((n ? n : 1) * sizeof *cnts);
    if (!one || !iovs || !cnts) {
        err = client_fail(FX_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
            results[i] = err;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        one[i] = (struct iovec){.iov_base = bufs[i], .iov_len = caps[i]};
        iovs[i] = &one[i];
        cnts[i] = 1;
    }
    get_sink s = {.iovs = iovs, .iovcnts = cnts, .lens = lens, .results = results};
    err = batch_get_sink(c, n, keys, klens, &s);
out:
    free(one);
    free(iovs);
    free(cnts);
    return err;
}

int fx_batch_put_from(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                      const void *const vals[], const size_t lens[], const fx_put_options *opts,
                      int results[])
{
    client_clear_error();
    int err = client_check_batch(c, n, 0, keys, klens, results);
    if (err)
        return err;
    if (n && (!vals || !lens))
        return client_fail(FX_EINVAL, "vals and lens must not be NULL");
    put_source src = {.vals = vals, .lens = lens};
    return client_batch_put(c, n, keys, klens, &src, opts, results);
}

int fx_batch_put_iov(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                     const struct iovec *const iovs[], const size_t iovcnts[],
                     const fx_put_options *opts, int results[])
{
    client_clear_error();
    int err = client_check_batch(c, n, 0, keys, klens, results);
    if (err)
        return err;
    if (n && (!iovs || !iovcnts))
        return client_fail(FX_EINVAL, "iovs and iovcnts must not be NULL");
    put_source src = {.iovs = iovs, .iovcnts = iovcnts};
    return client_batch_put(c, n, keys, klens, &src, opts, results);
}
