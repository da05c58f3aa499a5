/*
 * lane_hint.c - the keys an owner's get threads could not answer last time,
 * whose next get goes straight to the owner's loop.
 *
 * A get thread answers only values in the owner's get cache; for anything
 * else it answers holder 0 and the client asks the loop (api.c,
 * get_request): a second round trip. A key that misses, or that the loop
 * serves without caching (it is not in the owner's memory), would pay it on
 * every get, and so would the first get after every put. So the client
 * remembers such keys by hash in a fixed table, one per slot (a collision
 * forgets the other key: a hint, nothing more): keys whose lane missed, and
 * keys whose version changed (this client's puts and deletes, the
 * invalidations pushed to it: the owner's get cache dropped them too). It
 * forgets a key when the loop answers it from or into its cache. Asking the
 * loop is always correct; the table only chooses between one round trip and
 * two. Slots are relaxed atomics: any thread may read and write them.
 */
#include <xxhash.h>

#include "client/client.h"

uint64_t lane_hint_hash(const void *key, size_t klen)
{
    return XXH3_64bits(key, klen) | 1u; /* 0 is an empty slot */
}

bool lane_hint_skip(fx_client *c, uint64_t hash)
{
    return atomic_load_explicit(&c->lane_hint[hash % CLIENT_LANE_HINT_SLOTS],
                                memory_order_relaxed) == hash;
}

void lane_hint_note(fx_client *c, uint64_t hash, bool lane_would_answer)
{
    atomic_uint_fast64_t *slot = &c->lane_hint[hash % CLIENT_LANE_HINT_SLOTS];
    uint_fast64_t expected = hash; /* clears the slot only if it is this key's */
    if (!lane_would_answer)
        atomic_store_explicit(slot, hash, memory_order_relaxed);
    else
        atomic_compare_exchange_strong_explicit(slot, &expected, 0, memory_order_relaxed,
                                                memory_order_relaxed);
}
