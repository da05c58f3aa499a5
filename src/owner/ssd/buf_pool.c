/*
 * buf_pool.c - the store's aligned IO buffers (store_internal.h). O_DIRECT
 * reads and writes need buffers aligned to the block; writes and scratch reads
 * take them here and give them back, so the data path allocates nothing per
 * IO: a buffer returns to its power-of-two size class (4 KiB to 64 MiB, a
 * bounded number per class and in all) and the next request of that class
 * reuses it. One mutex guards the pool, a leaf lock.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "owner/ssd/store_internal.h"

#define BUF_ALIGN 4096u
#define HUGE_BUF (2u << 20)

static int pool_class(uint64_t size)
{
    int c = 0;
    while (c < POOL_CLASSES && (1ull << (POOL_MIN_SHIFT + c)) < size)
        c++;
    return c < POOL_CLASSES ? c : -1;
}

void *ssd_buf_get(buf_pool *p, uint64_t size)
{
    int c = pool_class(size);
    void *b = NULL;
    if (c >= 0) {
        pthread_mutex_lock(&p->lock);
        if (p->n[c] > 0) {
            b = p->free[c][--p->n[c]];
            p->cached -= 1ull << (POOL_MIN_SHIFT + c);
        }
        pthread_mutex_unlock(&p->lock);
        if (b)
            return b;
        size = 1ull << (POOL_MIN_SHIFT + c);
    } else {
        size = (size + BUF_ALIGN - 1) & ~(uint64_t)(BUF_ALIGN - 1);
    }
    /* Buffers of 2 MiB and more sit on 2 MiB pages where the kernel gives them
     * (THP on request): an O_DIRECT IO from scattered 4 KiB pages reaches a
     * virtio disk as ~512 KiB requests, from a huge page as one request
     * (measured: 4 MiB writes 1.3 -> 2.2 GB/s; docs/benchmarks.md). */
    size_t align = size >= HUGE_BUF ? HUGE_BUF : BUF_ALIGN;
    if (size > SIZE_MAX || posix_memalign(&b, align, (size_t)size) != 0)
        return NULL;
    if (align == HUGE_BUF)
        madvise(b, (size_t)size, MADV_HUGEPAGE);
    return b;
}

void ssd_buf_put(buf_pool *p, void *b, uint64_t size)
{
    if (!b)
        return;
    int c = pool_class(size);
    if (c >= 0) {
        uint64_t bytes = 1ull << (POOL_MIN_SHIFT + c);
        pthread_mutex_lock(&p->lock);
        if (p->n[c] < POOL_PER_CLASS && p->cached + bytes <= POOL_MAX_CACHED) {
            p->free[c][p->n[c]++] = b;
            p->cached += bytes;
            b = NULL;
        }
        pthread_mutex_unlock(&p->lock);
    }
    free(b);
}

void ssd_buf_pool_destroy(buf_pool *p)
{
    for (int c = 0; c < POOL_CLASSES; c++)
        for (unsigned i = 0; i < p->n[c]; i++)
            free(p->free[c][i]);
    pthread_mutex_destroy(&p->lock);
}
