/*
 * get.c - GetStart / GetDone / GetRevoke and the in-flight get table.
 *
 * GetStart reads the key's current route and picks a readable memory replica:
 * the requester's own (ReuseReplica: the target is the replica, no copy), else
 * a random live one elsewhere, which the requester pulls into a new target of
 * its segment: DurableReplica while one of the route's MASTER_DURABLE_SLOTS
 * slots is free, else Temporary. inflight_gets keeps the target, the source
 * replica and the route alive. GetDone moves the target reference into
 * get_holding, promotes a durable target to a memory replica of the route when
 * the route is still current with the same put_id and the requester is live,
 * and answers whether the owner may cache the holder (only replicas of the
 * current version). GetRevoke and the TTL sweep drop the entry and its
 * references; a durable slot is held from GetStart until the entry goes.
 */
#include "master/master.h"

#include <errno.h>
#include <stdlib.h>

#include "common/log.h"
#include "fluxon/fluxon.h"

void master_inflight_get_free(master *m, inflight_get *g)
{
    if (g->holds_durable_slot && g->route->durable_slots_used)
        g->route->durable_slots_used--;
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

/* A live SSD copy of r: the requester's own first (local refill), else any. */
static replica *ssd_replica(master *m, route *r, uint32_t requester)
{
    replica *any = NULL;
    for (size_t i = 0; i < r->n_replicas; i++) {
        replica *rep = &r->replicas[i];
        if (!rep->has_ssd || !master_tomb_live(m, rep->node_id, rep->tomb_tag))
            continue;
        if (rep->node_id == requester)
            return rep;
        if (!any)
            any = rep;
    }
    return any;
}

/* A random live memory replica of r on another owner than `not_node`. */
static replica *remote_memory_replica(master *m, route *r, uint32_t not_node)
{
    replica *pick = NULL;
    unsigned seen = 0;
    for (size_t i = 0; i < r->n_replicas; i++) {
        replica *rep = &r->replicas[i];
        if (rep->node_id == not_node || !live_memory_replica(m, r, rep->node_id))
            continue;
        if ((unsigned)random() % ++seen == 0)
            pick = rep;
    }
    return pick;
}

void master_on_get_start(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__GetStartReq *req)
{
    route *r = route_find(&m->routes, req->key.data, req->key.len);
    if (!r) {
        net_reply_error(c, h, FX_ENOTFOUND, "KeyNotFound");
        return;
    }
    replica *src = live_memory_replica(m, r, mb->node_id);
    int mode = FX__GET_MODE__REUSE_REPLICA;
    int source_kind = GET_SOURCE_MEMORY;
    allocation *target = NULL;
    if (src) {
        target = allocation_ref(src->memory); /* ReuseReplica: no copy */
    } else {
        src = remote_memory_replica(m, r, mb->node_id);
        if (!src && (src = ssd_replica(m, r, mb->node_id)))
            source_kind = GET_SOURCE_SSD; /* memory first; SSD only without one */
        if (!src) {
            net_reply_error(c, h, FX_ENOTFOUND, "KeyNotFound: no readable replica");
            return;
        }
        if (source_kind == GET_SOURCE_SSD && src->node_id != mb->node_id) {
            net_reply_error(c, h, FX_ENOTSUP,
                            "the only copy is on another owner's SSD: remote SSD refill is not "
                            "implemented yet");
            return;
        }
        int err = 0;
        target = master_alloc_evicting(m, mb, r->len, &err);
        if (!target && err == -ENOSPC && r->len <= mb->capacity &&
            master_alloc_defer(m, mb, c, h, MSG_GET_START, &req->base))
            return;
        if (!target) {
            uint64_t total = range_alloc_capacity(mb->space->ra);
            net_reply_error(c, h, err == -ENOMEM ? FX_ENOMEM : FX_ENOSPC,
                            "no space for a %llu-byte get target on owner '%s': total %llu "
                            "bytes, free %llu bytes",
                            (unsigned long long)r->len, mb->name, (unsigned long long)total,
                            (unsigned long long)(total - range_alloc_used(mb->space->ra)));
            return;
        }
        mode = r->durable_slots_used < MASTER_DURABLE_SLOTS ? FX__GET_MODE__DURABLE_REPLICA
                                                             : FX__GET_MODE__TEMPORARY;
    }
    member *src_member = master_member(m, src->node_id);
    inflight_get *g = calloc(1, sizeof *g);
    if (!g) {
        allocation_unref(target);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    g->get_id = m->next_get_id++;
    g->pid = r->pid;
    g->src_node = src->node_id;
    g->req_node = mb->node_id;
    g->target = target;
    if (mode != FX__GET_MODE__REUSE_REPLICA && source_kind == GET_SOURCE_MEMORY)
        g->source = allocation_ref(src->memory); /* the replica stays while it is read */
    g->route = route_ref(r);
    g->mode = mode;
    if (mode == FX__GET_MODE__DURABLE_REPLICA) {
        r->durable_slots_used++;
        g->holds_durable_slot = true;
    }
    g->source_kind = source_kind;
    g->deadline_ms = master_now_ms(m) + m->cfg.inflight_ttl_ms;
    HASH_ADD(hh, m->inflight_gets, get_id, sizeof g->get_id, g);
    DL_APPEND(m->inflight_get_order, g);

    Fx__GetStartResp resp = FX__GET_START_RESP__INIT;
    Fx__PutId wire = FX__PUT_ID__INIT;
    wire.time_ms = r->pid.time_ms;
    wire.version = r->pid.version;
    resp.get_id = g->get_id;
    resp.put_id = &wire;
    resp.mode = mode;
    resp.src_node_id = src->node_id;
    resp.target_offset = target->offset;
    resp.len = r->len;
    if (source_kind == GET_SOURCE_SSD) {
        /* Local refill: the SSD copy is read straight into the target. */
        resp.src_offset = target->offset;
        resp.ssd_stage_len = target->capacity;
        resp.source_kind = FX_SRC_SSD;
    } else {
        resp.src_offset = src->memory->offset;
        resp.source_kind = FX_SRC_MEMORY;
    }
    resp.src_data_addr = src_member && src_member != mb ? src_member->data_addr : "";
    net_reply(c, h, &resp.base);
}

static inflight_get *find_get(master *m, member *mb, uint64_t get_id)
{
    inflight_get *g;
    HASH_FIND(hh, m->inflight_gets, &get_id, sizeof get_id, g);
    return g && g->req_node == mb->node_id ? g : NULL;
}

/* DurableReplica promotion at GetDone: the target becomes a memory replica
 * when the route is still the current version and the requester is live. */
static bool promote(master *m, member *mb, inflight_get *g)
{
    route *r = g->route;
    if (g->mode != FX__GET_MODE__DURABLE_REPLICA || !r->in_table || !put_id_eq(r->pid, g->pid) ||
        !master_tomb_live(m, mb->node_id, mb->tomb_tag))
        return false;
    replica *rep = route_replica(r, mb->node_id);
    if (rep && rep->memory)
        return false; /* another get of this owner promoted first */
    allocation *a = allocation_ref(g->target);
    if (rep) {
        rep->memory = a;
        rep->tomb_tag = mb->tomb_tag;
    } else if (route_add_replica(r, mb->node_id, mb->tomb_tag, a) < 0) {
        allocation_unref(a);
        return false;
    }
    return true;
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
    int mode = g->mode;
    if (mode == FX__GET_MODE__DURABLE_REPLICA && !promote(m, mb, g))
        mode = FX__GET_MODE__TEMPORARY; /* the version moved on: a holder only */
    g->target = NULL; /* moved into get_holding */
    /* The owner may cache (and serve without the master) only a replica of
     * the current version; a temporary is never cached. */
    bool cacheable = current && mode != FX__GET_MODE__TEMPORARY;
    if (cacheable)
        route_note_cached_by(r, mb->node_id);
    Fx__GetDoneResp resp = FX__GET_DONE_RESP__INIT;
    resp.holder_id = holder_id;
    resp.mode = mode;
    resp.cacheable = cacheable;
    master_inflight_get_free(m, g);
    net_reply(c, h, &resp.base);
}

void master_on_get_revoke(master *m, member *mb, net_conn *c, const frame_hdr *h,
                          Fx__GetRevokeReq *req)
{
    inflight_get *g = find_get(m, mb, req->get_id);
    if (g) {
        /* A failed SSD read: that copy is stale (evicted or damaged behind the
         * master's back). Clear it only for the version the get read. */
        route *r = g->route;
        if (req->drop_ssd_source && g->source_kind == GET_SOURCE_SSD && r->in_table &&
            put_id_eq(r->pid, g->pid))
            master_drop_ssd(m, r, g->src_node);
        master_inflight_get_free(m, g);
    }
    net_reply(c, h, &((Fx__GetRevokeResp)FX__GET_REVOKE_RESP__INIT).base);
}
