/*
 * query.c - questions about keys that move no bytes: KeyInfo (fx_exists,
 * fx_get_size, fx_count_prefix), BatchKeyInfo (fx_batch_exists,
 * fx_prefix_hits) and the owners' AccessReports.
 *
 * exists and get_size read kv_routes: a key exists while its current version
 * has a readable copy (memory or SSD); an in-flight put does not count until
 * PutDone. count_prefix reads the prefix index that the route table keeps in
 * step with its keys (route.c); the spec only promises it eventually
 * consistent with puts, and here it is exact at each answer. BatchKeyInfo
 * answers up to FX_BATCH_MAX keys with the same rule in one pass over the
 * packed list, after its shape was checked (net/batch_keys.h); prefix_only
 * stops at the first key without a readable value.
 *
 * AccessReport lists keys an owner served from its own get cache (no
 * GetStart reached the master): each is a hit for that owner's replica in the
 * eviction policy, so that the policy sees every read, not only the misses of
 * the owners' caches.
 */
#include "master/master.h"
#include "master/prefix_index.h"

#include "fluxon/fluxon.h"
#include "net/batch_keys.h"

#define MAX_KEY_LEN 4096u

void master_on_key_info(master *m, net_conn *c, const frame_hdr *h, Fx__KeyInfoReq *req)
{
    Fx__KeyInfoResp resp = FX__KEY_INFO_RESP__INIT;
    if (req->key.len > MAX_KEY_LEN || (!req->count_prefix && req->key.len == 0)) {
        net_reply_error(c, h, FX_EINVAL, "%s length %zu is outside %u..%u",
                        req->count_prefix ? "prefix" : "key", req->key.len,
                        req->count_prefix ? 0u : 1u, MAX_KEY_LEN);
        return;
    }
    if (req->count_prefix) {
        resp.count = m->routes.prefix ? prefix_index_count(m->routes.prefix, req->key.data,
                                                           req->key.len)
                                      : 0;
        net_reply(c, h, &resp.base);
        return;
    }
    route *r = route_find(&m->routes, req->key.data, req->key.len);
    if (r) {
        resp.exists = true;
        resp.len = r->len;
    }
    net_reply(c, h, &resp.base);
}

void master_on_batch_key_info(master *m, net_conn *c, const frame_hdr *h,
                              Fx__BatchKeyInfoReq *req)
{
    char why[160];
    if (batch_keys_check(&req->keys, req->klens, req->n_klens, why, sizeof why)) {
        net_reply_error(c, h, FX_EINVAL, "BatchKeyInfo: %s", why);
        return;
    }
    int32_t results[FX_BATCH_MAX];
    Fx__BatchKeyInfoResp resp = FX__BATCH_KEY_INFO_RESP__INIT;
    size_t off = 0, n = 0; /* the shape check bounds off by keys.len */
    while (n < req->n_klens) {
        uint32_t klen = req->klens[n];
        int32_t r = FX_EINVAL; /* this key alone */
        if (batch_key_len_ok(klen))
            r = route_find(&m->routes, req->keys.data + off, klen) ? 1 : 0;
        off += klen;
        results[n++] = r;
        if (r != 1 && req->prefix_only)
            break;
        if (r == 1 && resp.prefix_hits == n - 1)
            resp.prefix_hits = n;
    }
    resp.n_results = n;
    resp.results = results;
    net_reply(c, h, &resp.base);
}

void master_on_access_report(master *m, member *mb, Fx__AccessReportReq *req)
{
    for (size_t i = 0; i < req->n_keys; i++) {
        route *r = route_find(&m->routes, req->keys[i].data, req->keys[i].len);
        if (r)
            master_note_access(r, mb->node_id);
    }
}
