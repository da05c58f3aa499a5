/*
 * packed_keys.c - the keys of a batch message packed back to back with their
 * lengths (net/batch_keys.h's layout: `bytes keys`, `repeated uint32 klens`),
 * as ExternalBatchExists, ExternalBatchGet and ExternalBatchDelete send them.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

int packed_keys_make(packed_keys *pk, size_t m, const char *const keys[], const size_t klens[],
                     const size_t *slot)
{
    *pk = (packed_keys){0};
    size_t total = 0;
    for (size_t j = 0; j < m; j++)
        total += klens[slot ? slot[j] : j]; /* each <= CLIENT_MAX_KEY_LEN, m <= FX_BATCH_MAX */
    pk->bytes = malloc(total ? total : 1);
    pk->lens = malloc((m ? m : 1) * sizeof *pk->lens);
    if (!pk->bytes || !pk->lens) {
        packed_keys_free(pk);
        return client_fail(FX_ENOMEM, "out of memory");
    }
    for (size_t j = 0; j < m; j++) {
        size_t i = slot ? slot[j] : j;
        memcpy(pk->bytes + pk->total, keys[i], klens[i]);
        pk->total += klens[i];
        pk->lens[j] = (uint32_t)klens[i];
    }
    pk->n = m;
    return 0;
}

void packed_keys_free(packed_keys *pk)
{
    free(pk->bytes);
    free(pk->lens);
    *pk = (packed_keys){0};
}
