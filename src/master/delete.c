/*
 * delete.c - Delete.
 *
 * Delete removes the route, queues the invalidation of the owners that
 * cached the old version (invalidation.c) and the drop of the version from
 * the replica index of every owner that held it (index_sync.h), and answers
 * once those owners acknowledged the batch (the requester's owner drops its
 * own when the answer reaches it): after a master restart, no owner still
 * reports the deleted version. The route's bytes are released once no get
 * or holder references them.
 */
#include "master/master.h"

#include "fluxon/fluxon.h"
#include "master/index_sync.h"
#include "master/invalidation.h"

void master_on_delete(master *m, member *mb, net_conn *c, const frame_hdr *h, Fx__DeleteReq *req)
{
    route *r = route_find(&m->routes, req->key.data, req->key.len);
    if (!r) {
        /* Not found still means "no version after this": an owner that
         * has not acknowledged an eviction of the key must first forget it. */
        index_wait *w = master_index_wait_new(m);
        master_index_wait_key(m, w, (const char *)req->key.data, req->key.len, mb->node_id);
        Fx__DeleteResp nf = FX__DELETE_RESP__INIT;
        nf.status = FX_ENOTFOUND;
        nf.detail = "KeyNotFound";
        master_index_wait_reply(m, w, c, h, &nf.base);
        return;
    }
    route_table_remove(&m->routes, r);
    master_invalidate_route(m, r);
    index_wait *w = master_index_wait_new(m);
    master_index_drop_route(m, r, w, mb->node_id);
    master_index_wait_key(m, w, r->key, r->klen, mb->node_id);
    master_index_wait_reply(m, w, c, h, &((Fx__DeleteResp)FX__DELETE_RESP__INIT).base);
    route_unref(r);
}
