/*
 * chunkq.c - the bounded queue of ready chunks between a chunked SSD load and
 * its consumer (spec 000 §5.3: 8 slots by default).
 *
 * A fixed ring of slots under one mutex, one condition variable per side.
 * A side is signalled only when someone waits on it, so an uncontended push
 * or pop is one lock round trip and no futex call. A consumer that cannot
 * block (an event loop) sets a notify callback, called after every push, and
 * takes chunks with try_pop.
 */
#include "owner/ssd/chunkq.h"

#include <pthread.h>
#include <stdlib.h>

#define DEFAULT_SLOTS 8u

struct ssd_chunk_queue {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    /* Guarded by lock. */
    unsigned head, count;
    unsigned pop_waiters, push_waiters;
    unsigned cap;
    void (*notify)(void *arg); /* after every push, outside the lock */
    void *notify_arg;
    ssd_chunk items[];
};

ssd_chunk_queue *ssd_chunk_queue_new(unsigned slots)
{
    if (slots == 0)
        slots = DEFAULT_SLOTS;
    if (slots > 65536u)
        return NULL;
    ssd_chunk_queue *q = calloc(1, sizeof *q + (size_t)slots * sizeof(ssd_chunk));
    if (!q)
        return NULL;
    q->cap = slots;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    return q;
}

void ssd_chunk_queue_free(ssd_chunk_queue *q)
{
    if (!q)
        return;
    pthread_cond_destroy(&q->not_full);
    pthread_cond_destroy(&q->not_empty);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

void ssd_chunk_queue_push(ssd_chunk_queue *q, ssd_chunk c)
{
    pthread_mutex_lock(&q->lock);
    while (q->count == q->cap) {
        q->push_waiters++;
        pthread_cond_wait(&q->not_full, &q->lock);
        q->push_waiters--;
    }
    q->items[(q->head + q->count) % q->cap] = c;
    q->count++;
    if (q->pop_waiters)
        pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->lock);
    if (q->notify)
        q->notify(q->notify_arg);
}

void ssd_chunk_queue_set_notify(ssd_chunk_queue *q, void (*fn)(void *arg), void *arg)
{
    q->notify = fn;
    q->notify_arg = arg;
}

/* Takes the oldest chunk. q->lock held, q->count > 0. */
static ssd_chunk take_locked(ssd_chunk_queue *q)
{
    ssd_chunk c = q->items[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    if (q->push_waiters)
        pthread_cond_signal(&q->not_full);
    return c;
}

ssd_chunk ssd_chunk_queue_pop(ssd_chunk_queue *q)
{
    pthread_mutex_lock(&q->lock);
    while (q->count == 0) {
        q->pop_waiters++;
        pthread_cond_wait(&q->not_empty, &q->lock);
        q->pop_waiters--;
    }
    ssd_chunk c = take_locked(q);
    pthread_mutex_unlock(&q->lock);
    return c;
}

bool ssd_chunk_queue_try_pop(ssd_chunk_queue *q, ssd_chunk *out)
{
    pthread_mutex_lock(&q->lock);
    bool some = q->count > 0;
    if (some)
        *out = take_locked(q);
    pthread_mutex_unlock(&q->lock);
    return some;
}
