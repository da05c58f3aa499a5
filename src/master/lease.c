/*
 * lease.c - leases: values that stay in memory for a bounded, renewable time.
 *
 * fx_lease_allocate(ttl) creates a lease that lives ttl from now;
 * fx_lease_keepalive(id) pushes its end to ttl from then. A put may bind its
 * key to a live lease (PutOptions.lease_id): the route carries the lease id,
 * its memory replicas are never evicted (they are reserved instead of being
 * put in the replica cache, capacity.c), and when the lease expires every key
 * still bound to it (a route of that key with that lease id: a later put
 * without the lease unbinds it) is deleted as by fx_delete, invalidations
 * included. Time is the loop's monotonic clock (uv_now), so wall-clock jumps
 * neither shorten nor extend a lease. Expiry is checked by the master's 100 ms
 * sweep.
 */
#include "master/master.h"
#include "common/memdup.h"

#include <stdlib.h>

#include "common/log.h"
#include "fluxon/fluxon.h"
#include "master/index_sync.h"
#include "master/invalidation.h"
#include "master/members.h"

#define LEASE_MAX_TTL_MS (7ull * 24 * 3600 * 1000) /* a week */

typedef struct lease_key {
    char *key;
    size_t klen;
    UT_hash_handle hh;
} lease_key;

struct lease {
    uint64_t id;
    uint64_t ttl_ms;
    uint64_t deadline_ms; /* uv_now() clock */
    lease_key *keys;      /* keys bound by puts (some may have been rebound since) */
    UT_hash_handle hh;
};

static lease *find_lease(master *m, uint64_t id)
{
    lease *l;
    HASH_FIND(hh, m->leases, &id, sizeof id, l);
    return l;
}

bool master_lease_live(master *m, uint64_t id)
{
    lease *l = find_lease(m, id);
    return l && l->deadline_ms > master_now_ms(m);
}

int master_lease_bind(master *m, uint64_t id, const char *key, size_t klen)
{
    lease *l = find_lease(m, id);
    if (!l)
        return FX_ESTALE;
    lease_key *k;
    HASH_FIND(hh, l->keys, key, klen, k);
    if (k)
        return 0;
    k = calloc(1, sizeof *k);
    if (!k || !(k->key = fx_memdup(key, klen))) {
        free(k);
        return FX_ENOMEM;
    }
    k->klen = klen;
    HASH_ADD_KEYPTR(hh, l->keys, k->key, k->klen, k);
    return 0;
}

static void lease_free(master *m, lease *l)
{
    HASH_DEL(m->leases, l);
    lease_key *k, *tmp;
    HASH_ITER(hh, l->keys, k, tmp) {
        HASH_DEL(l->keys, k);
        free(k->key);
        free(k);
    }
    free(l);
}

/* Deletes the keys still bound to l, then l. */
static void expire(master *m, lease *l)
{
    size_t deleted = 0;
    lease_key *k, *tmp;
    HASH_ITER(hh, l->keys, k, tmp) {
        route *r = route_find(&m->routes, k->key, k->klen);
        if (!r || r->lease_id != l->id)
            continue;
        route_table_remove(&m->routes, r);
        master_invalidate_route(m, r);
        master_index_drop_route(m, r, NULL, 0);
        route_unref(r);
        deleted++;
    }
    FX_LOG(INFO, "lease %llu expired: %zu key(s) deleted", (unsigned long long)l->id, deleted);
    lease_free(m, l);
}

void master_sweep_leases(master *m)
{
    uint64_t now = master_now_ms(m);
    lease *l, *tmp;
    HASH_ITER(hh, m->leases, l, tmp) {
        if (l->deadline_ms <= now)
            expire(m, l);
    }
}

void master_on_lease(master *m, net_conn *c, const frame_hdr *h, Fx__LeaseReq *req)
{
    Fx__LeaseResp resp = FX__LEASE_RESP__INIT;
    uint64_t now = master_now_ms(m);
    if (req->lease_id) { /* keepalive */
        lease *l = find_lease(m, req->lease_id);
        if (!l || l->deadline_ms <= now) {
            net_reply_error(c, h, FX_ESTALE, "lease %llu is unknown or expired",
                            (unsigned long long)req->lease_id);
            return;
        }
        l->deadline_ms = now + l->ttl_ms;
        resp.lease_id = l->id;
        resp.ttl_ms = l->ttl_ms;
        net_reply(c, h, &resp.base);
        return;
    }
    if (req->ttl_ms == 0 || req->ttl_ms > LEASE_MAX_TTL_MS) {
        net_reply_error(c, h, FX_EINVAL, "lease ttl %llu ms is outside 1..%llu ms",
                        (unsigned long long)req->ttl_ms, (unsigned long long)LEASE_MAX_TTL_MS);
        return;
    }
    lease *l = calloc(1, sizeof *l);
    if (!l) {
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    l->id = m->next_lease_id++;
    l->ttl_ms = req->ttl_ms;
    l->deadline_ms = now + req->ttl_ms;
    HASH_ADD(hh, m->leases, id, sizeof l->id, l);
    resp.lease_id = l->id;
    resp.ttl_ms = l->ttl_ms;
    net_reply(c, h, &resp.base);
}

void master_leases_free(master *m)
{
    while (m->leases)
        lease_free(m, m->leases);
}
