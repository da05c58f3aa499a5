/*
 * evict_queue.c - the bounded eviction queue of an SSD engine (evict_queue.h).
 */
#include "owner/ssd/evict_queue.h"

#include <stdlib.h>

#define DEFAULT_CAP 65536u
#define FIRST_ALLOC 1024u

void evict_queue_init(evict_queue *q, size_t cap)
{
    *q = (evict_queue){.cap = cap ? cap : DEFAULT_CAP};
    pthread_mutex_init(&q->lock, NULL);
}

void evict_queue_destroy(evict_queue *q)
{
    for (size_t i = 0; i < q->count; i++)
        free(q->slots[(q->head + i) % q->alloc].key);
    free(q->slots);
    pthread_mutex_destroy(&q->lock);
}

/* Makes room for one more; lock held. */
static bool grow_locked(evict_queue *q)
{
    if (q->count < q->alloc)
        return true;
    if (q->alloc >= q->cap)
        return false;
    size_t na = q->alloc ? q->alloc * 2 : FIRST_ALLOC;
    if (na > q->cap)
        na = q->cap;
    ssd_eviction *s = malloc(na * sizeof *s);
    if (!s)
        return false;
    for (size_t i = 0; i < q->count; i++)
        s[i] = q->slots[(q->head + i) % q->alloc];
    free(q->slots);
    q->slots = s;
    q->alloc = na;
    q->head = 0;
    return true;
}

bool evict_queue_push(evict_queue *q, char *key, size_t klen, ssd_put_id pid)
{
    pthread_mutex_lock(&q->lock);
    bool ok = grow_locked(q);
    if (ok) {
        q->slots[(q->head + q->count) % q->alloc] =
            (ssd_eviction){.key = key, .klen = klen, .pid = pid};
        q->count++;
    }
    pthread_mutex_unlock(&q->lock);
    return ok;
}

size_t evict_queue_pop(evict_queue *q, ssd_eviction *out, size_t cap)
{
    pthread_mutex_lock(&q->lock);
    size_t n = q->count < cap ? q->count : cap;
    for (size_t i = 0; i < n; i++)
        out[i] = q->slots[(q->head + i) % q->alloc];
    if (n) {
        q->head = (q->head + n) % q->alloc;
        q->count -= n;
    }
    pthread_mutex_unlock(&q->lock);
    return n;
}
