/*
 * ext_batch_get.c - ExternalBatchGet: many gets in one frame each way.
 *
 * The request packs its keys back to back (klens[i] is key i's length). Its
 * shape is checked first: at most FX_BATCH_MAX keys, lengths adding up to the
 * packed bytes exactly; a bad shape fails the whole message with a detail
 * naming what is wrong. A key outside 1..MAX_KEY_LEN is that key's
 * InvalidArgument alone.
 *
 * Every key then runs through the get flow of ext_get.c (ext_get_key) as one
 * waiter that targets a slot of this batch's join: an owner-local cache hit
 * fills its slot at once, a miss joins or starts the key's pending get
 * (shared with single gets and other batches of that key). The join keeps,
 * per slot, a reference on the hit's memory_info or the error; when the last
 * slot is filled it answers one ExternalBatchGetResp with one ExternalGetResp
 * per key, in key order, and only then turns the hits into holdings of the
 * external's session. So a batch whose connection closed, or whose session
 * died, meanwhile hands out nothing: its references are dropped and no reply
 * is sent. Every pending get ends (answered, failed with its master call, a
 * lost master or a stopping owner), so every join is freed.
 */
#include "owner/extcall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fluxon/fluxon.h"

/* One key's outcome: a hit (mi referenced) or status with its detail. */
typedef struct batch_slot {
    memory_info *mi;
    bool cacheable;
    int source;
    int status;
    char *detail; /* malloc'd; NULL when out of memory or for a hit */
} batch_slot;

/* The join of one ExternalBatchGet: freed when its last slot is filled. */
typedef struct batch_join {
    net_conn *conn; /* referenced */
    frame_hdr hdr;
    size_t n;
    size_t unfilled; /* slots without an outcome, plus one while keys are still being started */
    batch_slot *slots;
} batch_join;

static void join_free(owner *o, batch_join *j)
{
    for (size_t i = 0; i < j->n; i++) {
        if (j->slots[i].mi)
            holders_mi_unref(o, j->slots[i].mi);
        free(j->slots[i].detail);
    }
    net_conn_unref(j->conn);
    free(j->slots);
    free(j);
}

/* Turns each hit into a holding of the session and answers every key in
 * order; nothing is handed out when the connection or its session is gone. */
static void join_reply(owner *o, batch_join *j)
{
    ext_conn *ec = net_conn_is_open(j->conn) ? net_conn_data(j->conn) : NULL;
    if (!ec || !ec->s || ec->s->dead)
        return;
    Fx__ExternalGetResp *results = calloc(j->n ? j->n : 1, sizeof *results);
    Fx__ExternalGetResp **ptrs = calloc(j->n ? j->n : 1, sizeof *ptrs);
    if (!results || !ptrs) {
        free(results);
        free(ptrs);
        net_reply_error(j->conn, &j->hdr, FX_ENOMEM, "out of memory");
        return;
    }
    for (size_t i = 0; i < j->n; i++) {
        batch_slot *s = &j->slots[i];
        Fx__ExternalGetResp *r = &results[i];
        fx__external_get_resp__init(r);
        ptrs[i] = r;
        uint64_t id = s->mi ? holders_session_add(o, ec->s, s->mi) : 0;
        if (!id) {
            r->status = s->mi ? FX_ENOMEM : s->status;
            r->detail = s->mi ? "out of memory" : s->detail ? s->detail : "";
            continue;
        }
        if (s->source == FX_SRC_SSD)
            o->hits_ssd++;
        else
            o->hits_memory++;
        r->offset = s->mi->offset;
        r->len = s->mi->len;
        r->holder_id = id;
        r->source = (uint32_t)s->source;
        r->cacheable = s->cacheable;
    }
    Fx__ExternalBatchGetResp resp = FX__EXTERNAL_BATCH_GET_RESP__INIT;
    resp.n_results = j->n;
    resp.results = ptrs;
    net_reply(j->conn, &j->hdr, &resp.base);
    free(results);
    free(ptrs);
}

/* One slot is settled: the last one answers and frees the join. */
static void join_settled(owner *o, batch_join *j)
{
    if (--j->unfilled)
        return;
    join_reply(o, j);
    join_free(o, j);
}

/* get_answer_fn of a batch slot (ext_get.c calls it once per slot). */
static void answer_slot(owner *o, const get_waiter *w, memory_info *mi, bool cacheable, int source,
                        int status, const char *detail)
{
    batch_join *j = w->ctx;
    batch_slot *s = &j->slots[w->slot];
    if (mi) {
        holders_mi_ref(o, mi); /* released by join_free, after the holdings took theirs */
        s->mi = mi;
        s->cacheable = cacheable;
        s->source = source;
    } else {
        s->status = status;
        s->detail = detail ? strdup(detail) : NULL;
    }
    join_settled(o, j);
}

/* Checks the request's shape: 0, or FX_EINVAL with the detail in why. */
static int check_shape(const Fx__ExternalBatchGetReq *req, char *why, size_t cap)
{
    if (req->n_klens > FX_BATCH_MAX) {
        snprintf(why, cap, "batch of %zu keys is more than %u", req->n_klens, FX_BATCH_MAX);
        return FX_EINVAL;
    }
    size_t sum = 0;
    for (size_t i = 0; i < req->n_klens; i++) {
        if (req->klens[i] > req->keys.len - sum) { /* sum <= keys.len: no overflow */
            snprintf(why, cap, "key lengths add up to more than the %zu bytes of keys (at key %zu)",
                     req->keys.len, i);
            return FX_EINVAL;
        }
        sum += req->klens[i];
    }
    if (sum != req->keys.len) {
        snprintf(why, cap, "key lengths add up to %zu but keys has %zu bytes", sum, req->keys.len);
        return FX_EINVAL;
    }
    return 0;
}

void ext_on_batch_get(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalBatchGetReq *req)
{
    char why[160];
    int st = check_shape(req, why, sizeof why);
    if (st) {
        net_reply_error(ec->conn, h, st, "ExternalBatchGet: %s", why);
        return;
    }
    batch_join *j = calloc(1, sizeof *j);
    if (j)
        j->slots = calloc(req->n_klens ? req->n_klens : 1, sizeof *j->slots);
    if (!j || !j->slots) {
        free(j);
        net_reply_error(ec->conn, h, FX_ENOMEM, "out of memory");
        return;
    }
    j->conn = ec->conn;
    net_conn_ref(j->conn);
    j->hdr = *h;
    j->n = req->n_klens;
    j->unfilled = j->n + 1; /* hits fill slots at once: the join waits for this loop */
    get_waiter target = {.answer = answer_slot, .ctx = j, .t0_us = owner_now_us()};
    const uint8_t *key = req->keys.data;
    for (size_t i = 0; i < j->n; key += req->klens[i], i++) {
        uint32_t klen = req->klens[i];
        if (klen == 0 || klen > MAX_KEY_LEN) {
            char detail[64];
            snprintf(detail, sizeof detail, "key length %u is outside 1..%u", klen, MAX_KEY_LEN);
            owner_metrics_get_failed(o, FX_EINVAL);
            answer_slot(o, &(get_waiter){.ctx = j, .slot = (uint32_t)i}, NULL, false, 0,
                        FX_EINVAL, detail);
            continue;
        }
        target.slot = (uint32_t)i;
        ext_get_key(o, key, klen, &target);
    }
    join_settled(o, j);
}
