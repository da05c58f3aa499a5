/*
 * capacity.c - memory replica eviction, the budget and the reservations of
 * each owner (spec 000 §4.1-4.2, DESIGN.md §5).
 *
 * Every memory replica of a current route that may be evicted (not leased) is
 * an item of its owner's replica cache (replica_cache.h: byte-weighted
 * S3-FIFO), weighted by the bytes its allocation takes. The master keeps
 *
 *     cache weight + cache_reserved_bytes <= budget (cache_budget % of the segment)
 *
 * by evicting victims whenever a replica is published or a reservation grows.
 * Reservations (seg_space.reserved) are in-flight durable get targets, async
 * SSD persists and leased replicas, so that in-flight use is never taken for
 * free budget. The rest of the segment (100% - budget) is the room for
 * staging ranges, get targets in flight and holders that outlive their
 * version.
 *
 * Evicting a replica clears only the route's memory on that owner: an SSD copy
 * stays readable (and a get refills DRAM from it); a route left with no copy
 * leaves the table. The owners that cached the version are told to drop it,
 * so their references (and those of released holders) come back to the
 * allocator; bytes still pinned by live holders come back when they are
 * released (seg_space.returning counts them until then). A target
 * allocation that does not fit evicts victims at once until it fits or until
 * as many bytes as it needs are on their way back, then waits in
 * alloc_wait.c; one larger than the segment evicts nothing. A replica being
 * published makes room before it enters the cache, so it is never its own
 * victim.
 */
#include "master/master.h"
#include "master/index_sync.h"
#include "master/invalidation.h"
#include "master/members.h"
#include "master/replica_cache.h"

#include <errno.h>

static uint64_t key_hash(const route *r)
{
    return XXH3_64bits(r->key, r->klen);
}

/* Evicts r's memory replica on s's owner; its cache item was just popped. */
static void evict_popped(master *m, seg_space *s, route *r)
{
    replica *rep = route_replica(r, s->node_id);
    if (!rep || !rep->memory)
        return; /* cannot happen: an item always has its replica */
    rep->cache_item = NULL;
    s->evictions++;
    allocation *a = rep->memory;
    if (a->refs > 1 && !a->returning) { /* its bytes come back when released */
        a->returning = true;
        s->returning += allocation_capacity(a);
    }
    member *mb = master_member(m, s->node_id);
    if (mb && mb->tomb_tag == rep->tomb_tag)
        master_index_drop_memory(mb, r->key, r->klen, r->pid);
    route_drop_memory(r, s->node_id);
    if (r->n_replicas == 0) {
        /* No copy left: the key is gone, as after a delete. */
        route_table_remove(&m->routes, r);
        master_invalidate_route(m, r);
        route_unref(r);
    } else if (mb) {
        master_queue_invalidation(mb, r->key, r->klen);
    }
}

void master_enforce_budget(master *m, seg_space *s)
{
    while (replica_cache_weight(s->cache) + s->reserved > s->budget) {
        route *victim = replica_cache_pop_victim(s->cache);
        if (!victim)
            break;
        evict_popped(m, s, victim);
    }
}

void master_replica_published(master *m, route *r, replica *rep)
{
    if (!r->in_table || !rep->memory || rep->cache_item)
        return;
    seg_space *s = rep->memory->space;
    if (r->lease_id) {
        allocation_reserve(rep->memory); /* never evicted; counted until freed */
        master_enforce_budget(m, s);
        return;
    }
    /* Room first, then the new item (as S3-FIFO does): the replica just
     * published is never its own victim. One larger than the whole budget
     * stays until the next publish needs room. */
    uint64_t cap = allocation_capacity(rep->memory);
    uint32_t node = rep->node_id;
    while (replica_cache_weight(s->cache) + s->reserved + cap > s->budget) {
        route *victim = replica_cache_pop_victim(s->cache);
        if (!victim)
            break;
        evict_popped(m, s, victim); /* never r: r is not in the cache yet */
    }
    rep = route_replica(r, node); /* still r's: r holds it, evicting others moved nothing here */
    rep->cache_item = replica_cache_insert(s->cache, key_hash(r), cap, r);
    if (!rep->cache_item)
        allocation_reserve(rep->memory); /* out of memory: at least stay counted */
}

void master_note_access(route *r, uint32_t node_id)
{
    replica *rep = route_replica(r, node_id);
    if (rep && rep->cache_item)
        replica_cache_hit(rep->memory->space->cache, rep->cache_item);
}

allocation *master_alloc_evicting(master *m, member *mb, uint64_t len, int *err)
{
    seg_space *s = mb->space;
    allocation *a = allocation_new(s, len, err);
    if (a || *err != -ENOSPC)
        return a;
    if (len > range_alloc_capacity(s->ra))
        return NULL; /* can never fit: evicting would only empty the owner */
    /* Make room now: evict until it fits, or until the bytes of evicted
     * replicas still referenced (owner caches, holders, reads in flight:
     * s->returning, also those evicted by earlier rounds of a waiting
     * request) would cover it once released; the caller then waits. */
    while (s->returning < len) {
        route *victim = replica_cache_pop_victim(s->cache);
        if (!victim)
            break;
        replica *rep = route_replica(victim, s->node_id);
        bool frees_now = rep && rep->memory && rep->memory->refs == 1;
        evict_popped(m, s, victim);
        if (frees_now && ((a = allocation_new(s, len, err)) || *err != -ENOSPC))
            return a;
    }
    *err = -ENOSPC;
    return NULL;
}
