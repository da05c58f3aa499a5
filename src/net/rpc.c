/*
 * rpc.c - request/response matching with timeouts (see rpc.h).
 *
 * Pending requests live in a hash by req_id (uthash) and in a list in send
 * order; a 20 ms sweep timer completes the expired ones. Completion removes the
 * entry before calling back, so a callback may issue new requests freely.
 */
#include "net/rpc.h"

#include <errno.h>
#include <stdlib.h>
#include "common/hashtable.h"

#include "common/log.h"
#include "fluxon/fluxon.h"

typedef struct pending {
    uint64_t req_id;
    uint16_t type;
    uint64_t deadline_ms;
    rpc_cb cb;
    void *ud;
    UT_hash_handle hh;
    struct pending *prev, *next;
} pending;

struct rpc_client {
    uv_loop_t *loop;
    net_conn *conn;
    uint64_t next_id;
    pending *by_id;
    pending *order;
    size_t count;
    uv_timer_t *sweep;
};

static void complete(rpc_client *r, pending *p, int status, ProtobufCMessage *m)
{
    HASH_DEL(r->by_id, p);
    DL_DELETE(r->order, p);
    r->count--;
    p->cb(status, m, p->ud);
    free(p);
}

static void on_sweep(uv_timer_t *t)
{
    rpc_client *r = t->data;
    uint64_t now = uv_now(r->loop);
    pending *p, *tmp;
    DL_FOREACH_SAFE(r->order, p, tmp) {
        if (p->deadline_ms <= now) {
            FX_LOG(WARN, "%s request %llu to %s timed out", msg_name(p->type),
                   (unsigned long long)p->req_id, net_conn_peer(r->conn));
            complete(r, p, FX_ETIMEDOUT, NULL);
        }
    }
}

rpc_client *rpc_client_new(uv_loop_t *loop, net_conn *conn)
{
    rpc_client *r = calloc(1, sizeof *r);
    uv_timer_t *t = malloc(sizeof *t);
    if (!r || !t) {
        free(r);
        free(t);
        return NULL;
    }
    r->loop = loop;
    r->conn = conn;
    r->next_id = 1;
    r->sweep = t;
    uv_timer_init(loop, t);
    t->data = r;
    uv_timer_start(t, on_sweep, 20, 20);
    uv_unref((uv_handle_t *)t);
    return r;
}

void rpc_fail_all(rpc_client *r, int status)
{
    while (r->order)
        complete(r, r->order, status, NULL);
}

void rpc_client_free(rpc_client *r)
{
    if (!r)
        return;
    rpc_fail_all(r, FX_ECONN);
    uv_close((uv_handle_t *)r->sweep, (uv_close_cb)free);
    free(r);
}

int rpc_call(rpc_client *r, uint16_t type, const ProtobufCMessage *m, uint32_t timeout_ms, rpc_cb cb,
             void *ud)
{
    pending *p = malloc(sizeof *p);
    if (!p)
        return -ENOMEM;
    p->req_id = r->next_id++;
    p->type = type;
    p->deadline_ms = uv_now(r->loop) + timeout_ms;
    p->cb = cb;
    p->ud = ud;
    int rc = net_send(r->conn, type, 0, p->req_id, m);
    if (rc < 0) {
        free(p);
        return rc;
    }
    HASH_ADD(hh, r->by_id, req_id, sizeof p->req_id, p);
    DL_APPEND(r->order, p);
    r->count++;
    return 0;
}

int rpc_notify(rpc_client *r, uint16_t type, const ProtobufCMessage *m)
{
    return net_send(r->conn, type, FRAME_ONEWAY, r->next_id++, m);
}

bool rpc_on_response(rpc_client *r, const frame_hdr *h, ProtobufCMessage *m)
{
    pending *p;
    HASH_FIND(hh, r->by_id, &h->req_id, sizeof h->req_id, p);
    if (!p)
        return false;
    if (p->type != h->type) {
        FX_LOG(WARN, "%s: response type %s does not match request %s", net_conn_peer(r->conn),
               msg_name(h->type), msg_name(p->type));
        complete(r, p, FX_EPROTO, NULL);
        return true;
    }
    complete(r, p, 0, m);
    return true;
}

size_t rpc_pending(const rpc_client *r)
{
    return r->count;
}
