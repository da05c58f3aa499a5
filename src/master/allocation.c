/*
 * allocation.c - refcounted segment ranges (see allocation.h).
 */
#include "master/allocation.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

seg_space *seg_space_new(uint32_t node_id, uint64_t capacity)
{
    seg_space *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->ra = range_alloc_new(capacity);
    if (!s->ra) {
        free(s);
        return NULL;
    }
    s->refs = 1;
    s->node_id = node_id;
    return s;
}

void seg_space_unref(seg_space *s)
{
    if (!s)
        return;
    assert(s->refs > 0);
    if (--s->refs == 0) {
        range_alloc_free(s->ra);
        free(s);
    }
}

allocation *allocation_new(seg_space *s, uint64_t len, int *err)
{
    uint64_t cap = len ? (len + ALLOC_ALIGN - 1) & ~(uint64_t)(ALLOC_ALIGN - 1) : ALLOC_ALIGN;
    if (cap < len) {
        *err = -ENOSPC;
        return NULL;
    }
    allocation *a = malloc(sizeof *a);
    if (!a) {
        *err = -ENOMEM;
        return NULL;
    }
    int r = range_alloc_alloc(s->ra, cap, ALLOC_ALIGN, &a->offset);
    if (r < 0) {
        free(a);
        *err = r == -EINVAL ? -ENOSPC : r;
        return NULL;
    }
    a->refs = 1;
    a->space = s;
    s->refs++;
    a->len = len;
    a->capacity = cap;
    return a;
}

allocation *allocation_ref(allocation *a)
{
    assert(a->refs > 0);
    a->refs++;
    return a;
}

void allocation_unref(allocation *a)
{
    if (!a)
        return;
    assert(a->refs > 0);
    if (--a->refs == 0) {
        int r = range_alloc_release(a->space->ra, a->offset, a->capacity);
        assert(r == 0);
        (void)r;
        seg_space_unref(a->space);
        free(a);
    }
}
