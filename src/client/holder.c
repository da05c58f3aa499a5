/*
 * holder.c - MemHolders and the external weak index.
 *
 * A holder points into the mapped segment. While any holder of a key is alive,
 * the weak index maps the key to it, so another get of the key costs no RPC:
 * it takes one more reference to the same holder. The index is weak: the last
 * release removes the entry and tells the owner (ExternalDeleteAck).
 *
 * Staleness: an overwrite or delete made through this client, or an
 * ExternalInvalidateWeakIndex push, removes the key and bumps inval_epoch. A
 * get only offers its fresh holder to the index when no invalidation happened
 * since it started, so a get that raced an overwrite cannot re-publish the old
 * version after the overwrite returned.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "common/memdup.h"

void holder_ack_ids(fx_client *c, const uint64_t *ids, size_t n)
{
    if (!n)
        return;
    Fx__ExternalDeleteAckReq req = FX__EXTERNAL_DELETE_ACK_REQ__INIT;
    req.n_holder_ids = n;
    req.holder_ids = (uint64_t *)ids;
    int err;
    xconn *x = client_conn_get(c, &err);
    if (x) /* when the owner is gone, it has already reclaimed the holder */
        client_conn_put(c, x, client_notify(c, x, MSG_EXT_DELETE_ACK, &req.base) != 0);
}

fx_holder *holder_index_get(fx_client *c, const char *key, size_t klen)
{
    pthread_mutex_lock(&c->index_lock);
    fx_holder *h;
    HASH_FIND(hh, c->weak, key, klen, h);
    if (h)
        h->refs++;
    pthread_mutex_unlock(&c->index_lock);
    return h;
}

fx_holder *holder_new(fx_client *c, const char *key, size_t klen, const Fx__ExternalGetResp *r)
{
    fx_holder *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->key = fx_memdup(key, klen);
    if (!h->key) {
        free(h);
        return NULL;
    }
    h->klen = klen;
    h->refs = 1;
    h->c = c;
    h->data = c->base + r->offset;
    h->len = r->len;
    h->source = r->source == FX_SRC_SSD ? FX_SRC_SSD : FX_SRC_MEMORY;
    h->holder_id = r->holder_id;
    pthread_mutex_lock(&c->index_lock);
    DL_APPEND(c->live, h);
    pthread_mutex_unlock(&c->index_lock);
    return h;
}

void holder_index_offer(fx_client *c, fx_holder *h, uint64_t epoch)
{
    pthread_mutex_lock(&c->index_lock);
    fx_holder *cur;
    HASH_FIND(hh, c->weak, h->key, h->klen, cur);
    if (!cur && atomic_load(&c->inval_epoch) == epoch) {
        HASH_ADD_KEYPTR(hh, c->weak, h->key, h->klen, h);
        h->indexed = true;
    }
    pthread_mutex_unlock(&c->index_lock);
}

void holder_index_invalidate(fx_client *c, const void *key, size_t klen)
{
    pthread_mutex_lock(&c->index_lock);
    atomic_fetch_add(&c->inval_epoch, 1);
    fx_holder *h;
    HASH_FIND(hh, c->weak, key, klen, h);
    if (h) {
        HASH_DEL(c->weak, h);
        h->indexed = false;
    }
    pthread_mutex_unlock(&c->index_lock);
}

const void *fx_holder_data(const fx_holder *h)
{
    return h ? h->data : NULL;
}

size_t fx_holder_len(const fx_holder *h)
{
    return h ? h->len : 0;
}

int fx_holder_source(const fx_holder *h)
{
    return h ? h->source : FX_EINVAL;
}

static void holder_destroy(fx_holder *h)
{
    free(h->key);
    free(h);
}

void fx_holder_release(fx_holder *h)
{
    if (!h)
        return;
    fx_client *c = h->c;
    pthread_mutex_lock(&c->index_lock);
    if (--h->refs > 0) {
        pthread_mutex_unlock(&c->index_lock);
        return;
    }
    if (h->indexed)
        HASH_DEL(c->weak, h);
    DL_DELETE(c->live, h);
    pthread_mutex_unlock(&c->index_lock);

    holder_ack_ids(c, &h->holder_id, 1);
    holder_destroy(h);
}

void holder_free_all(fx_client *c)
{
    pthread_mutex_lock(&c->index_lock);
    fx_holder *h, *tmp;
    DL_FOREACH_SAFE(c->live, h, tmp) {
        if (h->indexed)
            HASH_DEL(c->weak, h);
        DL_DELETE(c->live, h);
        holder_destroy(h);
    }
    pthread_mutex_unlock(&c->index_lock);
}
