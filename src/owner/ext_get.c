/*
 * ext_get.c - ExternalGet: the owner's side of a get (spec 003 get sequence,
 * 000 §4-5).
 *
 * A hit in the owner-local get cache (a replica of the current version held
 * here) answers at once without the master. Otherwise one request per key goes
 * to the master (later gets of the same key wait on it): GetStart returns a
 * plan; ReuseReplica needs no copy; DurableReplica and Temporary targets are
 * filled by pulling the source replica's bytes from its owner over the data
 * plane. A plan whose source is the SSD copy on this owner (local refill,
 * spec 000 §5.1) reads it into the target on a worker (ssd_tier.h); a failed
 * read revokes with drop_ssd_source, so that the master forgets the stale
 * copy. An SSD copy on another owner (remote refill) is staged by the master
 * with that owner, and GetStart comes back already done (done_* fields: the
 * holder, no GetDone); a plain plan naming a remote SSD copy is refused.
 * GetDone then turns the target into a holder (and, for a durable get, a
 * replica of the route). A failed pull or refill sends GetRevoke and runs
 * GetStart again, at most GET_ATTEMPTS times in all; a half-written target is
 * never handed to an external. Every range of a plan is checked against this
 * segment first. GetStart and GetDone wait for a lost master (master_wait.c);
 * a get whose plan came from a master link that has since dropped cannot be
 * finished (GetDone) or revoked (GetRevoke) with the next master, whose get
 * ids are its own: it fails with MasterUnavailable (master_epoch). A holder
 * reports where its get's bytes came from: SSD for a refill, memory otherwise
 * (an owner-local cache hit included).
 *
 * Who waits for a get is a get_waiter (owner.h): an ExternalGet's
 * connection, or one slot of an ExternalBatchGet (ext_batch_get.c), which
 * runs each of its keys through ext_get_key here; every outcome goes through
 * the waiter's answer function, so this file knows nothing of batches.
 */
#include "owner/extcall.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memdup.h"
#include "fluxon/fluxon.h"
#include "owner/dataplane/dataplane.h"
#include "owner/ssd_tier.h"

#define GET_ATTEMPTS 3
#define PULL_TIMEOUT_MS 30000u

/* Answers one external get with a new holding of mi. source is where this
 * get's bytes came from: mi's own source when it was just filled, memory for
 * a hit in the owner-local cache (an SSD refill read once stays in memory). */
static void reply_holder(owner *o, net_conn *c, const frame_hdr *h, memory_info *mi, bool cacheable,
                         int source)
{
    if (!net_conn_is_open(c))
        return;
    ext_conn *ec = net_conn_data(c);
    if (!ec || !ec->s || ec->s->dead) {
        net_reply_error(c, h, FX_ECONN, "the external's session is gone");
        return;
    }
    uint64_t id = holders_session_add(o, ec->s, mi);
    if (!id) {
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    if (source == FX_SRC_SSD)
        o->hits_ssd++;
    else
        o->hits_memory++;
    Fx__ExternalGetResp resp = FX__EXTERNAL_GET_RESP__INIT;
    resp.offset = mi->offset;
    resp.len = mi->len;
    resp.holder_id = id;
    resp.source = (uint32_t)source;
    resp.cacheable = cacheable;
    net_reply(c, h, &resp.base);
}

/* get_answer_fn of a single ExternalGet: the answer goes to its connection,
 * if still open. */
static void answer_conn(owner *o, const get_waiter *w, memory_info *mi, bool cacheable, int source,
                        int status, const char *detail)
{
    if (mi)
        reply_holder(o, w->conn, &w->hdr, mi, cacheable, source);
    else if (net_conn_is_open(w->conn))
        net_reply_error(w->conn, &w->hdr, status, "%s", detail);
}

static void pending_get_free(owner *o, pending_get *pg)
{
    if (pg->in_table)
        HASH_DEL(o->pending_gets, pg);
    if (pg->pin)
        holders_mi_unref(o, pg->pin);
    get_waiter *w = pg->waiters;
    while (w) {
        get_waiter *next = w->next;
        if (w->conn)
            net_conn_unref(w->conn);
        free(w);
        w = next;
    }
    free(pg->key);
    free(pg);
}

static void fail_waiters(owner *o, pending_get *pg, int status, const char *detail)
{
    for (get_waiter *w = pg->waiters; w; w = w->next) {
        owner_metrics_get_failed(o, status);
        w->answer(o, w, NULL, false, 0, status, detail);
    }
    if (status == FX_ENOTFOUND)
        o->misses++;
    pending_get_free(o, pg);
}

/* True when pg's get id came from the master link still up (the master that
 * planned it still knows it). */
static bool plan_is_current(owner *o, const pending_get *pg)
{
    return pg->epoch == o->master_epoch;
}

/* drop_ssd_source: the plan's SSD copy could not be read; the master clears
 * it from the route (if the route is still that version). One-way, and
 * dropped when the master that planned the get is gone. */
static void send_get_revoke(owner *o, const pending_get *pg, bool drop_ssd_source)
{
    Fx__GetRevokeReq rv = FX__GET_REVOKE_REQ__INIT;
    rv.get_id = pg->get_id;
    rv.drop_ssd_source = drop_ssd_source;
    if (o->mrpc && plan_is_current(o, pg))
        rpc_notify(o->mrpc, MSG_GET_REVOKE, &rv.base);
}

/* Fails every waiter of pg with the wording of a failed master call. */
static void fail_master_call(owner *o, pending_get *pg, int status, const char *what)
{
    char detail[256];
    ext_master_failure(detail, sizeof detail, status, what);
    fail_waiters(o, pg, status, detail);
}

static void start_get(owner *o, pending_get *pg);

/* The master holds the target as holder_id: answer every waiter with it. */
static void finish_get(owner *o, pending_get *pg, uint64_t holder_id, bool cacheable)
{
    memory_info *mi = holders_mi_new(o, pg->key, pg->klen, holder_id, pg->offset, pg->len,
                                     pg->source);
    if (!mi) {
        owner_ack_holder(o, holder_id);
        fail_waiters(o, pg, FX_ENOMEM, "out of memory");
        return;
    }
    if (cacheable)
        holders_cache_insert(o, mi);
    op_kind kind = mi->source == FX_SRC_SSD ? OP_GET_SSD
                   : pg->pulled             ? OP_GET_REMOTE
                                            : OP_GET_MEMORY;
    for (get_waiter *w = pg->waiters; w; w = w->next) {
        owner_metrics_get_answered(o, w->t0_us, kind, mi->len);
        w->answer(o, w, mi, cacheable, mi->source, 0, NULL);
    }
    holders_mi_unref(o, mi);
    pending_get_free(o, pg);
}

static void on_get_done_resp(int status, ProtobufCMessage *msg, void *ud)
{
    pending_get *pg = ud;
    owner *o = pg->o;
    if (status) {
        fail_master_call(o, pg, status, "GetDone");
        return;
    }
    if (msg_status(msg)) {
        fail_waiters(o, pg, msg_status(msg), msg_detail(msg));
        return;
    }
    Fx__GetDoneResp *r = (Fx__GetDoneResp *)msg;
    finish_get(o, pg, r->holder_id, r->cacheable);
}

static void send_get_done(owner *o, pending_get *pg)
{
    if (!plan_is_current(o, pg)) {
        fail_waiters(o, pg, FX_EMASTER,
                     "MasterUnavailable: GetDone: the master that planned this get was lost");
        return;
    }
    Fx__GetDoneReq gd = FX__GET_DONE_REQ__INIT;
    gd.get_id = pg->get_id;
    int r = owner_master_call(o, MSG_GET_DONE, &gd.base, on_get_done_resp, pg);
    if (r < 0)
        fail_master_call(o, pg, r, "GetDone");
}

static void on_pull_done(int status, const char *detail, void *ud)
{
    pending_get *pg = ud;
    owner *o = pg->o;
    if (!status) {
        send_get_done(o, pg);
        return;
    }
    send_get_revoke(o, pg, false);
    /* Another round waits for a lost master like any GetStart (master_wait):
     * never a busy loop, and GET_ATTEMPTS rounds at most. */
    if (pg->attempts < GET_ATTEMPTS && !o->stopping) {
        FX_LOG(INFO, "pull for get %llu failed (%s); asking the master again",
               (unsigned long long)pg->get_id, detail);
        start_get(o, pg);
        return;
    }
    char msg[512];
    snprintf(msg, sizeof msg, "get: pulling the value from its owner failed %d times; last: %s",
             pg->attempts, detail);
    fail_waiters(o, pg, status, msg);
}

/* Checks a GetStart plan against this segment and this owner. An SSD source
 * here must be a local refill (the source range is the target); its
 * ssd_stage_len is checked when the read starts (a bad one is a failed stage). */
static bool plan_ok(owner *o, const Fx__GetStartResp *r)
{
    if (!segment_contains(&o->seg, r->target_offset, r->len))
        return false;
    bool ssd = r->source_kind == FX_SRC_SSD;
    switch (r->mode) {
    case FX__GET_MODE__REUSE_REPLICA:
        return !ssd && r->src_node_id == o->node_id;
    case FX__GET_MODE__DURABLE_REPLICA:
    case FX__GET_MODE__TEMPORARY:
        if (ssd)
            return r->put_id && (r->src_node_id != o->node_id || r->src_offset == r->target_offset);
        return r->src_node_id != o->node_id && r->src_data_addr && *r->src_data_addr;
    default:
        return false;
    }
}

/* A failed local refill: revoke (clearing the stale SSD source unless the
 * failure was ours alone) and ask the master again, at most GET_ATTEMPTS
 * rounds in all; the target, half filled or not, is never handed out. */
static void on_ssd_load_done(int rc, void *ud)
{
    pending_get *pg = ud;
    owner *o = pg->o;
    if (rc == SSD_OK) {
        send_get_done(o, pg);
        return;
    }
    bool drop = rc != SSD_ENOMEM && rc != SSD_ECLOSED;
    send_get_revoke(o, pg, drop);
    if (pg->attempts < GET_ATTEMPTS && !o->stopping) {
        FX_LOG(INFO, "SSD refill for get %llu failed (%s); asking the master again",
               (unsigned long long)pg->get_id, ssd_tier_strerror(rc));
        start_get(o, pg);
        return;
    }
    char msg[256];
    snprintf(msg, sizeof msg, "get: reading the value from the SSD tier failed %d times; last: %s",
             pg->attempts, ssd_tier_strerror(rc));
    fail_waiters(o, pg, o->stopping ? FX_ECONN : FX_EINTERNAL, msg);
}

/* Runs an SSD plan: a local refill reads the SSD copy into the target on a
 * worker; a remote copy comes only as a GetStart the master completed, so a
 * plain plan naming one is refused. */
static void start_ssd_refill(owner *o, pending_get *pg, const Fx__GetStartResp *r)
{
    if (r->src_node_id != o->node_id) {
        send_get_revoke(o, pg, false);
        fail_waiters(o, pg, FX_ENOTSUP,
                     "an SSD plan naming another owner's copy must come completed by the master (done=true)");
        return;
    }
    if (r->ssd_stage_len < r->len ||
        !segment_contains(&o->seg, r->target_offset, r->ssd_stage_len)) {
        FX_LOG(WARN, "get %llu: SSD stage length %llu does not fit the target %llu+%llu",
               (unsigned long long)r->get_id, (unsigned long long)r->ssd_stage_len,
               (unsigned long long)r->target_offset, (unsigned long long)r->len);
        on_ssd_load_done(SSD_EINVAL, pg);
        return;
    }
    ssd_put_id pid = {.time_ms = r->put_id->time_ms, .version = r->put_id->version};
    int rc = ssd_tier_load(o, pg->key, pg->klen, pid, r->target_offset, r->len, r->ssd_stage_len,
                           on_ssd_load_done, pg);
    if (rc == FX_ENOTSUP)
        on_ssd_load_done(SSD_ENOTFOUND, pg); /* no tier here: the master's copy is stale */
    else if (rc < 0)
        on_ssd_load_done(SSD_ENOMEM, pg);
}

static void on_get_start_resp(int status, ProtobufCMessage *msg, void *ud)
{
    pending_get *pg = ud;
    owner *o = pg->o;
    if (status) {
        fail_master_call(o, pg, status, "GetStart");
        return;
    }
    if (msg_status(msg)) {
        fail_waiters(o, pg, msg_status(msg), msg_detail(msg));
        return;
    }
    Fx__GetStartResp *r = (Fx__GetStartResp *)msg;
    pg->get_id = r->get_id;
    pg->epoch = o->master_epoch; /* the link this answer came on is up */
    pg->offset = r->target_offset;
    pg->len = r->len;
    pg->source = r->source_kind == FX_SRC_SSD ? FX_SRC_SSD : FX_SRC_MEMORY;
    if (r->done) {
        /* A remote refill the master completed (docs/decisions.md): the SSD
         * owner pushed every byte into the target, the master did GetDone's
         * work; only the holder is left to hand out. */
        if (!segment_contains(&o->seg, r->target_offset, r->len)) {
            FX_LOG(ERROR, "master completed a get into %llu+%llu, outside this segment",
                   (unsigned long long)r->target_offset, (unsigned long long)r->len);
            owner_ack_holder(o, r->done_holder_id);
            fail_waiters(o, pg, FX_EPROTO, "invalid get plan from the master");
            return;
        }
        finish_get(o, pg, r->done_holder_id, r->done_cacheable);
        return;
    }
    if (!plan_ok(o, r)) {
        send_get_revoke(o, pg, false);
        FX_LOG(ERROR, "master planned a get this owner cannot serve (mode %d, source node %u, "
                      "target %llu+%llu)",
               r->mode, r->src_node_id, (unsigned long long)pg->offset, (unsigned long long)pg->len);
        fail_waiters(o, pg, FX_EPROTO, "invalid get plan from the master");
        return;
    }
    if (r->mode == FX__GET_MODE__REUSE_REPLICA) {
        send_get_done(o, pg); /* the bytes are already in this segment */
        return;
    }
    /* The target is written now: our replica index forgets what it held. */
    owner_index_writing(o, pg->offset,
                        pg->source == FX_SRC_SSD && r->ssd_stage_len > r->len ? r->ssd_stage_len
                                                                              : r->len);
    if (pg->source == FX_SRC_SSD) {
        start_ssd_refill(o, pg, r);
        return;
    }
    pg->pulled = true;
    if (dp_transfer(o->dp, r->src_node_id, r->src_data_addr, true, r->src_offset, r->target_offset,
                    r->len, PULL_TIMEOUT_MS, on_pull_done, pg) < 0)
        on_pull_done(FX_ECONN, "cannot start the data-plane transfer", pg);
}

static void start_get(owner *o, pending_get *pg)
{
    pg->attempts++;
    pg->pulled = false;
    Fx__GetStartReq gs = FX__GET_START_REQ__INIT;
    gs.key = (ProtobufCBinaryData){.len = pg->klen, .data = (uint8_t *)pg->key};
    int r = owner_master_call(o, MSG_GET_START, &gs.base, on_get_start_resp, pg);
    if (r < 0)
        fail_master_call(o, pg, r, "GetStart");
}

void ext_get_key(owner *o, const void *key, size_t klen, const get_waiter *target)
{
    memory_info *mi = holders_cache_find(o, key, klen);
    if (mi) {
        owner_report_access(o, key, klen);
        owner_metrics_get_answered(o, target->t0_us, OP_GET_MEMORY, mi->len);
        target->answer(o, target, mi, true, FX_SRC_MEMORY, 0, NULL);
        return;
    }
    get_waiter *w = malloc(sizeof *w);
    if (!w) {
        owner_metrics_get_failed(o, FX_ENOMEM);
        target->answer(o, target, NULL, false, 0, FX_ENOMEM, "out of memory");
        return;
    }
    *w = *target;
    if (w->conn)
        net_conn_ref(w->conn);
    pending_get *pg;
    HASH_FIND(hh, o->pending_gets, key, klen, pg);
    if (pg) {
        w->next = pg->waiters;
        pg->waiters = w;
        return;
    }
    pg = calloc(1, sizeof *pg);
    if (pg)
        pg->key = fx_memdup(key, klen);
    if (!pg || !pg->key) {
        free(pg);
        if (w->conn)
            net_conn_unref(w->conn);
        free(w);
        owner_metrics_get_failed(o, FX_ENOMEM);
        target->answer(o, target, NULL, false, 0, FX_ENOMEM, "out of memory");
        return;
    }
    pg->o = o;
    pg->klen = klen;
    w->next = NULL;
    pg->waiters = w;
    HASH_ADD_KEYPTR(hh, o->pending_gets, pg->key, pg->klen, pg);
    pg->in_table = true;
    start_get(o, pg);
}

void ext_on_get(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalGetReq *req)
{
    if (!ext_valid_key(ec->conn, h, &req->key))
        return;
    get_waiter target = {.answer = answer_conn, .conn = ec->conn, .hdr = *h,
                         .t0_us = owner_now_us()};
    ext_get_key(o, req->key.data, req->key.len, &target);
}

/* Gets that arrive from now on must not join the request already in flight
 * for key (it may return the old version). */
static void forget_pending(owner *o, const void *key, size_t klen)
{
    pending_get *pg;
    HASH_FIND(hh, o->pending_gets, key, klen, pg);
    if (pg) {
        HASH_DEL(o->pending_gets, pg);
        pg->in_table = false;
    }
}

void owner_forget_key(owner *o, const void *key, size_t klen)
{
    holders_cache_drop(o, key, klen);
    forget_pending(o, key, klen);
}
