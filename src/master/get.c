/*
 * get.c - GetStart / GetDone / GetRevoke, and the remote SSD refill.
 *
 * GetStart reads the key's current route and picks a readable memory replica:
 * the requester's own (ReuseReplica: the target is the replica, no copy), else
 * a random live one elsewhere, which the requester pulls into a new target of
 * its segment: DurableReplica while one of the route's MASTER_DURABLE_SLOTS
 * slots is free, else Temporary. inflight_gets (inflight.c) keeps the target,
 * the source replica and the route alive. GetDone moves the target reference
 * into get_holding, promotes a durable target to a memory replica of the route when
 * the route is still current with the same put_id and the requester is live,
 * and answers whether the owner may cache the holder (only replicas of the
 * current version). GetRevoke and the TTL sweep drop the entry and its
 * references; a durable slot is held from GetStart until the entry goes.
 *
 * Capacity: a read of a memory replica (reuse or pull) is a hit for that
 * replica in its owner's eviction policy. A durable target reserves its
 * capacity from GetStart (cache_reserved_bytes) until GetDone, where a
 * promoted target trades the reservation for its place in the replica cache
 * (a leased route's replica keeps it); GetRevoke, the TTL and a failed
 * answer release it with the in-flight entry.
 */
#include "master/master.h"

#include <errno.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/memdup.h"
#include "fluxon/fluxon.h"
#include "master/index_sync.h"
#include "master/inflight.h"
#include "master/members.h"

static void start_stage_read(master *m, member *req, member *ssd_owner, inflight_get *g,
                             net_conn *c, const frame_hdr *h);

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

/* A GetStart that waited for room (alloc_wait.c) runs again; ctx is the master. */
static void replay_get_start(void *ctx, member *mb, net_conn *c, const frame_hdr *h,
                             ProtobufCMessage *req)
{
    master_on_get_start(ctx, mb, c, h, (Fx__GetStartReq *)req);
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
        master_note_access(r, mb->node_id);
    } else {
        src = remote_memory_replica(m, r, mb->node_id);
        if (!src && (src = ssd_replica(m, r, mb->node_id)))
            source_kind = GET_SOURCE_SSD; /* memory first; SSD only without one */
        if (!src) {
            net_reply_error(c, h, FX_ENOTFOUND, "KeyNotFound: no readable replica");
            return;
        }
        int err = 0;
        target = master_alloc_evicting(m, mb, r->len, &err);
        if (!target && err == -ENOSPC && r->len <= mb->capacity &&
            master_alloc_defer(m, mb, c, h, MSG_GET_START, &req->base, replay_get_start, m))
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
    allocation *stage = NULL;
    if (source_kind == GET_SOURCE_SSD && src->node_id != mb->node_id) {
        /* Remote refill: an aligned staging range on the SSD owner. */
        int err = 0;
        uint64_t stage_len = (r->len + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN;
        if (!src_member || !src_member->rpc ||
            !(stage = master_alloc_evicting(m, src_member, stage_len ? stage_len : 1, &err))) {
            allocation_unref(target);
            if (src_member && err == -ENOSPC && stage_len <= src_member->capacity &&
                master_alloc_defer(m, mb, c, h, MSG_GET_START, &req->base, replay_get_start, m))
                return;
            net_reply_error(c, h, FX_ENOSPC, "no room for a %llu-byte SSD staging range on owner %u",
                            (unsigned long long)stage_len, src->node_id);
            return;
        }
    }
    inflight_get *g = master_inflight_get_add(m);
    if (!g) {
        allocation_unref(target);
        allocation_unref(stage);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    g->pid = r->pid;
    g->src_node = src->node_id;
    g->req_node = mb->node_id;
    g->target = target;
    if (mode != FX__GET_MODE__REUSE_REPLICA && source_kind == GET_SOURCE_MEMORY)
        g->source = allocation_ref(src->memory); /* the replica stays while it is read */
    if (stage)
        g->source = stage; /* the staging range stays while the SSD owner uses it */
    g->attempt = m->get_attempt ? m->get_attempt : 1;
    g->route = route_ref(r);
    g->mode = mode;
    if (mode == FX__GET_MODE__DURABLE_REPLICA) {
        r->durable_slots_used++;
        g->holds_durable_slot = true;
    }
    g->source_kind = source_kind;
    if (source_kind == GET_SOURCE_MEMORY && src->node_id != mb->node_id)
        master_note_access(r, src->node_id);
    if (mode == FX__GET_MODE__DURABLE_REPLICA) {
        /* g holds r, its source and its target: evicting cannot free them. */
        allocation_reserve(target);
        master_enforce_budget(m, mb->space);
    }

    if (stage) {
        start_stage_read(m, mb, src_member, g, c, h);
        return;
    }
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
        resp.ssd_stage_len = allocation_capacity(target);
        resp.source_kind = FX_SRC_SSD;
    } else {
        resp.src_offset = src->memory->offset;
        resp.source_kind = FX_SRC_MEMORY;
    }
    resp.src_data_addr = src_member && src_member != mb ? src_member->data_addr : "";
    net_reply(c, h, &resp.base);
}

/* mb's in-flight get get_id; another requester's is not found. */
static inflight_get *find_get(master *m, member *mb, uint64_t get_id)
{
    inflight_get *g = master_inflight_get_find(m, get_id);
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
    if (!r->lease_id)
        allocation_unreserve(a); /* the replica cache counts it from now on */
    master_index_publish(mb, r->key, r->klen, r->pid, a->offset, r->len);
    master_replica_published(m, r, route_replica(r, mb->node_id));
    return true;
}

/* GetDone's work for requester mb: the target into get_holding, durable
 * promotion, cacheability. Frees g. Returns the holder id (0: out of memory). */
static uint64_t complete_get(master *m, member *mb, inflight_get *g, int *mode_out,
                             bool *cacheable_out)
{
    route *r = g->route;
    allocation *target = g->target;
    uint64_t holder_id = master_holding_add(m, mb->node_id, g->target);
    if (!holder_id) {
        master_inflight_get_free(m, g);
        return 0;
    }
    int mode = g->mode;
    if (mode == FX__GET_MODE__DURABLE_REPLICA && !promote(m, mb, g)) {
        mode = FX__GET_MODE__TEMPORARY; /* the version moved on: a holder only */
        allocation_unreserve(g->target);
    }
    g->target = NULL; /* moved into get_holding */
    /* The owner may cache (and serve without the master) only a replica of
     * the current version that is still in the route (not evicted meanwhile,
     * which may have happened while publishing it); a temporary never. */
    replica *rep = route_replica(r, mb->node_id);
    bool cacheable = r->in_table && put_id_eq(r->pid, g->pid) &&
                     mode != FX__GET_MODE__TEMPORARY && rep && rep->memory == target;
    if (cacheable)
        route_note_cached_by(r, mb->node_id);
    master_inflight_get_free(m, g);
    *mode_out = mode;
    *cacheable_out = cacheable;
    return holder_id;
}

void master_on_get_done(master *m, member *mb, net_conn *c, const frame_hdr *h, Fx__GetDoneReq *req)
{
    inflight_get *g = find_get(m, mb, req->get_id);
    if (!g || g->stage_reply) {
        net_reply_error(c, h, FX_ESTALE, "no in-flight get %llu (expired?)",
                        (unsigned long long)req->get_id);
        return;
    }
    int mode;
    bool cacheable;
    uint64_t holder_id = complete_get(m, mb, g, &mode, &cacheable);
    if (!holder_id) {
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    Fx__GetDoneResp resp = FX__GET_DONE_RESP__INIT;
    resp.holder_id = holder_id;
    resp.mode = mode;
    resp.cacheable = cacheable;
    net_reply(c, h, &resp.base);
}

/* ---- remote SSD refill ----------------------------------------------------- */

#define STAGE_TIMEOUT_MS 30000u
#define GET_ATTEMPTS 3

/* The context of one stage read (rpc callbacks carry one pointer): the get
 * is found again by id, since it may have expired or lost its requester
 * meanwhile. Freed when the read completes. */
typedef struct stage_call {
    master *m;
    uint64_t get_id;
} stage_call;

/* The stage read of get get_id completed with status / msg (see rpc_cb). */
static void stage_done(master *m, uint64_t get_id, int status, ProtobufCMessage *msg)
{
    inflight_get *g = master_inflight_get_find(m, get_id);
    if (!g || !g->stage_reply)
        return; /* expired or its requester left: already answered */
    net_conn *c = g->stage_reply;
    frame_hdr h = g->stage_hdr;
    g->stage_reply = NULL; /* answered here */
    member *req = master_member(m, g->req_node);
    int st = status ? status : msg_status(msg);
    if (!st && req) {
        Fx__GetStartResp resp = FX__GET_START_RESP__INIT;
        Fx__PutId wire = FX__PUT_ID__INIT;
        wire.time_ms = g->pid.time_ms;
        wire.version = g->pid.version;
        resp.get_id = g->get_id;
        resp.put_id = &wire;
        resp.mode = g->mode;
        resp.src_node_id = g->src_node;
        resp.target_offset = g->target->offset;
        resp.len = g->route->len;
        resp.source_kind = FX_SRC_SSD;
        int mode;
        bool cacheable;
        uint64_t holder_id = complete_get(m, req, g, &mode, &cacheable);
        if (holder_id) {
            resp.done = true;
            resp.done_holder_id = holder_id;
            resp.done_cacheable = cacheable;
            resp.done_mode = mode;
            net_reply(c, &h, &resp.base);
        } else {
            net_reply_error(c, &h, FX_ENOMEM, "out of memory");
        }
        net_conn_unref(c);
        return;
    }
    /* The stage failed. KeyNotFound from the SSD owner means its copy is
     * gone or damaged: clear it for this version. Then choose again (at most
     * GET_ATTEMPTS rounds). */
    FX_LOG(INFO, "remote SSD refill from node %u failed: %s", g->src_node,
           status ? fx_strerror(status) : msg_detail(msg));
    route *r = g->route;
    if (st == FX_ENOTFOUND && r->in_table && put_id_eq(r->pid, g->pid))
        master_drop_ssd(m, r, g->src_node);
    int attempt = g->attempt;
    char *key = fx_memdup(r->key, r->klen);
    size_t klen = r->klen;
    master_inflight_get_free(m, g);
    if (req && key && attempt < GET_ATTEMPTS && net_conn_is_open(c)) {
        Fx__GetStartReq again = FX__GET_START_REQ__INIT;
        again.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)key};
        alloc_waiter *replaying = m->alloc_replaying; /* not this request's */
        m->alloc_replaying = NULL;
        m->get_attempt = attempt + 1;
        master_on_get_start(m, req, c, &h, &again);
        m->get_attempt = 0;
        m->alloc_replaying = replaying;
    } else if (net_conn_is_open(c)) {
        net_reply_error(c, &h, st ? st : FX_ECONN, "get: the SSD copy could not be read %d times",
                        attempt);
    }
    free(key);
    net_conn_unref(c);
}

static void on_stage_resp(int status, ProtobufCMessage *msg, void *ud)
{
    stage_call sc = *(stage_call *)ud;
    free(ud);
    stage_done(sc.m, sc.get_id, status, msg);
}

static void start_stage_read(master *m, member *req, member *ssd_owner, inflight_get *g,
                             net_conn *c, const frame_hdr *h)
{
    g->stage_reply = c;
    net_conn_ref(c);
    g->stage_hdr = *h;
    Fx__SsdStageReadReq sr = FX__SSD_STAGE_READ_REQ__INIT;
    Fx__PutId wire = FX__PUT_ID__INIT;
    wire.time_ms = g->pid.time_ms;
    wire.version = g->pid.version;
    sr.key = (ProtobufCBinaryData){.len = g->route->klen, .data = (uint8_t *)g->route->key};
    sr.put_id = &wire;
    sr.get_id = g->get_id;
    sr.stage_offset = g->source->offset;
    sr.stage_len = allocation_capacity(g->source);
    sr.target_node_id = req->node_id;
    sr.target_data_addr = req->data_addr;
    sr.target_offset = g->target->offset;
    sr.len = g->route->len;
    stage_call *sc = malloc(sizeof *sc);
    if (!sc) {
        stage_done(m, g->get_id, FX_ENOMEM, NULL);
        return;
    }
    *sc = (stage_call){.m = m, .get_id = g->get_id};
    if (rpc_call(ssd_owner->rpc, MSG_SSD_STAGE_READ, &sr.base, STAGE_TIMEOUT_MS, on_stage_resp,
                 sc) < 0) {
        free(sc);
        stage_done(m, g->get_id, FX_ECONN, NULL);
    }
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
