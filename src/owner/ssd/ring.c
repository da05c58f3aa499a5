/*
 * ring.c - the ring allocator of one SSD shard file (spec 000 §2.3, §6.2).
 *
 * Bookkeeping only: which logical byte range of the shard each value takes,
 * in which state it is, and which old values the head has to overwrite. The
 * writer task calls ring_reserve before it submits a write, commits or aborts
 * the entry when the write completes, and forwards the evicted entries to the
 * master; readers pin an entry for the time of their read.
 *
 * Invariants, kept by every call (checked by tests/unit/test_ssd_ring.c):
 *   - entries sit in the FIFO in increasing, non-overlapping logical order,
 *     each inside one lap: begin / capacity == (end - 1) / capacity, so no
 *     entry straddles the end of the file;
 *   - tail == oldest->begin while the FIFO is not empty, tail == head when it
 *     is. Dead space before the oldest entry is therefore never counted: the
 *     tail jumps over it together with the entry before it. All live bytes
 *     lie in [tail, head) and head - tail <= capacity, so no two live entries
 *     share a file byte;
 *   - an entry leaves the FIFO only through the tail, and its begin is then
 *     below the tail for good: ring_is_stale is simply begin < tail.
 */
#include "owner/ssd/ring.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>

void ring_init(ring *r, uint64_t capacity)
{
    assert(capacity > 0 && capacity % RING_ALIGN == 0);
    r->capacity = capacity;
    r->head = 0;
    r->tail = 0;
    r->oldest = NULL;
    r->newest = NULL;
}

static bool entry_busy(const ring_entry *e)
{
    return e->state == RING_WRITING || e->read_pins > 0 || e->commit_pins > 0;
}

/* Where an entry of len bytes placed now would begin: the head, or the start
 * of the next lap when the room left before the end of the file is short. */
static uint64_t place_begin(const ring *r, uint64_t len)
{
    uint64_t room = r->capacity - r->head % r->capacity;
    return room >= len ? r->head : r->head + room;
}

int ring_reserve(ring *r, ring_entry *e, ring_evict_fn evict, void *ud)
{
    if (e == NULL || e->aligned_len == 0 || e->aligned_len % RING_ALIGN != 0)
        return -EINVAL;
    if (e->aligned_len > r->capacity)
        return -E2BIG;

    uint64_t begin = place_begin(r, e->aligned_len);
    uint64_t end = begin + e->aligned_len;
    assert(end > begin); /* 2^64 bytes written would take centuries */

    /* The new range [begin, end) may not share a file byte with anything
     * from the tail on, so the tail must reach end - capacity. Evicting the
     * oldest entry moves the tail to the next entry's begin (over any dead
     * space between them), or to the head when none is left; with the FIFO
     * empty only dead space lies before begin, and e becoming the oldest
     * entry moves the tail to begin, end - begin <= capacity. */
    while (r->oldest != NULL && end - r->tail > r->capacity) {
        ring_entry *o = r->oldest;
        assert(o->begin == r->tail);
        if (entry_busy(o))
            return -EBUSY;
        r->oldest = o->next;
        if (r->oldest == NULL) {
            r->newest = NULL;
            r->tail = r->head;
        } else {
            r->tail = r->oldest->begin;
        }
        o->next = NULL;
        if (evict != NULL)
            evict(o, ud);
    }

    e->begin = begin;
    e->state = RING_WRITING;
    e->read_pins = 0;
    e->commit_pins = 0;
    e->next = NULL;
    if (r->newest == NULL) {
        r->oldest = e;
        r->tail = begin; /* skip the dead space before the only entry */
    } else {
        r->newest->next = e;
    }
    r->newest = e;
    r->head = end;
    assert(r->head - r->tail <= r->capacity);
    return 0;
}

uint64_t ring_file_offset(const ring *r, const ring_entry *e)
{
    return e->begin % r->capacity;
}

void ring_commit(ring *r, ring_entry *e)
{
    (void)r;
    assert(e->state == RING_WRITING);
    e->state = RING_COMMITTED;
}

void ring_abort(ring *r, ring_entry *e)
{
    (void)r;
    assert(e->state == RING_WRITING);
    e->state = RING_ABORTED;
}

bool ring_pin_read(ring *r, ring_entry *e)
{
    if (e->state != RING_COMMITTED || ring_is_stale(r, e->begin))
        return false;
    assert(e->read_pins < UINT32_MAX);
    e->read_pins++;
    return true;
}

void ring_unpin_read(ring *r, ring_entry *e)
{
    (void)r;
    assert(e->read_pins > 0);
    e->read_pins--;
}

void ring_pin_commit(ring *r, ring_entry *e)
{
    /* Taken right after ring_commit (or before it, under the same lock), on
     * an entry the tail has not passed: a Writing entry cannot be evicted. */
    (void)r; /* only read by the asserts */
    assert(e->state == RING_WRITING || e->state == RING_COMMITTED);
    assert(!ring_is_stale(r, e->begin));
    assert(e->commit_pins < UINT32_MAX);
    e->commit_pins++;
}

void ring_unpin_commit(ring *r, ring_entry *e)
{
    (void)r;
    assert(e->commit_pins > 0);
    e->commit_pins--;
}

bool ring_is_stale(const ring *r, uint64_t begin)
{
    return begin < r->tail;
}

uint64_t ring_used(const ring *r)
{
    return r->head - r->tail;
}
