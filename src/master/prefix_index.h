/*
 * prefix_index.h - the master's key prefix index: how many current keys start
 * with a given byte string (fx_count_prefix).
 *
 * A path-compressed radix tree over the binary keys of kv_routes. Every node
 * keeps the number of keys in its subtree, so counting a prefix walks at most
 * the prefix's length and never the matching keys. Keys are binary-safe
 * (any byte, including 0) and 1..4096 bytes long. The master adds a key when a
 * route enters the table and removes it when the route leaves; like the
 * spec's prefix index it is derived from kv_routes and counts are
 * eventually consistent with in-flight puts.
 *
 * Single-threaded (the master's loop thread).
 */
#ifndef FX_MASTER_PREFIX_INDEX_H
#define FX_MASTER_PREFIX_INDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct prefix_index prefix_index;

/* An empty index, or NULL on out of memory. */
prefix_index *prefix_index_new(void);
/* Frees the index and everything in it. NULL-safe. */
void prefix_index_free(prefix_index *pi);

/* Adds key (klen >= 1 bytes). Returns 1 when added, 0 when it was already
 * there, -ENOMEM on out of memory (the index is unchanged then). */
int prefix_index_add(prefix_index *pi, const void *key, size_t klen);
/* Removes key. Returns 1 when removed, 0 when it was not there. */
int prefix_index_remove(prefix_index *pi, const void *key, size_t klen);
/* Number of keys that start with prefix (plen may be 0: every key). */
uint64_t prefix_index_count(const prefix_index *pi, const void *prefix, size_t plen);
/* Number of keys in the index. */
uint64_t prefix_index_size(const prefix_index *pi);

#endif
