/*
 * stat.c - per-owner capacity, usage and hit counters (Stat), the figures
 * behind `fluxon stat` and the HTTP metrics, with the answering master's
 * address, term, pid and host; RouteInfo, where a key's current version
 * lives.
 *
 * Stat also splits each owner's used bytes: replica_bytes are held by route
 * memory replicas, holding_bytes only by get holders (temporaries and replicas
 * of versions since overwritten); the rest is in-flight puts and gets. It walks
 * every route, which is fine for an operator's call, not for a hot path.
 */
#include "master/master.h"
#include "master/members.h"
#include "master/replica_cache.h"

#include <stdlib.h>
#include <unistd.h>

#include "fluxon/fluxon.h"

static Fx__OwnerStat *stat_of(Fx__OwnerStat *stats, size_t n, const seg_space *space)
{
    for (size_t i = 0; i < n; i++)
        if (stats[i].node_id == space->node_id)
            return &stats[i];
    return NULL; /* a space whose member left: its ranges are nobody's usage */
}

/* replica_bytes and holding_bytes of each owner; every allocation is counted
 * once (holders often share a replica's allocation). */
static void count_bytes(master *m, Fx__OwnerStat *stats, size_t n)
{
    uint64_t pass = ++m->stat_pass;
    route *r, *rtmp;
    HASH_ITER(hh, m->routes.by_key, r, rtmp) {
        for (size_t i = 0; i < r->n_replicas; i++) {
            allocation *a = r->replicas[i].memory;
            Fx__OwnerStat *s = a && a->stat_mark != pass ? stat_of(stats, n, a->space) : NULL;
            if (a)
                a->stat_mark = pass;
            if (s)
                s->replica_bytes += allocation_capacity(a);
        }
    }
    holding *hd, *htmp;
    HASH_ITER(hh, m->holdings, hd, htmp) {
        allocation *a = hd->target;
        Fx__OwnerStat *s = a->stat_mark != pass ? stat_of(stats, n, a->space) : NULL;
        a->stat_mark = pass;
        if (s)
            s->holding_bytes += allocation_capacity(a);
    }
}

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
        s->memory_used = seg_space_used(mb->space);
        s->hits_memory = mb->hits_memory;
        s->hits_ssd = mb->hits_ssd;
        s->misses = mb->misses;
        s->ssd_capacity = mb->ssd_capacity;
        s->ssd_used = mb->ssd_used;
        s->ssd_errors = mb->ssd_errors;
        s->cache_budget = mb->space->budget;
        s->cache_weight = replica_cache_weight(mb->space->cache);
        s->cache_reserved = mb->space->reserved;
        s->evictions = mb->space->evictions;
        ptrs[i] = s;
        i++;
    }
    count_bytes(m, stats, i);
    Fx__StatResp resp = FX__STAT_RESP__INIT;
    resp.n_owners = i;
    resp.owners = ptrs;
    resp.routes = m->routes.count;
    /* Who answers: `fluxon stat` names the leader (and, on its own host, its pid). */
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    resp.master_addr = m->advertised;
    resp.master_term = m->term;
    resp.master_pid = getpid();
    resp.master_host = host;
    net_reply(c, h, &resp.base);
    free(stats);
    free(ptrs);
}

void master_on_route_info(master *m, net_conn *c, const frame_hdr *h, Fx__RouteInfoReq *req)
{
    route *r = route_find(&m->routes, req->key.data, req->key.len);
    if (!r) {
        net_reply_error(c, h, FX_ENOTFOUND, "KeyNotFound");
        return;
    }
    Fx__RouteReplicaInfo *infos = calloc(r->n_replicas ? r->n_replicas : 1, sizeof *infos);
    Fx__RouteReplicaInfo **ptrs = calloc(r->n_replicas ? r->n_replicas : 1, sizeof *ptrs);
    if (!infos || !ptrs) {
        free(infos);
        free(ptrs);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->n_replicas; i++) {
        replica *rep = &r->replicas[i];
        if (!master_tomb_live(m, rep->node_id, rep->tomb_tag))
            continue;
        fx__route_replica_info__init(&infos[n]);
        infos[n].node_id = rep->node_id;
        infos[n].memory = rep->memory != NULL;
        infos[n].ssd = rep->has_ssd;
        infos[n].memory_offset = rep->memory ? rep->memory->offset : 0;
        ptrs[n] = &infos[n];
        n++;
    }
    Fx__RouteInfoResp resp = FX__ROUTE_INFO_RESP__INIT;
    Fx__PutId wire = FX__PUT_ID__INIT;
    wire.time_ms = r->pid.time_ms;
    wire.version = r->pid.version;
    resp.put_id = &wire;
    resp.len = r->len;
    resp.n_replicas = n;
    resp.replicas = ptrs;
    resp.durable_slots_used = r->durable_slots_used;
    net_reply(c, h, &resp.base);
    free(infos);
    free(ptrs);
}
