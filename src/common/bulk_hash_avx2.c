/*
 * bulk_hash_avx2.c - xxHash3 64-bit built from xxhash's header for AVX2
 * (this file alone is compiled with -mavx2; bulk_hash.c calls it only when
 * the CPU has AVX2). Its state has libxxhash's layout.
 */
#if defined(__x86_64__) && defined(__AVX2__)
#define XXH_INLINE_ALL
#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

void bulk_hash_reset_avx2(void *st);
void bulk_hash_update_avx2(void *st, const void *p, size_t n);
uint64_t bulk_hash_digest_avx2(const void *st);

void bulk_hash_reset_avx2(void *st)
{
    XXH3_64bits_reset((XXH3_state_t *)st);
}

void bulk_hash_update_avx2(void *st, const void *p, size_t n)
{
    XXH3_64bits_update((XXH3_state_t *)st, p, n);
}

uint64_t bulk_hash_digest_avx2(const void *st)
{
    return XXH3_64bits_digest((const XXH3_state_t *)st);
}
#else
typedef int bulk_hash_avx2_unavailable; /* an empty translation unit is not ISO C */
#endif
