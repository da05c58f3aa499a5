/*
 * replica_index.h - what this owner holds: for each key with a replica here,
 * (put_id, len, memory range, SSD copy), kept in step by the master.
 *
 * The master's routes die with it; the owners' indexes are what a new master
 * rebuilds them from (RecoveryReport, docs/decisions.md "The cache survives
 * its master"). The index must therefore never claim more than is true:
 *
 * - one entry per key, the newest version this owner was told of; an older
 *   version published late is ignored, a newer one replaces the entry;
 * - the master's batches drop what a delete, an overwrite or an eviction
 *   dropped (IndexOp), and the owner applies its own puts, deletes, durable
 *   copies, SSD commits and SSD evictions itself when it learns of them;
 * - before any range of the segment is written (a put's range, a get's
 *   target, a peer's push), the memory of every entry overlapping it is
 *   forgotten: a range the master reused after an eviction it has not told
 *   us about yet can then never be reported as the old key's bytes.
 *
 * Memory entries never overlap one another (each is a live allocation of the
 * master, or forgotten before its range is written again), so they sit in a
 * red-black tree by offset and an overlap query is a walk from the last entry
 * starting below the range's end. Loop-thread only.
 */
#ifndef FX_OWNER_REPLICA_INDEX_H
#define FX_OWNER_REPLICA_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct index_pid {
    uint64_t time_ms;
    uint32_t version;
} index_pid;

/* <0, 0, >0 as a is older than, the same as, newer than b. */
int index_pid_cmp(index_pid a, index_pid b);

typedef struct index_entry {
    const char *key;
    size_t klen;
    index_pid pid;
    uint64_t len; /* the value's bytes */
    bool in_memory;
    uint64_t offset; /* in the segment, when in_memory */
    bool on_ssd;
    uint64_t ssd_len;
} index_entry;

typedef struct replica_index replica_index;

replica_index *replica_index_new(void);
void replica_index_free(replica_index *ri);

/* A memory replica of (key, pid) of len bytes at offset. Replaces the key's
 * entry when it is older; ignored when the key has a newer one. 0 or -ENOMEM. */
int replica_index_publish(replica_index *ri, const void *key, size_t klen, index_pid pid,
                          uint64_t offset, uint64_t len);
/* The key's entry goes if its put_id is pid or older (a delete or overwrite). */
void replica_index_drop_upto(replica_index *ri, const void *key, size_t klen, index_pid pid);
/* The key's entry goes if its put_id is older than pid (a put of pid ended). */
void replica_index_drop_older(replica_index *ri, const void *key, size_t klen, index_pid pid);
/* The key's entry forgets its memory replica if it is exactly pid's (an
 * eviction); an entry left with nothing goes. */
void replica_index_drop_memory(replica_index *ri, const void *key, size_t klen, index_pid pid);
/* The SSD copy of exactly (key, pid): committed (on) or evicted (off). A
 * commit for a key without that version's entry adds nothing. */
void replica_index_set_ssd(replica_index *ri, const void *key, size_t klen, index_pid pid,
                           bool on, uint64_t ssd_len);
/* [offset, offset + len) is about to be written: every entry whose memory
 * overlaps it forgets its memory. Returns how many did. */
size_t replica_index_forget_range(replica_index *ri, uint64_t offset, uint64_t len);
/* Forgets everything (a master that does not know our replicas). */
void replica_index_clear(replica_index *ri);

size_t replica_index_count(const replica_index *ri);
/* The key's entry, or false. */
bool replica_index_find(replica_index *ri, const void *key, size_t klen, index_entry *out);

/* Iteration in no particular order, robust to nothing: the index must not
 * change between replica_index_first and the last replica_index_next. */
typedef struct index_cursor {
    void *next;
} index_cursor;
bool replica_index_first(replica_index *ri, index_cursor *c, index_entry *out);
bool replica_index_next(index_cursor *c, index_entry *out);

#endif
