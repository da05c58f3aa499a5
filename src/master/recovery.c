/*
 * recovery.c - the recovery phase: a master that starts (or takes over)
 * rebuilds its routes from what the owners report, before it serves.
 *
 * Owners outlive their master (src/owner/master_link.c). A master starts in
 * recovery: an owner that had an identity under the previous master
 * registers with it (RegisterReq.prev_node_id, prev_tomb_tag) and gets it
 * back, then sends its replica index (RecoveryReport entries) and the ranges
 * still in use on its side (pins: holders its clients hold, puts and gets in
 * progress). From the entries the master rebuilds, per key, the route of the
 * highest put_id reported (older versions are dropped from the reporting
 * owners' indexes), the memory replicas at their exact ranges (the
 * allocators' used ranges), the SSD copies, and the replica caches (a memory
 * replica on an owner with an SSD tier and no committed copy is persisted
 * again, reserved meanwhile, as after PutDone); each pin
 * becomes a holding (get_holding) whose id the answer carries, so its range
 * stays reserved until the owner releases it. put_ids continue above every
 * one reported. Whatever was in flight at the crash is simply not reported:
 * its ranges are free.
 *
 * Recovery ends when every member named by a report (the reporters and the
 * member tables they had) has reported or came back as a new owner under the
 * same node_name, or after RECOVERY_GRACE_MS when only new owners came (a
 * new cluster), or at the latest two heartbeat timeouts after the start or
 * after the last report chunk received (heartbeat timeouts are not judged
 * meanwhile: a report's own heartbeats wait behind it). Until then requests are refused as MasterUnavailable (owners do
 * not send any before their report is answered, which happens at the end),
 * and owners registering without an identity wait for the end, so that the
 * node ids they get are above every reported one. An owner that registers
 * with an identity after the end is not taken at its word: a delete or an
 * overwrite answered meanwhile could not wait for its index, so it gets a new
 * identity and forgets its replicas (RegisterResp.recovering = false), and
 * only its pins are kept. docs/decisions.md, "The cache survives its
 * master", has the argument.
 */
#include "master/master.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "fluxon/fluxon.h"
#include "master/index_sync.h"
#include "master/members.h"

/* When no owner with replicas came this long after the start, the cluster
 * is new. Above the owners' longest reconnect delay (master_link.c's
 * RECONNECT_MAX_MS), so that every owner that outlived the old master has
 * tried this one by then. */
#define RECOVERY_GRACE_MS 1500u

/* A reply or a Register held until recovery ends. */
typedef struct parked {
    net_conn *conn; /* referenced */
    frame_hdr hdr;
    uint16_t type;      /* MSG_REGISTER (replayed) or MSG_RECOVERY_REPORT (answered) */
    master_register_fn replay; /* MSG_REGISTER: register.c's handler */
    uint8_t *body;      /* packed request (Register) or response (report) */
    size_t body_len;
    struct parked *next;
} parked;

/* offset -> the allocation a member's report created there, while its report
 * runs: a pin of the same range shares it. */
typedef struct report_range {
    uint64_t offset;
    allocation *a; /* referenced until the report ends */
    UT_hash_handle hh;
} report_range;

struct recovery {
    uint64_t started_ms;
    uint64_t deadline_ms;
    uint32_t *expected; /* node ids named by reports */
    char (*expected_names)[64]; /* their node_names ("" unknown) */
    size_t n_expected;
    uint32_t *reported; /* node ids whose last chunk arrived */
    size_t n_reported;
    bool any_identity; /* some owner came back with its old identity */
    char (*new_names)[64]; /* node_names of new owners that registered meanwhile */
    size_t n_new_names;
    parked *parked;
    uint64_t keys, stale, refused;
};

static bool id_in(const uint32_t *ids, size_t n, uint32_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

static void id_add(uint32_t **ids, size_t *n, uint32_t id)
{
    if (id_in(*ids, *n, id))
        return;
    uint32_t *g = realloc(*ids, (*n + 1) * sizeof *g);
    if (!g)
        return; /* out of memory: recovery ends at its deadline instead */
    *ids = g;
    g[(*n)++] = id;
}

/* Expects a report from node id (named name, may be NULL). */
static void expect(recovery *rc, uint32_t id, const char *name)
{
    for (size_t i = 0; i < rc->n_expected; i++) {
        if (rc->expected[i] == id) {
            if (name && *name && !rc->expected_names[i][0])
                snprintf(rc->expected_names[i], sizeof rc->expected_names[i], "%s", name);
            return;
        }
    }
    char(*names)[64] = realloc(rc->expected_names, (rc->n_expected + 1) * sizeof *names);
    if (!names)
        return;
    rc->expected_names = names;
    snprintf(names[rc->n_expected], sizeof names[0], "%s", name ? name : "");
    size_t n = rc->n_expected;
    id_add(&rc->expected, &n, id);
    if (n == rc->n_expected)
        return; /* out of memory: recovery ends at its deadline instead */
    rc->n_expected = n;
    /* A new owner of that name registered before anyone named it. */
    for (size_t i = 0; name && *name && i < rc->n_new_names; i++)
        if (strcmp(rc->new_names[i], name) == 0)
            id_add(&rc->reported, &rc->n_reported, id);
}

/* A new owner registers under name: an expected member of that name is not
 * coming back (its process restarted; its replicas died with it). The name
 * is kept for members named later. */
static void expected_name_is_new(recovery *rc, const char *name)
{
    char(*names)[64] = name && *name ? realloc(rc->new_names, (rc->n_new_names + 1) * sizeof *names)
                                     : NULL;
    if (names) {
        rc->new_names = names;
        snprintf(names[rc->n_new_names++], sizeof names[0], "%s", name);
    }
    for (size_t i = 0; name && *name && i < rc->n_expected; i++) {
        if (strcmp(rc->expected_names[i], name) == 0 &&
            !id_in(rc->reported, rc->n_reported, rc->expected[i])) {
            FX_LOG(INFO, "recovery: '%s' came back as a new owner: node %u's replicas are gone",
                   name, rc->expected[i]);
            id_add(&rc->reported, &rc->n_reported, rc->expected[i]);
        }
    }
}

void master_recovery_begin(master *m)
{
    recovery *rc = calloc(1, sizeof *rc);
    if (!rc) {
        FX_LOG(ERROR, "out of memory: starting without a recovery phase");
        return;
    }
    rc->started_ms = master_now_ms(m);
    rc->deadline_ms = rc->started_ms + 2 * m->cfg.heartbeat_timeout_ms;
    m->recovery = rc;
    FX_LOG(INFO, "recovery: waiting up to %llu ms for owners to report their replicas",
           (unsigned long long)(2 * m->cfg.heartbeat_timeout_ms));
}

bool master_recovering(const master *m)
{
    return m->recovery != NULL;
}

/* New put_ids go above pid. */
static void note_put_id(master *m, uint64_t time_ms, uint32_t version)
{
    if (time_ms > m->last_put_ms)
        m->last_put_ms = time_ms;
    if (version >= m->next_put_version)
        m->next_put_version = version + 1;
}

static void park(recovery *rc, net_conn *c, const frame_hdr *h, uint16_t type,
                 const ProtobufCMessage *msg)
{
    parked *p = calloc(1, sizeof *p);
    size_t len = protobuf_c_message_get_packed_size(msg);
    if (!p || !(p->body = malloc(len ? len : 1))) {
        free(p);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    p->body_len = protobuf_c_message_pack(msg, p->body);
    p->conn = c;
    net_conn_ref(c);
    p->hdr = *h;
    p->type = type;
    p->next = rc->parked;
    rc->parked = p;
}

bool master_recovery_take_register(master *m, net_conn *c, const frame_hdr *h,
                                   Fx__RegisterReq *req, master_register_fn replay,
                                   uint32_t *node_id, uint64_t *tomb_tag)
{
    if (req->max_put_id)
        note_put_id(m, req->max_put_id->time_ms, req->max_put_id->version);
    if (req->prev_tomb_tag >= m->next_tomb_tag)
        m->next_tomb_tag = req->prev_tomb_tag + 1;
    if (req->prev_node_id >= m->next_node_id)
        m->next_node_id = req->prev_node_id + 1;
    recovery *rc = m->recovery;
    if (!rc)
        return false;
    if (!req->prev_node_id || !req->prev_tomb_tag) {
        park(rc, c, h, MSG_REGISTER, &req->base); /* a new owner: after recovery */
        if (rc->parked && rc->parked->type == MSG_REGISTER && rc->parked->conn == c) {
            rc->parked->replay = replay;
            net_conn_handshake_done(c); /* it waits for recovery, not for itself */
        }
        expected_name_is_new(rc, req->node_name); /* the sweep may end recovery now */
        *node_id = 0;
        return true;
    }
    if (master_member(m, req->prev_node_id)) {
        rc->refused++;
        FX_LOG(WARN, "recovery: '%s' claims node %u, which another owner already took back; "
                     "it joins as a new member", req->node_name, req->prev_node_id);
        return false;
    }
    rc->any_identity = true;
    expect(rc, req->prev_node_id, req->node_name);
    for (size_t i = 0; i < req->n_known_members; i++)
        if (req->known_members[i])
            expect(rc, req->known_members[i],
                   i < req->n_known_member_names ? req->known_member_names[i] : NULL);
    *node_id = req->prev_node_id;
    *tomb_tag = req->prev_tomb_tag;
    return true;
}

/* One reported replica of mb: the route of the highest put_id wins. */
static void take_entry(master *m, member *mb, const Fx__ReplicaEntry *e)
{
    recovery *rc = m->recovery;
    if (!e->put_id || e->key.len == 0 || (!e->in_memory && !e->on_ssd))
        return;
    put_id pid = {.time_ms = e->put_id->time_ms, .version = e->put_id->version};
    note_put_id(m, pid.time_ms, pid.version);
    route *r = route_find(&m->routes, e->key.data, e->key.len);
    int cmp = r ? put_id_cmp(r->pid, pid) : -1;
    if (r && (cmp > 0 || (cmp == 0 && r->len != e->len))) {
        /* A newer version was reported (or one that contradicts this). */
        master_index_drop_upto(mb, (const char *)e->key.data, e->key.len, pid);
        rc->stale++;
        return;
    }
    if (r && cmp < 0) {
        /* An older version elsewhere: its owners missed the drop. */
        master_index_drop_route(m, r, NULL, 0);
        route_table_remove(&m->routes, r);
        route_unref(r);
        rc->stale++;
        rc->keys--;
        r = NULL;
    }
    if (!r) {
        r = route_new(e->key.data, e->key.len, pid, e->len);
        if (!r)
            return;
        route_table_replace(&m->routes, r); /* the table takes our reference */
        rc->keys++;
    }
    if (route_replica(r, mb->node_id))
        return; /* reported twice */
    allocation *a = NULL;
    if (e->in_memory) {
        int err = 0;
        a = allocation_new_at(mb->space, e->offset, e->len, &err);
        if (!a)
            FX_LOG_LIMITED(WARN, "recovery: member %u reported a replica at %llu+%llu that "
                                 "cannot be taken (%d); its memory copy is dropped",
                           mb->node_id, (unsigned long long)e->offset,
                           (unsigned long long)e->len, err);
    }
    if ((!a && !e->on_ssd) || route_add_replica(r, mb->node_id, mb->tomb_tag, a) < 0) {
        allocation_unref(a);
        master_index_drop_upto(mb, (const char *)e->key.data, e->key.len, pid);
        if (r->n_replicas == 0) {
            route_table_remove(&m->routes, r);
            route_unref(r);
            rc->keys--;
        }
        return;
    }
    replica *rep = route_replica(r, mb->node_id);
    rep->has_ssd = e->on_ssd;
    rep->ssd_len = e->on_ssd ? e->ssd_len : 0;
    if (a) {
        report_range *rr = malloc(sizeof *rr);
        if (rr) {
            rr->offset = a->offset;
            rr->a = allocation_ref(a);
            HASH_ADD(hh, mb->report_ranges, offset, sizeof rr->offset, rr);
        }
        if (mb->kv_ssd_storage && !e->on_ssd)
            /* Its SSD copy was not committed (the persist may have been in
             * flight at the crash): persist it again. Until it is, it is
             * reserved rather than evictable, as after a PutDone. */
            master_ssd_persist(m, r->key, r->klen, pid, mb->node_id, a);
        else
            master_replica_published(m, r, rep); /* may evict, r included */
    }
}

/* A pinned range of mb: a holding over the allocation already there (a
 * replica the pin reads) or a new one. Returns its holder id, 0 when the
 * range cannot be taken. */
static uint64_t take_pin(master *m, member *mb, const Fx__PinnedRange *p)
{
    report_range *rr;
    HASH_FIND(hh, mb->report_ranges, &p->offset, sizeof p->offset, rr);
    allocation *a = NULL;
    if (rr && rr->a->len == p->len) {
        a = allocation_ref(rr->a);
    } else {
        int err = 0;
        a = allocation_new_at(mb->space, p->offset, p->len, &err);
        if (!a) {
            FX_LOG_LIMITED(WARN, "recovery: member %u pinned %llu+%llu, which cannot be taken "
                                 "(%d)", mb->node_id, (unsigned long long)p->offset,
                           (unsigned long long)p->len, err);
            return 0;
        }
    }
    uint64_t id = master_holding_add(m, mb->node_id, a);
    if (!id)
        allocation_unref(a);
    return id;
}

void master_report_ranges_free(member *mb)
{
    report_range *rr, *tmp;
    HASH_ITER(hh, mb->report_ranges, rr, tmp) {
        HASH_DEL(mb->report_ranges, rr);
        allocation_unref(rr->a);
        free(rr);
    }
}

void master_on_recovery_report(master *m, member *mb, net_conn *c, const frame_hdr *h,
                               Fx__RecoveryReportReq *req)
{
    if (mb->ready) {
        net_reply_error(c, h, FX_EINVAL, "RecoveryReport after this member's report ended");
        return;
    }
    /* A chunk is a sign of life: its heartbeats wait behind the rest of its
     * report on the same connection (a million keys take seconds). */
    uv_update_time(m->loop);
    mb->last_heartbeat_ms = master_now_ms(m);
    /* Reports still coming in: the phase's bound counts from the last one
     * (a million keys per owner take seconds to take). */
    uint64_t bound = mb->last_heartbeat_ms + 2 * m->cfg.heartbeat_timeout_ms;
    if (m->recovery && m->recovery->deadline_ms < bound)
        m->recovery->deadline_ms = bound;
    if (mb->recovering && m->recovery)
        for (size_t i = 0; i < req->n_entries; i++)
            take_entry(m, mb, req->entries[i]);
    Fx__RecoveryReportResp resp = FX__RECOVERY_REPORT_RESP__INIT;
    uint64_t *ids = req->n_pins ? calloc(req->n_pins, sizeof *ids) : NULL;
    if (req->n_pins && !ids) {
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    for (size_t i = 0; i < req->n_pins; i++)
        ids[i] = take_pin(m, mb, req->pins[i]);
    resp.n_holder_ids = req->n_pins;
    resp.holder_ids = ids;
    if (!req->last) {
        net_reply(c, h, &resp.base);
        free(ids);
        return;
    }
    master_report_ranges_free(mb);
    mb->ready = true;
    recovery *rc = m->recovery;
    if (rc && mb->recovering) {
        id_add(&rc->reported, &rc->n_reported, mb->node_id);
        park(rc, c, h, MSG_RECOVERY_REPORT, &resp.base);
        master_recovery_check(m);
    } else {
        net_reply(c, h, &resp.base);
    }
    free(ids);
}

/* Every owner named by a report has reported. */
static bool all_reported(const recovery *rc)
{
    if (!rc->n_expected)
        return false;
    for (size_t i = 0; i < rc->n_expected; i++)
        if (!id_in(rc->reported, rc->n_reported, rc->expected[i]))
            return false;
    return true;
}

static void send_parked(master *m, parked *p)
{
    if (!net_conn_is_open(p->conn))
        return;
    if (p->type == MSG_REGISTER) {
        Fx__RegisterReq *req = fx__register_req__unpack(NULL, p->body_len, p->body);
        master_conn *mc = net_conn_data(p->conn);
        if (!req || !mc || mc->mb) {
            net_reply_error(p->conn, &p->hdr, FX_ENOMEM, "out of memory");
        } else {
            mc->mb = p->replay(m, p->conn, &p->hdr, req);
            if (mc->mb)
                net_conn_handshake_done(p->conn);
        }
        if (req)
            fx__register_req__free_unpacked(req, NULL);
        return;
    }
    Fx__RecoveryReportResp *resp = fx__recovery_report_resp__unpack(NULL, p->body_len, p->body);
    if (!resp) {
        net_reply_error(p->conn, &p->hdr, FX_ENOMEM, "out of memory");
        return;
    }
    net_reply(p->conn, &p->hdr, &resp->base);
    fx__recovery_report_resp__free_unpacked(resp, NULL);
}

static void finish(master *m, const char *why)
{
    recovery *rc = m->recovery;
    m->recovery = NULL;
    member *mb, *tmp;
    uv_update_time(m->loop);
    HASH_ITER(hh, m->members, mb, tmp) {
        mb->recovering = false;
        mb->last_heartbeat_ms = master_now_ms(m); /* they waited for others' reports */
    }
    FX_LOG(INFO, "recovery ended (%s) after %llu ms: %llu keys from %zu owners, %llu stale "
                 "versions dropped",
           why, (unsigned long long)(master_now_ms(m) - rc->started_ms),
           (unsigned long long)rc->keys, rc->n_reported, (unsigned long long)rc->stale);
    /* Oldest first: the list was built by pushing. */
    parked *rev = NULL;
    while (rc->parked) {
        parked *p = rc->parked;
        rc->parked = p->next;
        p->next = rev;
        rev = p;
    }
    while (rev) {
        parked *p = rev;
        rev = p->next;
        if (!m->stopping)
            send_parked(m, p);
        net_conn_unref(p->conn);
        free(p->body);
        free(p);
    }
    free(rc->expected);
    free(rc->expected_names);
    free(rc->new_names);
    free(rc->reported);
    free(rc);
    /* The reports' decoding and the allocator's passing fragments leave
     * freed memory scattered through the heap; hand it back to the system
     * (glibc keeps it otherwise: about 45 bytes per recovered key). */
    malloc_trim(0);
}

void master_recovery_check(master *m)
{
    recovery *rc = m->recovery;
    if (!rc)
        return;
    uint64_t now = master_now_ms(m);
    if (rc->any_identity && all_reported(rc))
        finish(m, "every owner reported");
    else if (!rc->any_identity && now - rc->started_ms >= RECOVERY_GRACE_MS)
        finish(m, "no owner had replicas");
    else if (now >= rc->deadline_ms)
        finish(m, "deadline");
}

void master_recovery_free(master *m)
{
    if (m->recovery)
        finish(m, "stopping");
}
