/*
 * delete.c - Delete.
 *
 * Delete removes the route first and answers; only then are the owners that
 * cached the old version told, through the invalidation broadcast
 * (invalidation.c). The route's bytes are released once no get or holder
 * references them.
 */
#include "master/master.h"

#include "fluxon/fluxon.h"
#include "master/invalidation.h"

void master_on_delete(master *m, member *mb, net_conn *c, const frame_hdr *h, Fx__DeleteReq *req)
{
    (void)mb;
    route *r = route_find(&m->routes, req->key.data, req->key.len);
    if (!r) {
        net_reply_error(c, h, FX_ENOTFOUND, "KeyNotFound");
        return;
    }
    route_table_remove(&m->routes, r);
    net_reply(c, h, &((Fx__DeleteResp)FX__DELETE_RESP__INIT).base);
    master_invalidate_route(m, r);
    route_unref(r);
}
