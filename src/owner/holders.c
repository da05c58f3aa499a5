/*
 * holders.c - memory_info refcounts, the owner-local get cache, and the
 * holdings of each external session (see owner.h for the three layers).
 *
 * The get threads (get_lanes.c) answer gets from the cache and release
 * holdings beside the loop, so everything they touch is guarded by
 * o->hold_lock: every memory_info's refs, the cache's membership (the loop
 * changes it under the lock and may read it without: only the loop changes
 * it), and each session's holdings, conns and dead. The functions here take
 * the lock themselves; the *_locked ones are for a caller that holds it.
 * A memory_info whose last reference goes on the loop is acknowledged to the
 * master at once (holder_ack.c); one that goes on a get thread comes back to
 * the caller, which queues its ack for the loop.
 */
#include "owner/owner.h"
#include "common/memdup.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

memory_info *holders_mi_new(owner *o, const void *key, size_t klen, uint64_t master_holder_id,
                            uint64_t offset, uint64_t len, int source)
{
    (void)o;
    memory_info *mi = calloc(1, sizeof *mi);
    if (!mi)
        return NULL;
    mi->key = fx_memdup(key, klen);
    if (!mi->key) {
        free(mi);
        return NULL;
    }
    mi->klen = klen;
    mi->master_holder_id = master_holder_id;
    mi->offset = offset;
    mi->len = len;
    mi->source = source;
    mi->refs = 1; /* the caller's reference */
    return mi;
}

void holders_mi_free(memory_info *mi)
{
    assert(!mi->in_cache && mi->refs == 0);
    free(mi->key);
    free(mi);
}

void holders_mi_ref(owner *o, memory_info *mi)
{
    pthread_mutex_lock(&o->hold_lock);
    mi->refs++;
    pthread_mutex_unlock(&o->hold_lock);
}

/* Drops one reference (the lock held); true when it was the last. */
static bool mi_unref_locked(memory_info *mi)
{
    assert(mi->refs > 0);
    return --mi->refs == 0;
}

/* The last reference of mi went on the loop: its master holder goes. */
static void mi_dispose(owner *o, memory_info *mi)
{
    owner_ack_holder(o, mi->master_holder_id);
    holders_mi_free(mi);
}

void holders_mi_unref(owner *o, memory_info *mi)
{
    pthread_mutex_lock(&o->hold_lock);
    bool last = mi_unref_locked(mi);
    pthread_mutex_unlock(&o->hold_lock);
    if (last)
        mi_dispose(o, mi);
}

memory_info *holders_cache_find(owner *o, const void *key, size_t klen)
{
    memory_info *mi;
    HASH_FIND(hh, o->get_cache, key, klen, mi);
    return mi;
}

/* Takes mi out of the cache (the lock held); true when that was its last
 * reference. */
static bool cache_remove_locked(owner *o, memory_info *mi)
{
    HASH_DEL(o->get_cache, mi);
    mi->in_cache = false;
    return mi_unref_locked(mi);
}

void holders_cache_insert(owner *o, memory_info *mi)
{
    pthread_mutex_lock(&o->hold_lock);
    memory_info *old = holders_cache_find(o, mi->key, mi->klen);
    bool old_last = old && cache_remove_locked(o, old);
    HASH_ADD_KEYPTR(hh, o->get_cache, mi->key, mi->klen, mi);
    mi->in_cache = true;
    mi->refs++;
    pthread_mutex_unlock(&o->hold_lock);
    if (old_last)
        mi_dispose(o, old);
}

void holders_cache_drop(owner *o, const void *key, size_t klen)
{
    memory_info *mi = holders_cache_find(o, key, klen);
    if (!mi)
        return;
    pthread_mutex_lock(&o->hold_lock);
    bool last = cache_remove_locked(o, mi);
    pthread_mutex_unlock(&o->hold_lock);
    if (last)
        mi_dispose(o, mi);
}

void holders_cache_clear(owner *o)
{
    memory_info *mi, *tmp;
    HASH_ITER(hh, o->get_cache, mi, tmp) {
        holders_cache_drop(o, mi->key, mi->klen);
    }
}

uint64_t holders_session_add_locked(session *s, memory_info *mi)
{
    ext_holding *h = malloc(sizeof *h);
    if (!h)
        return 0;
    h->id = ++s->next_holding_id;
    h->mi = mi;
    mi->refs++;
    HASH_ADD(hh, s->holdings, id, sizeof h->id, h);
    return h->id;
}

uint64_t holders_session_add(owner *o, session *s, memory_info *mi)
{
    pthread_mutex_lock(&o->hold_lock);
    uint64_t id = holders_session_add_locked(s, mi);
    pthread_mutex_unlock(&o->hold_lock);
    return id;
}

bool holders_session_release_locked(session *s, uint64_t id, memory_info **last)
{
    ext_holding *h;
    *last = NULL;
    HASH_FIND(hh, s->holdings, &id, sizeof id, h);
    if (!h)
        return false;
    HASH_DEL(s->holdings, h);
    if (mi_unref_locked(h->mi))
        *last = h->mi;
    free(h);
    return true;
}

bool holders_session_release(owner *o, session *s, uint64_t id)
{
    memory_info *last;
    pthread_mutex_lock(&o->hold_lock);
    bool found = holders_session_release_locked(s, id, &last);
    pthread_mutex_unlock(&o->hold_lock);
    if (last)
        mi_dispose(o, last);
    return found;
}

void holders_session_release_all(owner *o, session *s)
{
    pthread_mutex_lock(&o->hold_lock);
    ext_holding *h, *tmp;
    HASH_ITER(hh, s->holdings, h, tmp) {
        HASH_DEL(s->holdings, h);
        if (mi_unref_locked(h->mi))
            mi_dispose(o, h->mi); /* the loop's: its ack queue is not the lock's */
        free(h);
    }
    pthread_mutex_unlock(&o->hold_lock);
}
