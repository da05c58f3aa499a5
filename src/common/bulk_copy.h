/*
 * bulk_copy.h - copying a large value into the shared segment.
 *
 * A put writes its value once into memory that this process will not read
 * again: the owner persists it, a peer pulls it, a get in another process
 * maps it. For such a copy, stores that bypass the cache (non-temporal) save
 * the read-for-ownership of every destination line and leave the caches to
 * the caller: 4 MiB into a cold segment runs at 24-26 GiB/s here against
 * memcpy's 18-19 (glibc switches to such stores only above its own
 * threshold, 127 MiB on this machine). Below BULK_COPY_STREAM_MIN, where the
 * destination may well stay in cache, and where the CPU has no such stores,
 * it is memcpy.
 */
#ifndef FX_COMMON_BULK_COPY_H
#define FX_COMMON_BULK_COPY_H

#include <stddef.h>
#include <stdint.h>

/* Copies of at least this many bytes bypass the cache. */
#define BULK_COPY_STREAM_MIN (256u << 10)

/* memcpy(dst, src, n) for buffers that do not overlap; the bytes are visible
 * to other threads and processes like memcpy's once it returns. With n == 0
 * it does nothing (dst and src may then be NULL). */
void bulk_copy(void *dst, const void *src, size_t n);

/* How copies of BULK_COPY_STREAM_MIN bytes or more are made. */
enum bulk_copy_kind {
    BULK_COPY_MEMCPY, /* through the cache */
    BULK_COPY_SSE2,   /* 16-byte streaming stores */
    BULK_COPY_AVX2,   /* 32-byte streaming stores */
};

/* The kind in use: the best this CPU has unless a test chose another. */
enum bulk_copy_kind bulk_copy_kind(void);
/* Tests and benchmarks: use `kind` from now on, or the best the CPU has
 * below it. Not thread-safe. Returns the kind in use afterwards. */
enum bulk_copy_kind bulk_copy_select(enum bulk_copy_kind kind);
/* Tests: how many copies this thread made with streaming stores so far. */
uint64_t bulk_copy_streamed_by_this_thread(void);

#endif
