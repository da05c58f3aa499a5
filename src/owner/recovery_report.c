/*
 * recovery_report.c - what this owner tells a master after Register, before
 * it sends anything else (RecoveryReport; src/master/recovery.c).
 *
 * entries: the replica index (replica_index.h), when the master took our
 * previous identity back (RegisterResp.recovering); otherwise the master does
 * not know our replicas and the index is emptied. pins: every range of the
 * segment still in use here, which the master must not hand out: holders our
 * clients hold (one memory_info each), puts whose client may still be
 * writing its range, gets with a target in this segment. Each pin is a
 * memory_info that the answer gives a master holder id; its last release
 * acknowledges that id like any holder's (BatchDeleteAck).
 *
 * Before the report, the owner's get cache is emptied (the invalidations of
 * the outage were lost with the old master, and the new one does not know who
 * cached what; master_link.c empties the clients' weak indexes and near caches
 * for the same reason) and the queued holder acks are
 * dropped (they name the old master's holders). Chunks of REPORT_CHUNK
 * entries go out back to back; the answer to the last one comes when the
 * master's recovery phase ends, and then done() runs.
 */
#include "owner/owner.h"

#include <stdlib.h>

#include "common/log.h"
#include "fluxon/fluxon.h"
#include "owner/replica_index.h"

#define REPORT_CHUNK 4096u
#define REPORT_TIMEOUT_MS 120000u /* the master answers the last chunk when recovery ends */

typedef struct report {
    owner *o;
    owner_report_done_fn done;
    memory_info **pins; /* referenced until the answer */
    size_t n_pins, cap_pins;
    int failed; /* the first failure of an earlier chunk */
} report;

/* Keeps mi referenced until the answer; locked: the caller holds hold_lock. */
static int pin_add(report *rp, memory_info *mi, bool locked)
{
    if (rp->n_pins == rp->cap_pins) {
        size_t cap = rp->cap_pins ? rp->cap_pins * 2 : 64;
        memory_info **n = realloc(rp->pins, cap * sizeof *n);
        if (!n)
            return -1;
        rp->pins = n;
        rp->cap_pins = cap;
    }
    if (locked)
        mi->refs++;
    else
        holders_mi_ref(rp->o, mi);
    rp->pins[rp->n_pins++] = mi;
    return 0;
}

/* Every memory_info a session holds, once each; then the ranges of puts
 * and gets in progress, each pinned by a memory_info of its own that it
 * releases when it ends (ext_put.c, ext_get.c). */
static int collect_pins(report *rp)
{
    owner *o = rp->o;
    uint64_t gen = ++o->report_gen;
    session *s, *stmp;
    int r = 0;
    pthread_mutex_lock(&o->hold_lock); /* get threads change holdings (get_lanes.c) */
    HASH_ITER(hh, o->sessions, s, stmp) {
        ext_holding *eh, *etmp;
        HASH_ITER(hh, s->holdings, eh, etmp) {
            if (eh->mi->report_gen == gen)
                continue;
            eh->mi->report_gen = gen;
            if ((r = pin_add(rp, eh->mi, true)) < 0)
                break;
        }
        if (r < 0)
            break;
    }
    pthread_mutex_unlock(&o->hold_lock);
    if (r < 0)
        return -1;
    /* A put's range while its client may still write it (until
     * TransferEnd), a get's target while something may still fill it. */
    ext_put *p;
    DL_FOREACH2(o->started_puts, p, o_next) {
        if (!p->pin && !(p->pin = holders_mi_new(o, p->key, p->klen, 0, p->offset, p->len,
                                                 FX_SRC_MEMORY)))
            return -1;
        if (pin_add(rp, p->pin, false) < 0)
            return -1;
    }
    pending_get *pg, *gtmp;
    HASH_ITER(hh, o->pending_gets, pg, gtmp) {
        if (!pg->get_id || !pg->len)
            continue;
        if (!pg->pin && !(pg->pin = holders_mi_new(o, pg->key, pg->klen, 0, pg->offset, pg->len,
                                                   FX_SRC_MEMORY)))
            return -1;
        if (pin_add(rp, pg->pin, false) < 0)
            return -1;
    }
    return 0;
}

static void report_free(report *rp)
{
    for (size_t i = 0; i < rp->n_pins; i++)
        holders_mi_unref(rp->o, rp->pins[i]);
    free(rp->pins);
    free(rp);
}

static void on_chunk_resp(int status, ProtobufCMessage *msg, void *ud)
{
    report *rp = ud;
    int st = status ? status : msg_status(msg);
    if (st && (!rp || !rp->failed))
        FX_LOG(WARN, "recovery report refused: %s%s%s", fx_strerror(st), status ? "" : ": ",
               status ? "" : msg_detail(msg));
    if (st && rp)
        rp->failed = st;
}

static void on_last_resp(int status, ProtobufCMessage *msg, void *ud)
{
    report *rp = ud;
    owner *o = rp->o;
    on_chunk_resp(status, msg, rp);
    if (!rp->failed) {
        Fx__RecoveryReportResp *r = (Fx__RecoveryReportResp *)msg;
        if (r->n_holder_ids != rp->n_pins)
            FX_LOG(WARN, "recovery report: %zu holder ids for %zu pins", r->n_holder_ids,
                   rp->n_pins);
        for (size_t i = 0; i < rp->n_pins && i < r->n_holder_ids; i++)
            rp->pins[i]->master_holder_id = r->holder_ids[i];
        FX_LOG(INFO, "recovery report answered: %zu replicas, %zu pinned ranges",
               replica_index_count(o->index), rp->n_pins);
    }
    /* done first: the master is ready then, so that pins whose last holder
     * went meanwhile are acknowledged (report_free) under their new ids. */
    rp->done(o, rp->failed);
    report_free(rp);
}

/* Sends entries [from, from + n) of arr (n may be 0) with pins when last. */
static int send_chunk(report *rp, Fx__ReplicaEntry **arr, size_t n, bool last)
{
    owner *o = rp->o;
    Fx__RecoveryReportReq req = FX__RECOVERY_REPORT_REQ__INIT;
    req.entries = arr;
    req.n_entries = n;
    req.last = last;
    Fx__PinnedRange *pins = NULL, **pin_ptrs = NULL;
    if (last && rp->n_pins) {
        pins = calloc(rp->n_pins, sizeof *pins);
        pin_ptrs = calloc(rp->n_pins, sizeof *pin_ptrs);
        if (!pins || !pin_ptrs) {
            free(pins);
            free(pin_ptrs);
            return -1;
        }
        for (size_t i = 0; i < rp->n_pins; i++) {
            fx__pinned_range__init(&pins[i]);
            pins[i].offset = rp->pins[i]->offset;
            pins[i].len = rp->pins[i]->len;
            pin_ptrs[i] = &pins[i];
        }
        req.pins = pin_ptrs;
        req.n_pins = rp->n_pins;
    }
    /* rpc_call encodes at once: the arrays may go when it returns. */
    /* Only the last chunk's callback knows rp: an earlier chunk refused
     * (out of memory at the master) loses its replicas, nothing else. */
    int rc = rpc_call(o->mrpc, MSG_RECOVERY_REPORT, &req.base, REPORT_TIMEOUT_MS,
                      last ? on_last_resp : on_chunk_resp, last ? rp : NULL);
    free(pins);
    free(pin_ptrs);
    return rc;
}

/* The index in chunks; then the last chunk with the pins. */
static int send_all(report *rp)
{
    Fx__ReplicaEntry *ents = calloc(REPORT_CHUNK, sizeof *ents);
    Fx__ReplicaEntry **ptrs = calloc(REPORT_CHUNK, sizeof *ptrs);
    Fx__PutId *pids = calloc(REPORT_CHUNK, sizeof *pids);
    int rc = ents && ptrs && pids ? 0 : -1;
    size_t n = 0;
    index_cursor cur;
    index_entry e;
    for (bool ok = rc == 0 && replica_index_first(rp->o->index, &cur, &e); ok;
         ok = replica_index_next(&cur, &e)) {
        fx__put_id__init(&pids[n]);
        pids[n].time_ms = e.pid.time_ms;
        pids[n].version = e.pid.version;
        fx__replica_entry__init(&ents[n]);
        ents[n].key = (ProtobufCBinaryData){.len = e.klen, .data = (uint8_t *)e.key};
        ents[n].put_id = &pids[n];
        ents[n].len = e.len;
        ents[n].in_memory = e.in_memory;
        ents[n].offset = e.offset;
        ents[n].on_ssd = e.on_ssd;
        ents[n].ssd_len = e.ssd_len;
        ptrs[n] = &ents[n];
        if (++n == REPORT_CHUNK) {
            if ((rc = send_chunk(rp, ptrs, n, false)) < 0)
                break;
            n = 0;
        }
    }
    if (rc == 0)
        rc = send_chunk(rp, ptrs, n, true);
    free(ents);
    free(ptrs);
    free(pids);
    return rc;
}

int owner_send_recovery_report(owner *o, bool recovering, owner_report_done_fn done)
{
    holders_cache_clear(o);
    owner_holder_ack_drop(o);
    if (!recovering && replica_index_count(o->index)) {
        FX_LOG(WARN, "the master does not take back our %zu replicas (we came back after its "
                     "recovery, or it refused our identity); they are forgotten",
               replica_index_count(o->index));
        replica_index_clear(o->index);
    }
    report *rp = calloc(1, sizeof *rp);
    if (!rp)
        return -1;
    rp->o = o;
    rp->done = done;
    if (collect_pins(rp) < 0 || send_all(rp) < 0) {
        report_free(rp);
        return -1;
    }
    return 0;
}
