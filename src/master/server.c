/*
 * server.c - fluxon-master's listener, frame dispatch and periodic sweeps.
 *
 * Each accepted connection's data pointer is a master_conn (master.h): the
 * master it talks to, which is how the connection callbacks reach the state
 * they act on, and, once it registered, its member. Every request is
 * attributed to that member (the spec's "RPC sender identity"). Requests from
 * an unregistered connection other than Register get an error. Closing a
 * member's connection is member-left.
 */
#include "master/master.h"
#include "master/prefix_index.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "fluxon/fluxon.h"
#include "master/http.h"
#include "master/index_sync.h"
#include "master/inflight.h"
#include "master/invalidation.h"
#include "master/members.h"
#include "net/addr.h"

static bool check_serving(master *m);

static void on_frame(net_conn *c, const frame_hdr *h, ProtobufCMessage *msg)
{
    master_conn *mc = net_conn_data(c);
    if (!mc)
        return; /* its master_conn could not be allocated: closing */
    master *m = mc->m;
    if (!check_serving(m)) {
        if (!m->stopping && !(h->flags & FRAME_RESPONSE))
            net_reply_error(c, h, FX_EMASTER,
                            "MasterUnavailable: this master is a standby (not the leader)");
        net_conn_close(c);
        return;
    }
    member *mb = mc->mb;
    if (h->flags & FRAME_RESPONSE) {
        if (mb && mb->rpc && rpc_on_response(mb->rpc, h, msg))
            return;
        if (mb && mb->rpc) {
            FX_LOG(DEBUG, "%s: late %s response ignored", net_conn_peer(c), msg_name(h->type));
            return;
        }
        FX_LOG_LIMITED(WARN, "%s: unexpected %s response; closing", net_conn_peer(c),
                       msg_name(h->type));
        net_conn_close(c);
        return;
    }
    if (h->type == MSG_REGISTER) {
        if (mb) {
            net_reply_error(c, h, FX_EINVAL, "connection already registered");
            return;
        }
        /* mc outlives the register call: net_conn_close defers its free to uv_close */
        mc->mb = master_on_register(m, c, h, (Fx__RegisterReq *)msg);
        if (mc->mb)
            net_conn_handshake_done(c);
        return;
    }
    if (!mb) {
        net_reply_error(c, h, FX_EINVAL, "%s before Register", msg_name(h->type));
        return;
    }
    if (!mb->ready && h->type != MSG_HEARTBEAT && h->type != MSG_RECOVERY_REPORT &&
        h->type != MSG_BATCH_DELETE_ACK && h->type != MSG_SSD_REPLICA_COMMIT) {
        /* (A commit answers a persist recovery itself asked for.) */
        /* Owners wait for the answer to their report (given when recovery
         * ends) before they send anything else. */
        net_reply_error(c, h, FX_EMASTER, "MasterUnavailable: %s before this member's "
                        "RecoveryReport ended%s", msg_name(h->type),
                        m->recovery ? " (the master is recovering)" : "");
        return;
    }
    switch (h->type) {
    case MSG_RECOVERY_REPORT:
        master_on_recovery_report(m, mb, c, h, (Fx__RecoveryReportReq *)msg);
        break;
    case MSG_HEARTBEAT:
        master_on_heartbeat(m, mb, c, h, (Fx__HeartbeatReq *)msg);
        break;
    case MSG_PUT_START:
        master_on_put_start(m, mb, c, h, (Fx__PutStartReq *)msg);
        break;
    case MSG_PUT_DONE:
        master_on_put_done(m, mb, c, h, (Fx__PutDoneReq *)msg);
        break;
    case MSG_PUT_GRANT:
        master_on_put_grant(m, mb, c, h, (Fx__PutGrantReq *)msg);
        break;
    case MSG_PUT_REVOKE:
        master_on_put_revoke(m, mb, c, h, (Fx__PutRevokeReq *)msg);
        break;
    case MSG_GET_START:
        master_on_get_start(m, mb, c, h, (Fx__GetStartReq *)msg);
        break;
    case MSG_GET_DONE:
        master_on_get_done(m, mb, c, h, (Fx__GetDoneReq *)msg);
        break;
    case MSG_GET_REVOKE:
        master_on_get_revoke(m, mb, c, h, (Fx__GetRevokeReq *)msg);
        break;
    case MSG_DELETE:
        master_on_delete(m, mb, c, h, (Fx__DeleteReq *)msg);
        break;
    case MSG_BATCH_DELETE:
        master_on_batch_delete(m, mb, c, h, (Fx__BatchDeleteReq *)msg);
        break;
    case MSG_BATCH_DELETE_ACK:
        master_on_batch_delete_ack(m, mb, c, h, (Fx__BatchDeleteAckReq *)msg);
        break;
    case MSG_STAT:
        master_on_stat(m, c, h);
        break;
    case MSG_SSD_REPLICA_COMMIT:
        master_on_ssd_commit(m, mb, c, h, (Fx__SsdReplicaCommitReq *)msg);
        break;
    case MSG_BATCH_SSD_REPLICA_EVICT:
        master_on_ssd_evict(m, mb, c, h, (Fx__BatchSsdReplicaEvictReq *)msg);
        break;
    case MSG_ROUTE_INFO:
        master_on_route_info(m, c, h, (Fx__RouteInfoReq *)msg);
        break;
    case MSG_KEY_INFO:
        master_on_key_info(m, c, h, (Fx__KeyInfoReq *)msg);
        break;
    case MSG_BATCH_KEY_INFO:
        master_on_batch_key_info(m, c, h, (Fx__BatchKeyInfoReq *)msg);
        break;
    case MSG_LEASE:
        master_on_lease(m, c, h, (Fx__LeaseReq *)msg);
        break;
    case MSG_ACCESS_REPORT:
        master_on_access_report(m, mb, (Fx__AccessReportReq *)msg);
        break;
    default:
        FX_LOG_LIMITED(WARN, "%s: %s is not a master request; closing", net_conn_peer(c),
                       msg_name(h->type));
        net_conn_close(c);
    }
}

static void on_close(net_conn *c)
{
    master_conn *mc = net_conn_data(c);
    if (!mc)
        return;
    if (mc->mb)
        master_member_left(mc->m, mc->mb, "connection closed");
    net_conn_set_data(c, NULL);
    free(mc);
}

static const net_conn_ops master_conn_ops = {.on_frame = on_frame, .on_close = on_close};

/* Until it registers, a peer may only send small frames (a Register is a few
 * hundred bytes), so strangers cannot make the master buffer 16 MiB each;
 * register.c raises the limit to FRAME_MAX_BODY. */
#define UNREGISTERED_MAX_BODY (64u * 1024u)

static void on_accept(net_conn *c, void *ud)
{
    master_conn *mc = calloc(1, sizeof *mc);
    if (!mc) {
        FX_LOG_LIMITED(WARN, "%s: out of memory accepting the connection; closing",
                       net_conn_peer(c));
        net_conn_close(c);
        return;
    }
    mc->m = ud;
    net_conn_set_data(c, mc);
    net_conn_set_max_body(c, UNREGISTERED_MAX_BODY);
}

/* The sweeps judge members and leases by the time since they were last heard
 * from. When the master's own loop stalled (the process was stopped, or
 * starved of CPU) for half a heartbeat timeout or more beyond the sweep's
 * period, what they sent meanwhile is still unread in its sockets, and after
 * a stop the loop runs its timers before it reads (epoll_wait returns EINTR):
 * skip this round, so that the loop reads it before anyone is judged. Never
 * two rounds in a row, so that a master that is slow all the time still
 * sweeps. */
static bool loop_stalled(master *m)
{
    uint64_t now = master_now_ms(m), gap = now - m->last_sweep_ms;
    uint64_t late = gap > MASTER_SWEEP_MS ? gap - MASTER_SWEEP_MS : 0;
    bool stalled = late >= m->cfg.heartbeat_timeout_ms / 2 && !m->sweep_skipped;
    m->last_sweep_ms = now;
    m->sweep_skipped = stalled;
    if (stalled)
        FX_LOG_LIMITED(WARN,
                       "the master's loop stalled for %llu ms; the sweep waits a round "
                       "so that what members sent meanwhile is read first",
                       (unsigned long long)gap);
    return stalled;
}

static void on_sweep(uv_timer_t *t)
{
    master *m = t->data;
    if (loop_stalled(m))
        return;
    if (!check_serving(m)) { /* a standby still answers, leading false */
        http_publish(m);
        return;
    }
    master_sweep_inflight(m);
    master_sweep_leases(m);
    if (!m->recovery) /* recovery's end gives every member a fresh start */
        master_check_heartbeats(m);
    for (int i = 0; i < 64; i++) { /* each leave may release waits on others */
        member *stuck = master_index_overdue(m);
        if (!stuck)
            break;
        master_member_left(m, stuck, "it did not acknowledge a replica-index batch");
    }
    master_recovery_check(m);
    http_publish(m);
}

static void on_check(uv_check_t *ch)
{
    if (check_serving(ch->data))
        master_flush_invalidations(ch->data);
}

/* What the master tells others (the port file): advertise, its port 0 read
 * as the bound port, else listen's host with the bound port. Never a
 * wildcard (master_config_validate). */
static void advertised_address(const master *m, int bound_port, char *buf, size_t len)
{
    char host[256];
    int port;
    const char *from = m->cfg.advertise ? m->cfg.advertise : m->cfg.listen;
    config_parse_hostport(from, host, sizeof host, &port); /* validated */
    addr_join(host, m->cfg.advertise && port ? port : bound_port, buf, len);
}

static int write_port_file(const char *path, const char *addr)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -errno;
    fprintf(f, "%s\n", addr);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return -errno;
    return 0;
}

int master_start(master *m, uv_loop_t *loop, const char *port_file)
{
    m->loop = loop;
    m->next_node_id = 1;
    m->next_tomb_tag = ((uint64_t)time(NULL) << 20) | 1;
    m->next_get_id = 1;
    m->next_holder_id = 1;
    m->next_put_version = 1;
    m->next_lease_id = 1;
    m->routes.prefix = prefix_index_new();
    if (!m->routes.prefix) {
        FX_LOG(ERROR, "out of memory");
        return -ENOMEM;
    }
    m->placement = placement_policy_for(m->cfg.placement);
    const char *kill_hook = getenv("FLUXON_TEST_KILL_AT_PUT_DONE_ANSWER");
    m->test_kill_at_put_done_answer = kill_hook && strcmp(kill_hook, "1") == 0;
    if (m->test_kill_at_put_done_answer)
        FX_LOG(WARN, "test hook FLUXON_TEST_KILL_AT_PUT_DONE_ANSWER: this master dies at the "
                     "first PutDone answer that waited for owners' indexes");
    if (!m->cfg.etcd)
        master_recovery_begin(m); /* owners that outlived a previous master report first */
    unsigned seed;
    if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
        FX_LOG(ERROR, "getrandom: cannot seed placement: %s", strerror(errno));
        return -EIO;
    }
    srandom(seed);
    if (auth_init() < 0) {
        FX_LOG(ERROR, "libsodium cannot start: no data-plane keys");
        return -EIO;
    }
    auth_random(&m->pair_root, sizeof m->pair_root);
    int err = 0;
    m->listener = net_listen(loop, m->cfg.listen, false, &master_conn_ops, on_accept, m, &err);
    if (!m->listener) {
        FX_LOG(ERROR, "listen: cannot listen on %s: %s", m->cfg.listen, uv_strerror(err));
        return err;
    }
    if (!(m->write_scope = net_write_scope_new()))
        FX_LOG(WARN, "out of memory: no write scope; each connection gathers only its answers");
    net_listener_set_write_scope(m->listener, m->write_scope);
    net_listener_set_limits(m->listener,
                            &(net_listener_limits){.name = "master listener",
                                                   .max_conns = m->cfg.max_connections,
                                                   .handshake_ms = m->cfg.handshake_timeout_ms,
                                                   .buffer_budget = m->cfg.receive_buffer_budget});
    if (m->authenticated)
        net_listener_require_auth(m->listener, &m->cluster_key);
    int port = net_listener_port(m->listener);
    advertised_address(m, port, m->advertised, sizeof m->advertised);
    FX_LOG(INFO, "listening on %s (port %d), advertised as %s", m->cfg.listen, port,
           m->advertised);
    uv_timer_init(loop, &m->sweep_timer);
    m->sweep_timer.data = m;
    uv_update_time(loop);
    m->last_sweep_ms = master_now_ms(m);
    uv_timer_start(&m->sweep_timer, on_sweep, MASTER_SWEEP_MS, MASTER_SWEEP_MS);
    master_alloc_wait_init(m);
    uv_check_init(loop, &m->flush_check);
    m->flush_check.data = m;
    uv_check_start(&m->flush_check, on_check);
    if (m->cfg.http && (err = http_start(m, m->cfg.http)) < 0)
        return err;
    if (m->cfg.http && m->http_port_file) {
        char host[256], addr[300];
        int ignored;
        config_parse_hostport(m->cfg.http, host, sizeof host, &ignored); /* validated */
        addr_join(host, http_port(m), addr, sizeof addr);
        if ((err = write_port_file(m->http_port_file, addr)) < 0) {
            FX_LOG(ERROR, "cannot write port file %s: %s", m->http_port_file, strerror(-err));
            return err;
        }
    }
    if (m->cfg.etcd) {
        char why[512];
        if (master_election_start(m, m->advertised, why, sizeof why) < 0) {
            FX_LOG(ERROR, "%s", why);
            return -EINVAL;
        }
    }
    /* Last: the port file says that the master is ready, HTTP included (a
     * standby is ready to take over). */
    if (port_file && (err = write_port_file(port_file, m->advertised)) < 0) {
        FX_LOG(ERROR, "cannot write port file %s: %s", port_file, strerror(-err));
        return err;
    }
    return 0;
}

void master_lost_leadership(master *m, const char *why)
{
    if (m->stopping)
        return;
    FX_LOG(ERROR, "lost leadership at term %llu: %s; stopping (a standby takes over)",
           (unsigned long long)m->term, why);
    m->exit_code = 1;
    master_stop(m);
}

/* A leader whose lease ran out stops before it handles or sends anything. */
static bool check_serving(master *m)
{
    if (master_serving(m))
        return true;
    if (m->leading)
        master_lost_leadership(m, "its etcd lease ran out");
    return false;
}

void master_free_state(master *m)
{
    net_write_scope_free(m->write_scope);
    m->write_scope = NULL;
    route *r, *tmp;
    HASH_ITER(hh, m->routes.by_key, r, tmp) {
        route_table_remove(&m->routes, r);
        route_unref(r);
    }
    prefix_index_free(m->routes.prefix);
    m->routes.prefix = NULL;
    master_leases_free(m);
    auth_key_wipe(&m->pair_root);
}

void master_stop(master *m)
{
    m->stopping = true;
    master_index_waits_free(m); /* parked replies go unanswered: their connections close now */
    master_recovery_free(m);
    master_election_stop(m); /* a leader revokes its lease: a standby takes over at once */
    http_stop(m);
    net_listener_close(m->listener); /* closes every connection: members leave */
    uv_timer_stop(&m->sweep_timer);
    uv_close((uv_handle_t *)&m->sweep_timer, NULL);
    master_alloc_wait_close(m);
    uv_check_stop(&m->flush_check);
    uv_close((uv_handle_t *)&m->flush_check, NULL);
}
