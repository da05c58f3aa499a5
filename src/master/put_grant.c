/*
 * put_grant.c - PutGrant: ranges granted in advance for an owner's put pool.
 *
 * An owner that serves small puts from a pool (src/owner/put_pool.c) asks for
 * `count` ranges of `len` bytes on its own segment. Each becomes a grant: an
 * in-flight put without a key (inflight.h) that holds its range under a grant
 * id drawn from the put_id sequence. PutDone with granted_len (put.c) turns a
 * grant into the put of a key and gives that put its put_id then, so the put
 * is ordered where it completes, exactly as if its PutStart had come at that
 * moment: a later put of the key always has a higher put_id. PutRevoke with
 * an empty key gives a grant back; the in-flight TTL (ttl_ms in the answer)
 * expires those its owner forgot, and member-left drops them with the owner.
 *
 * Grants are given only where placement keeps the requester's values on the
 * requester (placement_keeps_local), since a pool put never asks where to go.
 * Options (reject_if_exists, leases, reject_if_inflight_same_key) need the
 * master at the start of the put, so the owner sends those puts by PutStart.
 */
#include "master/master.h"

#include <errno.h>

#include "fluxon/fluxon.h"
#include "master/inflight.h"
#include "master/members.h"

#define GRANT_MAX_COUNT 64u
#define GRANT_MAX_LEN (1u << 20)
#define MAX_KEY_LEN 4096u

void master_on_put_grant(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__PutGrantReq *req)
{
    if (req->len == 0 || req->len > GRANT_MAX_LEN || req->count == 0 ||
        req->count > GRANT_MAX_COUNT) {
        net_reply_error(c, h, FX_EINVAL, "PutGrant of %u x %llu bytes: count must be 1..%u and "
                        "len 1..%u", req->count, (unsigned long long)req->len, GRANT_MAX_COUNT,
                        GRANT_MAX_LEN);
        return;
    }
    if (!placement_keeps_local(m, mb)) {
        net_reply_error(c, h, FX_ENOTSUP, "NotSupported: put grants need placement 'local' (or "
                        "one owner that may take values); this master uses '%s'",
                        m->placement->name);
        return;
    }
    Fx__PutGrant grants[GRANT_MAX_COUNT], *ptrs[GRANT_MAX_COUNT];
    Fx__PutId ids[GRANT_MAX_COUNT];
    uint32_t n = 0;
    int err = 0;
    while (n < req->count) {
        allocation *a = master_alloc_evicting(m, mb, req->len, &err);
        if (!a)
            break;
        put_id pid = master_next_put_id(m);
        inflight_put *p = master_inflight_put_add(m, NULL, 0, pid);
        if (!p) {
            allocation_unref(a);
            err = -ENOMEM;
            break;
        }
        p->len = req->len;
        p->req_node = mb->node_id;
        p->target = a;
        a->space->granted += allocation_capacity(a);
        p->target_node = mb->node_id;
        p->target_tomb = mb->tomb_tag;
        fx__put_id__init(&ids[n]);
        ids[n].time_ms = pid.time_ms;
        ids[n].version = pid.version;
        fx__put_grant__init(&grants[n]);
        grants[n].grant_id = &ids[n];
        grants[n].offset = a->offset;
        ptrs[n] = &grants[n];
        n++;
    }
    if (n == 0) {
        net_reply_error(c, h, err == -ENOMEM ? FX_ENOMEM : FX_ENOSPC,
                        "no room for a put grant of %llu bytes on owner '%s'",
                        (unsigned long long)req->len, mb->name);
        return;
    }
    Fx__PutGrantResp resp = FX__PUT_GRANT_RESP__INIT;
    resp.grants = ptrs;
    resp.n_grants = n;
    resp.len = req->len;
    resp.ttl_ms = m->cfg.inflight_ttl_ms;
    net_reply(c, h, &resp.base);
}

inflight_put *master_put_grant_use(master *m, member *mb, const Fx__PutDoneReq *req, int *status,
                                   const char **why)
{
    *status = FX_ESTALE;
    *why = "no put grant under this put_id (expired, or its owner's master changed)";
    inflight_put *g = master_inflight_put_find(m, NULL, 0, req->put_id);
    if (!g || g->req_node != mb->node_id)
        return NULL;
    *status = FX_EINVAL;
    if (req->key.len == 0 || req->key.len > MAX_KEY_LEN) {
        *why = "key length outside 1..4096";
        return NULL;
    }
    if (req->granted_len > g->len) {
        *why = "granted_len is larger than the grant";
        return NULL;
    }
    *status = FX_ENOMEM;
    *why = "out of memory";
    inflight_put *p = master_inflight_put_add(m, req->key.data, req->key.len,
                                              master_next_put_id(m));
    if (!p)
        return NULL;
    g->target->space->granted -= allocation_capacity(g->target);
    if (allocation_shrink(g->target, req->granted_len) < 0) {
        g->target->space->granted += allocation_capacity(g->target);
        master_inflight_put_free(m, p);
        return NULL;
    }
    p->len = req->granted_len;
    p->req_node = g->req_node;
    p->target = g->target;
    g->target = NULL; /* moved */
    p->target_node = g->target_node;
    p->target_tomb = g->target_tomb;
    p->persist_to_ssd = mb->kv_ssd_storage;
    master_inflight_put_free(m, g);
    return p;
}
