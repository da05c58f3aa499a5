/*
 * batch_keys.c - the shape check of a packed key list (batch_keys.h), shared
 * by the owner (before it forwards a batch) and the master (before it reads
 * one), so that both refuse the same messages with the same words.
 */
#include "net/batch_keys.h"

#include <stdio.h>

#include "fluxon/fluxon.h"

int batch_keys_check(const ProtobufCBinaryData *keys, const uint32_t *klens, size_t n_klens,
                     char *why, size_t cap)
{
    if (n_klens > FX_BATCH_MAX) {
        snprintf(why, cap, "batch of %zu keys is over the limit of %u; split it", n_klens,
                 FX_BATCH_MAX);
        return FX_EINVAL;
    }
    /* At most FX_BATCH_MAX lengths of at most 2^32-1 each: the sum fits in
     * 64 bits, and it is compared before any key is read. */
    uint64_t sum = 0;
    for (size_t i = 0; i < n_klens; i++)
        sum += klens[i];
    if (sum != (uint64_t)keys->len) {
        snprintf(why, cap, "the %zu key lengths add up to %llu bytes but keys holds %zu", n_klens,
                 (unsigned long long)sum, keys->len);
        return FX_EINVAL;
    }
    return 0;
}
