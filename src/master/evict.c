/*
 * evict.c - making room on a full owner by evicting memory replicas that also
 * live on SSD.
 *
 * When a target range does not fit on an owner, the memory of replicas on
 * that owner that have a committed SSD copy and that nothing else holds (no
 * holder, no in-flight get or persist: the route's reference is the only one)
 * is released, oldest routes first, until the range fits. The route keeps the
 * SSD copy, so a later get refills DRAM from it. This is the SSD tier's
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
    *err = -ENOSPC;
    return NULL;
}
