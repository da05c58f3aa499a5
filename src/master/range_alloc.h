/*
 * range_alloc.h - the range allocator over one owner's memory segment.
 *
 * The master hands out byte ranges [off, off+len) inside an owner's segment
 * [0, capacity). Free ranges are kept in two red-black trees (by offset for
 * coalescing, by size for best fit), so alloc and free are O(log n) in the
 * number of free ranges. Freeing coalesces with both neighbours, so freeing
 * everything leaves exactly one free range. Not thread-safe: the master's loop
 * thread owns each allocator.
 */
#ifndef FX_MASTER_RANGE_ALLOC_H
#define FX_MASTER_RANGE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

typedef struct range_alloc range_alloc;

/* A new allocator over [0, capacity); NULL when out of memory. */
range_alloc *range_alloc_new(uint64_t capacity);
/* Frees the allocator (NULL-safe); outstanding ranges are forgotten. */
void range_alloc_free(range_alloc *ra);

/* Allocates len > 0 bytes whose offset is a multiple of align (a power of two,
 * >= 1). Returns 0 and *off, -ENOSPC when no free range fits, -EINVAL for bad
 * arguments, -ENOMEM when no tree node can be allocated; nothing changes on
 * failure. Best fit: the smallest free range that can hold it (when more than a
 * few smaller ranges fail only because of alignment, the smallest range that
 * fits at any offset is taken instead, to stay O(log n)). */
int range_alloc_alloc(range_alloc *ra, uint64_t len, uint64_t align, uint64_t *off);

/* Returns [off, off+len) to the free set. The range must be one that alloc
 * returned (same off and len). Returns 0, or -EINVAL when the range is out of
 * bounds or overlaps a free range (a double free), -ENOMEM when the range has
 * no free neighbour and no node for it can be allocated; nothing changes on
 * failure (the caller keeps the range and releases it again later). */
int range_alloc_release(range_alloc *ra, uint64_t off, uint64_t len);

/* Allocates exactly [off, off + len) (a master rebuilding what owners
 * report). Returns 0, -EINVAL when out of bounds or len is 0, -EBUSY when
 * some byte of it is already allocated, -ENOMEM. Released like any range. */
int range_alloc_take(range_alloc *ra, uint64_t off, uint64_t len);
uint64_t range_alloc_capacity(const range_alloc *ra);
uint64_t range_alloc_used(const range_alloc *ra);
/* Length of the largest free range (0 when full). */
uint64_t range_alloc_largest_free(const range_alloc *ra);
/* Number of free ranges (1 when empty and fully coalesced). */
size_t range_alloc_free_count(const range_alloc *ra);

#endif
