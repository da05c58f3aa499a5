/*
 * memdup.h - a malloc'd copy of a byte range (keys are binary, not strings).
 */
#ifndef FX_COMMON_MEMDUP_H
#define FX_COMMON_MEMDUP_H

#include <stdlib.h>
#include <string.h>

/* A copy of the n bytes at p (at least one byte is allocated, so n == 0 still
 * gives a unique pointer), or NULL when out of memory. The caller frees it. */
static inline void *fx_memdup(const void *p, size_t n)
{
    void *q = malloc(n ? n : 1);
    if (q && n)
        memcpy(q, p, n);
    return q;
}

#endif
