/*
 * ring.h - the ring allocator of one SSD shard file (spec 000 §2.3, §6.2).
 *
 * A shard is a fixed-size file used as a circular log. Positions are logical
 * and only grow: `head` is where the next value goes, `tail` is how far the
 * ring may overwrite; the file offset of a position is `pos % capacity`. A
 * value takes one contiguous `aligned_len` (a multiple of 512) region; when
 * the room left before the end of the file is too short, the region starts at
 * the file's beginning instead (the skipped bytes are dead space until the
 * tail passes them).
 *
 * Entries live in a FIFO, oldest first. Reserving room advances the tail over
 * the oldest entries and hands each evicted entry to the caller; it never
 * passes an entry that is still Writing, has a read pin or a route-commit pin:
 * then it stops and reports -EBUSY (the spec's BlockedByBusyIo) so that the
 * writer can wait for a release and retry. Aborted entries are passed freely.
 *
 * Pure bookkeeping: no IO, no allocation, no locking. The caller owns the
 * entries (embeds ring_entry in its own record) and serializes all calls on a
 * ring with its own lock.
 */
#ifndef FX_SSD_RING_H
#define FX_SSD_RING_H

#include <stdbool.h>
#include <stdint.h>

#define RING_ALIGN 512u

enum ring_state { RING_WRITING = 1, RING_COMMITTED = 2, RING_ABORTED = 3 };

typedef struct ring_entry {
    uint64_t begin;       /* logical position of the first byte */
    uint64_t aligned_len; /* bytes taken, a multiple of RING_ALIGN, > 0 */
    int state;            /* enum ring_state */
    uint32_t read_pins;
    uint32_t commit_pins;
    struct ring_entry *next; /* FIFO link, towards newer entries */
} ring_entry;

typedef struct ring {
    uint64_t capacity; /* file size, a multiple of RING_ALIGN */
    uint64_t head;     /* next logical position to hand out */
    uint64_t tail;     /* no live entry begins before this */
    ring_entry *oldest, *newest;
} ring;

/* Called for each entry the tail passes (Committed or Aborted), already
 * unlinked; the caller may free it. */
typedef void (*ring_evict_fn)(ring_entry *e, void *ud);

/* An empty ring over a file of capacity bytes (a multiple of RING_ALIGN). */
void ring_init(ring *r, uint64_t capacity);

/* Places e (aligned_len set, a multiple of RING_ALIGN) at the head as a Writing
 * entry: sets e->begin and links it as the newest entry, evicting the oldest
 * entries as needed (each passed to evict). Returns 0, -E2BIG when aligned_len
 * exceeds the capacity, -EINVAL for a bad length, or -EBUSY when an entry in
 * the way is Writing or pinned (entries evicted before it stay evicted; e is
 * not placed). */
int ring_reserve(ring *r, ring_entry *e, ring_evict_fn evict, void *ud);

/* The file offset of e's first byte. */
uint64_t ring_file_offset(const ring *r, const ring_entry *e);

/* Writing -> Committed (the write completed with exactly aligned_len bytes). */
void ring_commit(ring *r, ring_entry *e);
/* Writing -> Aborted (the write failed or was short); the tail may pass it. */
void ring_abort(ring *r, ring_entry *e);

/* Takes a read pin when e is Committed and not stale; returns false otherwise. */
bool ring_pin_read(ring *r, ring_entry *e);
void ring_unpin_read(ring *r, ring_entry *e);
/* The route-commit pin of the spec's KvSsdPersistGuard. */
void ring_pin_commit(ring *r, ring_entry *e);
void ring_unpin_commit(ring *r, ring_entry *e);

/* True when a position captured earlier is behind the tail now. */
bool ring_is_stale(const ring *r, uint64_t begin);
/* Bytes between tail and head (including dead space). */
uint64_t ring_used(const ring *r);

#endif
