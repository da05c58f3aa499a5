/*
 * ext_batch_delete.c - ExternalBatchDelete: many deletes in one frame each
 * way, forwarded to the master as one BatchDelete (src/master/delete.c).
 *
 * The packed key list's shape is checked here (net/batch_keys.h), so that a
 * malformed batch costs the master nothing. The request keeps a copy of the
 * keys: when the answer comes, every key leaves this owner's get cache (as
 * after one Delete, whatever the outcome), and every key the master deleted
 * or did not find leaves our replica index before our client hears of it
 * (docs/decisions.md, R1). The master's answer then goes to the external as
 * it is, one result per key.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fluxon/fluxon.h"
#include "net/batch_keys.h"
#include "owner/extcall.h"

typedef struct batch_delete {
    ext_call *x;     /* x->key: the packed keys */
    uint32_t *klens; /* n of them, adding up to x->klen */
    size_t n;
} batch_delete;

static void batch_delete_free(batch_delete *d)
{
    ext_call_free(d->x);
    free(d->klens);
    free(d);
}

static void on_batch_delete_resp(int status, ProtobufCMessage *msg, void *ud)
{
    batch_delete *d = ud;
    ext_call *x = d->x;
    const Fx__BatchDeleteResp *resp =
        !status && msg_status(msg) == 0 ? (const Fx__BatchDeleteResp *)msg : NULL;
    bool malformed = resp && resp->n_results != d->n;
    size_t off = 0;
    for (size_t i = 0; i < d->n; i++) {
        const char *key = x->key + off;
        off += d->klens[i];
        if (!batch_key_len_ok(d->klens[i]))
            continue;
        owner_forget_key(x->o, key, d->klens[i]);
        if (resp && !malformed && (resp->results[i] == 0 || resp->results[i] == FX_ENOTFOUND))
            owner_index_deleted(x->o, key, d->klens[i]);
    }
    if (malformed) {
        FX_LOG_LIMITED(ERROR, "master answered %zu results for a BatchDelete of %zu keys",
                       resp->n_results, d->n);
        if (net_conn_is_open(x->conn))
            net_reply_error(x->conn, &x->hdr, FX_EPROTO,
                            "the master answered %zu results for %zu keys", resp->n_results,
                            d->n);
    } else if (!ext_forward_failure(x, status, msg, "BatchDelete") &&
               net_conn_is_open(x->conn)) {
        net_reply(x->conn, &x->hdr, msg);
    }
    batch_delete_free(d);
}

void ext_on_batch_delete(owner *o, ext_conn *ec, const frame_hdr *h, Fx__BatchDeleteReq *req)
{
    char why[160];
    if (batch_keys_check(&req->keys, req->klens, req->n_klens, why, sizeof why)) {
        net_reply_error(ec->conn, h, FX_EINVAL, "ExternalBatchDelete: %s", why);
        return;
    }
    batch_delete *d = calloc(1, sizeof *d);
    if (d) {
        d->n = req->n_klens;
        d->klens = malloc((d->n ? d->n : 1) * sizeof *d->klens);
        d->x = ext_call_new(o, ec->conn, h, req->keys.data, req->keys.len);
    }
    if (!d || !d->klens || !d->x) {
        if (d) {
            free(d->klens);
            if (d->x)
                ext_call_free(d->x);
            free(d);
        }
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    if (d->n)
        memcpy(d->klens, req->klens, d->n * sizeof *d->klens);
    int r = owner_master_call(o, MSG_BATCH_DELETE, &req->base, on_batch_delete_resp, d);
    if (r < 0)
        on_batch_delete_resp(r, NULL, d);
}
