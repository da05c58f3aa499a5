/*
 * batch_exists.c - fx_batch_exists and fx_prefix_hits: what the master knows
 * of many keys, in one round trip.
 *
 * The keys travel packed back to back in one ExternalBatchExists (a
 * BatchKeyInfoReq, net/batch_keys.h), which the owner forwards to the master
 * as one BatchKeyInfo; the master answers every key in one pass over its
 * routes, with the rule of fx_exists (a key exists while its current version
 * has a readable copy). fx_prefix_hits sets prefix_only, so the master stops
 * at the first miss. The weak index is not consulted, as for fx_exists: a
 * holder kept here does not say that the cluster still has the key.
 *
 * fx_batch_exists leaves an invalid key out of the message (FX_EINVAL in its
 * own slot) and looks up the others; fx_prefix_hits cannot skip a key of the
 * prefix, so an invalid one fails the call.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"

/* The batch's arguments; 0 or FX_EINVAL with the detail. */
static int check_args(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                      const void *out)
{
    if (!c)
        return client_fail(FX_EINVAL, "client is NULL");
    if (n > FX_BATCH_MAX)
        return client_fail(FX_EINVAL, "batch of %zu keys is over the limit of %u; split it", n,
                           FX_BATCH_MAX);
    if (!keys || !klens || !out)
        return client_fail(FX_EINVAL, "keys, klens and the result must not be NULL");
    return 0;
}

/* One ExternalBatchExists of the keys keys[slot[j]], j < m (slot NULL: keys
 * 0..m-1), packed into one buffer. On success *out is the answer (caller frees with msg_free), with
 * one result per key sent, or per key up to the first miss with
 * prefix_only; checked here, so the caller may index it by j. */
static int batch_key_info(fx_client *c, size_t m, const char *const keys[], const size_t klens[],
                          const size_t *slot, bool prefix_only, Fx__BatchKeyInfoResp **out)
{
    *out = NULL;
    packed_keys pk;
    int r = packed_keys_make(&pk, m, keys, klens, slot);
    if (r)
        return r;
    Fx__BatchKeyInfoReq req = FX__BATCH_KEY_INFO_REQ__INIT;
    req.keys = (ProtobufCBinaryData){.len = pk.total, .data = pk.bytes};
    req.n_klens = pk.n;
    req.klens = pk.lens;
    req.prefix_only = prefix_only;
    ProtobufCMessage *msg;
    r = client_request(c, MSG_EXT_BATCH_EXISTS, &req.base, &msg);
    packed_keys_free(&pk);
    if (r) {
        msg_free(msg);
        return r;
    }
    Fx__BatchKeyInfoResp *resp = (Fx__BatchKeyInfoResp *)msg;
    if (resp->n_results > m || (!prefix_only && resp->n_results != m) ||
        resp->prefix_hits > resp->n_results) {
        r = client_fail(FX_EPROTO, "owner answered %zu results (%llu hits) for %zu keys",
                        resp->n_results, (unsigned long long)resp->prefix_hits, m);
        msg_free(msg);
        return r;
    }
    *out = resp;
    return 0;
}

int fx_batch_exists(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                    int results[])
{
    client_clear_error();
    int err = check_args(c, n, keys, klens, results);
    if (err) {
        for (size_t i = 0; results && i < n; i++)
            results[i] = err; /* the batch's code, as fluxon.h promises */
        return err;
    }
    if (n == 0)
        return 0;
    size_t *slot = malloc(n * sizeof *slot); /* key sent j -> its index slot[j] */
    if (!slot) {
        for (size_t i = 0; i < n; i++)
            results[i] = FX_ENOMEM;
        return client_fail(FX_ENOMEM, "out of memory");
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!(results[i] = client_check_key(keys[i], klens[i])))
            slot[m++] = i;
    Fx__BatchKeyInfoResp *resp = NULL;
    if (m && (err = batch_key_info(c, m, keys, klens, slot, false, &resp)) == 0) {
        for (size_t j = 0; j < m; j++) {
            int32_t v = resp->results[j];
            results[slot[j]] = v > 0 ? 1 : v; /* 1, 0 or that key's FX_E* code */
        }
        msg_free(&resp->base);
    } else if (err) {
        for (size_t j = 0; j < m; j++)
            results[slot[j]] = err; /* not known: the batch's code */
    }
    free(slot);
    return err;
}

int fx_prefix_hits(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                   size_t *hits)
{
    client_clear_error();
    int err = check_args(c, n, keys, klens, hits);
    if (err)
        return err;
    *hits = 0;
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (client_check_key(keys[i], klens[i]))
            return client_fail(FX_EINVAL, "key %zu: %s of length %zu; keys must be 1..%u bytes",
                               i, keys[i] ? "key" : "NULL key", klens[i], CLIENT_MAX_KEY_LEN);
    Fx__BatchKeyInfoResp *resp;
    err = batch_key_info(c, n, keys, klens, NULL, true, &resp);
    if (err)
        return err;
    *hits = (size_t)resp->prefix_hits;
    msg_free(&resp->base);
    return 0;
}
