/*
 * evict.c - making room on a full owner by evicting memory replicas that also
 * live on SSD.
 *
 * When a target range does not fit on an owner, the memory of replicas on
 * that owner that have a committed SSD copy and that nothing else holds (no
 * holder, no in-flight get or persist: the route's reference is the only one)
 * is released, oldest routes first, until the range fits. The route keeps the
 * SSD copy, so a later get refills DRAM from it. When that is not enough,
 * SSD-backed replicas that are still referenced (typically by the owner's own
 * get cache) lose their place in the route too, about len bytes' worth per
 * call, and the owner is told to drop them from its cache: their bytes come
 * back once the last holder is released, which the caller waits for
 * (alloc_wait.c). This is the SSD tier's
 * minimal eviction; the capacity work (budgets, a hit-rate-aware policy,
 * bounded waiting) replaces the choice of victims.
 */
#include "master/master.h"

#include <errno.h>

allocation *master_alloc_evicting(master *m, member *mb, uint64_t len, int *err)
{
    allocation *a = allocation_new(mb->space, len, err);
    if (a || *err != -ENOSPC)
        return a;
    route *r, *tmp;
    HASH_ITER(hh, m->routes.by_key, r, tmp) {
        replica *rep = route_replica(r, mb->node_id);
        if (!rep || !rep->memory || !rep->has_ssd || rep->memory->refs != 1 ||
            rep->memory->space != mb->space)
            continue;
        route_drop_memory(r, mb->node_id); /* the entry stays: it has ssd */
        if (placement_has_room(mb, len) && (a = allocation_new(mb->space, len, err)))
            return a;
    }
    /* Second pass: referenced replicas, released asynchronously. */
    uint64_t freed_later = 0;
    HASH_ITER(hh, m->routes.by_key, r, tmp) {
        if (freed_later >= len)
            break;
        replica *rep = route_replica(r, mb->node_id);
        if (!rep || !rep->memory || !rep->has_ssd || rep->memory->space != mb->space)
            continue;
        freed_later += rep->memory->capacity;
        route_drop_memory(r, mb->node_id);
        master_queue_invalidation(mb, r->key, r->klen);
    }
    *err = -ENOSPC;
    return NULL;
}
