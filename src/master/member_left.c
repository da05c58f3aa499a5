/*
 * member_left.c - member-left: what happens when an owner stops being a
 * member (its connection closed, its heartbeats stopped, or the master shuts
 * down).
 *
 * The member leaves the member table first, so that nothing started from
 * here on chooses it; its pending requests to the owner complete with ECONN
 * and its connection closes. Then every replica it held leaves the routes
 * (routes left empty go), its in-flight puts and gets and its holdings are
 * dropped, and its space is released (ranges still referenced elsewhere keep
 * the space alive until released). The remaining members get the new member
 * table. This flow uses the tables (members.c, inflight.c, holding.c,
 * invalidation.c, route.c); none of them calls it.
 */
#include "master/master.h"

#include <stdlib.h>

#include "common/log.h"
#include "master/index_sync.h"
#include "master/inflight.h"
#include "master/invalidation.h"
#include "master/members.h"

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

void master_member_left(master *m, member *mb, const char *why)
{
    FX_LOG(WARN, "member %u '%s' left: %s", mb->node_id, mb->name, why);
    master_members_remove(m, mb);
    rpc_client *rpc = mb->rpc;
    mb->rpc = NULL;
    rpc_client_free(rpc); /* pending requests to it complete with FX_ECONN */
    master_conn *mc = net_conn_data(mb->conn);
    if (mc)
        mc->mb = NULL; /* its close (server.c) finds no member to remove */
    net_conn_close(mb->conn);
    drop_node_replicas(m, mb->node_id);
    master_inflight_drop_node(m, mb->node_id);
    master_holdings_drop_node(m, mb->node_id);
    master_invalidations_free(mb);
    master_index_ops_drop(mb);
    master_report_ranges_free(mb);
    seg_space_unref(mb->space);
    uint32_t node_id = mb->node_id;
    free(mb);
    master_index_member_gone(m, node_id); /* replies waiting on its index stop waiting */
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
