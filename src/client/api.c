/*
 * api.c - fx_put (and fx_put_opts), fx_get, fx_delete, fx_stat and fx_ping.
 *
 * put: ExternalPutStart gives a staging range in the shared segment, the value
 * is copied there once, ExternalPutTransferEnd commits it (PutDone at the
 * master). get: the weak index first, else ExternalGet, whose answer is an
 * (offset, len, holder id) in the segment, checked against the segment size
 * before it becomes a holder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

#define MAX_KEY_LEN 4096u

static int check_key(const char *key, size_t klen)
{
    if (!key || klen == 0 || klen > MAX_KEY_LEN)
        return client_fail(FX_EINVAL, "key length %zu is outside 1..%u", klen, MAX_KEY_LEN);
    return 0;
}

int fx_put(fx_client *c, const char *key, size_t klen, const void *val, size_t len)
{
    return fx_put_opts(c, key, klen, val, len, NULL);
}

int fx_put_opts(fx_client *c, const char *key, size_t klen, const void *val, size_t len,
                const fx_put_options *opts)
{
    client_clear_error();
    int r = check_key(key, klen);
    if (r)
        return r;
    if (!val && len)
        return client_fail(FX_EINVAL, "value is NULL");
    int err = 0;
    xconn *x = client_conn_get(c, &err);
    if (!x)
        return err;
    Fx__ExternalPutStartReq ps = FX__EXTERNAL_PUT_START_REQ__INIT;
    ps.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)key};
    ps.len = len;
    Fx__PutOptions wire_opts = FX__PUT_OPTIONS__INIT;
    if (opts) {
        wire_opts.lease_id = opts->lease_id;
        wire_opts.reject_if_exists = opts->reject_if_exists != 0;
        wire_opts.reject_if_inflight_same_key = opts->reject_if_inflight_same_key != 0;
        ps.options = &wire_opts;
    }
    ProtobufCMessage *m = NULL;
    bool broken = false;
    err = client_call(c, x, MSG_EXT_PUT_START, &ps.base, &m);
    if (err) {
        broken = true;
        goto out;
    }
    Fx__ExternalPutStartResp *psr = (Fx__ExternalPutStartResp *)m;
    if (psr->status) {
        err = client_fail(psr->status, "%s", psr->detail);
        msg_free(m);
        goto out;
    }
    Fx__PutId pid = FX__PUT_ID__INIT;
    if (psr->put_id)
        pid = *psr->put_id;
    bool in_bounds = psr->offset <= c->seg_size && len <= c->seg_size - psr->offset;
    if (in_bounds && len)
        memcpy(c->base + psr->offset, val, len);
    msg_free(m);

    Fx__ExternalPutTransferEndReq pe = FX__EXTERNAL_PUT_TRANSFER_END_REQ__INIT;
    pe.key = ps.key;
    pe.put_id = &pid;
    pe.abort = !in_bounds;
    err = client_call(c, x, MSG_EXT_PUT_TRANSFER_END, &pe.base, &m);
    if (err) {
        broken = true;
        goto out;
    }
    err = msg_status(m);
    if (err)
        client_fail(err, "%s", msg_detail(m));
    else if (!in_bounds)
        err = client_fail(FX_EPROTO, "owner gave a staging range outside its segment");
    msg_free(m);
out:
    client_conn_put(c, x, broken);
    /* The old version must not be served from this client's index again. */
    holder_index_invalidate(c, key, klen);
    return err;
}

int fx_get(fx_client *c, const char *key, size_t klen, fx_holder **out)
{
    client_clear_error();
    int r = check_key(key, klen);
    if (r)
        return r;
    fx_holder *h = holder_index_get(c, key, klen);
    if (h) {
        *out = h;
        return 0;
    }
    uint64_t epoch = atomic_load(&c->inval_epoch);
    Fx__ExternalGetReq req = FX__EXTERNAL_GET_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)key};
    ProtobufCMessage *m;
    r = client_request(c, MSG_EXT_GET, &req.base, &m);
    if (r) {
        msg_free(m);
        return r;
    }
    Fx__ExternalGetResp *g = (Fx__ExternalGetResp *)m;
    if (g->offset > c->seg_size || g->len > c->seg_size - g->offset) {
        msg_free(m);
        return client_fail(FX_EPROTO, "owner answered a range outside its segment");
    }
    h = holder_new(c, key, klen, g);
    bool cacheable = g->cacheable;
    msg_free(m);
    if (!h)
        return client_fail(FX_ENOMEM, "out of memory");
    if (cacheable)
        holder_index_offer(c, h, epoch);
    *out = h;
    return 0;
}

int fx_delete(fx_client *c, const char *key, size_t klen)
{
    client_clear_error();
    int r = check_key(key, klen);
    if (r)
        return r;
    Fx__ExternalDeleteReq req = FX__EXTERNAL_DELETE_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)key};
    ProtobufCMessage *m;
    r = client_request(c, MSG_EXT_DELETE, &req.base, &m);
    msg_free(m);
    holder_index_invalidate(c, key, klen);
    return r;
}

int fx_stat(fx_client *c, fx_owner_stat *out, size_t cap, size_t *n)
{
    client_clear_error();
    Fx__StatReq req = FX__STAT_REQ__INIT;
    ProtobufCMessage *m;
    int r = client_request(c, MSG_EXT_STAT, &req.base, &m);
    if (r) {
        msg_free(m);
        return r;
    }
    Fx__StatResp *s = (Fx__StatResp *)m;
    *n = s->n_owners;
    for (size_t i = 0; i < s->n_owners && i < cap; i++) {
        Fx__OwnerStat *o = s->owners[i];
        fx_owner_stat *d = &out[i];
        memset(d, 0, sizeof *d);
        d->node_id = o->node_id;
        d->live = o->live;
        d->memory_capacity = o->memory_capacity;
        d->memory_used = o->memory_used;
        d->ssd_capacity = o->ssd_capacity;
        d->ssd_used = o->ssd_used;
        d->hits_memory = o->hits_memory;
        d->replica_bytes = o->replica_bytes;
        d->holding_bytes = o->holding_bytes;
        d->cache_budget = o->cache_budget;
        d->cache_weight = o->cache_weight;
        d->cache_reserved = o->cache_reserved;
        d->evictions = o->evictions;
        d->hits_ssd = o->hits_ssd;
        d->misses = o->misses;
        snprintf(d->name, sizeof d->name, "%s", o->name ? o->name : "");
    }
    msg_free(m);
    return 0;
}

int fx_ping(fx_client *c)
{
    client_clear_error();
    Fx__ExternalPingReq req = FX__EXTERNAL_PING_REQ__INIT;
    ProtobufCMessage *m;
    int r = client_request(c, MSG_EXT_PING, &req.base, &m);
    msg_free(m);
    return r;
}
