/*
 * sim.c - LRU, Belady's MIN and replica_cache simulators (see sim.h).
 *
 * Keys are indices into the key set, so the per-key state is arrays; LRU is
 * an intrusive doubly linked list, MIN an indexed binary max-heap on the
 * next-use time (precomputed for every access by one backward pass), so each
 * get costs O(1) or O(log n).
 */
#include "sim.h"

#include "master/replica_cache.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static void count_get(sim_result *r, uint64_t size, bool hit)
{
    r->gets++;
    r->bytes += size;
    if (hit) {
        r->hits++;
        r->hit_bytes += size;
    }
}

/* ---- LRU ------------------------------------------------------------------- */

#define NIL UINT32_MAX

typedef struct lru {
    uint32_t *prev, *next; /* per key; head = most recent */
    uint32_t head, tail;
    bool *resident;
    uint64_t weight;
} lru;

static void lru_unlink(lru *l, uint32_t k)
{
    if (l->prev[k] != NIL)
        l->next[l->prev[k]] = l->next[k];
    else
        l->head = l->next[k];
    if (l->next[k] != NIL)
        l->prev[l->next[k]] = l->prev[k];
    else
        l->tail = l->prev[k];
}

static void lru_push(lru *l, uint32_t k)
{
    l->prev[k] = NIL;
    l->next[k] = l->head;
    if (l->head != NIL)
        l->prev[l->head] = k;
    else
        l->tail = k;
    l->head = k;
}

static void lru_insert(lru *l, const key_set *ks, uint32_t k, uint64_t capacity)
{
    lru_push(l, k);
    l->resident[k] = true;
    l->weight += ks->size[k];
    while (l->weight > capacity) {
        uint32_t v = l->tail;
        lru_unlink(l, v);
        l->resident[v] = false;
        l->weight -= ks->size[v];
    }
}

int sim_lru(const key_set *ks, const trace *t, uint64_t capacity, sim_result *out)
{
    lru l = {.prev = malloc(ks->n * sizeof(uint32_t)),
             .next = malloc(ks->n * sizeof(uint32_t)),
             .resident = calloc(ks->n, sizeof(bool)),
             .head = NIL,
             .tail = NIL};
    int rc = -1;
    if (!l.prev || !l.next || !l.resident)
        goto out;
    *out = (sim_result){0};
    for (uint32_t k = 0; k < ks->n; k++)
        lru_insert(&l, ks, k, capacity);
    for (uint32_t i = 0; i < t->n_ops; i++) {
        uint32_t k = t->op[i];
        count_get(out, ks->size[k], l.resident[k]);
        if (l.resident[k]) {
            lru_unlink(&l, k);
            lru_push(&l, k);
        } else {
            lru_insert(&l, ks, k, capacity);
        }
    }
    rc = 0;
out:
    free(l.prev);
    free(l.next);
    free(l.resident);
    return rc;
}

/* ---- MIN ------------------------------------------------------------------- */

#define NEVER UINT64_MAX

/* Resident keys in a binary max-heap on their next use. */
typedef struct heap {
    uint32_t *key;  /* heap order */
    uint32_t *pos;  /* per key: index in key[], NIL when not resident */
    uint64_t *next; /* per key: time of its next access */
    uint32_t n;
} heap;

static void heap_swap(heap *h, uint32_t a, uint32_t b)
{
    uint32_t ka = h->key[a], kb = h->key[b];
    h->key[a] = kb;
    h->key[b] = ka;
    h->pos[kb] = a;
    h->pos[ka] = b;
}

static void heap_up(heap *h, uint32_t i)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h->next[h->key[p]] >= h->next[h->key[i]])
            break;
        heap_swap(h, i, p);
        i = p;
    }
}

static void heap_down(heap *h, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->next[h->key[l]] > h->next[h->key[m]])
            m = l;
        if (r < h->n && h->next[h->key[r]] > h->next[h->key[m]])
            m = r;
        if (m == i)
            return;
        heap_swap(h, i, m);
        i = m;
    }
}

static void heap_add(heap *h, uint32_t k)
{
    h->key[h->n] = k;
    h->pos[k] = h->n;
    heap_up(h, h->n++);
}

static uint32_t heap_pop(heap *h)
{
    uint32_t k = h->key[0];
    heap_swap(h, 0, --h->n);
    h->pos[k] = NIL;
    if (h->n)
        heap_down(h, 0);
    return k;
}

/* Sets the next use of resident key k. */
static void heap_update(heap *h, uint32_t k, uint64_t next)
{
    uint64_t old = h->next[k];
    h->next[k] = next;
    if (next > old)
        heap_up(h, h->pos[k]);
    else
        heap_down(h, h->pos[k]);
}

/* Inserts k (next use `next`) and evicts furthest-next-use keys until the
 * resident bytes fit. */
static void min_insert(heap *h, const key_set *ks, uint32_t k, uint64_t next, uint64_t capacity,
                       uint64_t *weight)
{
    h->next[k] = next;
    heap_add(h, k);
    *weight += ks->size[k];
    while (*weight > capacity)
        *weight -= ks->size[heap_pop(h)];
}

int sim_min(const key_set *ks, const trace *t, uint64_t capacity, sim_result *out)
{
    /* Time: the bootstrap puts are 0..n-1, get i is n + i. */
    uint64_t *next_get = malloc((t->n_ops ? t->n_ops : 1) * sizeof *next_get);
    uint64_t *first = malloc(ks->n * sizeof *first); /* next use after the scan point */
    heap h = {.key = malloc(ks->n * sizeof(uint32_t)),
              .pos = malloc(ks->n * sizeof(uint32_t)),
              .next = malloc(ks->n * sizeof(uint64_t))};
    int rc = -1;
    if (!next_get || !first || !h.key || !h.pos || !h.next)
        goto out;
    for (uint32_t k = 0; k < ks->n; k++) {
        first[k] = NEVER;
        h.pos[k] = NIL;
    }
    for (uint32_t i = t->n_ops; i-- > 0;) {
        uint32_t k = t->op[i];
        next_get[i] = first[k];
        first[k] = (uint64_t)ks->n + i;
    }
    *out = (sim_result){0};
    uint64_t weight = 0;
    for (uint32_t k = 0; k < ks->n; k++)
        min_insert(&h, ks, k, first[k], capacity, &weight);
    for (uint32_t i = 0; i < t->n_ops; i++) {
        uint32_t k = t->op[i];
        bool hit = h.pos[k] != NIL;
        count_get(out, ks->size[k], hit);
        if (hit)
            heap_update(&h, k, next_get[i]);
        else
            min_insert(&h, ks, k, next_get[i], capacity, &weight);
    }
    rc = 0;
out:
    free(next_get);
    free(first);
    free(h.key);
    free(h.pos);
    free(h.next);
    return rc;
}

/* ---- replica_cache ---------------------------------------------------------- */

/* ctx of key k: k + 1, so that no ctx is NULL. */
#define KEY_CTX(k) ((void *)(uintptr_t)((k) + 1))
#define CTX_KEY(c) ((uint32_t)((uintptr_t)(c) - 1))

static int policy_insert(replica_cache *rc, rc_item **item, const uint64_t *hash,
                         const key_set *ks, uint32_t k, uint64_t capacity)
{
    /* As master_replica_published: room first, then the new item. */
    while (replica_cache_weight(rc) + ks->size[k] > capacity) {
        void *ctx = replica_cache_pop_victim(rc);
        if (!ctx)
            break;
        item[CTX_KEY(ctx)] = NULL;
    }
    item[k] = replica_cache_insert(rc, hash[k], ks->size[k], KEY_CTX(k));
    return item[k] ? 0 : -1;
}

int sim_policy(const key_set *ks, const trace *t, uint64_t capacity, sim_result *out)
{
    replica_cache *rc = replica_cache_new(capacity);
    rc_item **item = calloc(ks->n, sizeof *item);
    uint64_t *hash = malloc(ks->n * sizeof *hash);
    int r = -1;
    if (!rc || !item || !hash)
        goto out;
    for (uint32_t k = 0; k < ks->n; k++) {
        char name[16];
        trace_key_name(k, name, sizeof name);
        hash[k] = XXH3_64bits(name, strlen(name));
    }
    *out = (sim_result){0};
    for (uint32_t k = 0; k < ks->n; k++)
        if (policy_insert(rc, item, hash, ks, k, capacity) < 0)
            goto out;
    for (uint32_t i = 0; i < t->n_ops; i++) {
        uint32_t k = t->op[i];
        count_get(out, ks->size[k], item[k] != NULL);
        if (item[k])
            replica_cache_hit(rc, item[k]);
        else if (policy_insert(rc, item, hash, ks, k, capacity) < 0)
            goto out;
    }
    r = 0;
out:
    replica_cache_free(rc);
    free(item);
    free(hash);
    return r;
}
