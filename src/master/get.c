/*
 * get.c - GetStart / GetDone / GetRevoke and the in-flight get table.
 *
 * GetStart reads the key's current route, prefers a readable memory replica,
 * allocates (or reuses) the requester's target and records inflight_gets with
 * references to the target, any source and the route. GetDone moves the
 * target reference into get_holding and answers with the holder id and whether
 * the version is still current (an owner caches only current versions).
 * GetRevoke and the TTL sweep drop the entry and its references.
 */
#include "master/master.h"

#include <stdlib.h>

#include "common/log.h"
#include "fluxon/fluxon.h"

void master_inflight_get_free(master *m, inflight_get *g)
{
    HASH_DEL(m->inflight_gets, g);
    DL_DELETE(m->inflight_get_order, g);
    allocation_unref(g->target);
    allocation_unref(g->source);
    route_unref(g->route);
    free(g);
}

/* The replica of r that is readable from memory on node_id, if live. */
static replica *live_memory_replica(master *m, route *r, uint32_t node_id)
{
    replica *rep = route_replica(r, node_id);
    if (rep && rep->memory && master_tomb_live(m, rep->node_id, rep->tomb_tag))
        return rep;
    return NULL;
}

static bool any_live_memory_replica(master *m, route *r)
{
    for (size_t i = 0; i < r->n_replicas; i++)
        if (live_memory_replica(m, r, r->replicas[i].node_id))
            return true;
    return false;
}

void master_on_get_start(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__GetStartReq *req)
{
    route *r = route_find(&m->routes, req->key.data, req->key.len);
    if (!r) {
        net_reply_error(c, h, FX_ENOTFOUND, "KeyNotFound");
        return;
    }
    replica *local = live_memory_replica(m, r, mb->node_id);
    if (!local) {
        if (any_live_memory_replica(m, r))
            net_reply_error(c, h, FX_ENOTSUP,
                            "get from a replica on another owner is not implemented");
        else
            net_reply_error(c, h, FX_ENOTFOUND, "KeyNotFound: no readable replica");
        return;
    }
    inflight_get *g = calloc(1, sizeof *g);
    if (!g) {
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    g->get_id = m->next_get_id++;
    g->pid = r->pid;
    g->src_node = mb->node_id;
    g->req_node = mb->node_id;
    g->target = allocation_ref(local->memory); /* ReuseReplica: no copy */
    g->route = route_ref(r);
    g->mode = FX__GET_MODE__REUSE_REPLICA;
    g->source_kind = GET_SOURCE_MEMORY;
    g->deadline_ms = master_now_ms(m) + m->cfg.inflight_ttl_ms;
    HASH_ADD(hh, m->inflight_gets, get_id, sizeof g->get_id, g);
    DL_APPEND(m->inflight_get_order, g);

    Fx__GetStartResp resp = FX__GET_START_RESP__INIT;
    Fx__PutId wire = FX__PUT_ID__INIT;
    wire.time_ms = r->pid.time_ms;
    wire.version = r->pid.version;
    resp.get_id = g->get_id;
    resp.put_id = &wire;
    resp.mode = FX__GET_MODE__REUSE_REPLICA;
    resp.src_node_id = mb->node_id;
    resp.src_offset = local->memory->offset;
    resp.target_offset = local->memory->offset;
    resp.len = r->len;
    resp.source_kind = FX_SRC_MEMORY;
    net_reply(c, h, &resp.base);
}

static inflight_get *find_get(master *m, member *mb, uint64_t get_id)
{
    inflight_get *g;
    HASH_FIND(hh, m->inflight_gets, &get_id, sizeof get_id, g);
    return g && g->req_node == mb->node_id ? g : NULL;
}

void master_on_get_done(master *m, member *mb, net_conn *c, const frame_hdr *h, Fx__GetDoneReq *req)
{
    inflight_get *g = find_get(m, mb, req->get_id);
    if (!g) {
        net_reply_error(c, h, FX_ESTALE, "no in-flight get %llu (expired?)",
                        (unsigned long long)req->get_id);
        return;
    }
    route *r = g->route;
    bool current = r->in_table && put_id_eq(r->pid, g->pid);
    uint64_t holder_id = master_holding_add(m, mb->node_id, g->target);
    if (!holder_id) {
        master_inflight_get_free(m, g);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    g->target = NULL; /* moved into get_holding */
    if (current)
        route_note_cached_by(r, mb->node_id);
    Fx__GetDoneResp resp = FX__GET_DONE_RESP__INIT;
    resp.holder_id = holder_id;
    resp.mode = g->mode;
    resp.cacheable = current;
    master_inflight_get_free(m, g);
    net_reply(c, h, &resp.base);
}

void master_on_get_revoke(master *m, member *mb, net_conn *c, const frame_hdr *h,
                          Fx__GetRevokeReq *req)
{
    inflight_get *g = find_get(m, mb, req->get_id);
    if (g)
        master_inflight_get_free(m, g);
    net_reply(c, h, &((Fx__GetRevokeResp)FX__GET_REVOKE_RESP__INIT).base);
}
