/*
 * extcall.c - an external request that waits on the master or on the data
 * plane (ext_call), and the checks and replies every external-request handler
 * shares (extapi.c, ext_put.c, ext_get.c).
 *
 * An ext_call keeps what answering later needs: the connection (referenced,
 * so that it outlives a close; the answer goes only to a connection still
 * open), the request's header and a copy of the key. A failed master call is
 * forwarded to the external here, in one wording for every request; without
 * a master (FX_EMASTER) that wording starts "MasterUnavailable:".
 */
#include "owner/extcall.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/memdup.h"
#include "fluxon/fluxon.h"

ext_call *ext_call_new(owner *o, net_conn *c, const frame_hdr *h, const void *key, size_t klen)
{
    ext_call *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->key = fx_memdup(key, klen);
    if (!x->key) {
        free(x);
        return NULL;
    }
    x->klen = klen;
    x->o = o;
    x->conn = c;
    x->hdr = *h;
    x->t0_us = owner_now_us();
    net_conn_ref(c);
    return x;
}

void ext_call_free(ext_call *x)
{
    net_conn_unref(x->conn);
    free(x->key);
    free(x->value);
    free(x);
}

void ext_master_failure(char *buf, size_t cap, int status, const char *what)
{
    switch (status) {
    case FX_EMASTER:
        snprintf(buf, cap, "MasterUnavailable: %s: the owner has no master (lost; it waited "
                           "master_wait for one)", what);
        break;
    case FX_ETIMEDOUT:
        snprintf(buf, cap, "%s: master did not answer in time", what);
        break;
    case FX_ENOMEM:
        snprintf(buf, cap, "%s: out of memory", what);
        break;
    default:
        snprintf(buf, cap, "%s: master unreachable (%s)", what, fx_strerror(status));
    }
}

bool ext_forward_failure(ext_call *x, int status, ProtobufCMessage *resp, const char *what)
{
    int st = status ? status : msg_status(resp);
    if (st && st != FX_ENOTFOUND)
        owner_metrics_error(x->o, st);
    if (status) {
        if (net_conn_is_open(x->conn)) {
            char detail[256];
            ext_master_failure(detail, sizeof detail, status, what);
            net_reply_error(x->conn, &x->hdr, status, "%s", detail);
        }
        return true;
    }
    if (st) {
        if (net_conn_is_open(x->conn))
            net_reply_error(x->conn, &x->hdr, st, "%s", msg_detail(resp));
        return true;
    }
    return false;
}

bool ext_valid_key(net_conn *c, const frame_hdr *h, const ProtobufCBinaryData *key)
{
    if (key->len == 0 || key->len > MAX_KEY_LEN) {
        net_reply_error(c, h, FX_EINVAL, "key length %zu is outside 1..%u", key->len, MAX_KEY_LEN);
        return false;
    }
    return true;
}
