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
 *
 * The near cache: a released holder of up to NEAR_MAX_VALUE bytes that is in
 * the weak index stays there, unacknowledged, within near_max_bytes (newest
 * first; the oldest are acknowledged and dropped past it), so that the next
 * get of the key costs no call either. The owner still counts it as held, so
 * the invalidations that reach live holders reach it, and it is dropped
 * (acknowledged) when one comes: a near-cached value is exactly as stale as a
 * held one may be (fluxon.h). The bytes it pins are not evictable, hence the
 * budget: fx_set_near_cache, FLUXON_NEAR_CACHE_BYTES, by default 1/64 of the
 * segment and at most NEAR_DEFAULT_MAX.
 *
 * A get the index answers never reaches the owner, yet the master's eviction
 * policy must count it, or the keys read most look cold there: their keys go
 * to the owner in one-way ExternalAccessReports, CLIENT_HIT_REPORT_BATCH at
 * a time (advisory: what is pending at fx_close, or fails to send, is lost).
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "common/memdup.h"

#define NEAR_MAX_VALUE (256u << 10)
#define NEAR_DEFAULT_MAX (8ull << 20)
#define NEAR_TRIM_BATCH 64 /* holders acknowledged per ExternalDeleteAck when trimming */

void holder_ack_ids(fx_client *c, const uint64_t *ids, size_t n, bool via_lane)
{
    if (!n)
        return;
    Fx__ExternalDeleteAckReq req = FX__EXTERNAL_DELETE_ACK_REQ__INIT;
    req.n_holder_ids = n;
    req.holder_ids = (uint64_t *)ids;
    int err;
    xconn *x = client_conn_get(c, &err);
    if (!x) /* when the owner is gone, it has already reclaimed the holder */
        return;
    int sent = client_notify(c, client_release_conn(x, via_lane), MSG_EXT_DELETE_ACK, &req.base);
    client_conn_put(c, x, sent != 0);
}

static void holder_destroy(fx_holder *h)
{
    free(h->key);
    free(h);
}

/* Takes h out of the near cache (the index lock held). */
static void near_unlink(fx_client *c, fx_holder *h)
{
    DL_DELETE2(c->near, h, near_prev, near_next);
    c->near_bytes -= h->len;
    h->near = false;
}

/* Drops the oldest near-cached holders until the cache holds at most max
 * bytes: they leave the index and the owner is told they are released. */
static void near_trim(fx_client *c, uint64_t max)
{
    for (;;) {
        fx_holder *gone[NEAR_TRIM_BATCH];
        uint64_t ids[NEAR_TRIM_BATCH];
        size_t n = 0;
        pthread_mutex_lock(&c->index_lock);
        while (n < NEAR_TRIM_BATCH && c->near && c->near_bytes > max) {
            fx_holder *h = c->near->near_prev; /* the oldest (utlist: head->prev is the tail) */
            near_unlink(c, h);
            HASH_DEL(c->weak, h);
            h->indexed = false;
            DL_DELETE(c->live, h);
            ids[n] = h->holder_id;
            gone[n++] = h;
        }
        pthread_mutex_unlock(&c->index_lock);
        if (!n)
            return;
        holder_ack_ids(c, ids, n, false);
        for (size_t i = 0; i < n; i++)
            holder_destroy(gone[i]);
    }
}

void holder_near_init(fx_client *c)
{
    const char *env = getenv("FLUXON_NEAR_CACHE_BYTES");
    char *end;
    unsigned long long v = env && *env ? strtoull(env, &end, 10) : 0;
    if (env && *env && *end == '\0') {
        c->near_max_bytes = v;
        return;
    }
    c->near_max_bytes = c->seg_size / 64 < NEAR_DEFAULT_MAX ? c->seg_size / 64 : NEAR_DEFAULT_MAX;
}

int fx_set_near_cache(fx_client *c, size_t max_bytes)
{
    if (!c)
        return client_fail(FX_EINVAL, "client is NULL");
    pthread_mutex_lock(&c->index_lock);
    c->near_max_bytes = max_bytes;
    pthread_mutex_unlock(&c->index_lock);
    near_trim(c, max_bytes);
    return 0;
}

/* Sends the keys of n index hits to the owner and frees them. */
static void report_hits(fx_client *c, char **keys, const size_t *lens, size_t n)
{
    ProtobufCBinaryData wire[CLIENT_HIT_REPORT_BATCH];
    for (size_t i = 0; i < n; i++)
        wire[i] = (ProtobufCBinaryData){.len = lens[i], .data = (uint8_t *)keys[i]};
    Fx__ExternalAccessReportReq req = FX__EXTERNAL_ACCESS_REPORT_REQ__INIT;
    req.n_keys = n;
    req.keys = wire;
    int err;
    xconn *x = client_conn_get(c, &err);
    if (x)
        client_conn_put(c, x, client_notify(c, x, MSG_EXT_ACCESS_REPORT, &req.base) != 0);
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
}

fx_holder *holder_index_get(fx_client *c, const char *key, size_t klen)
{
    char *full[CLIENT_HIT_REPORT_BATCH];
    size_t full_lens[CLIENT_HIT_REPORT_BATCH], n_full = 0;
    pthread_mutex_lock(&c->index_lock);
    fx_holder *h;
    HASH_FIND(hh, c->weak, key, klen, h);
    if (h) {
        if (h->near)
            near_unlink(c, h); /* in use again: out of the cache while held */
        h->refs++;
        char *k = fx_memdup(key, klen);
        if (k) {
            c->hit_keys[c->n_hits] = k;
            c->hit_lens[c->n_hits++] = klen;
        }
        if (c->n_hits == CLIENT_HIT_REPORT_BATCH) {
            memcpy(full, c->hit_keys, sizeof full);
            memcpy(full_lens, c->hit_lens, sizeof full_lens);
            n_full = c->n_hits;
            c->n_hits = 0;
        }
    }
    pthread_mutex_unlock(&c->index_lock);
    if (n_full)
        report_hits(c, full, full_lens, n_full);
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
    /* The owner's get cache no longer has it either: the next get asks the loop. */
    lane_hint_note(c, lane_hint_hash(key, klen), false);
    pthread_mutex_lock(&c->index_lock);
    atomic_fetch_add(&c->inval_epoch, 1);
    fx_holder *h, *gone = NULL;
    HASH_FIND(hh, c->weak, key, klen, h);
    if (h) {
        HASH_DEL(c->weak, h);
        h->indexed = false;
        if (h->near) { /* released already: nothing else holds it */
            near_unlink(c, h);
            DL_DELETE(c->live, h);
            gone = h;
        }
    }
    pthread_mutex_unlock(&c->index_lock);
    if (gone) {
        holder_ack_ids(c, &gone->holder_id, 1, gone->via_lane);
        holder_destroy(gone);
    }
}

void holder_index_invalidate_all(fx_client *c)
{
    pthread_mutex_lock(&c->index_lock);
    atomic_fetch_add(&c->inval_epoch, 1);
    fx_holder *h, *tmp;
    HASH_ITER(hh, c->weak, h, tmp) {
        if (!h->near) { /* held: stays valid, leaves the index */
            HASH_DEL(c->weak, h);
            h->indexed = false;
        }
    }
    pthread_mutex_unlock(&c->index_lock);
    near_trim(c, 0); /* the released ones: dropped and acknowledged */
}

void holder_index_clear(fx_client *c)
{
    pthread_mutex_lock(&c->index_lock);
    atomic_fetch_add(&c->inval_epoch, 1);
    fx_holder *h, *tmp;
    HASH_ITER(hh, c->weak, h, tmp) {
        HASH_DEL(c->weak, h);
        h->indexed = false;
        if (h->near) { /* the owner reclaimed it with the session: no ack */
            near_unlink(c, h);
            DL_DELETE(c->live, h);
            holder_destroy(h);
        }
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
    if (h->indexed && h->len <= NEAR_MAX_VALUE && h->len <= c->near_max_bytes &&
        !atomic_load(&c->dead)) {
        /* Kept for the next get of the key (the near cache). */
        DL_PREPEND2(c->near, h, near_prev, near_next);
        h->near = true;
        c->near_bytes += h->len;
        uint64_t max = c->near_max_bytes;
        bool over = c->near_bytes > max;
        pthread_mutex_unlock(&c->index_lock);
        if (over)
            near_trim(c, max);
        return;
    }
    if (h->indexed)
        HASH_DEL(c->weak, h);
    DL_DELETE(c->live, h);
    pthread_mutex_unlock(&c->index_lock);

    holder_ack_ids(c, &h->holder_id, 1, h->via_lane);
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
    c->near = NULL;
    c->near_bytes = 0;
    for (size_t i = 0; i < c->n_hits; i++)
        free(c->hit_keys[i]);
    c->n_hits = 0;
    pthread_mutex_unlock(&c->index_lock);
}
