/*
 * member.c - owner registration, heartbeats and member-left.
 *
 * Register gives the owner a node id and a fresh incarnation number (the tomb
 * tag) and creates the range allocator over its segment. A member is live
 * while its connection is open and its heartbeats arrive; member-left (close,
 * heartbeat timeout, shutdown) removes every replica it held from the routes,
 * drops its holdings and in-flight operations, and releases its space (ranges
 * still referenced elsewhere keep the space alive until released).
 */
#include "master/master.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fluxon/fluxon.h"

member *master_member(master *m, uint32_t node_id)
{
    member *mb;
    HASH_FIND(hh, m->members, &node_id, sizeof node_id, mb);
    return mb;
}

bool master_tomb_live(master *m, uint32_t node_id, uint64_t tomb_tag)
{
    member *mb = master_member(m, node_id);
    return mb && mb->tomb_tag == tomb_tag;
}

member *master_on_register(master *m, net_conn *c, const frame_hdr *h, Fx__RegisterReq *req)
{
    if (strcmp(req->cluster_name, m->cfg.cluster_name) != 0) {
        net_reply_error(c, h, FX_EINVAL, "cluster_name '%s' does not match the master's '%s'",
                        req->cluster_name, m->cfg.cluster_name);
        return NULL;
    }
    if (req->segment_size == 0) {
        net_reply_error(c, h, FX_EINVAL, "segment_size must be > 0");
        return NULL;
    }
    member *mb = calloc(1, sizeof *mb);
    if (!mb) {
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return NULL;
    }
    mb->node_id = m->next_node_id++;
    mb->tomb_tag = m->next_tomb_tag++;
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
    mb->conn = c;
    mb->rpc = rpc_client_new(m->loop, c);
    if (!mb->rpc) {
        seg_space_unref(mb->space);
        free(mb);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return NULL;
    }
    mb->last_heartbeat_ms = master_now_ms(m);
    HASH_ADD(hh, m->members, node_id, sizeof mb->node_id, mb);
    if (mb->kv_ssd_storage)
        m->n_ssd_members++;
    net_conn_set_max_body(c, FRAME_MAX_BODY);
    FX_LOG(INFO, "member %u '%s' registered from %s: segment %llu bytes, tomb %llu", mb->node_id,
           mb->name, net_conn_peer(c), (unsigned long long)req->segment_size,
           (unsigned long long)mb->tomb_tag);
    Fx__RegisterResp resp = FX__REGISTER_RESP__INIT;
    resp.node_id = mb->node_id;
    resp.tomb_tag = mb->tomb_tag;
    resp.heartbeat_ms = m->cfg.heartbeat_interval_ms > UINT32_MAX ? UINT32_MAX
                                                                  : (uint32_t)m->cfg.heartbeat_interval_ms;
    resp.data_token = (ProtobufCBinaryData){.len = sizeof m->data_token, .data = m->data_token};
    net_reply(c, h, &resp.base);
    master_broadcast_members(m);
    return mb;
}

void master_broadcast_members(master *m)
{
    size_t n = HASH_COUNT(m->members);
    Fx__MemberInfo *infos = calloc(n ? n : 1, sizeof *infos);
    Fx__MemberInfo **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    if (!infos || !ptrs) {
        FX_LOG(ERROR, "out of memory sending the member table; owners keep the previous one");
        free(infos);
        free(ptrs);
        return;
    }
    size_t i = 0;
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp) {
        fx__member_info__init(&infos[i]);
        infos[i].node_id = mb->node_id;
        infos[i].tomb_tag = mb->tomb_tag;
        infos[i].name = mb->name;
        infos[i].data_addr = mb->data_addr;
        infos[i].kv_ssd_storage = mb->kv_ssd_storage;
        ptrs[i] = &infos[i];
        i++;
    }
    Fx__MemberTableReq req = FX__MEMBER_TABLE_REQ__INIT;
    req.n_members = i;
    req.members = ptrs;
    HASH_ITER(hh, m->members, mb, tmp)
        net_send(mb->conn, MSG_MEMBER_TABLE, FRAME_ONEWAY, 0, &req.base);
    free(infos);
    free(ptrs);
}

void master_on_heartbeat(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__HeartbeatReq *req)
{
    mb->last_heartbeat_ms = master_now_ms(m);
    mb->hits_memory = req->hits_memory;
    mb->hits_ssd = req->hits_ssd;
    mb->misses = req->misses;
    mb->ssd_capacity = req->ssd_capacity;
    mb->ssd_used = req->ssd_used;
    mb->ssd_errors = req->ssd_errors;
    Fx__HeartbeatResp resp = FX__HEARTBEAT_RESP__INIT;
    net_reply(c, h, &resp.base);
}

/* Removes node_id's entries from every route; routes left empty go. */
static void drop_node_replicas(master *m, uint32_t node_id)
{
    route *r, *tmp;
    HASH_ITER(hh, m->routes.by_key, r, tmp) {
        replica *rep = route_replica(r, node_id);
        if (!rep)
            continue;
        rep->has_ssd = false;
        route_drop_memory(r, node_id);
        if (r->n_replicas == 0) {
            route_table_remove(&m->routes, r);
            route_unref(r);
        }
    }
}

static void drop_node_inflight(master *m, uint32_t node_id)
{
    inflight_put *p, *ptmp;
    DL_FOREACH_SAFE(m->inflight_put_order, p, ptmp)
        if (p->req_node == node_id || p->target_node == node_id)
            master_inflight_put_free(m, p);
    inflight_get *g, *gtmp;
    DL_FOREACH_SAFE(m->inflight_get_order, g, gtmp)
        if (g->req_node == node_id || g->src_node == node_id)
            master_inflight_get_free(m, g);
}

void master_member_left(master *m, member *mb, const char *why)
{
    FX_LOG(WARN, "member %u '%s' left: %s", mb->node_id, mb->name, why);
    HASH_DEL(m->members, mb);
    if (mb->kv_ssd_storage)
        m->n_ssd_members--;
    rpc_client *rpc = mb->rpc;
    mb->rpc = NULL;
    rpc_client_free(rpc); /* pending requests to it complete with FX_ECONN */
    master_conn *mc = net_conn_data(mb->conn);
    if (mc)
        mc->mb = NULL; /* its close (server.c) finds no member to remove */
    net_conn_close(mb->conn);
    drop_node_replicas(m, mb->node_id);
    drop_node_inflight(m, mb->node_id);
    master_holdings_drop_node(m, mb->node_id);
    for (size_t i = 0; i < mb->n_pending_inval; i++)
        free(mb->pending_invalidations[i]);
    free(mb->pending_invalidations);
    free(mb->pending_inval_lens);
    seg_space_unref(mb->space);
    free(mb);
    if (!m->stopping)
        master_broadcast_members(m);
}

void master_check_heartbeats(master *m)
{
    uint64_t now = master_now_ms(m);
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp) {
        if (now - mb->last_heartbeat_ms > m->cfg.heartbeat_timeout_ms)
            master_member_left(m, mb, "heartbeat timeout");
    }
}
