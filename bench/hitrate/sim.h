/*
 * sim.h - offline cache simulators of the hit-rate benchmark: LRU, Belady's
 * MIN for variable sizes, and the master's replica_cache policy.
 *
 * All of them run the same model as the cluster replay: the bootstrap
 * inserts every key once in key order (not counted), then each get of the
 * trace is a hit when the key is resident, else a miss followed by an insert
 * of the key (cache-aside); after every insert items are evicted until the
 * resident bytes are <= capacity. An item larger than the capacity is never
 * left resident.
 */
#ifndef FX_BENCH_HITRATE_SIM_H
#define FX_BENCH_HITRATE_SIM_H

#include <stdint.h>

#include "trace.h"

typedef struct sim_result {
    uint64_t gets, hits;
    uint64_t bytes, hit_bytes; /* bytes requested, and those served by hits */
} sim_result;

/* Each returns 0 with *out filled, or -1 on out of memory. */
int sim_lru(const key_set *ks, const trace *t, uint64_t capacity, sim_result *out);
/* Belady's MIN: on a miss, insert, then evict the resident key whose next
 * use is furthest in the future (never used again first; the new key
 * itself may go, which is a bypass) until the rest fits. With variable sizes
 * this is the standard furthest-next-use heuristic, not a proven optimum
 * (that problem is NP-hard): an upper reference, which a size-aware policy
 * can even beat on object hit rate. */
int sim_min(const key_set *ks, const trace *t, uint64_t capacity, sim_result *out);
/* src/master/replica_cache.c driven as the master drives it: insert on
 * publish, hit on a resident get, pop_victim while weight > capacity. */
int sim_policy(const key_set *ks, const trace *t, uint64_t capacity, sim_result *out);

#endif
