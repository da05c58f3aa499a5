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

#include <stdint.h>

#include "master/range_alloc.h"

/* Alignment of every range: O_DIRECT-friendly and cache-line friendly. */
#define ALLOC_ALIGN 512u

typedef struct seg_space {
    int refs;
    uint32_t node_id;
    range_alloc *ra;
} seg_space;

typedef struct allocation {
    int refs;
    seg_space *space;
    uint64_t offset;
    uint64_t len;      /* payload bytes */
    uint64_t capacity; /* bytes taken from the space */
    uint64_t stat_mark; /* stat.c: counted in the Stat pass with this number */
} allocation;

/* A space over [0, capacity) for node_id, with one reference; NULL on ENOMEM. */
seg_space *seg_space_new(uint32_t node_id, uint64_t capacity);
void seg_space_unref(seg_space *s);

/* Allocates room for len payload bytes (at least one alignment unit) with one
 * reference. Returns NULL with -ENOSPC / -ENOMEM in *err. */
allocation *allocation_new(seg_space *s, uint64_t len, int *err);
allocation *allocation_ref(allocation *a);
/* Drops a reference (NULL-safe); the last one frees the range. */
void allocation_unref(allocation *a);

#endif
