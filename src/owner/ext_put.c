/*
 * ext_put.c - ExternalPutStart / ExternalPutTransferEnd: the owner's side of a
 * put (spec 003 put sequence, 000 §3).
 *
 * ExternalPutStart asks the master for a plan (PutStart) and hands the external
 * the source range to write into: with local placement that range is the
 * target itself; with remote placement it is a staging range of this segment.
 * ExternalPutTransferEnd then moves the bytes (remote: a data-plane push from
 * the staging range into the target owner's range) and sends PutDone, which
 * publishes the replica and frees the staging range; the external's put
 * returns only after PutDone answered. A failed or timed-out push sends
 * PutRevoke and the external gets the transfer's error. Every range in a plan
 * is checked against this segment before it is handed out, and a connection
 * that closes with puts started and not ended has them revoked. PutStart,
 * PutDone and an abort's PutRevoke wait for a lost master (master_wait.c);
 * the one-way PutRevokes are dropped while there is none.
 *
 * ExternalPut carries a whole small value in one call: the owner writes it
 * into the range itself and goes on as ExternalPutTransferEnd does, so the
 * client waits one round trip, not two. Without options it takes the range
 * from the put pool (put_pool.c) when that holds a grant of the value's size:
 * no PutStart, and PutDone names the grant (granted_len) and learns the
 * put_id the master installed the put under. The pool's put is unknown to
 * the master until PutDone, for the one round trip that takes;
 * ExternalPutStart, whose external may hold its range for long, always
 * starts at the master, so that reject_if_inflight_same_key sees it.
 * ExternalPut with nowait (fx_put_nowait) is answered as soon as its PutDone
 * is on the master link, not when the master answered it: calls of ours sent
 * after it reach the master after it, so gets through this owner see it;
 * gets through other owners may still read the old version for that round
 * trip, and a failure then is only logged.
 */
#include "owner/extcall.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memdup.h"
#include "fluxon/fluxon.h"
#include "owner/dataplane/dataplane.h"
#include "owner/put_pool.h"

#define PUSH_TIMEOUT_MS 30000u

/* The client no longer writes p's range: it leaves the started puts, and
 * the pin a recovery report gave it goes. */
static void put_ended(owner *o, ext_put *p)
{
    DL_DELETE2(o->started_puts, p, o_prev, o_next);
    if (p->pin)
        holders_mi_unref(o, p->pin);
    p->pin = NULL;
}

static void ext_put_free(ext_put *p)
{
    free(p->key);
    free(p->target_addr);
    free(p);
}

/* Frees a request context together with the put it finishes, if any. */
static void put_call_free(ext_call *x)
{
    if (x->put)
        ext_put_free(x->put);
    x->put = NULL;
    ext_call_free(x);
}

/* The key p's PutRevoke names: a grant of the pool has none at the master. */
static ProtobufCBinaryData revoke_key(const ext_put *p)
{
    if (p->pooled)
        return (ProtobufCBinaryData){.len = 0, .data = NULL};
    return (ProtobufCBinaryData){.len = p->klen, .data = (uint8_t *)p->key};
}

static void send_revoke(owner *o, const ext_put *p)
{
    if (!o->mrpc)
        return;
    Fx__PutRevokeReq rv = FX__PUT_REVOKE_REQ__INIT;
    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = p->time_ms;
    pid.version = p->version;
    rv.key = revoke_key(p);
    rv.put_id = &pid;
    rpc_notify(o->mrpc, MSG_PUT_REVOKE, &rv.base);
}

/* The same for a plan we could not take on (no ext_put made of it). */
static void send_plan_revoke(owner *o, const ext_call *x, const Fx__PutId *pid)
{
    ext_put p = {.key = x->key, .klen = x->klen, .time_ms = pid->time_ms,
                 .version = pid->version};
    send_revoke(o, &p);
}

/* The started put a PutStart plan describes, or NULL when the plan is not one
 * this owner can carry out (ranges outside the segment, a remote target
 * without an address). */
static ext_put *put_from_plan(owner *o, ext_call *x, const Fx__PutStartResp *r)
{
    if (!r->put_id || !segment_contains(&o->seg, r->src_offset, x->len))
        return NULL;
    bool remote = r->target_node_id != o->node_id;
    if (!remote && r->target_offset != r->src_offset)
        return NULL;
    if (remote && (!r->target_data_addr || !*r->target_data_addr))
        return NULL;
    ext_put *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->time_ms = r->put_id->time_ms;
    p->version = r->put_id->version;
    p->offset = r->src_offset;
    p->len = x->len;
    p->t0_us = x->t0_us;
    p->remote = remote;
    p->target_node = r->target_node_id;
    p->target_offset = r->target_offset;
    if (remote && !(p->target_addr = strdup(r->target_data_addr))) {
        free(p);
        return NULL;
    }
    p->key = x->key; /* moved: the put's end uses p's */
    p->klen = x->klen;
    x->key = NULL;
    return p;
}

/* The started put a grant of the pool gives x, or NULL when out of memory
 * (the grant then goes back). */
static ext_put *put_from_grant(owner *o, ext_call *x, const put_grant *g)
{
    ext_put *p = calloc(1, sizeof *p);
    if (!p) {
        owner_put_pool_revoke(o, g);
        return NULL;
    }
    p->key = x->key; /* moved: the put's end uses p's */
    p->klen = x->klen;
    x->key = NULL;
    p->time_ms = g->time_ms;
    p->version = g->version;
    p->offset = g->offset;
    p->len = x->len;
    p->t0_us = x->t0_us;
    p->pooled = true;
    return p;
}

static void commit_put(ext_call *x);

/* The external writes p's range from now on: the put is started, tied to
 * its connection, and the external learns where to write. */
static void put_started(owner *o, ext_call *x, ext_put *p, const Fx__PutId *pid)
{
    ext_conn *ec = net_conn_data(x->conn);
    DL_APPEND(ec->puts, p);
    DL_APPEND2(o->started_puts, p, o_prev, o_next);
    /* The external writes this range now: whatever our replica index said
     * it held (an eviction the master has not told us of yet) is gone. */
    owner_index_writing(o, p->offset, p->len);
    Fx__ExternalPutStartResp resp = FX__EXTERNAL_PUT_START_RESP__INIT;
    resp.put_id = (Fx__PutId *)pid;
    resp.offset = p->offset;
    net_reply(x->conn, &x->hdr, &resp.base);
}

/* ExternalPut: the owner writes the value the request carried into p's
 * range and commits it; x's answer comes when PutDone did. */
static void put_inline(owner *o, ext_call *x, ext_put *p, const void *value)
{
    owner_index_writing(o, p->offset, p->len);
    if (p->len)
        memcpy((uint8_t *)o->seg.base + p->offset, value, p->len);
    free(x->value);
    x->value = NULL;
    x->put = p;
    commit_put(x);
}

static void on_put_start_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ext_call *x = ud;
    owner *o = x->o;
    bool inline_value = x->hdr.type == MSG_EXT_PUT;
    if (ext_forward_failure(x, status, msg, "PutStart"))
        goto out;
    Fx__PutStartResp *r = (Fx__PutStartResp *)msg;
    ext_put *p = put_from_plan(o, x, r);
    /* An ExternalPut goes on without its connection: the value is here. */
    if (!p || (!inline_value && !net_conn_is_open(x->conn))) {
        if (!p)
            FX_LOG(ERROR, "master sent a put plan this owner cannot carry out (source %llu+%llu, "
                          "target node %u); revoking",
                   (unsigned long long)r->src_offset, (unsigned long long)x->len,
                   r->target_node_id);
        if (p)
            send_revoke(o, p);
        else if (r->put_id)
            send_plan_revoke(o, x, r->put_id);
        if (!p && net_conn_is_open(x->conn))
            net_reply_error(x->conn, &x->hdr, FX_EPROTO, "invalid put plan from the master");
        if (p)
            ext_put_free(p);
        goto out;
    }
    if (inline_value) {
        put_inline(o, x, p, x->value); /* x goes with the put */
        return;
    }
    put_started(o, x, p, r->put_id);
out:
    put_call_free(x);
}

/* Checks a put's key and length; false when the external has its answer. */
static bool put_request_ok(owner *o, net_conn *c, const frame_hdr *h,
                           const ProtobufCBinaryData *key, uint64_t len)
{
    if (!ext_valid_key(c, h, key))
        return false;
    if (len > o->seg.size) {
        net_reply_error(c, h, FX_ENOSPC, "value of %llu bytes is larger than the segment "
                        "(%llu bytes)", (unsigned long long)len, (unsigned long long)o->seg.size);
        return false;
    }
    return true;
}

static bool has_options(const Fx__PutOptions *opt)
{
    return opt && (opt->lease_id || opt->reject_if_exists || opt->reject_if_inflight_same_key);
}

/* A started put from a grant of the pool for x, when the put has no options
 * and the pool holds one of its size; else NULL (*oom when that was for want
 * of memory: x is answered then). */
static ext_put *start_from_pool(owner *o, ext_call *x, const Fx__PutOptions *opt, bool *oom)
{
    put_grant g;
    *oom = false;
    if (has_options(opt) || !owner_put_pool_take(o, x->len, &g))
        return NULL;
    ext_put *p = put_from_grant(o, x, &g);
    if (!p) {
        *oom = true;
        net_reply_error(x->conn, &x->hdr, FX_ENOMEM, "out of memory");
    }
    return p;
}

/* Asks the master for x's plan; on_put_start_resp goes on with x. */
static void start_from_master(owner *o, ext_call *x, const Fx__PutOptions *opt)
{
    Fx__PutStartReq ps = FX__PUT_START_REQ__INIT;
    ps.key = (ProtobufCBinaryData){.len = x->klen, .data = (uint8_t *)x->key};
    ps.len = x->len;
    ps.source_node_id = o->node_id;
    ps.options = (Fx__PutOptions *)opt; /* lease and reject_* go to the master as given */
    int r = owner_master_call(o, MSG_PUT_START, &ps.base, on_put_start_resp, x);
    if (r < 0)
        on_put_start_resp(r, NULL, x);
}

void ext_on_put_start(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalPutStartReq *req)
{
    if (!put_request_ok(o, ec->conn, h, &req->key, req->len))
        return;
    ext_call *x = ext_call_new(o, ec->conn, h, req->key.data, req->key.len);
    if (!x) {
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    x->len = req->len;
    /* Never from the pool: the external may hold the range for long, and
     * the master must know the key meanwhile (reject_if_inflight_same_key). */
    start_from_master(o, x, req->options);
}

void ext_on_put(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalPutReq *req)
{
    if (!put_request_ok(o, ec->conn, h, &req->key, req->value.len))
        return;
    if (req->value.len > FX_PUT_INLINE_MAX) {
        net_reply_error(ec->conn, h, FX_EINVAL, "ExternalPut of %zu bytes: at most %u bytes "
                        "travel in the request (use ExternalPutStart)", req->value.len,
                        (unsigned)FX_PUT_INLINE_MAX);
        return;
    }
    ext_call *x = ext_call_new(o, ec->conn, h, req->key.data, req->key.len);
    if (!x) {
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    x->len = req->value.len;
    x->nowait = req->nowait;
    bool oom;
    ext_put *p = start_from_pool(o, x, req->options, &oom);
    if (p) {
        put_inline(o, x, p, req->value.data);
        return;
    }
    /* The plan comes later: the value waits with the request. */
    if (!oom && x->len && !(x->value = fx_memdup(req->value.data, x->len))) {
        oom = true;
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
    }
    if (oom) {
        put_call_free(x);
        return;
    }
    start_from_master(o, x, req->options);
}

/* The outcome of a put whose external was answered when PutDone went out
 * (ExternalPut with nowait): a failure can only be logged. True when the put
 * failed. */
static bool failed_after_answer(ext_call *x, int status, ProtobufCMessage *resp)
{
    int st = status ? status : msg_status(resp);
    if (st)
        FX_LOG(WARN, "a put that did not wait for the master (nowait, %zu-byte key) failed: "
                     "%s%s%s", x->put->klen, fx_strerror(st), status ? "" : ": ",
               status ? "" : msg_detail(resp));
    return st != 0;
}

static void on_put_end_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ext_call *x = ud;
    /* Whatever the outcome, this owner must not serve the key's old cached
     * version to a get that starts after this put returned. */
    ext_put *p = x->put;
    owner_forget_key(x->o, p->key, p->klen);
    if ((status == FX_EMASTER || status == FX_ECONN) && !p->aborting && !p->remote) {
        /* No answer, the link to the master lost: the master may have
         * applied the put, and with it the drops of the version it replaced
         * on other owners (R1). Our index keeps the new version, so that a
         * recovering master finds one of the two; had it not been applied,
         * recovery takes it as the newest (a put that failed may have
         * happened), and a master that did not fail takes us back only as a
         * new member, with an empty index. */
        owner_index_put_done(x->o, p->key, p->klen, p->time_ms, p->version, true, p->offset,
                             p->len);
    }
    if (!(x->answered ? failed_after_answer(x, status, msg)
                      : ext_forward_failure(x, status, msg, "PutDone"))) {
        /* Published: our index learns it before our client does. Superseded
         * (a newer put of the key completed first): nothing to index. */
        const Fx__PutDoneResp *done = p->aborting ? NULL : (const Fx__PutDoneResp *)msg;
        bool superseded = done && done->superseded;
        if (done && p->pooled && done->put_id) { /* the put_id it was installed under */
            p->time_ms = done->put_id->time_ms;
            p->version = done->put_id->version;
        }
        if (done && !superseded)
            owner_index_put_done(x->o, p->key, p->klen, p->time_ms, p->version, !p->remote,
                                 p->offset, p->len);
        if (done)
            owner_metrics_put_done(x->o, p->t0_us, p->len);
        if (!x->answered && net_conn_is_open(x->conn)) {
            if (x->hdr.type == MSG_EXT_PUT)
                net_reply(x->conn, &x->hdr,
                          &((Fx__ExternalPutResp)FX__EXTERNAL_PUT_RESP__INIT).base);
            else
                net_reply(x->conn, &x->hdr, &((Fx__ExternalPutTransferEndResp)
                                                  FX__EXTERNAL_PUT_TRANSFER_END_RESP__INIT)
                                                 .base);
        }
    }
    put_call_free(x);
}

/* Sends PutDone (or PutRevoke when abort) for x's put; the answer completes x. */
static void finish_put(ext_call *x, bool abort)
{
    owner *o = x->o;
    ext_put *p = x->put;
    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = p->time_ms;
    pid.version = p->version;
    int r;
    p->aborting = abort;
    if (abort) {
        Fx__PutRevokeReq rv = FX__PUT_REVOKE_REQ__INIT;
        rv.key = revoke_key(p);
        rv.put_id = &pid;
        r = owner_master_call(o, MSG_PUT_REVOKE, &rv.base, on_put_end_resp, x);
    } else {
        Fx__PutDoneReq pd = FX__PUT_DONE_REQ__INIT;
        pd.key = (ProtobufCBinaryData){.len = p->klen, .data = (uint8_t *)p->key};
        pd.put_id = &pid;
        pd.granted_len = p->pooled ? p->len : 0; /* >= 1: the pool takes no empty value */
        r = owner_master_call(o, MSG_PUT_DONE, &pd.base, on_put_end_resp, x);
        if (r == 0 && x->nowait && net_conn_is_open(x->conn)) {
            /* The value is in place and its PutDone is on the link, ahead of
             * any later call of ours: the external goes on now. Gets through
             * this owner find the new version; this owner's cached old one
             * goes now, not at the answer. */
            owner_forget_key(o, p->key, p->klen);
            net_reply(x->conn, &x->hdr, &((Fx__ExternalPutResp)FX__EXTERNAL_PUT_RESP__INIT).base);
            x->answered = true;
        }
    }
    if (r < 0)
        on_put_end_resp(r, NULL, x);
}

static void on_push_done(int status, const char *detail, void *ud)
{
    ext_call *x = ud;
    if (!status) {
        finish_put(x, false);
        return;
    }
    ext_put *p = x->put;
    FX_LOG(WARN, "push of a %llu-byte value to node %u (%s) failed: %s; revoking the put",
           (unsigned long long)p->len, p->target_node, p->target_addr, detail);
    send_revoke(x->o, p);
    if (net_conn_is_open(x->conn))
        net_reply_error(x->conn, &x->hdr, status, "put: transfer to owner %u failed: %s",
                        p->target_node, detail);
    put_call_free(x);
}

void ext_on_put_transfer_end(owner *o, ext_conn *ec, const frame_hdr *h,
                             Fx__ExternalPutTransferEndReq *req)
{
    ext_put *p;
    DL_FOREACH(ec->puts, p) {
        if (req->put_id && p->time_ms == req->put_id->time_ms &&
            p->version == req->put_id->version && p->klen == req->key.len &&
            memcmp(p->key, req->key.data, p->klen) == 0)
            break;
    }
    if (!p) {
        net_reply_error(ec->conn, h, FX_ESTALE, "no started put for this key and put_id");
        return;
    }
    DL_DELETE(ec->puts, p);
    put_ended(o, p);
    ext_call *x = ext_call_new(o, ec->conn, h, p->key, p->klen);
    if (!x) {
        send_revoke(o, p);
        ext_put_free(p);
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    x->put = p;
    if (req->abort)
        finish_put(x, true);
    else
        commit_put(x);
}

/* The value is in x->put's range: push it to a remote target first, then
 * PutDone. */
static void commit_put(ext_call *x)
{
    ext_put *p = x->put;
    if (!p->remote) {
        /* Local placement: the value was written straight into the target. */
        finish_put(x, false);
        return;
    }
    int r = dp_transfer(x->o->dp, p->target_node, p->target_addr, false, p->offset,
                        p->target_offset, p->len, PUSH_TIMEOUT_MS, on_push_done, x);
    if (r < 0)
        on_push_done(FX_ECONN, "cannot start the data-plane transfer", x);
}

void ext_revoke_started_puts(owner *o, ext_conn *ec)
{
    ext_put *p, *tmp;
    DL_FOREACH_SAFE(ec->puts, p, tmp) {
        DL_DELETE(ec->puts, p);
        put_ended(o, p);
        send_revoke(o, p);
        ext_put_free(p);
    }
}
