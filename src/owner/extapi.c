/*
 * extapi.c - the external-facing API of the owner on its Unix socket.
 *
 * ExternalHello opens a session (the session connection receives the segment
 * fd and, later, ExternalInvalidateWeakIndex pushes) or attaches a further
 * connection to an existing session. ExternalPutStart / ExternalPutTransferEnd
 * wrap PutStart / PutDone; ExternalGet serves from the owner-local get cache
 * when it can and otherwise runs GetStart / GetDone, with one request in
 * flight per key; ExternalDelete wraps Delete; ExternalDeleteAck releases
 * holders. Every offset received from the master is checked against the
 * segment before it is handed out. When a session connection closes, every
 * holder of that external is released; when any connection closes, its
 * started puts are revoked.
 */
#include "owner/owner.h"
#include "common/memdup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fluxon/fluxon.h"
#include "net/fdpass.h"

#define EXT_PROTOCOL_VERSION 1u
#define MAX_KEY_LEN 4096u

static owner *the_owner;

/* ---- replies ------------------------------------------------------------ */

/* Context of an external request waiting on the master. */
typedef struct ext_call {
    owner *o;
    net_conn *conn; /* referenced */
    frame_hdr hdr;
    char *key;
    size_t klen;
    uint64_t len;
    ext_put *put; /* ExternalPutTransferEnd: the put being finished */
} ext_call;

static ext_call *call_new(owner *o, net_conn *c, const frame_hdr *h, const void *key, size_t klen)
{
    ext_call *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->key = fx_memdup(key, klen);
    if (!x->key) {
        free(x);
        return NULL;
    }
    x->klen = klen;
    x->o = o;
    x->conn = c;
    x->hdr = *h;
    net_conn_ref(c);
    return x;
}

static void call_free(ext_call *x)
{
    net_conn_unref(x->conn);
    if (x->put) {
        free(x->put->key);
        free(x->put);
    }
    free(x->key);
    free(x);
}

/* Forwards a failed master call to the external: transport errors and the
 * master's own status with its detail. Returns true when it replied. */
static bool forward_failure(ext_call *x, int status, ProtobufCMessage *resp, const char *what)
{
    if (status) {
        if (net_conn_is_open(x->conn))
            net_reply_error(x->conn, &x->hdr, status, "%s: master %s", what,
                            status == FX_ETIMEDOUT ? "did not answer in time" : "unreachable");
        return true;
    }
    int st = msg_status(resp);
    if (st) {
        if (net_conn_is_open(x->conn))
            net_reply_error(x->conn, &x->hdr, st, "%s", msg_detail(resp));
        return true;
    }
    return false;
}

static bool valid_key(net_conn *c, const frame_hdr *h, const ProtobufCBinaryData *key)
{
    if (key->len == 0 || key->len > MAX_KEY_LEN) {
        net_reply_error(c, h, FX_EINVAL, "key length %zu is outside 1..%u", key->len, MAX_KEY_LEN);
        return false;
    }
    return true;
}

/* ---- sessions ------------------------------------------------------------ */

static session *session_find(owner *o, uint64_t client_id)
{
    session *s;
    HASH_FIND(hh, o->sessions, &client_id, sizeof client_id, s);
    return s;
}

static void session_detach(owner *o, session *s, net_conn *c)
{
    if (s->events == c) {
        s->events = NULL;
        s->dead = true;
        size_t n = HASH_COUNT(s->holdings);
        if (n)
            FX_LOG(INFO, "external %llu went away; reclaiming %zu holder(s)",
                   (unsigned long long)s->client_id, n);
        holders_session_release_all(o, s);
    }
    if (--s->conns == 0) {
        HASH_DEL(o->sessions, s);
        free(s);
    }
}

static void on_hello(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalHelloReq *req)
{
    net_conn *c = ec->conn;
    if (ec->s) {
        net_reply_error(c, h, FX_EPROTO, "ExternalHello sent twice");
        return;
    }
    if (req->version != EXT_PROTOCOL_VERSION) {
        net_reply_error(c, h, FX_EPROTO, "protocol version %u not supported (owner speaks %u)",
                        req->version, EXT_PROTOCOL_VERSION);
        return;
    }
    Fx__ExternalHelloResp resp = FX__EXTERNAL_HELLO_RESP__INIT;
    resp.segment_size = o->seg.size;
    resp.node_id = o->node_id;
    if (req->client_id) {
        session *s = session_find(o, req->client_id);
        if (!s || s->dead) {
            net_reply_error(c, h, FX_ESTALE, "no live session %llu",
                            (unsigned long long)req->client_id);
            return;
        }
        s->conns++;
        ec->s = s;
        resp.client_id = s->client_id;
        net_reply(c, h, &resp.base);
        return;
    }
    /* The segment fd rides on a raw sendmsg beside libuv's write queue: that
     * keeps the byte stream in order only while nothing is queued, and the
     * loop thread must never wait for a peer that does not read. */
    if (net_conn_write_queue(c) > 0) {
        FX_LOG(WARN, "%s: ExternalHello while earlier answers are unread; closing",
               net_conn_peer(c));
        net_conn_close(c);
        return;
    }
    session *s = calloc(1, sizeof *s);
    if (!s) {
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    s->client_id = ++o->next_client_id;
    s->events = c;
    s->conns = 1;
    HASH_ADD(hh, o->sessions, client_id, sizeof s->client_id, s);
    ec->s = s;
    resp.client_id = s->client_id;
    /* The segment fd rides with the response: encode it here and send it with
     * SCM_RIGHTS on the raw socket, without waiting (timeout 0): a peer whose
     * socket cannot take a few dozen bytes now is not reading, and is dropped. */
    size_t len;
    uint8_t *buf = msg_encode(h->type, FRAME_RESPONSE, h->req_id, &resp.base, &len);
    int r = buf ? fdpass_send(net_conn_fd(c), buf, len, o->seg.fd, 0) : -ENOMEM;
    free(buf);
    if (r < 0) {
        FX_LOG(WARN, "%s: cannot pass the segment: %s", net_conn_peer(c), strerror(-r));
        net_conn_close(c);
    }
}

/* ---- put ------------------------------------------------------------------ */

static void on_put_start_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ext_call *x = ud;
    owner *o = x->o;
    if (forward_failure(x, status, msg, "PutStart"))
        goto out;
    Fx__PutStartResp *r = (Fx__PutStartResp *)msg;
    bool ok = r->put_id && r->target_node_id == o->node_id &&
              segment_contains(&o->seg, r->target_offset, x->len);
    ext_put *p = ok ? calloc(1, sizeof *p) : NULL;
    if (p) {
        p->key = x->key;
        p->klen = x->klen;
        p->time_ms = r->put_id->time_ms;
        p->version = r->put_id->version;
        p->offset = r->target_offset;
        p->len = x->len;
        x->key = NULL;
    }
    if (!p || !net_conn_is_open(x->conn)) {
        if (!ok)
            FX_LOG(ERROR, "master planned a put outside this owner's segment; revoking");
        Fx__PutRevokeReq rv = FX__PUT_REVOKE_REQ__INIT;
        Fx__PutId pid = FX__PUT_ID__INIT;
        if (r->put_id)
            pid = *r->put_id;
        rv.key = (ProtobufCBinaryData){.len = p ? p->klen : x->klen,
                                       .data = (uint8_t *)(p ? p->key : x->key)};
        rv.put_id = &pid;
        rpc_notify(o->mrpc, MSG_PUT_REVOKE, &rv.base);
        if (net_conn_is_open(x->conn))
            net_reply_error(x->conn, &x->hdr, ok ? FX_ENOMEM : FX_EPROTO,
                            ok ? "out of memory" : "invalid put plan from the master");
        if (p) {
            free(p->key);
            free(p);
        }
        goto out;
    }
    ext_conn *ec = net_conn_data(x->conn);
    DL_APPEND(ec->puts, p);
    Fx__ExternalPutStartResp resp = FX__EXTERNAL_PUT_START_RESP__INIT;
    resp.put_id = r->put_id;
    resp.offset = p->offset;
    net_reply(x->conn, &x->hdr, &resp.base);
out:
    call_free(x);
}

static void on_put_start(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalPutStartReq *req)
{
    if (!valid_key(ec->conn, h, &req->key))
        return;
    if (req->len > o->seg.size) {
        net_reply_error(ec->conn, h, FX_ENOSPC,
                        "value of %llu bytes is larger than the segment (%llu bytes)",
                        (unsigned long long)req->len, (unsigned long long)o->seg.size);
        return;
    }
    ext_call *x = call_new(o, ec->conn, h, req->key.data, req->key.len);
    if (!x) {
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    x->len = req->len;
    Fx__PutStartReq ps = FX__PUT_START_REQ__INIT;
    ps.key = req->key;
    ps.len = req->len;
    ps.source_node_id = o->node_id;
    if (rpc_call(o->mrpc, MSG_PUT_START, &ps.base, OWNER_RPC_TIMEOUT_MS, on_put_start_resp, x) < 0) {
        net_reply_error(ec->conn, h, FX_ECONN, "master unreachable");
        call_free(x);
    }
}

static void on_put_end_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ext_call *x = ud;
    /* Whatever the outcome, this owner must not serve the key's old cached
     * version to a get that starts after this put returned. */
    holders_cache_drop(x->o, x->key, x->klen);
    if (!forward_failure(x, status, msg, "PutDone") && net_conn_is_open(x->conn))
        net_reply(x->conn, &x->hdr,
                  &((Fx__ExternalPutTransferEndResp)FX__EXTERNAL_PUT_TRANSFER_END_RESP__INIT).base);
    call_free(x);
}

static void on_put_transfer_end(owner *o, ext_conn *ec, const frame_hdr *h,
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
    ext_call *x = call_new(o, ec->conn, h, p->key, p->klen);
    if (!x) {
        free(p->key);
        free(p);
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    x->put = p;
    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = p->time_ms;
    pid.version = p->version;
    int r;
    if (req->abort) {
        Fx__PutRevokeReq rv = FX__PUT_REVOKE_REQ__INIT;
        rv.key = req->key;
        rv.put_id = &pid;
        r = rpc_call(o->mrpc, MSG_PUT_REVOKE, &rv.base, OWNER_RPC_TIMEOUT_MS, on_put_end_resp, x);
    } else {
        /* Local placement: the external wrote straight into the target, so
         * there is nothing to move before PutDone. */
        Fx__PutDoneReq pd = FX__PUT_DONE_REQ__INIT;
        pd.key = req->key;
        pd.put_id = &pid;
        r = rpc_call(o->mrpc, MSG_PUT_DONE, &pd.base, OWNER_RPC_TIMEOUT_MS, on_put_end_resp, x);
    }
    if (r < 0) {
        net_reply_error(ec->conn, h, FX_ECONN, "master unreachable");
        call_free(x);
    }
}

/* Revokes the puts a closed connection started and never ended. */
static void revoke_started_puts(owner *o, ext_conn *ec)
{
    ext_put *p, *tmp;
    DL_FOREACH_SAFE(ec->puts, p, tmp) {
        DL_DELETE(ec->puts, p);
        if (o->mrpc) {
            Fx__PutRevokeReq rv = FX__PUT_REVOKE_REQ__INIT;
            Fx__PutId pid = FX__PUT_ID__INIT;
            pid.time_ms = p->time_ms;
            pid.version = p->version;
            rv.key = (ProtobufCBinaryData){.len = p->klen, .data = (uint8_t *)p->key};
            rv.put_id = &pid;
            rpc_notify(o->mrpc, MSG_PUT_REVOKE, &rv.base);
        }
        free(p->key);
        free(p);
    }
}

/* ---- get ------------------------------------------------------------------ */

/* Answers one external get with a new holding of mi. */
static void reply_holder(owner *o, net_conn *c, const frame_hdr *h, memory_info *mi, bool cacheable)
{
    ext_conn *ec = net_conn_data(c);
    if (!ec || !ec->s || ec->s->dead) {
        net_reply_error(c, h, FX_ECONN, "the external's session is gone");
        return;
    }
    uint64_t id = holders_session_add(o, ec->s, mi);
    if (!id) {
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    if (mi->source == FX_SRC_SSD)
        o->hits_ssd++;
    else
        o->hits_memory++;
    Fx__ExternalGetResp resp = FX__EXTERNAL_GET_RESP__INIT;
    resp.offset = mi->offset;
    resp.len = mi->len;
    resp.holder_id = id;
    resp.source = (uint32_t)mi->source;
    resp.cacheable = cacheable;
    net_reply(c, h, &resp.base);
}

static void pending_get_free(owner *o, pending_get *pg)
{
    HASH_DEL(o->pending_gets, pg);
    get_waiter *w = pg->waiters;
    while (w) {
        get_waiter *next = w->next;
        net_conn_unref(w->conn);
        free(w);
        w = next;
    }
    free(pg->key);
    free(pg);
}

static void fail_waiters(owner *o, pending_get *pg, int status, const char *detail)
{
    for (get_waiter *w = pg->waiters; w; w = w->next)
        if (net_conn_is_open(w->conn))
            net_reply_error(w->conn, &w->hdr, status, "%s", detail);
    if (status == FX_ENOTFOUND)
        o->misses++;
    pending_get_free(o, pg);
}

static void on_get_done_resp(int status, ProtobufCMessage *msg, void *ud)
{
    pending_get *pg = ud;
    owner *o = the_owner;
    if (status || msg_status(msg)) {
        fail_waiters(o, pg, status ? status : msg_status(msg),
                     status ? "GetDone: master unreachable" : msg_detail(msg));
        return;
    }
    Fx__GetDoneResp *r = (Fx__GetDoneResp *)msg;
    memory_info *mi = holders_mi_new(o, pg->key, pg->klen, r->holder_id, pg->offset, pg->len,
                                     pg->source);
    if (!mi) {
        owner_ack_holder(o, r->holder_id);
        fail_waiters(o, pg, FX_ENOMEM, "out of memory");
        return;
    }
    if (r->cacheable)
        holders_cache_insert(o, mi);
    for (get_waiter *w = pg->waiters; w; w = w->next)
        if (net_conn_is_open(w->conn))
            reply_holder(o, w->conn, &w->hdr, mi, r->cacheable);
    holders_mi_unref(o, mi);
    pending_get_free(o, pg);
}

static void on_get_start_resp(int status, ProtobufCMessage *msg, void *ud)
{
    pending_get *pg = ud;
    owner *o = the_owner;
    if (status || msg_status(msg)) {
        fail_waiters(o, pg, status ? status : msg_status(msg),
                     status ? "GetStart: master unreachable" : msg_detail(msg));
        return;
    }
    Fx__GetStartResp *r = (Fx__GetStartResp *)msg;
    pg->get_id = r->get_id;
    pg->offset = r->target_offset;
    pg->len = r->len;
    pg->source = r->source_kind == FX_SRC_SSD ? FX_SRC_SSD : FX_SRC_MEMORY;
    bool ok = r->mode == FX__GET_MODE__REUSE_REPLICA && segment_contains(&o->seg, pg->offset, pg->len);
    if (!ok) {
        Fx__GetRevokeReq rv = FX__GET_REVOKE_REQ__INIT;
        rv.get_id = r->get_id;
        rpc_notify(o->mrpc, MSG_GET_REVOKE, &rv.base);
        FX_LOG(ERROR, "master planned a get this owner cannot serve (mode %d, range %llu+%llu)",
               r->mode, (unsigned long long)pg->offset, (unsigned long long)pg->len);
        fail_waiters(o, pg, FX_EPROTO, "invalid get plan from the master");
        return;
    }
    /* ReuseReplica: the bytes are already in this segment; nothing to move. */
    Fx__GetDoneReq gd = FX__GET_DONE_REQ__INIT;
    gd.get_id = r->get_id;
    if (rpc_call(o->mrpc, MSG_GET_DONE, &gd.base, OWNER_RPC_TIMEOUT_MS, on_get_done_resp, pg) < 0)
        fail_waiters(o, pg, FX_ECONN, "master unreachable");
}

static void on_get(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalGetReq *req)
{
    if (!valid_key(ec->conn, h, &req->key))
        return;
    memory_info *mi = holders_cache_find(o, req->key.data, req->key.len);
    if (mi) {
        reply_holder(o, ec->conn, h, mi, true);
        return;
    }
    get_waiter *w = malloc(sizeof *w);
    if (!w) {
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    w->conn = ec->conn;
    w->hdr = *h;
    net_conn_ref(ec->conn);
    pending_get *pg;
    HASH_FIND(hh, o->pending_gets, req->key.data, req->key.len, pg);
    if (pg) {
        w->next = pg->waiters;
        pg->waiters = w;
        return;
    }
    pg = calloc(1, sizeof *pg);
    if (pg)
        pg->key = fx_memdup(req->key.data, req->key.len);
    if (!pg || !pg->key) {
        free(pg);
        net_conn_unref(w->conn);
        free(w);
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    pg->klen = req->key.len;
    w->next = NULL;
    pg->waiters = w;
    HASH_ADD_KEYPTR(hh, o->pending_gets, pg->key, pg->klen, pg);
    Fx__GetStartReq gs = FX__GET_START_REQ__INIT;
    gs.key = req->key;
    if (rpc_call(o->mrpc, MSG_GET_START, &gs.base, OWNER_RPC_TIMEOUT_MS, on_get_start_resp, pg) < 0)
        fail_waiters(o, pg, FX_ECONN, "master unreachable");
}

/* ---- delete, acks, stat, ping ------------------------------------------ */

static void on_delete_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ext_call *x = ud;
    holders_cache_drop(x->o, x->key, x->klen);
    if (!forward_failure(x, status, msg, "Delete") && net_conn_is_open(x->conn))
        net_reply(x->conn, &x->hdr,
                  &((Fx__ExternalDeleteResp)FX__EXTERNAL_DELETE_RESP__INIT).base);
    call_free(x);
}

static void on_delete(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalDeleteReq *req)
{
    if (!valid_key(ec->conn, h, &req->key))
        return;
    ext_call *x = call_new(o, ec->conn, h, req->key.data, req->key.len);
    if (!x) {
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    Fx__DeleteReq d = FX__DELETE_REQ__INIT;
    d.key = req->key;
    if (rpc_call(o->mrpc, MSG_DELETE, &d.base, OWNER_RPC_TIMEOUT_MS, on_delete_resp, x) < 0) {
        net_reply_error(ec->conn, h, FX_ECONN, "master unreachable");
        call_free(x);
    }
}

static void on_delete_ack(owner *o, ext_conn *ec, Fx__ExternalDeleteAckReq *req)
{
    size_t unknown = 0;
    for (size_t i = 0; i < req->n_holder_ids; i++)
        if (!holders_session_release(o, ec->s, req->holder_ids[i]))
            unknown++;
    if (unknown)
        FX_LOG(WARN, "external %llu released %zu unknown holder(s)",
               (unsigned long long)ec->s->client_id, unknown);
}

static void on_stat_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ext_call *x = ud;
    owner *o = x->o;
    if (!forward_failure(x, status, msg, "Stat") && net_conn_is_open(x->conn)) {
        Fx__StatResp *r = (Fx__StatResp *)msg;
        for (size_t i = 0; i < r->n_owners; i++) {
            if (r->owners[i]->node_id != o->node_id)
                continue;
            r->owners[i]->hits_memory = o->hits_memory; /* fresher than the last heartbeat */
            r->owners[i]->hits_ssd = o->hits_ssd;
            r->owners[i]->misses = o->misses;
        }
        net_reply(x->conn, &x->hdr, &r->base);
    }
    call_free(x);
}

static void on_stat(owner *o, ext_conn *ec, const frame_hdr *h)
{
    ext_call *x = call_new(o, ec->conn, h, "", 0);
    Fx__StatReq req = FX__STAT_REQ__INIT;
    if (!x) {
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    if (rpc_call(o->mrpc, MSG_STAT, &req.base, OWNER_RPC_TIMEOUT_MS, on_stat_resp, x) < 0) {
        net_reply_error(ec->conn, h, FX_ECONN, "master unreachable");
        call_free(x);
    }
}

/* ---- dispatch ------------------------------------------------------------- */

static void on_ext_frame(net_conn *c, const frame_hdr *h, ProtobufCMessage *msg)
{
    owner *o = the_owner;
    ext_conn *ec = net_conn_data(c);
    if (h->flags & FRAME_RESPONSE) {
        FX_LOG(WARN, "%s: unexpected response frame; closing", net_conn_peer(c));
        net_conn_close(c);
        return;
    }
    if (h->type == MSG_EXT_HELLO) {
        on_hello(o, ec, h, (Fx__ExternalHelloReq *)msg);
        return;
    }
    if (!ec->s) {
        FX_LOG(WARN, "%s: %s before ExternalHello; closing", net_conn_peer(c), msg_name(h->type));
        net_conn_close(c);
        return;
    }
    if (ec->s->dead) {
        net_reply_error(c, h, FX_ECONN, "the external's session connection is closed");
        return;
    }
    if (!o->registered) {
        net_reply_error(c, h, FX_ECONN, "owner is not connected to the master");
        return;
    }
    switch (h->type) {
    case MSG_EXT_PUT_START:
        on_put_start(o, ec, h, (Fx__ExternalPutStartReq *)msg);
        break;
    case MSG_EXT_PUT_TRANSFER_END:
        on_put_transfer_end(o, ec, h, (Fx__ExternalPutTransferEndReq *)msg);
        break;
    case MSG_EXT_GET:
        on_get(o, ec, h, (Fx__ExternalGetReq *)msg);
        break;
    case MSG_EXT_DELETE:
        on_delete(o, ec, h, (Fx__ExternalDeleteReq *)msg);
        break;
    case MSG_EXT_DELETE_ACK:
        on_delete_ack(o, ec, (Fx__ExternalDeleteAckReq *)msg);
        break;
    case MSG_EXT_PING:
        net_reply(c, h, &((Fx__ExternalPingResp)FX__EXTERNAL_PING_RESP__INIT).base);
        break;
    case MSG_EXT_STAT:
        on_stat(o, ec, h);
        break;
    default:
        FX_LOG(WARN, "%s: %s is not an external request; closing", net_conn_peer(c),
               msg_name(h->type));
        net_conn_close(c);
    }
}

static void on_ext_close(net_conn *c)
{
    owner *o = the_owner;
    ext_conn *ec = net_conn_data(c);
    if (!ec)
        return;
    revoke_started_puts(o, ec);
    if (ec->s)
        session_detach(o, ec->s, c);
    net_conn_set_data(c, NULL);
    free(ec);
}

static const net_conn_ops ext_ops = {.on_frame = on_ext_frame, .on_close = on_ext_close};

static void on_ext_accept(net_conn *c, void *ud)
{
    owner *o = ud;
    ext_conn *ec = calloc(1, sizeof *ec);
    if (!ec) {
        net_conn_close(c);
        return;
    }
    ec->o = o;
    ec->conn = c;
    net_conn_set_data(c, ec);
    net_conn_set_max_body(c, 1u << 20); /* externals send keys and ids, never payload */
}

int owner_ext_listen(owner *o)
{
    the_owner = o;
    int err = 0;
    o->ext_listener = net_listen(o->loop, o->cfg.client_socket, true, &ext_ops, on_ext_accept, o, &err);
    if (!o->ext_listener) {
        FX_LOG(ERROR, "fluxonkv_spec.client_socket: cannot listen on %s: %s", o->cfg.client_socket,
               uv_strerror(err));
        return err;
    }
    FX_LOG(INFO, "serving externals on %s", o->cfg.client_socket);
    return 0;
}

void owner_ext_invalidate(owner *o, ProtobufCBinaryData *keys, size_t n)
{
    Fx__ExternalInvalidateWeakIndexReq req = FX__EXTERNAL_INVALIDATE_WEAK_INDEX_REQ__INIT;
    req.n_keys = n;
    req.keys = keys;
    session *s, *tmp;
    HASH_ITER(hh, o->sessions, s, tmp)
        if (s->events && !s->dead)
            net_send(s->events, MSG_EXT_INVALIDATE_WEAK_INDEX, FRAME_ONEWAY, 0, &req.base);
}

