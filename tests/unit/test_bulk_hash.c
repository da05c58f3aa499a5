/*
 * test_bulk_hash.c - bulk_hash gives libxxhash's XXH3_64bits values, in one update
 * and streamed in pieces of any size, in both of its builds (AVX2 where this
 * CPU has it, libxxhash otherwise), and changes when one byte changes.
 */
#include "common/bulk_hash.h"
#include "testlib.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define BUF (3u << 20)

static unsigned long long rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
    return test_rand(&rng);
}

/* The hash of n bytes in a single update. */
static uint64_t hash_once(const void *p, size_t n)
{
    bulk_hash_state st;
    bulk_hash_reset(&st);
    bulk_hash_update(&st, p, n);
    return bulk_hash_digest(&st);
}

static void check_build(const uint8_t *buf, bool avx2)
{
    static const size_t lens[] = {0,   1,   3,    16,   17,   128,  129,     240,
                                  241, 1024, 4095, 4096, 65537, 1u << 20, BUF - 5, BUF};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        size_t n = lens[i], off = n < BUF ? next_rand() % (BUF - n + 1) : 0;
        uint64_t want = XXH3_64bits(buf + off, n);
        uint64_t one = hash_once(buf + off, n);
        CHECK(one == want, "%s one update of %zu bytes: %016" PRIx64 ", libxxhash %016" PRIx64,
              avx2 ? "avx2" : "generic", n, one, want);
        bulk_hash_state st;
        bulk_hash_reset(&st);
        for (size_t done = 0; done < n;) {
            size_t piece = 1 + next_rand() % (n < 300000 ? n : 300000);
            if (piece > n - done)
                piece = n - done;
            bulk_hash_update(&st, buf + off + done, piece);
            done += piece;
        }
        uint64_t streamed = bulk_hash_digest(&st);
        CHECK(streamed == want, "%s streamed %zu bytes: %016" PRIx64 ", libxxhash %016" PRIx64,
              avx2 ? "avx2" : "generic", n, streamed, want);
    }
}

int main(void)
{
    uint8_t *buf = malloc(BUF);
    REQUIRE(buf != NULL, "malloc");
    for (size_t i = 0; i < BUF; i++)
        buf[i] = (uint8_t)next_rand();

    bool avx2 = bulk_hash_select_avx2(true);
#if defined(__x86_64__)
    __builtin_cpu_init();
    CHECK(avx2 == (__builtin_cpu_supports("avx2") != 0),
          "the AVX2 build is used exactly where the CPU has AVX2 (in use: %d)", avx2);
#endif
    check_build(buf, avx2);
    CHECK(!bulk_hash_select_avx2(false) && !bulk_hash_avx2(), "the libxxhash build can be chosen");
    check_build(buf, false);
    bulk_hash_select_avx2(true);

    /* One flipped bit changes the value (in either build). */
    uint64_t before = hash_once(buf, 1u << 20);
    buf[777777] ^= 0x10;
    CHECK(hash_once(buf, 1u << 20) != before, "a flipped bit leaves the hash unchanged");
    printf("AVX2 build in use on this CPU: %s\n", avx2 ? "yes" : "no");
    free(buf);
    return test_finish();
}
