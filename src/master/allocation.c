/*
 * allocation.c - refcounted segment ranges (see allocation.h).
 */
#include "master/allocation.h"
#include "master/replica_cache.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

seg_space *seg_space_new(uint32_t node_id, uint64_t capacity)
{
    seg_space *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->ra = range_alloc_new(capacity);
    s->cache = replica_cache_new(capacity);
    if (!s->ra || !s->cache) {
        range_alloc_free(s->ra);
        replica_cache_free(s->cache);
        free(s);
        return NULL;
    }
    s->refs = 1;
    s->node_id = node_id;
    s->budget = capacity;
    return s;
}

void seg_space_set_budget(seg_space *s, uint64_t budget)
{
    s->budget = budget;
    replica_cache_set_capacity(s->cache, budget);
}

void seg_space_reserve(seg_space *s, uint64_t n)
{
    s->reserved += n;
}

void seg_space_release(seg_space *s, uint64_t n)
{
    assert(s->reserved >= n);
    s->reserved -= n;
}

/* Releases the ranges of the deferred allocations that the allocator takes
 * now; the others stay deferred. */
static void retry_deferred(seg_space *s)
{
    allocation **link = &s->deferred;
    while (*link) {
        allocation *a = *link;
        if (range_alloc_release(s->ra, a->offset, allocation_capacity(a)) == 0) {
            *link = a->next_deferred;
            free(a);
        } else {
            link = &a->next_deferred;
        }
    }
}

void seg_space_unref(seg_space *s)
{
    if (!s)
        return;
    assert(s->refs > 0);
    if (--s->refs == 0) {
        assert(replica_cache_count(s->cache) == 0 && s->reserved == 0 && s->returning == 0);
        while (s->deferred) {
            allocation *a = s->deferred;
            s->deferred = a->next_deferred;
            free(a);
        }
        replica_cache_free(s->cache);
        range_alloc_free(s->ra);
        free(s);
    }
}

/* An allocation of [offset, offset + cap) for len payload bytes, one
 * reference; the range is already taken from s. NULL when out of memory. */
static allocation *wrap_range(seg_space *s, uint64_t offset, uint64_t len, uint64_t cap)
{
    allocation *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->refs = 1;
    a->space = s;
    s->refs++;
    a->offset = offset;
    a->len = len;
    (void)cap; /* allocation_capacity(a) gives it back */
    return a;
}

allocation *allocation_new(seg_space *s, uint64_t len, int *err)
{
    uint64_t cap = alloc_capacity_of(len), offset = 0;
    if (!cap) {
        *err = -ENOSPC;
        return NULL;
    }
    if (s->deferred)
        retry_deferred(s);
    int r = range_alloc_alloc(s->ra, cap, ALLOC_ALIGN, &offset);
    if (r < 0) {
        *err = r == -EINVAL ? -ENOSPC : r;
        return NULL;
    }
    allocation *a = wrap_range(s, offset, len, cap);
    if (!a) {
        range_alloc_release(s->ra, offset, cap);
        *err = -ENOMEM;
    }
    return a;
}

allocation *allocation_new_at(seg_space *s, uint64_t offset, uint64_t len, int *err)
{
    uint64_t cap = alloc_capacity_of(len);
    if (!cap || offset % ALLOC_ALIGN) {
        *err = -EINVAL;
        return NULL;
    }
    if (s->deferred)
        retry_deferred(s);
    int r = range_alloc_take(s->ra, offset, cap);
    if (r < 0) {
        *err = r;
        return NULL;
    }
    allocation *a = wrap_range(s, offset, len, cap);
    if (!a) {
        range_alloc_release(s->ra, offset, cap);
        *err = -ENOMEM;
    }
    return a;
}

allocation *allocation_ref(allocation *a)
{
    assert(a->refs > 0);
    a->refs++;
    return a;
}

int allocation_shrink(allocation *a, uint64_t len)
{
    assert(len <= a->len && !a->reserved && !a->returning);
    uint64_t have = allocation_capacity(a), need = alloc_capacity_of(len);
    if (need < have) {
        int r = range_alloc_release(a->space->ra, a->offset + need, have - need);
        assert(r == 0 || r == -ENOMEM);
        if (r < 0)
            return r;
    }
    a->len = len;
    return 0;
}

void allocation_unref(allocation *a)
{
    if (!a)
        return;
    assert(a->refs > 0);
    if (--a->refs == 0) {
        seg_space *s = a->space;
        allocation_unreserve(a);
        if (a->returning)
            s->returning -= allocation_capacity(a);
        int r = range_alloc_release(s->ra, a->offset, allocation_capacity(a));
        assert(r == 0 || r == -ENOMEM); /* anything else: a range released twice */
        if (r == -ENOMEM) {
            /* No node for the range: it waits on the space, not lost. */
            a->next_deferred = s->deferred;
            s->deferred = a;
        } else {
            free(a);
            if (s->deferred)
                retry_deferred(s);
        }
        seg_space_unref(s);
    }
}

void allocation_reserve(allocation *a)
{
    if (a->reserved)
        return;
    a->reserved = true;
    seg_space_reserve(a->space, allocation_capacity(a));
}

void allocation_unreserve(allocation *a)
{
    if (!a->reserved)
        return;
    a->reserved = false;
    seg_space_release(a->space, allocation_capacity(a));
}
