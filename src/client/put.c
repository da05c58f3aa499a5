/*
 * put.c - fx_put, fx_put_opts and the zero-copy put (fx_put_begin / commit /
 * abort).
 *
 * A value of up to FX_PUT_INLINE_MAX bytes goes in one round trip: the
 * ExternalPut request carries it (put_inline). A larger one, and every
 * zero-copy put, is two round trips on one connection: ExternalPutStart gives a
 * staging range in the shared segment, the value is written there once (by
 * fx_put, see put_copy.c, or by the caller through fx_put_handle_data), and
 * ExternalPutTransferEnd commits it (PutDone at the master) or aborts it. The
 * handle keeps its connection out of the pool from begin to end, because the
 * owner ties a started put to the connection that started it (and revokes it
 * if that connection closes). A handle never ended is dropped by fx_close,
 * whose closing of its connection makes the owner revoke the put.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/put_copy.h"
#include "common/memdup.h"

struct fx_put_handle {
    struct fx_put_handle *prev, *next; /* the client's begun puts (pool_lock) */
    fx_client *c;
    xconn *x;
    char *key;
    size_t klen;
    Fx__PutId pid;
    uint8_t *data;
    size_t len;
};

Fx__PutOptions *client_put_options(const fx_put_options *opts, Fx__PutOptions *w)
{
    if (!opts)
        return NULL;
    fx__put_options__init(w);
    w->lease_id = opts->lease_id;
    w->reject_if_exists = opts->reject_if_exists != 0;
    w->reject_if_inflight_same_key = opts->reject_if_inflight_same_key != 0;
    return w;
}

int fx_put_begin(fx_client *c, const char *key, size_t klen, size_t len,
                 const fx_put_options *opts, fx_put_handle **out)
{
    client_clear_error();
    int err = client_check_key(key, klen);
    if (err)
        return err;
    if (!c || !out)
        return client_fail(FX_EINVAL, "%s is NULL", c ? "out" : "client");
    fx_put_handle *p = calloc(1, sizeof *p);
    if (!p || !(p->key = fx_memdup(key, klen))) {
        free(p);
        return client_fail(FX_ENOMEM, "out of memory");
    }
    p->c = c;
    p->klen = klen;
    p->len = len;
    p->x = client_conn_get(c, &err);
    if (!p->x)
        goto fail;
    Fx__ExternalPutStartReq ps = FX__EXTERNAL_PUT_START_REQ__INIT;
    ps.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)key};
    ps.len = len;
    Fx__PutOptions wire_opts;
    ps.options = client_put_options(opts, &wire_opts);
    ProtobufCMessage *m = NULL;
    err = client_call(c, p->x, MSG_EXT_PUT_START, &ps.base, &m);
    if (err) {
        client_conn_put(c, p->x, true);
        goto fail;
    }
    Fx__ExternalPutStartResp *psr = (Fx__ExternalPutStartResp *)m;
    if (psr->status) {
        err = client_fail(psr->status, "%s", psr->detail);
        msg_free(m);
        client_conn_put(c, p->x, false);
        goto fail;
    }
    if (psr->put_id)
        p->pid = *psr->put_id;
    p->pid.base.unknown_fields = NULL;
    p->pid.base.n_unknown_fields = 0;
    bool in_bounds = psr->offset <= c->seg_size && len <= c->seg_size - psr->offset;
    p->data = c->base + psr->offset;
    msg_free(m);
    if (!in_bounds) {
        fx_put_abort(p);
        return client_fail(FX_EPROTO, "owner gave a staging range outside its segment");
    }
    pthread_mutex_lock(&c->pool_lock);
    DL_APPEND(c->puts, p);
    pthread_mutex_unlock(&c->pool_lock);
    *out = p;
    return 0;
fail:
    free(p->key);
    free(p);
    return err;
}

void *fx_put_handle_data(fx_put_handle *p)
{
    return p ? p->data : NULL;
}

size_t fx_put_handle_len(const fx_put_handle *p)
{
    return p ? p->len : 0;
}

void client_puts_drop_all(fx_client *c)
{
    pthread_mutex_lock(&c->pool_lock);
    fx_put_handle *p, *tmp;
    DL_FOREACH_SAFE(c->puts, p, tmp) {
        DL_DELETE(c->puts, p);
        client_conn_close(p->x);
        free(p->key);
        free(p);
    }
    pthread_mutex_unlock(&c->pool_lock);
}

/* Sends ExternalPutTransferEnd (commit or abort) and frees p. A connection
 * already known to be broken carries nothing: it is closed, which makes the
 * owner revoke the put, and the put fails with FX_ECONN. */
static int end_put(fx_put_handle *p, bool abort, bool conn_broken)
{
    pthread_mutex_lock(&p->c->pool_lock);
    if (p->prev) /* begun (not an abort from inside fx_put_begin) */
        DL_DELETE(p->c->puts, p);
    pthread_mutex_unlock(&p->c->pool_lock);
    int err;
    if (conn_broken) {
        err = client_fail(FX_ECONN, "writing to the owner at %s failed while the value was "
                                    "copied; the put is revoked", p->c->path);
    } else {
        Fx__ExternalPutTransferEndReq pe = FX__EXTERNAL_PUT_TRANSFER_END_REQ__INIT;
        pe.key = (ProtobufCBinaryData){.len = p->klen, .data = (uint8_t *)p->key};
        pe.put_id = &p->pid;
        pe.abort = abort;
        ProtobufCMessage *m = NULL;
        err = client_call(p->c, p->x, MSG_EXT_PUT_TRANSFER_END, &pe.base, &m);
        conn_broken = err != 0;
        if (!err && (err = msg_status(m)))
            client_fail(err, "%s", msg_detail(m));
        msg_free(m);
        /* The old version must not be served from this client's index again. */
        if (!abort)
            holder_index_invalidate(p->c, p->key, p->klen);
    }
    client_conn_put(p->c, p->x, conn_broken);
    free(p->key);
    free(p);
    return err;
}

int fx_put_commit(fx_put_handle *p)
{
    client_clear_error();
    if (!p)
        return client_fail(FX_EINVAL, "put handle is NULL");
    return end_put(p, false, false);
}

void fx_put_abort(fx_put_handle *p)
{
    if (p)
        end_put(p, true, false);
}

void owner_wake_ping(void *owner_wake_ctx)
{
    owner_wake *w = owner_wake_ctx;
    Fx__ExternalPingReq ping = FX__EXTERNAL_PING_REQ__INIT;
    if (client_notify(w->c, w->x, MSG_EXT_PING, &ping.base) != 0)
        w->failed = true;
}

/* A small value in one round trip: ExternalPut carries it, and the owner
 * writes it into the segment and commits it. */
static int put_inline(fx_client *c, const char *key, size_t klen, const void *val, size_t len,
                      const fx_put_options *opts, bool nowait)
{
    client_clear_error();
    Fx__ExternalPutReq req = FX__EXTERNAL_PUT_REQ__INIT;
    req.nowait = nowait;
    Fx__PutOptions wire_opts;
    req.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)key};
    req.value = (ProtobufCBinaryData){.len = len, .data = (uint8_t *)val};
    req.options = client_put_options(opts, &wire_opts);
    ProtobufCMessage *m = NULL;
    int err = client_request(c, MSG_EXT_PUT, &req.base, &m);
    msg_free(m);
    /* Whatever the outcome, the old version must not be served from this
     * client's index again. */
    holder_index_invalidate(c, key, klen);
    return err;
}

int fx_put_opts(fx_client *c, const char *key, size_t klen, const void *val, size_t len,
                const fx_put_options *opts)
{
    if (!val && len) {
        client_clear_error();
        return client_fail(FX_EINVAL, "value is NULL");
    }
    if (len <= FX_PUT_INLINE_MAX && c && !client_check_key(key, klen))
        return put_inline(c, key, klen, val, len, opts, false);
    fx_put_handle *p;
    int err = fx_put_begin(c, key, klen, len, opts, &p);
    if (err) {
        if (c && !client_check_key(key, klen))
            holder_index_invalidate(c, key, klen);
        return err;
    }
    owner_wake w = {.c = c, .x = p->x};
    put_copy pc;
    put_copy_init(&pc, len, owner_wake_ping, &w);
    put_copy_value(&pc, p->data, val, len);
    return end_put(p, false, w.failed);
}

int fx_put_nowait(fx_client *c, const char *key, size_t klen, const void *val, size_t len)
{
    if (!val && len) {
        client_clear_error();
        return client_fail(FX_EINVAL, "value is NULL");
    }
    if (len <= FX_PUT_INLINE_MAX && c && !client_check_key(key, klen))
        return put_inline(c, key, klen, val, len, NULL, true);
    return fx_put_opts(c, key, klen, val, len, NULL); /* it waits, as documented */
}

int fx_put(fx_client *c, const char *key, size_t klen, const void *val, size_t len)
{
    return fx_put_opts(c, key, klen, val, len, NULL);
}
