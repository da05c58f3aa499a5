/*
 * put.c - PutStart / PutDone / PutRevoke.
 *
 * PutStart picks the target owner with the placement policy (placement.h),
 * allocates the target range and, when the target is another owner, a staging
 * (source) range on the requester's owner that the external writes and the
 * requester pushes from; it assigns put_id = (put_time_ms, put_version) and
 * records inflight_puts[(key, put_id)] (inflight.c) holding both. PutDone
 * checks that the target owner is still the incarnation it was at PutStart,
 * releases the staging range and moves the target into a new route (the
 * overwritten route goes to the invalidation broadcast, invalidation.c, and is
 * released once no get or holder references its bytes); PutRevoke and the TTL sweep drop the
 * in-flight entry and its ranges without touching routes.
 *
 * Options (PutOptions): reject_if_exists answers AlreadyExists when the key
 * has a current route, at PutStart and again at PutDone (a put of the key
 * that completed in between wins; this one is dropped), so it is a true
 * put-if-absent; reject_if_inflight_same_key answers Busy while another put
 * of the key is between PutStart and PutDone/PutRevoke; lease_id binds the
 * new route to a live lease (lease.c). PutDone publishes the target in its
 * owner's replica cache (capacity.c), which may evict to keep the budget.
 *
 * put_version comes from one master-wide counter: it increases for every key,
 * as the spec requires, and also keeps (time_ms, version) unique across a
 * delete and re-put of the same key within one millisecond.
 */
#include "master/master.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fluxon/fluxon.h"
#include "master/inflight.h"
#include "master/index_sync.h"
#include "master/invalidation.h"
#include "master/members.h"

#define MAX_KEY_LEN 4096u

put_id master_next_put_id(master *m)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t wall = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    if (wall < m->last_put_ms)
        wall = m->last_put_ms;
    m->last_put_ms = wall;
    return (put_id){.time_ms = wall, .version = m->next_put_version++};
}

/* Answers a PutStart that found no room with the target's total and free bytes. */
static void reply_no_space(net_conn *c, const frame_hdr *h, member *where, uint64_t len, int err,
                           const char *what)
{
    Fx__PutStartResp resp = FX__PUT_START_RESP__INIT;
    char detail[320];
    uint64_t total = where ? range_alloc_capacity(where->space->ra) : 0;
    uint64_t used = where ? range_alloc_used(where->space->ra) : 0;
    if (where)
        snprintf(detail, sizeof detail,
                 "no space for %llu bytes (%s) on owner '%s': total %llu bytes, free %llu bytes "
                 "(largest free range %llu)",
                 (unsigned long long)len, what, where->name, (unsigned long long)total,
                 (unsigned long long)(total - used),
                 (unsigned long long)range_alloc_largest_free(where->space->ra));
    else
        snprintf(detail, sizeof detail, "no live owner has room for %llu bytes",
                 (unsigned long long)len);
    resp.status = err == -ENOMEM ? FX_ENOMEM : FX_ENOSPC;
    resp.detail = detail;
    resp.total_bytes = total;
    resp.free_bytes = total - used;
    net_reply(c, h, &resp.base);
}

/* A PutStart that waited for room (alloc_wait.c) runs again; ctx is the master. */
static void replay_put_start(void *ctx, member *mb, net_conn *c, const frame_hdr *h,
                             ProtobufCMessage *req)
{
    master_on_put_start(ctx, mb, c, h, (Fx__PutStartReq *)req);
}

void master_on_put_start(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__PutStartReq *req)
{
    if (req->key.len == 0 || req->key.len > MAX_KEY_LEN) {
        net_reply_error(c, h, FX_EINVAL, "key length %zu is outside 1..%u", req->key.len,
                        MAX_KEY_LEN);
        return;
    }
    if (req->source_node_id != mb->node_id) {
        net_reply_error(c, h, FX_ENOTSUP, "put source on another owner is not implemented");
        return;
    }
    const Fx__PutOptions *opt = req->options;
    if (opt && opt->reject_if_exists && route_find(&m->routes, req->key.data, req->key.len)) {
        net_reply_error(c, h, FX_EEXIST, "AlreadyExists: the key has a value (reject_if_exists)");
        return;
    }
    if (opt && opt->reject_if_inflight_same_key &&
        master_key_in_flight(m, req->key.data, req->key.len)) {
        net_reply_error(c, h, FX_EBUSY,
                        "Busy: another put of this key is in flight (reject_if_inflight_same_key)");
        return;
    }
    if (opt && opt->lease_id && !master_lease_live(m, opt->lease_id)) {
        net_reply_error(c, h, FX_ESTALE, "lease %llu is unknown or expired",
                        (unsigned long long)opt->lease_id);
        return;
    }
    /* The target comes from the placement policy; a remote target also needs
     * a staging (source) range on the requester's owner for the external to
     * write into before the push. */
    member *target = m->placement->choose(m, mb, req->len);
    if (!target && !(target = placement_fallback(m, mb))) {
        reply_no_space(c, h, mb, req->len, -ENOSPC, "no owner may take it");
        return;
    }
    int err = 0;
    allocation *a = master_alloc_evicting(m, target, req->len, &err);
    if (!a) {
        if (err == -ENOSPC && req->len <= target->capacity &&
            master_alloc_defer(m, mb, c, h, MSG_PUT_START, &req->base, replay_put_start, m))
            return;
        reply_no_space(c, h, target, req->len, err, "target");
        return;
    }
    allocation *src = NULL;
    if (target != mb && !(src = master_alloc_evicting(m, mb, req->len, &err))) {
        allocation_unref(a);
        if (err == -ENOSPC && req->len <= mb->capacity &&
            master_alloc_defer(m, mb, c, h, MSG_PUT_START, &req->base, replay_put_start, m))
            return;
        reply_no_space(c, h, mb, req->len, err, "staging");
        return;
    }
    put_id pid = master_next_put_id(m);
    inflight_put *p = master_inflight_put_add(m, req->key.data, req->key.len, pid);
    if (!p) {
        allocation_unref(a);
        allocation_unref(src);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    p->len = req->len;
    p->req_node = mb->node_id;
    p->target = a;
    p->source = src;
    p->target_node = target->node_id;
    p->target_tomb = target->tomb_tag;
    /* Decided here, from the live members; PutDone does not re-decide. */
    p->persist_to_ssd = target->kv_ssd_storage;
    if (opt) {
        p->lease_id = opt->lease_id;
        p->reject_if_exists = opt->reject_if_exists;
    }

    Fx__PutStartResp resp = FX__PUT_START_RESP__INIT;
    Fx__PutId wire = FX__PUT_ID__INIT;
    wire.time_ms = pid.time_ms;
    wire.version = pid.version;
    resp.put_id = &wire;
    resp.target_node_id = target->node_id;
    resp.target_offset = a->offset;
    resp.src_offset = src ? src->offset : a->offset;
    resp.target_data_addr = target != mb ? target->data_addr : "";
    resp.total_bytes = range_alloc_capacity(target->space->ra);
    resp.free_bytes = resp.total_bytes - range_alloc_used(target->space->ra);
    net_reply(c, h, &resp.base);
}

/* The second step of a PutDone whose new replica lives on another owner
 * than the requester's and replaced a version: once the target acknowledged
 * the publish, the replaced version is dropped and the answer waits for
 * those drops. */
typedef struct put_drops {
    route *old; /* referenced */
    uint32_t req_node;
    net_conn *conn; /* referenced */
    frame_hdr hdr;
} put_drops;

static put_drops *put_drops_new(member *mb, net_conn *c, const frame_hdr *h, route *old)
{
    put_drops *d = malloc(sizeof *d);
    if (!d)
        return NULL;
    route_ref(old);
    net_conn_ref(c);
    *d = (put_drops){.old = old, .req_node = mb->node_id, .conn = c, .hdr = *h};
    return d;
}

/* The end of every PutDone that installed its route: the replaced version
 * (old, may be NULL) is dropped from its owners but req_node's, and the
 * answer waits for them and for the key's unacknowledged drops (R1). */
static void drop_old_and_answer(master *m, index_wait *w, route *old, const char *key,
                                size_t klen, uint32_t req_node, net_conn *c, const frame_hdr *h,
                                const put_id *granted)
{
    if (old) {
        master_invalidate_route(m, old);
        master_index_drop_route(m, old, w, req_node);
    }
    master_index_wait_key(m, w, key, klen, req_node);
    Fx__PutDoneResp resp = FX__PUT_DONE_RESP__INIT;
    Fx__PutId wire = FX__PUT_ID__INIT;
    if (granted) { /* a pool put learns the put_id it was installed under */
        wire.time_ms = granted->time_ms;
        wire.version = granted->version;
        resp.put_id = &wire;
    }
    master_index_wait_reply(m, w, c, h, &resp.base);
}

static void send_put_drops(master *m, void *ctx, bool run)
{
    put_drops *d = ctx;
    if (run)
        drop_old_and_answer(m, master_index_wait_new(m), d->old, d->old->key, d->old->klen,
                            d->req_node, d->conn, &d->hdr, NULL);
    route_unref(d->old);
    net_conn_unref(d->conn);
    free(d);
}

void master_on_put_done(master *m, member *mb, net_conn *c, const frame_hdr *h, Fx__PutDoneReq *req)
{
    inflight_put *p;
    if (req->granted_len) {
        int status;
        const char *why;
        if (!(p = master_put_grant_use(m, mb, req, &status, &why))) {
            net_reply_error(c, h, status, "%s", why);
            return;
        }
    } else if (!(p = master_inflight_put_find(m, req->key.data, req->key.len, req->put_id)) ||
               p->req_node != mb->node_id) {
        net_reply_error(c, h, FX_ESTALE, "no in-flight put for this key and put_id (expired?)");
        return;
    }
    member *target = master_member(m, p->target_node);
    if (!target || target->tomb_tag != p->target_tomb) {
        master_inflight_put_free(m, p);
        net_reply_error(c, h, FX_ESTALE, "the target owner left during the put");
        return;
    }
    if (p->reject_if_exists && route_find(&m->routes, p->key, p->klen)) {
        master_inflight_put_free(m, p);
        net_reply_error(c, h, FX_EEXIST,
                        "AlreadyExists: the key was put while this put was in flight "
                        "(reject_if_exists)");
        return;
    }
    route *cur = route_find(&m->routes, p->key, p->klen);
    if (cur && put_id_cmp(cur->pid, p->pid) > 0) {
        /* A put of the key that started later (a higher put_id) completed
         * first: this one is ordered before it, so it is done and already
         * replaced. The newest put_id wins here as in recovery (R4), so
         * that routes and the owners' indexes (which keep the newest) never
         * disagree: nothing is installed, its ranges are freed, and the
         * answer tells the requester's owner not to index it. */
        master_inflight_put_free(m, p);
        Fx__PutDoneResp resp = FX__PUT_DONE_RESP__INIT;
        resp.superseded = true;
        net_reply(c, h, &resp.base);
        return;
    }
    if (p->lease_id && (!master_lease_live(m, p->lease_id) ||
                        master_lease_bind(m, p->lease_id, p->key, p->klen) != 0)) {
        master_inflight_put_free(m, p);
        net_reply_error(c, h, FX_ESTALE, "lease %llu expired before the put completed",
                        (unsigned long long)p->lease_id);
        return;
    }
    route *r = route_new(p->key, p->klen, p->pid, p->len);
    if (!r || route_add_replica(r, target->node_id, target->tomb_tag, p->target) < 0) {
        route_unref(r);
        master_inflight_put_free(m, p);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    r->lease_id = p->lease_id;
    allocation *target_alloc = p->target;
    p->target = NULL; /* moved into the route */
    if (req->granted_len)
        mb->puts_pool++;
    else
        mb->puts_started++;
    bool persist = p->persist_to_ssd;
    route *old = route_table_replace(&m->routes, r);
    route_ref(r); /* publishing may evict it */
    /* The answer waits for the owners' indexes (index_sync.h): the new
     * replica's owner when it is not the requester's, and every other owner
     * that held or cached the version it replaced. */
    index_wait *w = master_index_wait_new(m);
    if (target != mb) { /* the requester's own owner indexes its put itself */
        master_index_publish(target, r->key, r->klen, r->pid, target_alloc->offset, r->len);
        master_index_wait_on(w, target);
    }
    put_drops *d = target != mb && old ? put_drops_new(mb, c, h, old) : NULL;
    if (d) {
        /* The old version's owners drop it only once the target indexed the
         * new one: a crash in between leaves one of the two indexed. */
        master_index_wait_then(m, w, send_put_drops, d);
    } else {
        drop_old_and_answer(m, w, old, r->key, r->klen, mb->node_id, c, h,
                            req->granted_len ? &r->pid : NULL);
    }
    if (persist) /* after the answer: the public put does not wait for the SSD */
        master_ssd_persist(m, r->key, r->klen, r->pid, target->node_id, target_alloc);
    master_inflight_put_free(m, p);
    route_unref(old);
    /* A replica being persisted enters the replica cache when the persist
     * ends (ssd.c): until its SSD copy is committed, evicting it would lose
     * the key, and the persist reserves its bytes meanwhile. */
    replica *rep = route_replica(r, target->node_id);
    if (rep && !(persist && rep->memory->persisting))
        master_replica_published(m, r, rep);
    route_unref(r);
}

void master_on_put_revoke(master *m, member *mb, net_conn *c, const frame_hdr *h,
                          Fx__PutRevokeReq *req)
{
    inflight_put *p = master_inflight_put_find(m, req->key.data, req->key.len, req->put_id);
    if (p && p->req_node == mb->node_id)
        master_inflight_put_free(m, p);
    net_reply(c, h, &((Fx__PutRevokeResp)FX__PUT_REVOKE_RESP__INIT).base);
}
