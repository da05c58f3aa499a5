/*
 * bulk_hash.c - picks the build of xxHash3 that bulk_hash.h promises: the
 * AVX2 one (bulk_hash_avx2.c) where the CPU has AVX2, libxxhash otherwise.
 * The choice is made on first use; both give the same values.
 */
#include "common/bulk_hash.h"

#include <stdatomic.h>

#if defined(__x86_64__) && defined(FX_HAVE_AVX2_BUILD)
#define AVX2_BUILT 1
void bulk_hash_reset_avx2(void *st);
void bulk_hash_update_avx2(void *st, const void *p, size_t n);
uint64_t bulk_hash_digest_avx2(const void *st);
#else
#define AVX2_BUILT 0
#endif

enum { CHOICE_UNSET, CHOICE_GENERIC, CHOICE_AVX2 };
static atomic_int choice = CHOICE_UNSET;

static int decide(void)
{
    int c = atomic_load_explicit(&choice, memory_order_relaxed);
    if (c != CHOICE_UNSET)
        return c;
#if AVX2_BUILT
    __builtin_cpu_init();
    c = __builtin_cpu_supports("avx2") ? CHOICE_AVX2 : CHOICE_GENERIC;
#else
    c = CHOICE_GENERIC;
#endif
    atomic_store_explicit(&choice, c, memory_order_relaxed); /* same value on every race */
    return c;
}

bool bulk_hash_avx2(void)
{
    return decide() == CHOICE_AVX2;
}

bool bulk_hash_select_avx2(bool on)
{
    atomic_store(&choice, CHOICE_UNSET);
    if (on)
        return decide() == CHOICE_AVX2;
    atomic_store(&choice, CHOICE_GENERIC);
    return false;
}

#if AVX2_BUILT
#define DISPATCH(avx2_call, generic_call) \
    do {                                  \
        if (decide() == CHOICE_AVX2)      \
            avx2_call;                    \
        else                              \
            generic_call;                 \
    } while (0)
#else
#define DISPATCH(avx2_call, generic_call) generic_call
#endif

void bulk_hash_reset(bulk_hash_state *st)
{
    DISPATCH(bulk_hash_reset_avx2(st), XXH3_64bits_reset(st));
}

void bulk_hash_update(bulk_hash_state *st, const void *p, size_t n)
{
    DISPATCH(bulk_hash_update_avx2(st, p, n), XXH3_64bits_update(st, p, n));
}

uint64_t bulk_hash_digest(const bulk_hash_state *st)
{
    DISPATCH(return bulk_hash_digest_avx2(st), return XXH3_64bits_digest(st));
}
