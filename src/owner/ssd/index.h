/*
 * index.h - the SSD tier's (key, put_id) -> entry index and the entry record.
 *
 * An ssd_entry is the record of one value written to a shard: the ring_entry
 * that ring.c links into its shard's FIFO, plus what a read needs (length,
 * checksum, shard) and what an eviction reports (key, put_id). The ring owns
 * the record's lifetime: it is created by a write, and freed by the store only
 * after the ring's tail passed it (or at close). The index only points at
 * committed records; a record leaves the index when it is evicted, dropped by
 * a read (checksum mismatch, stale), or replaced by a newer write of the same
 * (key, put_id) -- `indexed` says whether it is still in.
 *
 * The hash key is the key bytes followed by the put_id in a fixed 12-byte
 * little-endian form, so one memcmp compares both. No locking here: the store
 * guards the index with its index lock.
 */
#ifndef FX_SSD_INDEX_H
#define FX_SSD_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hashtable.h"
#include "owner/ssd/ring.h"
#include "owner/ssd/ssd.h"

#define INDEX_PID_BYTES 12u

struct ssd_shard;

#include "owner/ssd/engine.h"

typedef struct ssd_entry {
    ring_entry re;             /* state and pins guarded by the shard lock */
    struct ssd_shard *shard;   /* immutable */
    uint8_t *hkey;             /* key bytes + put_id (INDEX_PID_BYTES), malloc'd */
    size_t klen;               /* key bytes at the start of hkey */
    ssd_put_id pid;
    uint64_t len;              /* real payload length; re.aligned_len is the IO length */
    uint64_t checksum;         /* XXH3_64bits of the len payload bytes */
    bool indexed;              /* in the index now; guarded by the index lock */
    struct ssd_guard guard;    /* the persist guard of ssd.h (one write, one guard) */
    struct ssd_entry *evict_next; /* the writer's list of just-evicted records */
    bool report;               /* evicted while indexed: goes to the eviction queue */
    UT_hash_handle hh;         /* guarded by the index lock */
} ssd_entry;

typedef struct ssd_index {
    ssd_entry *table; /* uthash head */
} ssd_index;

/* Builds the hash key of (key, pid) into buf when it fits in cap bytes, else
 * into a malloc'd buffer; returns it (NULL when out of memory) and its length
 * in *hlen. The caller frees it when it is not buf. */
uint8_t *index_key(const void *key, size_t klen, ssd_put_id pid, uint8_t *buf, size_t cap,
                   size_t *hlen);

/* The indexed entry with hash key hkey, or NULL. */
ssd_entry *index_find(ssd_index *ix, const uint8_t *hkey, size_t hlen);

/* Adds e (its hkey set) and marks it indexed. An entry indexed under the same
 * key is removed, marked not indexed, and returned (NULL when none). */
ssd_entry *index_insert(ssd_index *ix, ssd_entry *e);

/* Removes e when it is indexed; returns whether it was. */
bool index_remove(ssd_index *ix, ssd_entry *e);

size_t index_count(const ssd_index *ix);

/* Removes every entry (they stay allocated: the rings own them). */
void index_clear(ssd_index *ix);

#endif
