/*
 * bulk_copy.c - non-temporal copies of large values (see bulk_copy.h).
 *
 * The destination is aligned first with a short memcpy; the body moves 128
 * bytes per step with unaligned loads and aligned streaming stores (AVX2
 * where the CPU has it, SSE2 otherwise: every x86-64 has SSE2), a store
 * fence makes them globally visible before the call returns, and the tail is
 * a memcpy again. Other architectures use memcpy throughout.
 */
#include "common/bulk_copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define BULK_COPY_HAVE_STREAM 1
#else
#define BULK_COPY_HAVE_STREAM 0
#endif

/* -1 until the first copy of BULK_COPY_STREAM_MIN bytes looks at the CPU. */
static int chosen = -1;

/* Copies made with streaming stores by this thread (for tests). */
static _Thread_local uint64_t streamed_here;

#if BULK_COPY_HAVE_STREAM
/* n is a multiple of 128 and dst is 32-byte aligned. */
__attribute__((target("avx2"))) static void stream_avx2(uint8_t *dst, const uint8_t *src,
                                                        size_t n)
{
    for (size_t i = 0; i < n; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(src + i + 64));
        __m256i d = _mm256_loadu_si256((const __m256i *)(src + i + 96));
        _mm256_stream_si256((__m256i *)(dst + i), a);
        _mm256_stream_si256((__m256i *)(dst + i + 32), b);
        _mm256_stream_si256((__m256i *)(dst + i + 64), c);
        _mm256_stream_si256((__m256i *)(dst + i + 96), d);
    }
}

/* n is a multiple of 128 and dst is 16-byte aligned. */
static void stream_sse2(uint8_t *dst, const uint8_t *src, size_t n)
{
    for (size_t i = 0; i < n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
}
#endif

static enum bulk_copy_kind best_kind(void)
{
#if BULK_COPY_HAVE_STREAM
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? BULK_COPY_AVX2 : BULK_COPY_SSE2;
#else
    return BULK_COPY_MEMCPY;
#endif
}

enum bulk_copy_kind bulk_copy_kind(void)
{
    int k = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
    if (k < 0) {
        k = best_kind();
        __atomic_store_n(&chosen, k, __ATOMIC_RELAXED);
    }
    return (enum bulk_copy_kind)k;
}

enum bulk_copy_kind bulk_copy_select(enum bulk_copy_kind kind)
{
    enum bulk_copy_kind best = best_kind();
    enum bulk_copy_kind k = kind < best ? kind : best;
    __atomic_store_n(&chosen, (int)k, __ATOMIC_RELAXED);
    return k;
}

void bulk_copy(void *dst, const void *src, size_t n)
{
    if (!n)
        return; /* src and dst may be NULL then (memcpy would not allow it) */
    enum bulk_copy_kind k = n >= BULK_COPY_STREAM_MIN ? bulk_copy_kind() : BULK_COPY_MEMCPY;
    if (k == BULK_COPY_MEMCPY || !BULK_COPY_HAVE_STREAM) {
        memcpy(dst, src, n);
        return;
    }
#if BULK_COPY_HAVE_STREAM
    uint8_t *d = dst;
    const uint8_t *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 31);
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    size_t body = n & ~(size_t)127;
    if (k == BULK_COPY_AVX2)
        stream_avx2(d, s, body);
    else
        stream_sse2(d, s, body);
    _mm_sfence();
    streamed_here++;
    memcpy(d + body, s + body, n - body);
#endif
}

uint64_t bulk_copy_streamed_by_this_thread(void)
{
    return streamed_here;
}
