/*
 * ssd.c - the master's part of the SSD tier (spec 000 §3, §7.1; DESIGN §4).
 *
 * Persist: once PutDone has answered, a put placed with persist_to_ssd keeps
 * its target allocation alive (one extra reference, held by a persist record)
 * and asks the target owner to write it to its SSD tier (SsdReplicaPersist).
 * The owner writes, takes its persist guard and sends SsdReplicaCommit; the
 * commit publishes `ssd = {len}` on the route only if the route still has that
 * key, that put_id, a memory replica on that owner and the owner's current
 * incarnation; otherwise it is ignored and still answered OK. When the
 * persist request completes (persisted or not, or the owner left) the record
 * and its reference go. While it is in flight the record reserves the target's
 * capacity (cache_reserved_bytes, capacity.c). A persist failure or a late commit never touches the
 * memory replica.
 *
 * Evictions: BatchSsdReplicaEvict clears `ssd` only where the put_id matches;
 * an entry left with neither memory nor ssd goes, and so does a route left
 * with no entry. GetRevoke(drop_ssd_source) uses the same clearing.
 */
#include "master/master.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memdup.h"
#include "fluxon/fluxon.h"
#include "master/members.h"

#define PERSIST_TIMEOUT_MS 60000u

typedef struct persist {
    master *m;
    char *key;
    size_t klen;
    put_id pid;
    uint32_t node;
    allocation *target; /* keeps the bytes alive while the owner reads them */
} persist;

/* The persist ended (committed, refused, failed or its owner left): its
 * reservation goes, and the replica, if it is still the route's, enters the
 * replica cache (put.c left it out while the persist ran). */
static void persist_free(persist *p)
{
    master *m = p->m;
    seg_space_release(p->target->space, allocation_capacity(p->target));
    route *r = route_find(&m->routes, p->key, p->klen);
    replica *rep = r && put_id_eq(r->pid, p->pid) ? route_replica(r, p->node) : NULL;
    if (rep && rep->memory == p->target)
        master_replica_published(m, r, rep);
    else
        master_enforce_budget(m, p->target->space); /* the reservation shrank: nothing to do */
    p->target->persisting = false;
    allocation_unref(p->target);
    free(p->key);
    free(p);
}


static void on_persist_resp(int status, ProtobufCMessage *msg, void *ud)
{
    persist *p = ud;
    if (status || msg_status(msg))
        FX_LOG(INFO, "SSD persist of a %zu-byte key on node %u failed: %s", p->klen, p->node,
               status ? fx_strerror(status) : msg_detail(msg));
    else if (!((Fx__SsdReplicaPersistResp *)msg)->persisted)
        FX_LOG(DEBUG, "node %u did not persist a %zu-byte key", p->node, p->klen);
    persist_free(p);
}

void master_ssd_persist(master *m, const char *key, size_t klen, put_id pid, uint32_t node,
                        allocation *target)
{
    member *mb = master_member(m, node);
    persist *p = calloc(1, sizeof *p);
    if (!mb || !mb->rpc || !p || !(p->key = fx_memdup(key, klen))) {
        free(p);
        return; /* no persist: the memory replica stands alone */
    }
    p->m = m;
    p->klen = klen;
    p->pid = pid;
    p->node = node;
    p->target = allocation_ref(target);
    target->persisting = true;
    seg_space_reserve(target->space, allocation_capacity(target));
    Fx__SsdReplicaPersistReq req = FX__SSD_REPLICA_PERSIST_REQ__INIT;
    Fx__PutId wire = FX__PUT_ID__INIT;
    wire.time_ms = pid.time_ms;
    wire.version = pid.version;
    req.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)p->key};
    req.put_id = &wire;
    req.target_offset = target->offset;
    req.len = target->len;
    if (rpc_call(mb->rpc, MSG_SSD_REPLICA_PERSIST, &req.base, PERSIST_TIMEOUT_MS, on_persist_resp,
                 p) < 0) {
        persist_free(p);
        return;
    }
    master_enforce_budget(m, target->space);
}

void master_drop_ssd(master *m, route *r, uint32_t node)
{
    replica *rep = route_replica(r, node);
    if (!rep || !rep->has_ssd)
        return;
    rep->has_ssd = false;
    rep->ssd_len = 0;
    if (!rep->memory)
        route_drop_memory(r, node); /* removes the now empty entry */
    if (r->n_replicas == 0 && r->in_table) {
        route_table_remove(&m->routes, r);
        route_unref(r);
    }
}

void master_on_ssd_commit(master *m, member *mb, net_conn *c, const frame_hdr *h,
                          Fx__SsdReplicaCommitReq *req)
{
    Fx__SsdReplicaCommitResp resp = FX__SSD_REPLICA_COMMIT_RESP__INIT;
    route *r = route_find(&m->routes, req->key.data, req->key.len);
    replica *rep = r ? route_replica(r, mb->node_id) : NULL;
    if (req->put_id && r && r->pid.time_ms == req->put_id->time_ms &&
        r->pid.version == req->put_id->version && rep && rep->memory &&
        master_tomb_live(m, mb->node_id, rep->tomb_tag) && req->len == r->len) {
        rep->has_ssd = true;
        rep->ssd_len = req->len;
        resp.published = true;
    }
    net_reply(c, h, &resp.base);
}

void master_on_ssd_evict(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__BatchSsdReplicaEvictReq *req)
{
    for (size_t i = 0; i < req->n_evictions; i++) {
        Fx__SsdEviction *ev = req->evictions[i];
        route *r = route_find(&m->routes, ev->key.data, ev->key.len);
        if (r && ev->put_id && r->pid.time_ms == ev->put_id->time_ms &&
            r->pid.version == ev->put_id->version)
            master_drop_ssd(m, r, mb->node_id);
    }
    net_reply(c, h, &((Fx__BatchSsdReplicaEvictResp)FX__BATCH_SSD_REPLICA_EVICT_RESP__INIT).base);
}
