/*
 * loopback.h - one 127.0.0.1 TCP stream tuned like the owners' data plane
 * (TCP_NODELAY, reno, 4 MiB socket buffers): the ceiling of one data-plane
 * connection on the machine at hand, and the baseline the cluster benchmarks
 * compare owner-to-owner transfers with (DESIGN.md §9).
 *
 * A sender thread writes LB_CHUNK pieces from a source buffer in a loop; the
 * calling thread receives them into a distinct ring (not a cache-hot buffer).
 * Both buffers come from the caller; lb_huge_alloc() gives them on transparent
 * huge pages, as the owners' segments are on 2 MiB pages when reserved (on
 * this kind of guest the page size alone changes a stream by up to 3x).
 */
#ifndef FX_BENCH_LOOPBACK_H
#define FX_BENCH_LOOPBACK_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"

#define LB_CHUNK (4u << 20) /* one send / receive unit */

/* The two buffers of a stream; each at least LB_CHUNK bytes. */
typedef struct lb_bufs {
    const uint8_t *src; /* the sender's source, cycled through */
    size_t src_len;
    uint8_t *ring;      /* the receiver's ring */
    size_t ring_len;
} lb_bufs;

/* Runs one stream for warm_ns, then measures it for run_ns: *chunks gets the
 * LB_CHUNK pieces received while measuring, *secs the measured time, and h
 * (may be NULL) the time to receive each piece. cc (may be NULL) receives
 * the congestion control the socket ended up with. Returns 0, or -1 after
 * printing why to stderr (nothing left open). */
int lb_stream(const lb_bufs *lb, uint64_t warm_ns, uint64_t run_ns, uint64_t *chunks,
              double *secs, hist *h, char *cc, size_t cap);

/* len bytes (a multiple of 2 MiB) of private memory, 2 MiB aligned, advised
 * MADV_HUGEPAGE before the first touch and filled with a byte from seed.
 * *huge_kib: how much of it the kernel put on huge pages (AnonHugePages in
 * /proc/self/smaps). Returns the memory (free with munmap(p, len)), or NULL
 * after printing why. */
uint8_t *lb_huge_alloc(size_t len, int seed, unsigned long long *huge_kib);

#endif
