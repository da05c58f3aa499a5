/*
 * api.c - fx_get, fx_get_into, fx_delete, fx_stat, fx_stat_master and fx_ping
 * (puts are in put.c, batches in batch.c).
 *
 * get: the weak index first, else ExternalGet (on the connection's get lane
 * first, see get_request), whose answer is an (offset, len, holder id) in the
 * segment, checked against the segment size before it becomes a holder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

/* ExternalGet on a pooled connection: on its get lane first when it has one
 * (an answer from the owner's get cache, by one of its get threads), then,
 * when the lane answers holder 0 (not in that cache), on the connection
 * itself, whose owner loop runs the whole get. A key the lane missed last
 * time goes to the loop at once (lane_hint.c). A lane that fails is dropped
 * and the connection asked instead. *on_lane: the lane answered. Returns as
 * client_request does. */
static int get_request(fx_client *c, const Fx__ExternalGetReq *req, ProtobufCMessage **resp,
                       bool *on_lane)
{
    int err = 0;
    *resp = NULL;
    *on_lane = false;
    xconn *x = client_conn_get(c, &err);
    if (!x)
        return err;
    uint64_t hint = 0;
    if (x->lane) {
        hint = lane_hint_hash(req->key.data, req->key.len);
        if (lane_hint_skip(c, hint))
            goto loop;
        err = client_call(c, x->lane, MSG_EXT_GET, &req->base, resp);
        if (err) {
            client_conn_close(x->lane);
            x->lane = NULL;
            client_clear_error();
        } else if (msg_status(*resp) || ((Fx__ExternalGetResp *)*resp)->holder_id) {
            *on_lane = true;
            goto answered;
        }
        msg_free(*resp);
        *resp = NULL;
    }
loop:
    err = client_call(c, x, MSG_EXT_GET, &req->base, resp);
    if (hint && !err)
        lane_hint_note(c, hint, !msg_status(*resp) && ((Fx__ExternalGetResp *)*resp)->cacheable);
answered:
    client_conn_put(c, x, err != 0);
    return err ? err : client_answer_status(*resp);
}

int fx_get(fx_client *c, const char *key, size_t klen, fx_holder **out)
{
    client_clear_error();
    int r = client_check_key(key, klen);
    if (r)
        return r;
    if (!c || !out)
        return client_fail(FX_EINVAL, "%s is NULL", c ? "out" : "client");
    fx_holder *h = holder_index_get(c, key, klen);
    if (h) {
        *out = h;
        return 0;
    }
    uint64_t epoch = atomic_load(&c->inval_epoch);
    Fx__ExternalGetReq req = FX__EXTERNAL_GET_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)key};
    ProtobufCMessage *m;
    bool on_lane;
    r = get_request(c, &req, &m, &on_lane);
    if (r) {
        msg_free(m);
        return r;
    }
    Fx__ExternalGetResp *g = (Fx__ExternalGetResp *)m;
    uint64_t id = g->holder_id;
    if (g->offset > c->seg_size || g->len > c->seg_size - g->offset) {
        msg_free(m);
        holder_ack_ids(c, &id, 1, on_lane);
        return client_fail(FX_EPROTO, "owner answered a range outside its segment");
    }
    h = holder_new(c, key, klen, g);
    bool cacheable = g->cacheable;
    msg_free(m);
    if (!h) {
        holder_ack_ids(c, &id, 1, on_lane);
        return client_fail(FX_ENOMEM, "out of memory");
    }
    h->via_lane = on_lane;
    if (cacheable)
        holder_index_offer(c, h, epoch);
    *out = h;
    return 0;
}

int fx_get_into(fx_client *c, const char *key, size_t klen, void *buf, size_t cap, size_t *len)
{
    if (!buf && cap)
        return client_fail(FX_EINVAL, "buffer is NULL");
    fx_holder *h = NULL;
    int r = fx_get(c, key, klen, &h);
    if (r)
        return r;
    size_t n = fx_holder_len(h);
    if (len)
        *len = n;
    if (n > cap) {
        fx_holder_release(h);
        return client_fail(FX_EINVAL, "buffer of %zu bytes is too small for the %zu-byte value",
                           cap, n);
    }
    if (n)
        memcpy(buf, fx_holder_data(h), n);
    fx_holder_release(h);
    return 0;
}

int fx_delete(fx_client *c, const char *key, size_t klen)
{
    client_clear_error();
    int r = client_check_key(key, klen);
    if (r)
        return r;
    if (!c)
        return client_fail(FX_EINVAL, "client is NULL");
    Fx__ExternalDeleteReq req = FX__EXTERNAL_DELETE_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)key};
    ProtobufCMessage *m;
    r = client_request(c, MSG_EXT_DELETE, &req.base, &m);
    msg_free(m);
    holder_index_invalidate(c, key, klen);
    return r;
}

/* One StatReq to the owner (which asks the master): the reply, or an error. */
static int stat_request(fx_client *c, Fx__StatResp **out)
{
    Fx__StatReq req = FX__STAT_REQ__INIT;
    ProtobufCMessage *m;
    int r = client_request(c, MSG_EXT_STAT, &req.base, &m);
    if (r) {
        msg_free(m);
        return r;
    }
    *out = (Fx__StatResp *)m;
    return 0;
}

int fx_stat(fx_client *c, fx_owner_stat *out, size_t cap, size_t *n)
{
    client_clear_error();
    if (!c || !n || (!out && cap))
        return client_fail(FX_EINVAL, "%s is NULL", !c ? "client" : !n ? "n" : "out");
    Fx__StatResp *s;
    int r = stat_request(c, &s);
    if (r)
        return r;
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
        d->ssd_errors = o->ssd_errors;
        d->hits_ssd = o->hits_ssd;
        d->misses = o->misses;
        snprintf(d->name, sizeof d->name, "%s", o->name ? o->name : "");
    }
    msg_free(&s->base);
    return 0;
}

int fx_stat_master(fx_client *c, fx_master_stat *out)
{
    client_clear_error();
    if (!c || !out)
        return client_fail(FX_EINVAL, "%s is NULL", !c ? "client" : "out");
    Fx__StatResp *s;
    int r = stat_request(c, &s);
    if (r)
        return r;
    memset(out, 0, sizeof *out);
    snprintf(out->addr, sizeof out->addr, "%s", s->master_addr ? s->master_addr : "");
    out->term = s->master_term;
    out->pid = s->master_pid;
    snprintf(out->host, sizeof out->host, "%s", s->master_host ? s->master_host : "");
    msg_free(&s->base);
    return 0;
}

int fx_ping(fx_client *c)
{
    client_clear_error();
    if (!c)
        return client_fail(FX_EINVAL, "client is NULL");
    Fx__ExternalPingReq req = FX__EXTERNAL_PING_REQ__INIT;
    ProtobufCMessage *m;
    int r = client_request(c, MSG_EXT_PING, &req.base, &m);
    msg_free(m);
    return r;
}
