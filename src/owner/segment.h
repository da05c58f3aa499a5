/*
 * segment.h - the owner's memory segment: a memfd shared with local externals.
 *
 * The segment is created at startup with memory_size bytes, its pages reserved
 * with fallocate (a too-large size fails here, not with SIGBUS later; one
 * larger than the machine's available memory is refused before that) and
 * pre-faulted, because first touch of memory is ~40x slower than a copy into
 * touched memory on these machines (DESIGN §9). Externals receive the fd over
 * the Unix socket and map it; every offset they are given is inside [0, size).
 *
 * Huge pages matter more than usual here: on these virtual machines every
 * process pays a host-level fault on its first touch of each 4 KiB page of a
 * shared mapping, even after another process touched it (measured: the first
 * copy into a fresh mapping runs at 0.2-0.9 GB/s, later ones at 14-20 GB/s),
 * while with 2 MiB hugetlb pages the first copy runs at full speed in every
 * process. `scripts/hugepages.sh SIZE` reserves them (root).
 */
#ifndef FX_OWNER_SEGMENT_H
#define FX_OWNER_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct segment {
    int fd;
    uint8_t *base;
    uint64_t size;
    bool huge; /* backed by 2 MiB hugetlb pages */
} segment;

/* The least memory a 4 KiB-page segment leaves free (also 1/32 of what is
 * available, whichever is more). */
#define SEGMENT_MIN_HEADROOM (64ull << 20)

/* Creates and maps the segment. With try_huge, 2 MiB hugetlb pages are used
 * when enough are reserved (the size is then rounded down to 2 MiB), else 4 KiB
 * pages, and only when size leaves the machine SEGMENT_MIN_HEADROOM of its
 * available memory (mem_avail.h): a larger one is -ENOMEM at once, where
 * reserving it would wake the OOM killer. With prefault, the check and the
 * reservation hold the reserve lock (reserve_lock.h), so owners starting
 * together see each other's share. Returns 0, or a negative errno with the
 * reason in err (a sentence without the key's name). The memfd is sealed
 * (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) before it is returned: no
 * process it is passed to can change its size. */
int segment_create(segment *s, uint64_t size, bool prefault, bool try_huge, char *err,
                   size_t errlen);
void segment_destroy(segment *s);
/* True when [off, off+len) lies inside the segment (overflow-safe). */
bool segment_contains(const segment *s, uint64_t off, uint64_t len);

#endif
