/*
 * register.c - Register and Heartbeat: how an owner becomes and stays a
 * member.
 *
 * Register gives the owner a node id and a fresh incarnation number (the tomb
 * tag) and creates the range allocator over its segment, then enters it in
 * the member table (members.c) and announces the new table to every member.
 * During the recovery phase (recovery.c) an owner that names its previous
 * identity gets it back and reports its replicas next; a new owner waits for
 * the phase to end. A member is chosen for placement only once its report
 * (RecoveryReport, sent by every owner after Register) ended.
 * A member is live while its connection is open and its heartbeats arrive;
 * each Heartbeat also carries the owner's SSD and hit counters. What happens
 * when it stops being live is member_left.c.
 */
#include "master/master.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fluxon/fluxon.h"
#include "master/members.h"

member *master_on_register(master *m, net_conn *c, const frame_hdr *h, Fx__RegisterReq *req)
{
    if (strcmp(req->cluster_name, m->cfg.cluster_name) != 0) {
        net_reply_error(c, h, FX_EINVAL, "cluster_name '%s' does not match the master's '%s'",
                        req->cluster_name, m->cfg.cluster_name);
        return NULL;
    }
    if (strlen(req->data_addr) >= sizeof((member *)0)->data_addr) {
        net_reply_error(c, h, FX_EINVAL, "data_addr is longer than %zu bytes",
                        sizeof((member *)0)->data_addr - 1);
        return NULL;
    }
    if (strlen(req->node_name) >= sizeof((member *)0)->name) {
        net_reply_error(c, h, FX_EINVAL, "node_name is longer than %zu bytes",
                        sizeof((member *)0)->name - 1);
        return NULL;
    }
    const char *proven = net_conn_auth_identity(c);
    if (m->authenticated && (!proven || strcmp(proven, req->node_name) != 0)) {
        FX_LOG_LIMITED(WARN, "%s: Register as '%s' refused: the handshake proved '%s'",
                       net_conn_peer(c), req->node_name, proven ? proven : "(nothing)");
        net_reply_error(c, h, FX_EAUTH,
                        "node_name '%s' is not the identity '%s' proven in the handshake",
                        req->node_name, proven ? proven : "");
        return NULL;
    }
    if (req->segment_size == 0) {
        net_reply_error(c, h, FX_EINVAL, "segment_size must be > 0");
        return NULL;
    }
    uint32_t prev_node = 0;
    uint64_t prev_tomb = 0;
    if (master_recovery_take_register(m, c, h, req, master_on_register, &prev_node, &prev_tomb) &&
        !prev_node)
        return NULL; /* a new owner during recovery: registered when it ends */
    member *mb = calloc(1, sizeof *mb);
    if (!mb) {
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return NULL;
    }
    if (prev_node) {
        mb->node_id = prev_node; /* its replicas come in its report */
        mb->tomb_tag = prev_tomb;
        mb->recovering = true;
    } else {
        mb->node_id = m->next_node_id++;
        mb->tomb_tag = m->next_tomb_tag++;
    }
    mb->index_seq = 1;
    mb->space = seg_space_new(mb->node_id, req->segment_size);
    if (!mb->space) {
        free(mb);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return NULL;
    }
    uint64_t pct = m->cfg.cache_budget_pct;
    seg_space_set_budget(mb->space,
                         req->segment_size / 100 * pct + req->segment_size % 100 * pct / 100);
    snprintf(mb->name, sizeof mb->name, "%s", req->node_name);
    snprintf(mb->data_addr, sizeof mb->data_addr, "%s", req->data_addr);
    mb->kv_ssd_storage = req->kv_ssd_storage;
    mb->capacity = req->segment_size;
    mb->ssd_capacity_registered = req->kv_ssd_storage ? req->ssd_capacity : 0;
    mb->conn = c;
    mb->rpc = rpc_client_new(m->loop, c);
    if (!mb->rpc) {
        seg_space_unref(mb->space);
        free(mb);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return NULL;
    }
    mb->last_heartbeat_ms = master_now_ms(m);
    master_members_add(m, mb);
    net_conn_set_max_body(c, FRAME_MAX_BODY);
    FX_LOG(INFO, "member %u '%s' %s from %s: segment %llu bytes, tomb %llu", mb->node_id,
           mb->name, mb->recovering ? "came back" : "registered", net_conn_peer(c),
           (unsigned long long)req->segment_size, (unsigned long long)mb->tomb_tag);
    Fx__RegisterResp resp = FX__REGISTER_RESP__INIT;
    resp.recovering = mb->recovering;
    resp.term = m->term;
    resp.node_id = mb->node_id;
    resp.tomb_tag = mb->tomb_tag;
    resp.heartbeat_ms = m->cfg.heartbeat_interval_ms > UINT32_MAX ? UINT32_MAX
                                                                  : (uint32_t)m->cfg.heartbeat_interval_ms;
    net_reply(c, h, &resp.base);
    master_broadcast_members(m);
    return mb;
}

void master_on_heartbeat(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__HeartbeatReq *req)
{
    mb->last_heartbeat_ms = master_now_ms(m);
    mb->hits_memory = req->hits_memory;
    mb->hits_ssd = req->hits_ssd;
    mb->misses = req->misses;
    /* A member reports what it registered, never more (its claims shape what
     * stat, metrics and operators see). */
    if (req->ssd_capacity > mb->ssd_capacity_registered || req->ssd_used > req->ssd_capacity) {
        FX_LOG_LIMITED(WARN,
                       "member %u '%s' reported SSD capacity %llu (used %llu) beyond the %llu "
                       "it registered; kept %llu",
                       mb->node_id, mb->name, (unsigned long long)req->ssd_capacity,
                       (unsigned long long)req->ssd_used,
                       (unsigned long long)mb->ssd_capacity_registered,
                       (unsigned long long)mb->ssd_capacity_registered);
        req->ssd_capacity = mb->ssd_capacity_registered;
        if (req->ssd_used > req->ssd_capacity)
            req->ssd_used = req->ssd_capacity;
    }
    mb->ssd_capacity = req->ssd_capacity;
    mb->ssd_used = req->ssd_used;
    mb->ssd_errors = req->ssd_errors;
    member_metrics_take(mb, req->metrics);
    Fx__HeartbeatResp resp = FX__HEARTBEAT_RESP__INIT;
    net_reply(c, h, &resp.base);
}
