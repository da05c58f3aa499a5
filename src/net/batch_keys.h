/*
 * batch_keys.h - the packed key list of the batch messages (BatchKeyInfoReq,
 * and ExternalBatchGetReq, which packs its keys the same way): `bytes keys`
 * holds the keys back to back and `repeated uint32 klens` their lengths.
 *
 * Everything in it comes from a socket. The list's shape is checked once,
 * before any key is read: at most FX_BATCH_MAX lengths, and their sum (taken
 * without overflow) equal to the length of `keys`. A bad shape fails the
 * whole message; a key whose own length is outside 1..BATCH_KEY_MAX_LEN only
 * fails that key (batch_key_len_ok), so the others are still answered.
 */
#ifndef FX_NET_BATCH_KEYS_H
#define FX_NET_BATCH_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#define BATCH_KEY_MAX_LEN 4096u

/* Returns 0 when n_klens is at most FX_BATCH_MAX and the klens add up to
 * keys->len exactly; otherwise FX_EINVAL with a sentence naming what was
 * wrong written into why (cap bytes, truncated). Reads nothing beyond
 * klens[0..n_klens-1]. */
int batch_keys_check(const ProtobufCBinaryData *keys, const uint32_t *klens, size_t n_klens,
                     char *why, size_t cap);

/* True when one key of a checked list may be looked up (1..BATCH_KEY_MAX_LEN). */
static inline bool batch_key_len_ok(uint32_t klen)
{
    return klen >= 1 && klen <= BATCH_KEY_MAX_LEN;
}

#endif
