/*
 * keys.c - the calls that ask about keys or manage leases without moving a
 * value: fx_exists, fx_get_size, fx_count_prefix, fx_lease_allocate and
 * fx_lease_keepalive. Each is one ExternalKeyInfo / ExternalLease round trip
 * that the owner forwards to the master.
 */
#include "client/client.h"

/* One KeyInfo round trip; *out is the answer (caller frees) on success. */
static int key_info(fx_client *c, const char *key, size_t klen, bool prefix,
                    Fx__KeyInfoResp **out)
{
    client_clear_error();
    *out = NULL;
    if (!c)
        return client_fail(FX_EINVAL, "client is NULL");
    if ((!key && klen) || klen > CLIENT_MAX_KEY_LEN || (!prefix && klen == 0))
        return client_fail(FX_EINVAL, "%s length %zu is outside %u..%u", prefix ? "prefix" : "key",
                           klen, prefix ? 0u : 1u, CLIENT_MAX_KEY_LEN);
    Fx__KeyInfoReq req = FX__KEY_INFO_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = klen, .data = (uint8_t *)key};
    req.count_prefix = prefix;
    ProtobufCMessage *m;
    int r = client_request(c, MSG_EXT_KEY_INFO, &req.base, &m);
    if (r) {
        msg_free(m);
        return r;
    }
    *out = (Fx__KeyInfoResp *)m;
    return 0;
}

int fx_exists(fx_client *c, const char *key, size_t klen)
{
    Fx__KeyInfoResp *r;
    int err = key_info(c, key, klen, false, &r);
    if (err)
        return err;
    int exists = r->exists ? 1 : 0;
    msg_free(&r->base);
    return exists;
}

int fx_get_size(fx_client *c, const char *key, size_t klen, uint64_t *size)
{
    if (!size) {
        client_clear_error();
        return client_fail(FX_EINVAL, "size is NULL");
    }
    Fx__KeyInfoResp *r;
    int err = key_info(c, key, klen, false, &r);
    if (err)
        return err;
    if (!r->exists) {
        msg_free(&r->base);
        return client_fail(FX_ENOTFOUND, "KeyNotFound");
    }
    *size = r->len;
    msg_free(&r->base);
    return 0;
}

int fx_count_prefix(fx_client *c, const char *prefix, size_t plen, uint64_t *count)
{
    if (!count) {
        client_clear_error();
        return client_fail(FX_EINVAL, "count is NULL");
    }
    Fx__KeyInfoResp *r;
    int err = key_info(c, prefix, plen, true, &r);
    if (err)
        return err;
    *count = r->count;
    msg_free(&r->base);
    return 0;
}

static int lease_call(fx_client *c, uint64_t lease_id, uint64_t ttl_ms, uint64_t *out_id)
{
    client_clear_error();
    if (!c)
        return client_fail(FX_EINVAL, "client is NULL");
    Fx__LeaseReq req = FX__LEASE_REQ__INIT;
    req.lease_id = lease_id;
    req.ttl_ms = ttl_ms;
    ProtobufCMessage *m;
    int r = client_request(c, MSG_EXT_LEASE, &req.base, &m);
    if (!r && out_id)
        *out_id = ((Fx__LeaseResp *)m)->lease_id;
    msg_free(m);
    return r;
}

int fx_lease_allocate(fx_client *c, uint64_t ttl_ms, uint64_t *lease_id)
{
    if (!lease_id)
        return client_fail(FX_EINVAL, "lease_id is NULL");
    if (ttl_ms == 0)
        return client_fail(FX_EINVAL, "lease ttl must be > 0 ms");
    return lease_call(c, 0, ttl_ms, lease_id);
}

int fx_lease_keepalive(fx_client *c, uint64_t lease_id)
{
    if (lease_id == 0)
        return client_fail(FX_EINVAL, "lease id 0 is not a lease");
    return lease_call(c, lease_id, 0, NULL);
}
