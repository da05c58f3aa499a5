/*
 * test_bulk_copy.c - bulk_copy copies exactly the bytes memcpy would, for every
 * size around the streaming threshold and every alignment of source and
 * destination, in each kind this CPU can run (memcpy, SSE2 and AVX2 streaming
 * stores), touching no byte outside the destination; copies of
 * BULK_COPY_STREAM_MIN bytes or more, and only those, stream wherever the CPU
 * can.
 */
#include "common/bulk_copy.h"
#include "testlib.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BUF ((size_t)5 << 20)
#define GUARD 64

static unsigned long long rng = 0x2545f4914f6cdd1dull;

static uint64_t next_rand(void)
{
    return test_rand(&rng);
}

static const char *kind_name(enum bulk_copy_kind k)
{
    return k == BULK_COPY_AVX2 ? "avx2" : k == BULK_COPY_SSE2 ? "sse2" : "memcpy";
}

/* Copies n bytes from src + so to a destination at offset do_ of a buffer
 * filled with a pattern, and checks the copy and the bytes around it. */
static void check_copy(const uint8_t *src, uint8_t *dst, size_t so, size_t do_, size_t n,
                       enum bulk_copy_kind k)
{
    size_t span = n + 2 * GUARD;
    memset(dst + do_, 0xa5, span);
    uint64_t streamed = bulk_copy_streamed_by_this_thread();
    bulk_copy(dst + do_ + GUARD, src + so, n);
    bool want_stream = k != BULK_COPY_MEMCPY && n >= BULK_COPY_STREAM_MIN;
    CHECK((bulk_copy_streamed_by_this_thread() - streamed == 1) == want_stream,
          "%s: a copy of %zu bytes %s streaming stores", kind_name(k), n,
          want_stream ? "did not use" : "used");
    CHECK(memcmp(dst + do_ + GUARD, src + so, n) == 0,
          "%s: %zu bytes (source offset %zu, destination offset %zu) differ from the source",
          kind_name(k), n, so, do_ + GUARD);
    for (size_t i = 0; i < GUARD; i++) {
        if (dst[do_ + i] != 0xa5 || dst[do_ + GUARD + n + i] != 0xa5) {
            CHECK(false, "%s: %zu bytes at destination offset %zu wrote outside the range",
                  kind_name(k), n, do_ + GUARD);
            break;
        }
    }
}

static void check_kind(const uint8_t *src, uint8_t *dst, enum bulk_copy_kind k)
{
    static const size_t sizes[] = {0,
                                   1,
                                   31,
                                   4096,
                                   BULK_COPY_STREAM_MIN - 1,
                                   BULK_COPY_STREAM_MIN,
                                   BULK_COPY_STREAM_MIN + 1,
                                   BULK_COPY_STREAM_MIN + 127,
                                   BULK_COPY_STREAM_MIN + 128,
                                   (size_t)1 << 20,
                                   ((size_t)1 << 20) + 3,
                                   (size_t)4 << 20,
                                   ((size_t)4 << 20) + 77};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        /* Every destination misalignment against 32 bytes, sources at random ones. */
        for (size_t a = 0; a < 32; a++) {
            size_t so = next_rand() % 64, do_ = a;
            check_copy(src, dst, so, do_, n, k);
        }
        /* And random places in the buffers. */
        for (int r = 0; r < 4; r++) {
            size_t so = next_rand() % (BUF - n + 1);
            size_t do_ = next_rand() % (BUF + 2 * GUARD - (n + 2 * GUARD) + 1);
            check_copy(src, dst, so, do_, n, k);
        }
    }
}

int main(void)
{
    uint8_t *src = malloc(BUF), *dst = malloc(BUF + 2 * GUARD + 64);
    REQUIRE(src && dst, "malloc");
    for (size_t i = 0; i < BUF; i++)
        src[i] = (uint8_t)next_rand();

    enum bulk_copy_kind best = bulk_copy_kind();
#if defined(__x86_64__)
    __builtin_cpu_init();
    enum bulk_copy_kind want = __builtin_cpu_supports("avx2") ? BULK_COPY_AVX2 : BULK_COPY_SSE2;
    CHECK(best == want, "large copies use %s on this CPU, not %s", kind_name(want),
          kind_name(best));
#endif
    for (int k = BULK_COPY_MEMCPY; k <= (int)best; k++) {
        CHECK(bulk_copy_select((enum bulk_copy_kind)k) == (enum bulk_copy_kind)k,
              "%s cannot be chosen", kind_name((enum bulk_copy_kind)k));
        check_kind(src, dst, (enum bulk_copy_kind)k);
    }
    CHECK(bulk_copy_select(BULK_COPY_AVX2) == best, "asking for more than the CPU has gives %s",
          kind_name(best));
    printf("large copies on this CPU: %s\n", kind_name(best));
    free(src);
    free(dst);
    return test_finish();
}
