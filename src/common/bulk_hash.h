/*
 * bulk_hash.h - the checksum of payload bytes: xxHash3 64-bit, streamed
 * (reset, update, digest), with the same results as libxxhash's XXH3_64bits.
 *
 * Debian's libxxhash is built for plain SSE2 (about 17 GB/s here, 60 us per
 * MiB, as much as the disk's share of an SSD refill's critical path); the
 * same code built for AVX2 from xxhash's header runs at about 34 GB/s. The
 * AVX2 build is used where the CPU has it (checked once), libxxhash
 * elsewhere. The state is libxxhash's; reset it before updating.
 */
#ifndef FX_COMMON_BULK_HASH_H
#define FX_COMMON_BULK_HASH_H

#ifndef XXH_STATIC_LINKING_ONLY
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack (xxhash.h may be included again) */
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

typedef XXH3_state_t bulk_hash_state;

void bulk_hash_reset(bulk_hash_state *st);
void bulk_hash_update(bulk_hash_state *st, const void *p, size_t n);
uint64_t bulk_hash_digest(const bulk_hash_state *st);

/* Whether the AVX2 build is in use. */
bool bulk_hash_avx2(void);
/* Tests: use the AVX2 build (when the CPU has it) or libxxhash from now on.
 * Returns whether AVX2 is in use afterwards. Not thread-safe. */
bool bulk_hash_select_avx2(bool on);

#endif
