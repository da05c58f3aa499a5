/*
 * route.c - kv_routes and the route object (see route.h).
 */
#include "master/route.h"
#include "master/prefix_index.h"
#include "master/replica_cache.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

route *route_new(const void *key, size_t klen, put_id pid, uint64_t len)
{
    if (klen > UINT32_MAX)
        return NULL;
    route *r = calloc(1, sizeof *r + klen);
    if (!r)
        return NULL;
    memcpy(r->key, key, klen);
    r->klen = (uint32_t)klen;
    r->replicas = &r->first;
    r->pid = pid;
    r->len = len;
    r->refs = 1;
    return r;
}

route *route_ref(route *r)
{
    assert(r->refs > 0);
    r->refs++;
    return r;
}

void route_unref(route *r)
{
    if (!r)
        return;
    assert(r->refs > 0);
    if (--r->refs)
        return;
    assert(!r->in_table);
    for (size_t i = 0; i < r->n_replicas; i++) {
        assert(!r->replicas[i].cache_item);
        allocation_unref(r->replicas[i].memory);
    }
    if (r->replicas != &r->first)
        free(r->replicas);
    free(r->cached_by);
    free(r);
}

int route_add_replica(route *r, uint32_t node_id, uint64_t tomb_tag, allocation *memory)
{
    replica *n = r->replicas;
    if (r->n_replicas >= 1) { /* past `first`: an array of their own */
        bool inline_now = r->replicas == &r->first;
        n = realloc(inline_now ? NULL : r->replicas, (r->n_replicas + 1) * sizeof *n);
        if (!n)
            return -ENOMEM;
        if (inline_now)
            n[0] = r->first;
        r->replicas = n;
    }
    n[r->n_replicas++] = (replica){.node_id = node_id, .tomb_tag = tomb_tag, .memory = memory};
    return 0;
}

replica *route_replica(route *r, uint32_t node_id)
{
    for (size_t i = 0; i < r->n_replicas; i++)
        if (r->replicas[i].node_id == node_id)
            return &r->replicas[i];
    return NULL;
}

/* Takes rep out of its owner's replica cache, if it is in it. */
static void leave_cache(replica *rep)
{
    if (rep->cache_item) {
        replica_cache_remove(rep->memory->space->cache, rep->cache_item);
        rep->cache_item = NULL;
    }
}

void route_drop_memory(route *r, uint32_t node_id)
{
    for (size_t i = 0; i < r->n_replicas; i++) {
        replica *rep = &r->replicas[i];
        if (rep->node_id != node_id)
            continue;
        leave_cache(rep);
        allocation_unref(rep->memory);
        rep->memory = NULL;
        if (!rep->has_ssd)
            r->replicas[i] = r->replicas[--r->n_replicas];
        return;
    }
}

void route_note_cached_by(route *r, uint32_t node_id)
{
    for (size_t i = 0; i < r->n_cached_by; i++)
        if (r->cached_by[i] == node_id)
            return;
    uint32_t *n = realloc(r->cached_by, (r->n_cached_by + 1) * sizeof *n);
    if (!n)
        return; /* an owner missing here only delays its cache drop to TTL/holder release */
    r->cached_by = n;
    n[r->n_cached_by++] = node_id;
}

route *route_find(route_table *t, const void *key, size_t klen)
{
    route *r;
    HASH_FIND(hh, t->by_key, key, klen, r);
    return r;
}

route *route_table_replace(route_table *t, route *r)
{
    route *old = route_find(t, r->key, r->klen);
    if (old)
        route_table_remove(t, old);
    HASH_ADD_KEYPTR(hh, t->by_key, r->key, r->klen, r);
    r->in_table = true;
    t->count++;
    if (t->prefix)
        (void)prefix_index_add(t->prefix, r->key, r->klen); /* out of memory: uncounted */
    return old;
}

void route_table_remove(route_table *t, route *r)
{
    assert(r->in_table);
    HASH_DEL(t->by_key, r);
    r->in_table = false;
    t->count--;
    for (size_t i = 0; i < r->n_replicas; i++)
        leave_cache(&r->replicas[i]);
    if (t->prefix)
        prefix_index_remove(t->prefix, r->key, r->klen);
}
