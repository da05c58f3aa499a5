/*
 * le.h - little-endian integers in wire headers (frame.c, dp_frame.c): the
 * n low bytes of v, least significant first, independent of the host.
 */
#ifndef FX_COMMON_LE_H
#define FX_COMMON_LE_H

#include <stdint.h>

static inline void le_put(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t le_get(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#endif
