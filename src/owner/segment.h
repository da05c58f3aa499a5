/*
 * segment.h - the owner's memory segment: a memfd shared with local externals.
 *
 * The segment is created at startup with memory_size bytes, its pages reserved
 * with fallocate (a too-large size fails here, not with SIGBUS later) and
 * pre-faulted, because first touch of memory is ~40x slower than a copy into
 * touched memory on these machines (DESIGN §9). Externals receive the fd over
 * the Unix socket and map it; every offset they are given is inside [0, size).
 */
#ifndef FX_OWNER_SEGMENT_H
#define FX_OWNER_SEGMENT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct segment {
    int fd;
    uint8_t *base;
    uint64_t size;
} segment;

/* Creates and maps the segment. Returns 0 or a negative errno. */
int segment_create(segment *s, uint64_t size, bool prefault);
void segment_destroy(segment *s);
/* True when [off, off+len) lies inside the segment (overflow-safe). */
bool segment_contains(const segment *s, uint64_t off, uint64_t len);

#endif
