/*
 * allocation.h - refcounted ranges of an owner's segment (the spec's
 * Arc<Allocation>) and the per-owner space they are carved from.
 *
 * A seg_space wraps one owner segment's range allocator. An allocation is
 * {space, offset, len, capacity}; every table that "holds a guard" in the spec
 * (in-flight puts and gets, a route's memory replica, get_holding) holds one
 * reference, and the last release returns the range to the space. A space
 * outlives its owner's membership while allocations still point into it.
 * Loop-thread only, so the counts are plain integers.
 */
#ifndef FX_MASTER_ALLOCATION_H
#define FX_MASTER_ALLOCATION_H

#include <stdbool.h>
#include <stdint.h>

#include "master/range_alloc.h"

/* Alignment of every range: O_DIRECT-friendly and cache-line friendly. */
#define ALLOC_ALIGN 512u

typedef struct seg_space {
    int refs;
    uint32_t node_id;
    range_alloc *ra;
    /* Capacity (capacity.c): the evictable memory replicas of this owner sit
     * in `cache`, and their weight plus `reserved` (cache_reserved_bytes:
     * in-flight durable get targets, async SSD persists, leased replicas) is
     * kept at or under `budget` by evicting. */
    struct replica_cache *cache;
    uint64_t budget;
    uint64_t reserved;
    /* Bytes of ranges held by put grants (put_grant.c): taken from the
     * allocator but free for the owner's next puts, so not shown as used. */
    uint64_t granted;
    uint64_t evictions;
    /* Bytes of evicted replicas still referenced (owner caches, holders,
     * reads in flight): they come back to the allocator when released. */
    uint64_t returning;
    /* Allocations whose last reference went while the allocator could not
     * take their range back (out of memory for a node): released again on
     * this space's next allocation or release, freed with the space. */
    struct allocation *deferred;
} seg_space;

/* One per stored value on the master, so kept small (40 bytes): the bytes
 * taken from the space follow from len (allocation_capacity). */
typedef struct allocation {
    int refs;
    bool reserved;      /* its capacity is counted in space->reserved */
    bool persisting;    /* ssd.c: an SSD persist of it is in flight */
    bool returning;     /* evicted while referenced: counted in space->returning */
    seg_space *space;
    uint64_t offset;
    uint64_t len; /* payload bytes */
    union {
        uint64_t stat_mark;          /* stat.c: counted in the Stat pass with this number */
        struct allocation *next_deferred; /* once dead, on space->deferred */
    };
} allocation;

/* The bytes a len-byte payload takes from a space: len rounded up to
 * ALLOC_ALIGN, at least one unit; 0 when that overflows. */
static inline uint64_t alloc_capacity_of(uint64_t len)
{
    uint64_t cap = len ? (len + ALLOC_ALIGN - 1) & ~(uint64_t)(ALLOC_ALIGN - 1) : ALLOC_ALIGN;
    return cap < len ? 0 : cap;
}

/* The bytes a takes from its space. */
static inline uint64_t allocation_capacity(const allocation *a)
{
    return alloc_capacity_of(a->len);
}

/* A space over [0, capacity) for node_id, with one reference and an empty
 * replica cache whose budget is the whole capacity; NULL on ENOMEM. */
seg_space *seg_space_new(uint32_t node_id, uint64_t capacity);
void seg_space_unref(seg_space *s);
void seg_space_set_budget(seg_space *s, uint64_t budget);
/* Adds / removes n bytes of cache_reserved_bytes not tied to an allocation's
 * life (an SSD persist in flight). */
void seg_space_reserve(seg_space *s, uint64_t n);
void seg_space_release(seg_space *s, uint64_t n);

/* The bytes of s that values and puts in flight use: what its allocator
 * handed out, less the ranges put grants hold for puts to come. */
static inline uint64_t seg_space_used(const seg_space *s)
{
    return range_alloc_used(s->ra) - s->granted;
}

/* Allocates room for len payload bytes (at least one alignment unit) with one
 * reference. Returns NULL with -ENOSPC / -ENOMEM in *err. */
allocation *allocation_new(seg_space *s, uint64_t len, int *err);
/* Allocates exactly the range at offset (aligned) for len payload bytes, as
 * allocation_new would have: a rebuild from an owner's report. NULL with
 * -EINVAL (unaligned, out of the segment), -EBUSY (taken) or -ENOMEM. */
allocation *allocation_new_at(seg_space *s, uint64_t offset, uint64_t len, int *err);
allocation *allocation_ref(allocation *a);
/* Makes a hold a len-byte payload (len <= a->len), giving the capacity it no
 * longer needs back to its space (a put pool's grant taken by a smaller
 * value). Returns 0, or -ENOMEM (nothing changed) when the space could not
 * take the bytes back. */
int allocation_shrink(allocation *a, uint64_t len);
/* Drops a reference (NULL-safe); the last one frees the range (and ends its
 * reservation). */
void allocation_unref(allocation *a);
/* Counts a's capacity in its space's reserved bytes until allocation_unreserve
 * or the last reference goes (the spec's reservation bound to the
 * allocation's on-drop callback). Both are idempotent. */
void allocation_reserve(allocation *a);
void allocation_unreserve(allocation *a);

#endif
