/*
 * master_link.c - the owner's connection to the master: connect (retried at
 * startup), Register, heartbeats, the master's one-way pushes
 * (BatchDeleteClientKvMetaCache, MemberTable) and its SsdReplicaPersist and
 * SsdStageRead requests (handed to ssd_persist.c and ssd_stage.c). The
 * batches going the other way have their own files (holder_ack.c,
 * access_report.c, ssd_evict.c). Register announces
 * the data plane's address (data_address.c: settled on each connection, so
 * a wildcard data_listen announces the address this connection comes from)
 * and whether this owner has an SSD tier, and returns our node id and
 * incarnation; the member table says which peers the data plane accepts and
 * the pair key it shares with each. Heartbeats carry the hit counters and the SSD
 * tier's capacity and use.
 *
 * Owners outlive the master (docs/decisions.md). When the link drops after
 * registration the owner keeps its node id and incarnation, its segment, SSD
 * tier, client socket, sessions and holders as they are, and reconnects with
 * a backoff (RECONNECT_MIN_MS doubling to RECONNECT_MAX_MS) for as long as it
 * runs; only the very first registration has a deadline
 * (CONNECT_DEADLINE_MS, then exit 1). Meanwhile client requests that need
 * the master wait in master_wait.c (at most master_wait, then
 * MasterUnavailable), calls in flight to the lost master fail with
 * MasterUnavailable, heartbeats stop, and one-way reports are dropped (they
 * describe the old master's state). Holders stay readable: their bytes are
 * in this segment. A master that refuses us on a reconnect (authentication,
 * InvalidArgument) still stops the owner with exit 2.
 *
 * After every Register the owner reports to the master (recovery_report.c):
 * its replica index when the master takes its identity back (a restarted or
 * new leader recovering), and the ranges still in use here; client requests
 * reach the master only once that report is answered. A lost link also
 * aborts our data-plane transfers (pushes into peers' ranges that a new
 * master may hand out).
 */
#include "owner/owner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "net/handshake.h"
#include "fluxon/fluxon.h"
#include "owner/dataplane/dataplane.h"
#include "owner/put_pool.h"
#include "owner/ssd_tier.h"

/* Before the first registration: a retry every CONNECT_RETRY_MS, for
 * CONNECT_DEADLINE_MS in all. */
#define CONNECT_RETRY_MS 100u
#define CONNECT_DEADLINE_MS 30000u
/* After a loss: RECONNECT_MIN_MS, doubling up to RECONNECT_MAX_MS, forever. */
#define RECONNECT_MIN_MS 100u
#define RECONNECT_MAX_MS 250u /* well below recovery.c's RECOVERY_GRACE_MS */

static void on_master_frame(net_conn *c, const frame_hdr *h, ProtobufCMessage *msg);
static void on_master_close(net_conn *c);
static const net_conn_ops master_ops = {.on_frame = on_master_frame, .on_close = on_master_close};

void owner_stop(owner *o, int exit_code)
{
    if (o->stopping)
        return;
    o->stopping = true;
    o->exit_code = exit_code;
    if (o->ext_listener)
        net_listener_close(o->ext_listener); /* and every external connection */
    o->ext_listener = NULL;
    uv_stop(o->loop);
}

static void on_heartbeat_resp(int status, ProtobufCMessage *resp, void *ud)
{
    (void)ud;
    if (status)
        FX_LOG(WARN, "heartbeat failed: %s", fx_strerror(status));
    else if (msg_status(resp))
        FX_LOG(WARN, "heartbeat refused: %s", msg_detail(resp));
}

static void on_heartbeat_timer(uv_timer_t *t)
{
    owner *o = t->data;
    Fx__HeartbeatReq req = FX__HEARTBEAT_REQ__INIT;
    req.hits_memory = o->hits_memory;
    req.hits_ssd = o->hits_ssd;
    req.misses = o->misses;
    ssd_tier_usage(o, &req.ssd_capacity, &req.ssd_used);
    req.ssd_errors = ssd_tier_report_errors(o);
    Fx__OwnerMetrics metrics = FX__OWNER_METRICS__INIT;
    owner_metrics_buf buf;
    owner_metrics_fill(o, &metrics, &buf);
    req.metrics = &metrics;
    rpc_call(o->mrpc, MSG_HEARTBEAT, &req.base, OWNER_RPC_TIMEOUT_MS, on_heartbeat_resp, o);
    owner_put_pool_tick(o); /* grants past their use-by time go back */
}

static void on_connect_retry(uv_timer_t *t);

/* Schedules the next connection attempt: before the first registration every
 * CONNECT_RETRY_MS until its deadline (then the owner stops, exit 1); after
 * it with the reconnect backoff, for as long as the owner runs. why says what
 * failed. */
static void schedule_connect(owner *o, const char *why)
{
    if (o->stopping)
        return;
    if (!o->registered_once) {
        if (uv_now(o->loop) >= o->connect_deadline_ms) {
            FX_LOG(ERROR, "cannot connect to master %s: %s", o->cfg.master, why);
            owner_stop(o, 1);
            return;
        }
        uv_timer_start(&o->connect_timer, on_connect_retry, CONNECT_RETRY_MS, 0);
        return;
    }
    uint64_t delay = o->reconnect_ms ? o->reconnect_ms : RECONNECT_MIN_MS;
    o->reconnect_ms = delay * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : delay * 2;
    FX_LOG(DEBUG, "master %s: %s; reconnecting in %llu ms", o->cfg.master, why,
           (unsigned long long)delay);
    uv_timer_start(&o->connect_timer, on_connect_retry, delay, 0);
}

static void on_connect_retry(uv_timer_t *t)
{
    owner *o = t->data;
    if (o->stopping)
        return;
    if (owner_master_connect(o) < 0)
        schedule_connect(o, "cannot start a connection");
}

/* The master answered our report (recovery_report.c): from now on it may
 * choose us, and client requests reach it. */
static void on_report_done(owner *o, int status)
{
    if (status) {
        FX_LOG(WARN, "the master did not take our recovery report: %s", fx_strerror(status));
        if (!o->registered_once)
            owner_stop(o, 1);
        else if (o->master)
            net_conn_close(o->master); /* and try again (on_master_close) */
        return;
    }
    o->registered = true;
    if (!o->registered_once) {
        /* Once per process: a reconnect finds the tier and the socket as the
         * loss left them. */
        o->registered_once = true;
        ssd_tier_start(o);
        if (owner_ext_listen(o) < 0) {
            owner_stop(o, 2); /* fluxonkv_spec.client_socket cannot be served */
            return;
        }
    }
    /* The one place where client requests start reaching the master (the
     * calls queued while it was away go now). */
    owner_master_ready(o);
}

static void on_register_resp(int status, ProtobufCMessage *msg, void *ud)
{
    owner *o = ud;
    if (status || msg_status(msg)) {
        int st = status ? status : msg_status(msg);
        /* InvalidArgument: our settings (cluster_name) do not fit this master;
         * AuthenticationFailed: our cluster_secret_file (or its absence) */
        bool refused = !status && (st == FX_EINVAL || st == FX_EAUTH);
        if (!refused) {
            /* The link dropped, or the master could not take us now (a
             * standby, one still recovering): drop the link and try again,
             * before the first registration within its deadline. */
            FX_LOG(WARN, "registering with the master failed: %s%s%s; trying again",
                   fx_strerror(st), status ? "" : ": ", status ? "" : msg_detail(msg));
            if (o->master)
                net_conn_close(o->master);
            if (!o->registered_once)
                schedule_connect(o, "registration failed");
            return;
        }
        FX_LOG(ERROR, "registration with the master failed: %s%s%s", fx_strerror(st),
               status ? "" : ": ", status ? "" : msg_detail(msg));
        if (!status && st == FX_EAUTH)
            FX_LOG(ERROR, "authentication failed: the master refused us: %s", msg_detail(msg));
        owner_stop(o, refused ? 2 : 1);
        return;
    }
    Fx__RegisterResp *r = (Fx__RegisterResp *)msg;
    if (r->term < o->known_term) {
        FX_LOG(WARN, "the master at %s:%d is of term %llu; term %llu leads; trying again",
               o->master_host, o->master_port, (unsigned long long)r->term,
               (unsigned long long)o->known_term);
        if (o->master)
            net_conn_close(o->master);
        if (!o->registered_once)
            schedule_connect(o, "an older master");
        return;
    }
    if (r->term > o->known_term)
        o->known_term = r->term;
    uint32_t old_node = o->node_id;
    uint64_t old_tomb = o->tomb_tag;
    o->node_id = r->node_id;
    o->tomb_tag = r->tomb_tag;
    o->master_term = r->term;
    o->reconnect_ms = 0;
    if (!o->registered_once)
        FX_LOG(INFO, "registered as node %u (tomb %llu)", o->node_id,
               (unsigned long long)o->tomb_tag);
    else if (old_node == o->node_id && old_tomb == o->tomb_tag)
        FX_LOG(WARN, "the master took us back as node %u (tomb %llu)%s", o->node_id,
               (unsigned long long)o->tomb_tag, r->recovering ? "; reporting our replicas" : "");
    else
        FX_LOG(WARN, "registered again as node %u (tomb %llu); was node %u (tomb %llu)",
               o->node_id, (unsigned long long)o->tomb_tag, old_node,
               (unsigned long long)old_tomb);
    dp_engine_set_identity(o->dp, o->node_id, o->tomb_tag);
    uint32_t hb = r->heartbeat_ms ? r->heartbeat_ms : 1000;
    /* Heartbeats keep us a member while the master waits for others' reports. */
    uv_timer_start(&o->heartbeat_timer, on_heartbeat_timer, hb, hb);
    /* The invalidations of the outage were lost with the old master, and the
     * new one does not know who cached what: our clients drop every key from
     * their weak indexes and near caches, as the report empties our cache. */
    owner_ext_invalidate(o, NULL, 0);
    if (owner_send_recovery_report(o, r->recovering, on_report_done) < 0) {
        FX_LOG(ERROR, "cannot send the recovery report to the master");
        if (!o->registered_once)
            owner_stop(o, 1);
        else if (o->master)
            net_conn_close(o->master); /* and try again (on_master_close) */
    }
}

static void on_connected(net_conn *c, int status, void *ud)
{
    owner *o = ud;
    if (c != o->master) {
        /* A connection to a leader that was replaced while we dialled it. */
        if (c == o->fenced_master)
            o->fenced_master = NULL;
        if (status >= 0)
            net_conn_close(c);
        return;
    }
    if (status == -EACCES) {
        o->master = NULL;
        FX_LOG(ERROR, "authentication failed with the master at %s:%d: %s", o->master_host,
               o->master_port, net_conn_auth_failure(c));
        owner_stop(o, 2); /* our cluster_secret_file is not the master's */
        return;
    }
    if (status < 0) {
        o->master = NULL; /* its close (on_master_close) is not the loss of a link */
        schedule_connect(o, uv_strerror(status));
        return;
    }
    char why[512];
    if (owner_data_address_for_master(o, c, why, sizeof why) < 0) {
        fprintf(stderr, "fluxon-owner: %s\n", why);
        owner_stop(o, 2); /* a configuration that peers cannot use */
        return;
    }
    o->mrpc = rpc_client_new(o->loop, c);
    if (!o->mrpc) {
        if (!o->registered_once)
            owner_stop(o, 1);
        else
            net_conn_close(c); /* and try again (on_master_close) */
        return;
    }
    Fx__RegisterReq req = FX__REGISTER_REQ__INIT;
    req.cluster_name = o->cfg.cluster_name;
    req.node_name = o->cfg.node_name;
    req.segment_size = o->seg.size;
    req.kv_ssd_storage = o->ssd != NULL;
    uint64_t ssd_used;
    ssd_tier_usage(o, &req.ssd_capacity, &ssd_used);
    req.data_addr = o->data_addr;
    /* Our identity under the previous master, the members we knew and the
     * newest put_id we saw: a recovering master takes them back. */
    req.prev_node_id = o->node_id;
    req.prev_tomb_tag = o->tomb_tag;
    uint32_t *known = o->n_members ? calloc(o->n_members, sizeof *known) : NULL;
    char **names = o->n_members ? calloc(o->n_members, sizeof *names) : NULL;
    for (size_t i = 0; known && names && i < o->n_members; i++) {
        known[i] = o->members[i].node_id;
        names[i] = o->members[i].name;
    }
    req.known_members = known;
    req.n_known_members = known && names ? o->n_members : 0;
    req.known_member_names = names;
    req.n_known_member_names = known && names ? o->n_members : 0;
    Fx__PutId max_pid = FX__PUT_ID__INIT;
    max_pid.time_ms = o->max_put_seen.time_ms;
    max_pid.version = o->max_put_seen.version;
    req.max_put_id = &max_pid;
    int sent = rpc_call(o->mrpc, MSG_REGISTER, &req.base, OWNER_RPC_TIMEOUT_MS, on_register_resp, o);
    free(known);
    free(names);
    if (sent < 0) {
        if (!o->registered_once)
            owner_stop(o, 1);
        else
            net_conn_close(c); /* and try again (on_master_close) */
    }
}

int owner_master_connect(owner *o)
{
    if (!o->connect_deadline_ms) {
        o->connect_deadline_ms = uv_now(o->loop) + CONNECT_DEADLINE_MS;
        owner_holder_ack_init(o);
        uv_timer_init(o->loop, &o->heartbeat_timer);
        uv_timer_init(o->loop, &o->connect_timer);
        owner_access_report_init(o);
        o->heartbeat_timer.data = o->connect_timer.data = o;
    }
    if (!o->leader_known) {
        /* etcd has not named a leader yet: the locator's news, or the
         * next retry, connects. */
        schedule_connect(o, "no leader known yet");
        return 0;
    }
    o->master = net_connect_tcp(o->loop, o->master_host, o->master_port, &master_ops, on_connected, o);
    if (!o->master)
        return -EINVAL;
    net_conn_set_write_scope(o->master, o->write_scope);
    if (o->authenticated)
        net_conn_auth_client(o->master, &o->cluster_key, HS_ROLE_OWNER, o->cfg.node_name);
    net_conn_set_data(o->master, o); /* the context of on_master_frame and on_master_close */
    return 0;
}

static void on_invalidate(owner *o, Fx__BatchDeleteClientKvMetaCacheReq *req)
{
    owner_index_apply_ops(o, req->index_ops, req->n_index_ops);
    for (size_t i = 0; i < req->n_keys; i++)
        owner_forget_key(o, req->keys[i].data, req->keys[i].len);
    owner_ext_invalidate(o, req->keys, req->n_keys);
}

/* A member's entry as ours: its pair key when the master sent one of the
 * right length (a member without one cannot pass the data plane's handshake). */
/* With the cluster secret the key comes sealed under our master link's
 * session key (and a plain one is refused: no downgrade); without one, on
 * loopback, it comes plain. */
static void take_member(owner *o, const Fx__MemberInfo *in, peer_member *out)
{
    *out = (peer_member){.node_id = in->node_id, .tomb_tag = in->tomb_tag};
    snprintf(out->name, sizeof out->name, "%s", in->name ? in->name : "");
    auth_key session;
    bool sealed = o->authenticated && net_conn_session_key(o->master, &session);
    if (sealed && in->pair_key.len == AUTH_SEALED_KEY_LEN) {
        uint8_t ad[AUTH_MEMBER_AD_LEN];
        auth_member_ad(in->node_id, in->tomb_tag, ad);
        out->has_key = auth_open(&session, in->pair_key.data, in->pair_key.len, ad, sizeof ad,
                                 out->pair_key.bytes) == 0;
        if (!out->has_key) {
            auth_key_wipe(&out->pair_key);
            FX_LOG(WARN, "member table: the key for member %u does not open with our session "
                         "key; its data plane is refused", in->node_id);
        }
    } else if (!o->authenticated && in->pair_key.len == AUTH_KEY_LEN) {
        out->has_key = true;
        memcpy(out->pair_key.bytes, in->pair_key.data, AUTH_KEY_LEN);
    } else if (in->node_id != o->node_id) {
        FX_LOG(WARN, "member table: no data-plane key for member %u (%zu bytes); its data plane "
                     "is refused", in->node_id, in->pair_key.len);
    }
    if (sealed)
        auth_key_wipe(&session);
}

static void on_member_table(owner *o, Fx__MemberTableReq *req)
{
    peer_member *n = calloc(req->n_members ? req->n_members : 1, sizeof *n);
    if (!n) {
        FX_LOG(ERROR, "out of memory taking the member table; keeping the previous one");
        return;
    }
    for (size_t i = 0; i < req->n_members; i++)
        take_member(o, req->members[i], &n[i]);
    peer_member *old = o->members;
    size_t n_old = o->n_members;
    o->members = n;
    o->n_members = req->n_members;
    /* Transfers with a member that left fail now, not at their timeout (the
     * peer may be frozen rather than gone), and its data connections to us
     * close: its keys died with its incarnation. */
    for (size_t i = 0; i < n_old; i++) {
        if (!owner_is_member(o, old[i].node_id, old[i].tomb_tag)) {
            FX_LOG(INFO, "member %u left the cluster", old[i].node_id);
            dp_engine_forget_peer(o->dp, old[i].node_id);
        }
        auth_key_wipe(&old[i].pair_key);
    }
    free(old);
}

bool owner_is_member(owner *o, uint32_t node_id, uint64_t tomb_tag)
{
    for (size_t i = 0; i < o->n_members; i++)
        if (o->members[i].node_id == node_id)
            return o->members[i].tomb_tag == tomb_tag;
    return false;
}

bool owner_peer_key(void *ud, uint32_t node_id, uint64_t *tomb_tag, auth_key *key)
{
    owner *o = ud;
    for (size_t i = 0; i < o->n_members; i++) {
        const peer_member *p = &o->members[i];
        if (p->node_id == node_id && p->has_key) {
            *tomb_tag = p->tomb_tag;
            *key = p->pair_key;
            return true;
        }
    }
    return false;
}

static void on_master_frame(net_conn *c, const frame_hdr *h, ProtobufCMessage *msg)
{
    owner *o = net_conn_data(c);
    if (c == o->fenced_master) {
        if (h->flags & FRAME_RESPONSE)
            return;
        FX_LOG_LIMITED(WARN, "refused %s from a master of an older term: term %llu leads",
                       msg_name(h->type), (unsigned long long)o->known_term);
        if (!(h->flags & FRAME_ONEWAY))
            net_reply_error(c, h, FX_ESTALE, "Stale: this master was replaced (term %llu leads)",
                            (unsigned long long)o->known_term);
        return;
    }
    if (h->flags & FRAME_RESPONSE) {
        if (!rpc_on_response(o->mrpc, h, msg))
            FX_LOG(DEBUG, "late %s response from the master ignored", msg_name(h->type));
        return;
    }
    switch (h->type) {
    case MSG_MEMBER_TABLE:
        on_member_table(o, (Fx__MemberTableReq *)msg);
        break;
    case MSG_SSD_REPLICA_PERSIST:
        ssd_persist_on_request(o, c, h, (Fx__SsdReplicaPersistReq *)msg);
        break;
    case MSG_SSD_STAGE_READ:
        ssd_stage_on_request(o, c, h, (Fx__SsdStageReadReq *)msg);
        break;
    case MSG_BATCH_DELETE_CLIENT_KV_META_CACHE:
        on_invalidate(o, (Fx__BatchDeleteClientKvMetaCacheReq *)msg);
        owner_holder_ack_flush(o); /* an eviction may be waiting for the bytes dropped here */
        {
            Fx__BatchDeleteClientKvMetaCacheResp resp =
                FX__BATCH_DELETE_CLIENT_KV_META_CACHE_RESP__INIT;
            resp.seq = ((Fx__BatchDeleteClientKvMetaCacheReq *)msg)->seq;
            net_reply(c, h, &resp.base);
        }
        break;
    default:
        FX_LOG(WARN, "master sent unexpected %s; ignored", msg_name(h->type));
        net_reply_error(c, h, FX_ENOTSUP, "owner does not handle %s", msg_name(h->type));
    }
}

/* The current link is gone (closed, or fenced: a newer leader exists): what
 * was in flight with it fails, client requests queue, we reconnect. */
static void link_detached(owner *o)
{
    bool was_registered = o->registered;
    o->registered = false;
    owner_master_lost(o); /* client requests queue from now on */
    uv_timer_stop(&o->heartbeat_timer);
    /* Our pushes into peers' ranges stop now: a new master may hand those
     * ranges out once it recovered (docs/decisions.md, R5). */
    for (size_t i = 0; i < o->n_members; i++)
        if (o->members[i].node_id != o->node_id)
            dp_engine_forget_peer(o->dp, o->members[i].node_id);
    if (o->mrpc) {
        /* Calls in flight to this master are lost with it: client requests
         * get MasterUnavailable at once, not at their timeout. */
        rpc_fail_all(o->mrpc, FX_EMASTER);
        rpc_client_free(o->mrpc);
        o->mrpc = NULL;
    }
    o->master = NULL;
    if (o->stopping)
        return;
    if (was_registered) {
        FX_LOG(WARN, "lost the connection to the master; reconnecting (holders stay valid)");
        o->reconnect_ms = 0;
    }
    if (o->registered_once)
        schedule_connect(o, "the connection closed");
}

static void on_master_close(net_conn *c)
{
    owner *o = net_conn_data(c);
    if (o && c == o->fenced_master) {
        o->fenced_master = NULL;
        return;
    }
    if (!o || c != o->master)
        return; /* a connect that failed (on_connected let it go), or never ours */
    link_detached(o);
}

void owner_master_moved(owner *o)
{
    if (o->stopping)
        return;
    if (o->master && o->master_term < o->known_term) {
        /* Fenced: whatever the old leader still sends is refused, and its
         * link closes when it notices (or when we stop). */
        FX_LOG(WARN, "the master of term %llu was replaced (term %llu leads); its requests are "
                     "refused from now on", (unsigned long long)o->master_term,
               (unsigned long long)o->known_term);
        if (o->fenced_master)
            net_conn_close(o->fenced_master);
        o->fenced_master = o->master;
        link_detached(o); /* o->master is NULL now */
    }
    if (o->master || o->stopping)
        return; /* linked (or dialling) to the leader already */
    /* The new leader is recovering now: go at once, not at the backoff's pace. */
    uv_timer_stop(&o->connect_timer);
    o->reconnect_ms = 0;
    if (owner_master_connect(o) < 0)
        schedule_connect(o, "cannot start a connection");
}
