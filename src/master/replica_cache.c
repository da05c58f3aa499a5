/*
 * replica_cache.c - byte-weighted S3-FIFO over one owner's memory replicas
 * (see replica_cache.h for the policy and how the master drives it).
 *
 * Items live in one of two FIFOs (utlist doubly linked lists, oldest at the
 * head, newest appended at the tail): `small`, which every new item enters,
 * and `main`. A hit only bumps the item's 3-bit frequency; nothing moves on
 * the hit path. pop_victim() does the moving lazily:
 *   - while small holds at least small_cap bytes (or main is empty), it looks
 *     at small's oldest item: one hit at least since it came in, and it moves
 *     to main's tail with its frequency reset; none, and it is evicted and
 *     its key hash remembered in the ghost;
 *   - otherwise it looks at main's oldest item: a frequency above zero is
 *     decremented and the item goes back to main's tail (CLOCK), zero and it
 *     is evicted (main's victims are not remembered).
 * Each step either evicts or spends one unit of frequency or one small->main
 * move, both of which were paid for by a hit or an insert, so pop_victim is
 * O(1) amortized and always ends while an item is resident.
 *
 * The ghost is a FIFO of key hashes evicted from small, with a uthash table
 * for membership. It is bounded by the bytes those keys weighed, small_cap
 * (so a key comes back through main only when it is asked for again about
 * as soon as small would have kept it; the paper's ghost as large as main
 * let more of the Zipf tail of bench/hitrate's traces into main), and, so
 * that zero- or tiny-weight items cannot grow it without end, by a count of
 * GHOST_MIN_COUNT plus twice the number of resident items. The newest key
 * stays even when it alone weighs more than small_cap. An insert whose key
 * hash is in the ghost goes straight to main and leaves the ghost.
 *
 * Tuning (bench/hitrate, mean of 12 seeds, budget 819 MiB: ~118 keys of
 * 1..16 MiB): a 10% small queue (5% was marginally better on these
 * stationary traces, 15-20% worse; 10% is the paper's robust default),
 * promotion after one hit (two made no difference), frequencies up to 7
 * rather than 3 (+0.15..0.35 points) and the ghost of small_cap bytes rather
 * than main's size (+0.05 on Zipf, +0.5 on the scan trace; +0.4..1.2 points
 * with a 200 MiB budget).
 */
#include "master/replica_cache.h"

#include "common/hashtable.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>

/* Small queue: this share of the capacity, in percent. */
#define SMALL_PERCENT 10
/* Hits an item needs while in small to be promoted to main. */
#define PROMOTE_FREQ 1
/* Frequencies saturate here (3 bits): main's CLOCK then tells a key hit
 * every few rounds from one hit every round, which 2 bits barely do. */
#define FREQ_MAX 7
/* The ghost may always remember this many keys (see the count bound above). */
#define GHOST_MIN_COUNT 64

enum { Q_SMALL, Q_MAIN };

/* Weights are kept in 56 bits (64 PiB) so that an item, one per stored
 * value on the master, takes 40 bytes. */
#define WEIGHT_BITS 56

struct rc_item {
    rc_item *prev, *next; /* utlist links within its queue */
    uint64_t key_hash;
    void *ctx;
    uint64_t weight : WEIGHT_BITS;
    uint64_t freq : 4;  /* 0..FREQ_MAX */
    uint64_t queue : 1; /* Q_SMALL or Q_MAIN */
};

typedef struct rc_ghost {
    uint64_t key_hash; /* the uthash key */
    uint64_t weight;
    struct rc_ghost *prev, *next; /* FIFO, oldest at the head */
    UT_hash_handle hh;
} rc_ghost;

struct replica_cache {
    uint64_t capacity;
    uint64_t small_cap; /* bytes of small above which small is drained first */
    uint64_t ghost_cap; /* bytes of evicted keys the ghost remembers */
    rc_item *small, *main;
    uint64_t small_weight, main_weight;
    size_t small_count, main_count;
    rc_ghost *ghost_fifo;  /* oldest at the head */
    rc_ghost *ghost_table; /* the same entries by key_hash */
    uint64_t ghost_weight;
    size_t ghost_count;
};

static void ghost_drop(replica_cache *rc, rc_ghost *g)
{
    HASH_DEL(rc->ghost_table, g);
    DL_DELETE(rc->ghost_fifo, g);
    rc->ghost_weight -= g->weight;
    rc->ghost_count--;
    free(g);
}

/* Forgets the oldest keys until the ghost is within both of its bounds. */
static void ghost_trim(replica_cache *rc)
{
    size_t max_count = GHOST_MIN_COUNT + 2 * (rc->small_count + rc->main_count);
    while (rc->ghost_fifo && ((rc->ghost_weight > rc->ghost_cap && rc->ghost_count > 1) ||
                              rc->ghost_count > max_count))
        ghost_drop(rc, rc->ghost_fifo);
}

static rc_ghost *ghost_find(replica_cache *rc, uint64_t key_hash)
{
    rc_ghost *g;
    HASH_FIND(hh, rc->ghost_table, &key_hash, sizeof key_hash, g);
    return g;
}

/* Remembers key_hash as evicted from small. Out of memory only means the key
 * is not remembered (it will re-enter through small). */
static void ghost_add(replica_cache *rc, uint64_t key_hash, uint64_t weight)
{
    rc_ghost *g = ghost_find(rc, key_hash);
    if (g)
        ghost_drop(rc, g); /* re-added at the young end */
    g = malloc(sizeof *g);
    if (g) {
        g->key_hash = key_hash;
        g->weight = weight;
        HASH_ADD(hh, rc->ghost_table, key_hash, sizeof g->key_hash, g);
        DL_APPEND(rc->ghost_fifo, g);
        rc->ghost_weight += weight;
        rc->ghost_count++;
    }
    ghost_trim(rc);
}

static void queue_add(replica_cache *rc, rc_item *it, int queue)
{
    it->queue = (unsigned)queue & 1u;
    if (queue == Q_SMALL) {
        DL_APPEND(rc->small, it);
        rc->small_weight += it->weight;
        rc->small_count++;
    } else {
        DL_APPEND(rc->main, it);
        rc->main_weight += it->weight;
        rc->main_count++;
    }
}

static void queue_del(replica_cache *rc, rc_item *it)
{
    if (it->queue == Q_SMALL) {
        DL_DELETE(rc->small, it);
        assert(rc->small_weight >= it->weight && rc->small_count > 0);
        rc->small_weight -= it->weight;
        rc->small_count--;
    } else {
        DL_DELETE(rc->main, it);
        assert(rc->main_weight >= it->weight && rc->main_count > 0);
        rc->main_weight -= it->weight;
        rc->main_count--;
    }
}

replica_cache *replica_cache_new(uint64_t capacity)
{
    replica_cache *rc = calloc(1, sizeof *rc);
    if (!rc)
        return NULL;
    replica_cache_set_capacity(rc, capacity);
    return rc;
}

void replica_cache_free(replica_cache *rc)
{
    if (!rc)
        return;
    rc_item *it, *tmp;
    DL_FOREACH_SAFE(rc->small, it, tmp)
        free(it);
    DL_FOREACH_SAFE(rc->main, it, tmp)
        free(it);
    rc_ghost *g, *gtmp;
    HASH_ITER(hh, rc->ghost_table, g, gtmp) {
        HASH_DEL(rc->ghost_table, g);
        free(g);
    }
    free(rc);
}

void replica_cache_set_capacity(replica_cache *rc, uint64_t capacity)
{
    rc->capacity = capacity;
    rc->small_cap = capacity / 100 * SMALL_PERCENT + capacity % 100 * SMALL_PERCENT / 100;
    rc->ghost_cap = rc->small_cap;
    ghost_trim(rc);
}

rc_item *replica_cache_insert(replica_cache *rc, uint64_t key_hash, uint64_t weight, void *ctx)
{
    if (weight >> WEIGHT_BITS)
        return NULL; /* as out of memory: the replica is then never evicted */
    rc_item *it = calloc(1, sizeof *it);
    if (!it)
        return NULL;
    it->key_hash = key_hash;
    it->weight = weight;
    it->ctx = ctx;
    rc_ghost *g = ghost_find(rc, key_hash);
    if (g) {
        ghost_drop(rc, g);
        queue_add(rc, it, Q_MAIN);
    } else {
        queue_add(rc, it, Q_SMALL);
    }
    return it;
}

void replica_cache_hit(replica_cache *rc, rc_item *it)
{
    (void)rc;
    if (it->freq < FREQ_MAX)
        it->freq++;
}

void replica_cache_remove(replica_cache *rc, rc_item *it)
{
    if (!it)
        return;
    queue_del(rc, it);
    free(it);
}

/* Unlinks and frees it, returning its ctx. */
static void *evict(replica_cache *rc, rc_item *it)
{
    void *ctx = it->ctx;
    queue_del(rc, it);
    free(it);
    return ctx;
}

void *replica_cache_pop_victim(replica_cache *rc)
{
    for (;;) {
        if (rc->small && (rc->small_weight >= rc->small_cap || !rc->main)) {
            rc_item *it = rc->small; /* oldest */
            if (it->freq >= PROMOTE_FREQ) {
                queue_del(rc, it);
                it->freq = 0;
                queue_add(rc, it, Q_MAIN);
                continue;
            }
            uint64_t key_hash = it->key_hash, weight = it->weight;
            void *ctx = evict(rc, it);
            ghost_add(rc, key_hash, weight);
            return ctx;
        }
        if (!rc->main)
            return NULL;
        rc_item *it = rc->main; /* oldest */
        if (it->freq > 0) {
            it->freq--;
            DL_DELETE(rc->main, it);
            DL_APPEND(rc->main, it);
            continue;
        }
        return evict(rc, it);
    }
}

uint64_t replica_cache_weight(const replica_cache *rc)
{
    return rc->small_weight + rc->main_weight;
}

size_t replica_cache_count(const replica_cache *rc)
{
    return rc->small_count + rc->main_count;
}
