/*
 * stats.c - the native engine's ssd_get_stats: its counters (relaxed atomics that the
 * write and read paths bump, store_internal.h) and what each device holds
 * (its shards' rings, read under each shard lock in turn), with the number of
 * indexed entries (under the index lock).
 */
#include <stdio.h>
#include <string.h>

#include "owner/ssd/store_internal.h"

static uint64_t load_counter(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

void native_get_stats(ssd_store *base, ssd_stats *out)
{
    native_store *s = native_of(base);
    pthread_mutex_lock(&s->index_lock);
    out->entries = index_count(&s->ix);
    pthread_mutex_unlock(&s->index_lock);
    out->n_devices = s->n_devs;
    for (size_t i = 0; i < s->n_devs; i++) {
        ssd_device *d = &s->devs[i];
        uint64_t cap = d->shard_bytes * d->n_shards, used = 0;
        for (unsigned j = 0; j < d->n_shards; j++) {
            pthread_mutex_lock(&d->shards[j].lock);
            used += ring_used(&d->shards[j].ring);
            pthread_mutex_unlock(&d->shards[j].lock);
        }
        out->capacity_bytes += cap;
        out->used_bytes += used;
        if (i < sizeof out->devices / sizeof out->devices[0]) {
            snprintf(out->devices[i].root, sizeof out->devices[i].root, "%s", d->root->path);
            out->devices[i].cfg_index = d->root->cfg_index;
            out->devices[i].capacity_bytes = cap;
            out->devices[i].used_bytes = used;
        }
    }
    out->writes = load_counter(&s->writes);
    out->write_errors = load_counter(&s->write_errors);
    out->direct_reads = load_counter(&s->direct_reads);
    out->scratch_reads = load_counter(&s->scratch_reads);
    out->reader_loads = load_counter(&s->reader_loads);
    out->read_errors = load_counter(&s->read_errors);
    out->checksum_failures = load_counter(&s->checksum_failures);
    out->last_io_errno = atomic_load_explicit(&s->last_io_errno, memory_order_relaxed);
    out->stale_reads = load_counter(&s->stale_reads);
    out->evictions = load_counter(&s->evictions);
    out->evictions_dropped = load_counter(&s->evictions_dropped);
}
