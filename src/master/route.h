/*
 * route.h - kv_routes: the master's table from key to its current version.
 *
 * A route is {put_id, len, replicas[owner] = {tomb_tag, memory, ssd}}. It is
 * refcounted: the table holds one reference while the route is current and
 * every in-flight get holds one, so a get that raced an overwrite still sees
 * the version it started on. An owner entry goes when both memory and ssd are
 * empty; the route leaves the table when no entry is left. `cached_by` lists
 * the owners that were handed a holder of this version, for invalidation.
 */
#ifndef FX_MASTER_ROUTE_H
#define FX_MASTER_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/hashtable.h"

#include "master/allocation.h"

typedef struct put_id {
    uint64_t time_ms;
    uint32_t version;
} put_id;

static inline bool put_id_eq(put_id a, put_id b)
{
    return a.time_ms == b.time_ms && a.version == b.version;
}

/* <0, 0, >0 as a was issued before, is, or after b. */
static inline int put_id_cmp(put_id a, put_id b)
{
    if (a.time_ms != b.time_ms)
        return a.time_ms < b.time_ms ? -1 : 1;
    return (a.version > b.version) - (a.version < b.version);
}

typedef struct replica {
    uint64_t tomb_tag;
    allocation *memory; /* NULL: no memory replica on this owner */
    uint64_t ssd_len;
    struct rc_item *cache_item; /* its place in the owner's replica cache (capacity.c) */
    uint32_t node_id;
    bool has_ssd;
} replica;

/* One per key on the master, laid out to stay small (docs/benchmarks.md,
 * "Master memory per key"): the key's bytes follow the struct, and the first
 * replica lives inside it (replicas points at `first` until a second owner
 * holds one; then at an array of the route's own). */
typedef struct route {
    UT_hash_handle hh;
    put_id pid;
    uint64_t len;
    uint64_t lease_id; /* 0: none; leased replicas are never evicted */
    replica *replicas;
    uint32_t *cached_by;
    int refs;
    uint32_t klen;
    uint32_t n_replicas;
    uint32_t durable_slots_used;
    uint32_t n_cached_by;
    bool in_table;
    replica first;
    char key[]; /* klen bytes */
} route;

typedef struct route_table {
    route *by_key;
    size_t count;
    struct prefix_index *prefix; /* keys of the table (count_prefix); may be NULL */
} route_table;

/* A route for key (copied) with one reference, not yet in a table. */
route *route_new(const void *key, size_t klen, put_id pid, uint64_t len);
route *route_ref(route *r);
/* Drops a reference; the last one frees the route and its memory references. */
void route_unref(route *r);

/* Adds a replica entry (moves the reference to memory into the route). */
int route_add_replica(route *r, uint32_t node_id, uint64_t tomb_tag, allocation *memory);
/* The entry of node_id or NULL. */
replica *route_replica(route *r, uint32_t node_id);
/* Clears the memory of node_id's entry (and its cache item) and removes the
 * entry when it is empty. */
void route_drop_memory(route *r, uint32_t node_id);
/* Remembers that node_id was handed a holder of this version. */
void route_note_cached_by(route *r, uint32_t node_id);

route *route_find(route_table *t, const void *key, size_t klen);
/* Puts r (taking over the caller's reference) in the table; returns the route
 * it replaced, still referenced by the caller now, or NULL. */
route *route_table_replace(route_table *t, route *r);
/* Removes r from the table (its replicas leave their replica caches); the
 * caller receives the table's reference. */
void route_table_remove(route_table *t, route *r);

#endif
