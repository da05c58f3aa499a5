/*
 * index.c - the (key, put_id) -> entry hash table (see index.h).
 */
#include "owner/ssd/index.h"

#include <stdlib.h>
#include <string.h>

uint8_t *index_key(const void *key, size_t klen, ssd_put_id pid, uint8_t *buf, size_t cap,
                   size_t *hlen)
{
    if (klen > SIZE_MAX - INDEX_PID_BYTES)
        return NULL;
    size_t n = klen + INDEX_PID_BYTES;
    uint8_t *k = n <= cap ? buf : malloc(n);
    if (!k)
        return NULL;
    if (klen)
        memcpy(k, key, klen);
    for (unsigned i = 0; i < 8; i++)
        k[klen + i] = (uint8_t)(pid.time_ms >> (8 * i));
    for (unsigned i = 0; i < 4; i++)
        k[klen + 8 + i] = (uint8_t)(pid.version >> (8 * i));
    *hlen = n;
    return k;
}

ssd_entry *index_find(ssd_index *ix, const uint8_t *hkey, size_t hlen)
{
    ssd_entry *e = NULL;
    HASH_FIND(hh, ix->table, hkey, hlen, e);
    return e;
}

ssd_entry *index_insert(ssd_index *ix, ssd_entry *e)
{
    size_t hlen = e->klen + INDEX_PID_BYTES;
    ssd_entry *old = index_find(ix, e->hkey, hlen);
    if (old) {
        HASH_DELETE(hh, ix->table, old);
        old->indexed = false;
    }
    HASH_ADD_KEYPTR(hh, ix->table, e->hkey, hlen, e);
    e->indexed = true;
    return old;
}

bool index_remove(ssd_index *ix, ssd_entry *e)
{
    if (!e->indexed)
        return false;
    HASH_DELETE(hh, ix->table, e);
    e->indexed = false;
    return true;
}

size_t index_count(const ssd_index *ix)
{
    return HASH_COUNT(ix->table);
}

void index_clear(ssd_index *ix)
{
    ssd_entry *e, *tmp;
    HASH_ITER(hh, ix->table, e, tmp) {
        HASH_DELETE(hh, ix->table, e);
        e->indexed = false;
    }
}
