/*
 * replica_cache.h - the eviction policy of one owner's memory replicas.
 *
 * The master keeps one replica_cache per owner. Every memory replica of a
 * current route on that owner that may be evicted (not leased) is an item
 * weighted by its allocated bytes. The cache itself never frees anything: the
 * master inserts an item when a replica is published, reports hits, removes
 * the item when the replica goes for another reason (delete, overwrite,
 * member left), and, while the owner is over its budget, asks for victims one
 * at a time with replica_cache_pop_victim() and clears their route's memory.
 *
 * The policy is S3-FIFO (Yang et al., SOSP'23) weighted by bytes: a small
 * FIFO that new items enter; a main FIFO with CLOCK-style reinsertion of
 * items hit while resident (3-bit frequency, 0..7, one step per hit); and a
 * ghost FIFO of the key hashes recently evicted from small, so that a key
 * evicted from small and inserted again goes straight to main. While small
 * holds >= 10% of the capacity (or main is empty) victims come from small:
 * its oldest item moves to main if it was hit at all, else it is evicted and
 * remembered in the ghost; otherwise they come from main: its oldest item
 * with a frequency above zero loses one and goes back to main's young end,
 * one with zero is evicted. The ghost remembers victims worth 10% of the
 * capacity (about one small queue's worth of keys; a longer memory admitted
 * more cold keys to main on the benchmark's traces) and never more than
 * 64 + 2 x the resident count of keys. One-hit wonders and scans leave
 * through the small queue without pushing hot items out. Every operation is
 * O(1) amortized. bench/hitrate (make bench-hitrate) compares it with LRU
 * and Belady's MIN on the same traces.
 *
 * Single-threaded (the master's loop thread); no locks.
 */
#ifndef FX_MASTER_REPLICA_CACHE_H
#define FX_MASTER_REPLICA_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct replica_cache replica_cache;
typedef struct rc_item rc_item;

/* A cache sized for capacity bytes (the owner's budget; it only sizes the
 * queues: the caller decides when to evict). NULL on out of memory. The
 * caller frees it with replica_cache_free(). */
replica_cache *replica_cache_new(uint64_t capacity);
/* Frees the cache and its items (their ctx pointers are not touched). NULL-safe. */
void replica_cache_free(replica_cache *rc);
/* Changes the capacity the queues are sized for; the next pop_victim uses it
 * (the ghost forgets its oldest keys at once if it is now over its share). */
void replica_cache_set_capacity(replica_cache *rc, uint64_t capacity);

/* Adds an item for key_hash of weight bytes carrying ctx (the caller's
 * pointer, returned by pop_victim). Does not evict. Returns the item, owned by
 * the cache until removed or popped; NULL on out of memory or a weight of
 * 2^56 bytes or more. */
rc_item *replica_cache_insert(replica_cache *rc, uint64_t key_hash, uint64_t weight, void *ctx);
/* Records an access to a resident item (bumps its frequency; moves nothing). */
void replica_cache_hit(replica_cache *rc, rc_item *it);
/* Removes an item for a reason other than eviction (frees it; it does not
 * enter the ghost queue). */
void replica_cache_remove(replica_cache *rc, rc_item *it);
/* Chooses the next victim, removes and frees its item, and returns its ctx;
 * NULL only when the cache is empty. */
void *replica_cache_pop_victim(replica_cache *rc);

/* Sum of the weights of resident items. */
uint64_t replica_cache_weight(const replica_cache *rc);
size_t replica_cache_count(const replica_cache *rc);

#endif
