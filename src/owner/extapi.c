/*
 * extapi.c - the external-facing API of the owner on its Unix socket.
 *
 * ExternalHello opens a session (the session connection receives the segment
 * fd and, later, ExternalInvalidateWeakIndex pushes) or attaches a further
 * connection to an existing session. Puts and gets have their own files
 * (ext_put.c, ext_get.c, ext_batch_get.c, ext_batch_delete.c); here are the sessions, the
 * dispatch, ExternalDelete (wraps Delete), ExternalDeleteAck (releases
 * holders), ping, stat, and KeyInfo / BatchExists / Lease (forwarded to the
 * master as they are: a batch of keys goes on as one BatchKeyInfo once its
 * shape passed). When a session connection closes, every holder of that
 * external is released;
 * when any connection closes, its started puts are revoked. The socket is
 * served from the first registration on, also while the master is lost:
 * holders, the get cache, acks and pings need no master, and requests that
 * do wait for one (master_wait.c), then fail with MasterUnavailable.
 *
 * Strangers: a connection is refused at accept when its peer's credentials
 * do not pass client_access.h, and until its ExternalHello it may send
 * only small frames and must say hello within handshake_timeout (conn.h's
 * listener limits, with max_client_connections and receive_buffer_budget).
 */
#include "owner/extcall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/mkdir_p.h"
#include "fluxon/fluxon.h"
#include "net/batch_keys.h"
#include "net/fdpass.h"
#include "net/unix_path.h"

#define EXT_PROTOCOL_VERSION 1u
/* Externals send keys and ids, never payload: the largest request is a batch
 * of FX_BATCH_MAX keys of the longest length (4 MiB), with room for its
 * lengths and framing. An ExternalHello is a few bytes, so strangers get
 * less. */
#define EXT_MAX_BODY ((uint32_t)FX_BATCH_MAX * (MAX_KEY_LEN + 16u) + (64u * 1024u))
#define EXT_HELLO_MAX_BODY (64u * 1024u)

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
        pthread_mutex_lock(&o->hold_lock); /* get threads read dead (get_lanes.c) */
        s->dead = true;
        size_t n = HASH_COUNT(s->holdings);
        pthread_mutex_unlock(&o->hold_lock);
        if (n)
            FX_LOG(INFO, "external %llu went away; reclaiming %zu holder(s)",
                   (unsigned long long)s->client_id, n);
        holders_session_release_all(o, s);
    }
    pthread_mutex_lock(&o->hold_lock);
    bool last = --s->conns == 0; /* a lane's close may take the last one instead */
    pthread_mutex_unlock(&o->hold_lock);
    if (last) {
        HASH_DEL(o->sessions, s);
        free(s);
    }
}

/* Sends a raw frame with fd beside it (SCM_RIGHTS) on c, which must have
 * nothing queued: the fd rides on a raw sendmsg beside libuv's write queue,
 * which keeps the byte stream in order only then, and the loop thread must
 * never wait for a peer that does not read (timeout 0). A peer whose socket
 * cannot take a few dozen bytes now is not reading, and is dropped. */
static void reply_with_fd(net_conn *c, const frame_hdr *h, const ProtobufCMessage *resp, int fd,
                          const char *what)
{
    if (net_conn_write_queue(c) > 0) {
        FX_LOG_LIMITED(WARN, "%s: ExternalHello while earlier answers are unread; closing",
                       net_conn_peer(c));
        net_conn_close(c);
        return;
    }
    size_t len;
    uint8_t *buf = msg_encode(h->type, FRAME_RESPONSE, h->req_id, resp, &len);
    int r = buf ? fdpass_send(net_conn_fd(c), buf, len, fd, 0) : -ENOMEM;
    free(buf);
    if (r < 0) {
        FX_LOG_LIMITED(WARN, "%s: cannot pass the %s: %s", net_conn_peer(c), what, strerror(-r));
        net_conn_close(c);
    }
}

/* An attaching connection asked for a get lane: the answer carries the
 * client's end of one (get_lanes.c), or nothing when none could be made. */
static void reply_with_lane(owner *o, net_conn *c, const frame_hdr *h, session *s,
                            Fx__ExternalHelloResp *resp)
{
    int fd = owner_get_lane_open(o, s);
    if (fd < 0) {
        net_reply(c, h, &resp->base);
        return;
    }
    reply_with_fd(c, h, &resp->base, fd, "get lane");
    close(fd); /* the lane's thread has the other end; a failed pass ends it (EOF) */
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
        pthread_mutex_lock(&o->hold_lock);
        s->conns++;
        pthread_mutex_unlock(&o->hold_lock);
        ec->s = s;
        net_conn_handshake_done(c);
        net_conn_set_max_body(c, EXT_MAX_BODY);
        resp.client_id = s->client_id;
        if (req->want_get_lane && o->lanes)
            reply_with_lane(o, c, h, s, &resp);
        else
            net_reply(c, h, &resp.base);
        return;
    }
    if (net_conn_write_queue(c) > 0) { /* see reply_with_fd */
        FX_LOG_LIMITED(WARN, "%s: ExternalHello while earlier answers are unread; closing",
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
    net_conn_handshake_done(c);
    net_conn_set_max_body(c, EXT_MAX_BODY);
    resp.client_id = s->client_id;
    reply_with_fd(c, h, &resp.base, o->seg.fd, "segment"); /* the segment rides with it */
}

/* ---- delete, acks, stat, ping ------------------------------------------ */

static void on_delete_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ext_call *x = ud;
    owner_forget_key(x->o, x->key, x->klen);
    /* Deleted or not found: no version of the key is ours to report any more,
     * and our index learns it before our client hears of it. */
    if (!status && (msg_status(msg) == 0 || msg_status(msg) == FX_ENOTFOUND))
        owner_index_deleted(x->o, x->key, x->klen);
    if (!ext_forward_failure(x, status, msg, "Delete")) {
        owner_metrics_deleted(x->o);
        if (net_conn_is_open(x->conn))
            net_reply(x->conn, &x->hdr,
                      &((Fx__ExternalDeleteResp)FX__EXTERNAL_DELETE_RESP__INIT).base);
    }
    ext_call_free(x);
}

static void on_delete(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalDeleteReq *req)
{
    if (!ext_valid_key(ec->conn, h, &req->key))
        return;
    ext_call *x = ext_call_new(o, ec->conn, h, req->key.data, req->key.len);
    if (!x) {
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    Fx__DeleteReq d = FX__DELETE_REQ__INIT;
    d.key = req->key;
    int r = owner_master_call(o, MSG_DELETE, &d.base, on_delete_resp, x);
    if (r < 0)
        on_delete_resp(r, NULL, x);
}

static void on_delete_ack(owner *o, ext_conn *ec, Fx__ExternalDeleteAckReq *req)
{
    size_t unknown = 0;
    for (size_t i = 0; i < req->n_holder_ids; i++)
        if (!holders_session_release(o, ec->s, req->holder_ids[i]))
            unknown++;
    if (unknown)
        FX_LOG_LIMITED(WARN, "external %llu released %zu unknown holder(s)",
                       (unsigned long long)ec->s->client_id, unknown);
}

/* Reads the external answered itself (weak index, near cache): memory hits
 * the master's eviction policy must hear of. A report out of shape is
 * dropped whole (it is advisory). */
static void on_access_report(owner *o, ext_conn *ec, Fx__ExternalAccessReportReq *req)
{
    bool ok = req->n_keys <= EXT_ACCESS_REPORT_MAX;
    for (size_t i = 0; ok && i < req->n_keys; i++)
        ok = req->keys[i].len >= 1 && req->keys[i].len <= MAX_KEY_LEN;
    if (!ok) {
        FX_LOG_LIMITED(WARN, "external %llu sent an access report of %zu keys out of shape "
                             "(at most %u keys of 1..%u bytes); dropped",
                       (unsigned long long)ec->s->client_id, req->n_keys, EXT_ACCESS_REPORT_MAX,
                       MAX_KEY_LEN);
        return;
    }
    for (size_t i = 0; i < req->n_keys; i++)
        owner_report_access(o, req->keys[i].data, req->keys[i].len);
    o->hits_memory += req->n_keys;
}

static void on_stat_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ext_call *x = ud;
    owner *o = x->o;
    if (!ext_forward_failure(x, status, msg, "Stat") && net_conn_is_open(x->conn)) {
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
    ext_call_free(x);
}

static void on_stat(owner *o, ext_conn *ec, const frame_hdr *h)
{
    ext_call *x = ext_call_new(o, ec->conn, h, "", 0);
    Fx__StatReq req = FX__STAT_REQ__INIT;
    if (!x) {
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    int r = owner_master_call(o, MSG_STAT, &req.base, on_stat_resp, x);
    if (r < 0)
        on_stat_resp(r, NULL, x);
}

/* KeyInfo and Lease: the external's request goes to the master as it is and
 * the master's answer comes back as it is (same bodies on both hops). */
static void on_forward_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ext_call *x = ud;
    if (!ext_forward_failure(x, status, msg, msg_name(x->hdr.type)) && net_conn_is_open(x->conn))
        net_reply(x->conn, &x->hdr, msg);
    ext_call_free(x);
}

static void forward_to_master(owner *o, ext_conn *ec, const frame_hdr *h, uint16_t master_type,
                              const ProtobufCMessage *req)
{
    ext_call *x = ext_call_new(o, ec->conn, h, "", 0);
    if (!x) {
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    int r = owner_master_call(o, master_type, req, on_forward_resp, x);
    if (r < 0)
        on_forward_resp(r, NULL, x);
}

static void on_key_info(owner *o, ext_conn *ec, const frame_hdr *h, Fx__KeyInfoReq *req)
{
    if (req->key.len > MAX_KEY_LEN || (!req->count_prefix && req->key.len == 0)) {
        net_reply_error(ec->conn, h, FX_EINVAL, "%s length %zu is outside %u..%u",
                        req->count_prefix ? "prefix" : "key", req->key.len,
                        req->count_prefix ? 0u : 1u, MAX_KEY_LEN);
        return;
    }
    forward_to_master(o, ec, h, MSG_KEY_INFO, &req->base);
}

/* The shape is checked here too, so that a malformed batch costs the master
 * nothing; per-key lengths are the master's to judge (results[i]). */
static void on_batch_exists(owner *o, ext_conn *ec, const frame_hdr *h, Fx__BatchKeyInfoReq *req)
{
    char why[160];
    if (batch_keys_check(&req->keys, req->klens, req->n_klens, why, sizeof why)) {
        net_reply_error(ec->conn, h, FX_EINVAL, "ExternalBatchExists: %s", why);
        return;
    }
    forward_to_master(o, ec, h, MSG_BATCH_KEY_INFO, &req->base);
}

/* ---- dispatch ------------------------------------------------------------- */

static void on_ext_frame(net_conn *c, const frame_hdr *h, ProtobufCMessage *msg)
{
    ext_conn *ec = net_conn_data(c);
    if (h->flags & FRAME_RESPONSE) {
        FX_LOG_LIMITED(WARN, "%s: unexpected response frame; closing", net_conn_peer(c));
        net_conn_close(c);
        return;
    }
    owner *o = ec->o;
    if (h->type == MSG_EXT_HELLO) {
        on_hello(o, ec, h, (Fx__ExternalHelloReq *)msg);
        return;
    }
    if (!ec->s) {
        FX_LOG_LIMITED(WARN, "%s: %s before ExternalHello; closing", net_conn_peer(c),
                       msg_name(h->type));
        net_conn_close(c);
        return;
    }
    if (ec->s->dead) {
        net_reply_error(c, h, FX_ECONN, "the external's session connection is closed");
        return;
    }
    switch (h->type) {
    case MSG_EXT_PUT_START:
        ext_on_put_start(o, ec, h, (Fx__ExternalPutStartReq *)msg);
        break;
    case MSG_EXT_PUT:
        ext_on_put(o, ec, h, (Fx__ExternalPutReq *)msg);
        break;
    case MSG_EXT_PUT_TRANSFER_END:
        ext_on_put_transfer_end(o, ec, h, (Fx__ExternalPutTransferEndReq *)msg);
        break;
    case MSG_EXT_GET:
        ext_on_get(o, ec, h, (Fx__ExternalGetReq *)msg);
        break;
    case MSG_EXT_BATCH_GET:
        ext_on_batch_get(o, ec, h, (Fx__ExternalBatchGetReq *)msg);
        break;
    case MSG_EXT_DELETE:
        on_delete(o, ec, h, (Fx__ExternalDeleteReq *)msg);
        break;
    case MSG_EXT_DELETE_ACK:
        on_delete_ack(o, ec, (Fx__ExternalDeleteAckReq *)msg);
        break;
    case MSG_EXT_ACCESS_REPORT:
        on_access_report(o, ec, (Fx__ExternalAccessReportReq *)msg);
        break;
    case MSG_EXT_PING:
        net_reply(c, h, &((Fx__ExternalPingResp)FX__EXTERNAL_PING_RESP__INIT).base);
        break;
    case MSG_EXT_STAT:
        on_stat(o, ec, h);
        break;
    case MSG_EXT_KEY_INFO:
        on_key_info(o, ec, h, (Fx__KeyInfoReq *)msg);
        break;
    case MSG_EXT_BATCH_EXISTS:
        on_batch_exists(o, ec, h, (Fx__BatchKeyInfoReq *)msg);
        break;
    case MSG_EXT_BATCH_DELETE:
        ext_on_batch_delete(o, ec, h, (Fx__BatchDeleteReq *)msg);
        break;
    case MSG_EXT_LEASE:
        forward_to_master(o, ec, h, MSG_LEASE, msg);
        break;
    default:
        FX_LOG_LIMITED(WARN, "%s: %s is not an external request; closing", net_conn_peer(c),
                       msg_name(h->type));
        net_conn_close(c);
    }
}

static void on_ext_close(net_conn *c)
{
    ext_conn *ec = net_conn_data(c);
    if (!ec)
        return;
    owner *o = ec->o;
    ext_revoke_started_puts(o, ec);
    if (ec->s)
        session_detach(o, ec->s, c);
    net_conn_set_data(c, NULL);
    free(ec);
}

static const net_conn_ops ext_ops = {.on_frame = on_ext_frame, .on_close = on_ext_close};

static void on_ext_accept(net_conn *c, void *ud)
{
    owner *o = ud;
    client_peer peer;
    int r = client_access_check(&o->ext_access, net_conn_fd(c), &peer);
    if (r < 0) {
        FX_LOG_LIMITED(WARN,
                       "client socket: refused a connection from uid %d gid %d pid %d: %s; the "
                       "socket's configured mode and group do not admit it",
                       (int)peer.uid, (int)peer.gid, (int)peer.pid,
                       r == -EACCES ? "not allowed" : strerror(-r));
        net_conn_close(c);
        return;
    }
    ext_conn *ec = calloc(1, sizeof *ec);
    if (!ec) {
        net_conn_close(c);
        return;
    }
    ec->o = o;
    ec->conn = c;
    net_conn_set_data(c, ec);
    net_conn_set_max_body(c, EXT_HELLO_MAX_BODY);
}

/* Gives the bound client socket client_socket_group and client_socket_mode
 * (owner_config.h), and sets the peer-credential rule to match them;
 * -errno, logged with the key, when it cannot. */
static int set_socket_access(owner *o)
{
    const char *path = o->cfg.client_socket, *group = o->cfg.client_socket_group;
    gid_t gid;
    int r = owner_config_socket_group(&o->cfg, &gid);
    if (r < 0) {
        FX_LOG(ERROR, "fluxonkv_spec.client_socket_group: no group named '%s'", group);
        return r;
    }
    if (group && chown(path, (uid_t)-1, gid) < 0) {
        int e = errno;
        FX_LOG(ERROR, "fluxonkv_spec.client_socket_group: cannot give %s to group %s: %s", path,
               group, strerror(e));
        return -e;
    }
    unsigned mode = owner_config_socket_mode(&o->cfg);
    client_access_init(&o->ext_access, mode, gid);
    if (chmod(path, (mode_t)mode) < 0) {
        int e = errno;
        FX_LOG(ERROR, "fluxonkv_spec.client_socket_mode: cannot set %s to %04o: %s", path, mode,
               strerror(e));
        return -e;
    }
    return 0;
}

int owner_ext_listen(owner *o)
{
    int err = mkdir_p_parent(o->cfg.client_socket, 0755);
    if (err < 0) {
        FX_LOG(ERROR, "fluxonkv_spec.client_socket: cannot create the directory of %s: %s",
               o->cfg.client_socket, strerror(-err));
        return err;
    }
    /* Bound under a umask that lets no one else in, then opened to exactly
     * client_socket_mode: whatever umask the owner was started with, there
     * is no moment when the socket is wider than configured. */
    mode_t umask_before = umask(0177);
    o->ext_listener = net_listen(o->loop, o->cfg.client_socket, true, &ext_ops, on_ext_accept, o, &err);
    umask(umask_before);
    if (!o->ext_listener) {
        FX_LOG(ERROR, "fluxonkv_spec.client_socket: cannot listen on %s: %s", o->cfg.client_socket,
               unix_path_strerror(err));
        return err;
    }
    net_listener_set_write_scope(o->ext_listener, o->write_scope);
    net_listener_set_limits(o->ext_listener,
                            &(net_listener_limits){.name = "client socket",
                                                   .max_conns = o->cfg.max_client_connections,
                                                   .handshake_ms = o->cfg.handshake_timeout_ms,
                                                   .buffer_budget = o->cfg.receive_buffer_budget});
    err = set_socket_access(o);
    if (err < 0)
        return err;
    FX_LOG(INFO, "serving externals on %s", o->cfg.client_socket);
    return 0;
}

void owner_ext_invalidate(owner *o, ProtobufCBinaryData *keys, size_t n)
{
    if (!n && keys)
        return; /* a batch of index ops alone: nothing for the externals */
    Fx__ExternalInvalidateWeakIndexReq req = FX__EXTERNAL_INVALIDATE_WEAK_INDEX_REQ__INIT;
    req.n_keys = n;
    req.keys = keys;
    req.all = keys == NULL;
    session *s, *tmp;
    HASH_ITER(hh, o->sessions, s, tmp)
        if (s->events && !s->dead)
            net_send(s->events, MSG_EXT_INVALIDATE_WEAK_INDEX, FRAME_ONEWAY, 0, &req.base);
}

