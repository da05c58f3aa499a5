/*
 * u64_array.h - appending to a growable array of uint64_t (ids queued for a
 * batch: holder acks to the master, a get thread's acks for the loop).
 */
#ifndef FX_COMMON_U64_ARRAY_H
#define FX_COMMON_U64_ARRAY_H

#include <stdint.h>
#include <stdlib.h>

/* Appends v to *a (*n used of *cap, growing by doubling from first_cap).
 * 0, or -1 when out of memory with the array unchanged. */
static inline int u64_array_push(uint64_t **a, size_t *n, size_t *cap, size_t first_cap,
                                 uint64_t v)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : first_cap;
        uint64_t *grown = realloc(*a, c * sizeof *grown);
        if (!grown)
            return -1;
        *a = grown;
        *cap = c;
    }
    (*a)[(*n)++] = v;
    return 0;
}

#endif
