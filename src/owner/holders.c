/*
 * holders.c - memory_info refcounts, the owner-local get cache, and the
 * holdings of each external session (see owner.h for the three layers).
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

void holders_mi_unref(owner *o, memory_info *mi)
{
    assert(mi->refs > 0);
    if (--mi->refs)
        return;
    assert(!mi->in_cache);
    owner_ack_holder(o, mi->master_holder_id);
    free(mi->key);
    free(mi);
}

memory_info *holders_cache_find(owner *o, const void *key, size_t klen)
{
    memory_info *mi;
    HASH_FIND(hh, o->get_cache, key, klen, mi);
    return mi;
}

void holders_cache_insert(owner *o, memory_info *mi)
{
    holders_cache_drop(o, mi->key, mi->klen);
    HASH_ADD_KEYPTR(hh, o->get_cache, mi->key, mi->klen, mi);
    mi->in_cache = true;
    mi->refs++;
}

void holders_cache_drop(owner *o, const void *key, size_t klen)
{
    memory_info *mi = holders_cache_find(o, key, klen);
    if (!mi)
        return;
    HASH_DEL(o->get_cache, mi);
    mi->in_cache = false;
    holders_mi_unref(o, mi);
}

void holders_cache_clear(owner *o)
{
    memory_info *mi, *tmp;
    HASH_ITER(hh, o->get_cache, mi, tmp) {
        HASH_DEL(o->get_cache, mi);
        mi->in_cache = false;
        holders_mi_unref(o, mi);
    }
}

uint64_t holders_session_add(owner *o, session *s, memory_info *mi)
{
    (void)o;
    ext_holding *h = malloc(sizeof *h);
    if (!h)
        return 0;
    h->id = ++s->next_holding_id;
    h->mi = mi;
    mi->refs++;
    HASH_ADD(hh, s->holdings, id, sizeof h->id, h);
    return h->id;
}

bool holders_session_release(owner *o, session *s, uint64_t id)
{
    ext_holding *h;
    HASH_FIND(hh, s->holdings, &id, sizeof id, h);
    if (!h)
        return false;
    HASH_DEL(s->holdings, h);
    holders_mi_unref(o, h->mi);
    free(h);
    return true;
}

void holders_session_release_all(owner *o, session *s)
{
    ext_holding *h, *tmp;
    HASH_ITER(hh, s->holdings, h, tmp) {
        HASH_DEL(s->holdings, h);
        holders_mi_unref(o, h->mi);
        free(h);
    }
}
