/*
 * stat.c - per-owner capacity, usage and hit counters (Stat), the figures
 * behind `fluxon stat` and the HTTP metrics.
 */
#include "master/master.h"

#include <stdlib.h>

#include "fluxon/fluxon.h"

void master_on_stat(master *m, net_conn *c, const frame_hdr *h)
{
    size_t n = HASH_COUNT(m->members);
    Fx__OwnerStat *stats = calloc(n ? n : 1, sizeof *stats);
    Fx__OwnerStat **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    if (!stats || !ptrs) {
        free(stats);
        free(ptrs);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    size_t i = 0;
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp) {
        Fx__OwnerStat *s = &stats[i];
        fx__owner_stat__init(s);
        s->node_id = mb->node_id;
        s->name = mb->name;
        s->live = true;
        s->memory_capacity = range_alloc_capacity(mb->space->ra);
        s->memory_used = range_alloc_used(mb->space->ra);
        s->hits_memory = mb->hits_memory;
        s->hits_ssd = mb->hits_ssd;
        s->misses = mb->misses;
        ptrs[i] = s;
        i++;
    }
    Fx__StatResp resp = FX__STAT_RESP__INIT;
    resp.n_owners = i;
    resp.owners = ptrs;
    resp.routes = m->routes.count;
    net_reply(c, h, &resp.base);
    free(stats);
    free(ptrs);
}
