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
 */
#include "owner/extcall.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memdup.h"
#include "fluxon/fluxon.h"
#include "owner/dataplane/dataplane.h"

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

static void send_revoke(owner *o, const char *key, size_t klen, uint64_t time_ms, uint32_t version)
{
    if (!o->mrpc)
        return;
    Fx__PutRevokeReq rv = FX__PUT_REVOKE_REQ__INIT;
    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = time_ms;
    pid.version = version;
    rv.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)key};
    rv.put_id = &pid;
    rpc_notify(o->mrpc, MSG_PUT_REVOKE, &rv.base);
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
    p->remote = remote;
    p->target_node = r->target_node_id;
    p->target_offset = r->target_offset;
    if (remote && !(p->target_addr = strdup(r->target_data_addr))) {
        free(p);
        return NULL;
    }
    p->key = x->key; /* moved */
    p->klen = x->klen;
    x->key = NULL;
    return p;
}

static void on_put_start_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ext_call *x = ud;
    owner *o = x->o;
    if (ext_forward_failure(x, status, msg, "PutStart"))
        goto out;
    Fx__PutStartResp *r = (Fx__PutStartResp *)msg;
    ext_put *p = put_from_plan(o, x, r);
    if (!p || !net_conn_is_open(x->conn)) {
        if (!p)
            FX_LOG(ERROR, "master sent a put plan this owner cannot carry out (source %llu+%llu, "
                          "target node %u); revoking",
                   (unsigned long long)r->src_offset, (unsigned long long)x->len,
                   r->target_node_id);
        if (r->put_id)
            send_revoke(o, p ? p->key : x->key, p ? p->klen : x->klen, r->put_id->time_ms,
                        r->put_id->version);
        if (!p && net_conn_is_open(x->conn))
            net_reply_error(x->conn, &x->hdr, FX_EPROTO, "invalid put plan from the master");
        if (p)
            ext_put_free(p);
        goto out;
    }
    ext_conn *ec = net_conn_data(x->conn);
    DL_APPEND(ec->puts, p);
    DL_APPEND2(o->started_puts, p, o_prev, o_next);
    /* The external writes this range now: whatever our replica index said
     * it held (an eviction the master has not told us of yet) is gone. */
    owner_index_writing(o, p->offset, p->len);
    Fx__ExternalPutStartResp resp = FX__EXTERNAL_PUT_START_RESP__INIT;
    resp.put_id = r->put_id;
    resp.offset = p->offset;
    net_reply(x->conn, &x->hdr, &resp.base);
out:
    ext_call_free(x);
}

void ext_on_put_start(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalPutStartReq *req)
{
    if (!ext_valid_key(ec->conn, h, &req->key))
        return;
    if (req->len > o->seg.size) {
        net_reply_error(ec->conn, h, FX_ENOSPC,
                        "value of %llu bytes is larger than the segment (%llu bytes)",
                        (unsigned long long)req->len, (unsigned long long)o->seg.size);
        return;
    }
    ext_call *x = ext_call_new(o, ec->conn, h, req->key.data, req->key.len);
    if (!x) {
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    x->len = req->len;
    Fx__PutStartReq ps = FX__PUT_START_REQ__INIT;
    ps.key = req->key;
    ps.len = req->len;
    ps.source_node_id = o->node_id;
    ps.options = req->options; /* lease and reject_* options go to the master as given */
    int r = owner_master_call(o, MSG_PUT_START, &ps.base, on_put_start_resp, x);
    if (r < 0)
        on_put_start_resp(r, NULL, x);
}

static void on_put_end_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ext_call *x = ud;
    /* Whatever the outcome, this owner must not serve the key's old cached
     * version to a get that starts after this put returned. */
    owner_forget_key(x->o, x->key, x->klen);
    ext_put *p = x->put;
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
    if (!ext_forward_failure(x, status, msg, "PutDone")) {
        /* Published: our index learns it before our client does. Superseded
         * (a newer put of the key completed first): nothing to index. */
        bool superseded = !p->aborting && ((Fx__PutDoneResp *)msg)->superseded;
        if (!p->aborting && !superseded)
            owner_index_put_done(x->o, p->key, p->klen, p->time_ms, p->version, !p->remote,
                                 p->offset, p->len);
        if (net_conn_is_open(x->conn))
            net_reply(x->conn, &x->hdr,
                      &((Fx__ExternalPutTransferEndResp)FX__EXTERNAL_PUT_TRANSFER_END_RESP__INIT)
                           .base);
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
    ProtobufCBinaryData key = {.len = p->klen, .data = (uint8_t *)p->key};
    int r;
    p->aborting = abort;
    if (abort) {
        Fx__PutRevokeReq rv = FX__PUT_REVOKE_REQ__INIT;
        rv.key = key;
        rv.put_id = &pid;
        r = owner_master_call(o, MSG_PUT_REVOKE, &rv.base, on_put_end_resp, x);
    } else {
        Fx__PutDoneReq pd = FX__PUT_DONE_REQ__INIT;
        pd.key = key;
        pd.put_id = &pid;
        r = owner_master_call(o, MSG_PUT_DONE, &pd.base, on_put_end_resp, x);
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
    send_revoke(x->o, p->key, p->klen, p->time_ms, p->version);
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
        send_revoke(o, p->key, p->klen, p->time_ms, p->version);
        ext_put_free(p);
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    x->put = p;
    if (req->abort || !p->remote) {
        /* Local placement: the external wrote straight into the target. */
        finish_put(x, req->abort);
        return;
    }
    int r = dp_transfer(o->dp, p->target_node, p->target_addr, false, p->offset, p->target_offset,
                        p->len, PUSH_TIMEOUT_MS, on_push_done, x);
    if (r < 0)
        on_push_done(FX_ECONN, "cannot start the data-plane transfer", x);
}

void ext_revoke_started_puts(owner *o, ext_conn *ec)
{
    ext_put *p, *tmp;
    DL_FOREACH_SAFE(ec->puts, p, tmp) {
        DL_DELETE(ec->puts, p);
        put_ended(o, p);
        send_revoke(o, p->key, p->klen, p->time_ms, p->version);
        ext_put_free(p);
    }
}
