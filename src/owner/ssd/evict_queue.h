/*
 * evict_queue.h - the bounded queue of evicted (key, put_id) pairs that an SSD
 * engine fills and ssd_pop_evictions() empties for the owner's
 * BatchSsdReplicaEvict (ssd.h). It grows by doubling up to its cap; past the
 * cap an eviction is dropped (the caller counts it), so a writer never waits
 * for the owner to pop. Thread-safe: one leaf lock inside.
 */
#ifndef FX_SSD_EVICT_QUEUE_H
#define FX_SSD_EVICT_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "owner/ssd/ssd.h"

typedef struct evict_queue {
    pthread_mutex_t lock; /* guards everything below (a leaf lock) */
    ssd_eviction *slots;  /* circular, alloc slots */
    size_t alloc, cap, head, count;
} evict_queue;

/* cap 0: 65536. */
void evict_queue_init(evict_queue *q, size_t cap);
/* Frees the queued keys and the slots. */
void evict_queue_destroy(evict_queue *q);
/* Appends (key, pid), taking key (malloc'd, key[klen] == '\0'), or returns
 * false when the queue is full or out of memory (key stays the caller's). */
bool evict_queue_push(evict_queue *q, char *key, size_t klen, ssd_put_id pid);
/* Moves up to cap evictions into out, oldest first; returns how many. */
size_t evict_queue_pop(evict_queue *q, ssd_eviction *out, size_t cap);

#endif
