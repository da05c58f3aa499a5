/*
 * delete.c - Delete and BatchDelete.
 *
 * Delete removes the route, queues the invalidation of the owners that
 * cached the old version (invalidation.c) and the drop of the version from
 * the replica index of every owner that held it (index_sync.h), and answers
 * once those owners acknowledged the batch (the requester's owner drops its
 * own when the answer reaches it): after a master restart, no owner still
 * reports the deleted version. The route's bytes are released once no get
 * or holder references them. BatchDelete does the same for many keys in one
 * pass, with one answer that waits for every owner any of them waits for.
 */
#include "master/master.h"

#include <stdlib.h>

#include "fluxon/fluxon.h"
#include "master/index_sync.h"
#include "master/invalidation.h"
#include "net/batch_keys.h"

/* Deletes key for requester mb, adding to w the owners the answer must wait
 * for. Returns 0 or FX_ENOTFOUND. Not found still means "no version after
 * this": an owner that has not acknowledged an eviction of the key must
 * first forget it. */
static int delete_key(master *m, member *mb, const char *key, size_t klen, index_wait *w)
{
    route *r = route_find(&m->routes, key, klen);
    master_index_wait_key(m, w, key, klen, mb->node_id);
    if (!r)
        return FX_ENOTFOUND;
    route_table_remove(&m->routes, r);
    master_invalidate_route(m, r);
    master_index_drop_route(m, r, w, mb->node_id);
    route_unref(r);
    return 0;
}

void master_on_delete(master *m, member *mb, net_conn *c, const frame_hdr *h, Fx__DeleteReq *req)
{
    index_wait *w = master_index_wait_new(m);
    Fx__DeleteResp resp = FX__DELETE_RESP__INIT;
    if (delete_key(m, mb, (const char *)req->key.data, req->key.len, w) == FX_ENOTFOUND) {
        resp.status = FX_ENOTFOUND;
        resp.detail = "KeyNotFound";
    }
    master_index_wait_reply(m, w, c, h, &resp.base);
}

void master_on_batch_delete(master *m, member *mb, net_conn *c, const frame_hdr *h,
                            Fx__BatchDeleteReq *req)
{
    char why[160];
    if (batch_keys_check(&req->keys, req->klens, req->n_klens, why, sizeof why)) {
        net_reply_error(c, h, FX_EINVAL, "BatchDelete: %s", why);
        return;
    }
    int32_t *results = malloc((req->n_klens ? req->n_klens : 1) * sizeof *results);
    if (!results) {
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    index_wait *w = master_index_wait_new(m);
    size_t off = 0;
    for (size_t i = 0; i < req->n_klens; i++) {
        const char *key = (const char *)req->keys.data + off;
        off += req->klens[i];
        results[i] = batch_key_len_ok(req->klens[i])
                         ? delete_key(m, mb, key, req->klens[i], w)
                         : FX_EINVAL;
    }
    Fx__BatchDeleteResp resp = FX__BATCH_DELETE_RESP__INIT;
    resp.n_results = req->n_klens;
    resp.results = results;
    master_index_wait_reply(m, w, c, h, &resp.base);
    free(results);
}
