/*
 * ssd_persist.c - SsdReplicaPersist on the target owner (spec 000 §3, DESIGN
 * §4 put).
 *
 * After PutDone the master keeps the target range alive and asks this owner
 * to copy the memory replica at target_offset to the SSD tier. The owner
 * checks the range, writes it with ssd_write on a worker (taking the persist
 * guard that pins the new entry against ring overwrite), sends
 * SsdReplicaCommit(key, put_id, len) to the master, and when that answer
 * arrives, whatever it is, releases the guard and only then answers the
 * persist request: the master's reservation of the target therefore outlives
 * every read of it here. persisted=true means the entry was written and the
 * commit was answered OK (the master may still have ignored a late commit);
 * without a tier, or when the write or the commit failed, persisted=false.
 * Nothing here rolls back the memory replica.
 *
 * Writes may wait for ring space, so at most SSD_TIER_MAX_WRITES run on
 * workers; later persists wait here, in arrival order. A persist outlives the
 * master link only to finish its write: the answer is dropped and the guard
 * released.
 *
 * Test-only: FLUXON_TEST_PERSIST_DELAY_MS=N in the owner's environment delays
 * every SsdReplicaCommit by N ms after its write completed (a uv timer on the
 * loop, the guard held meanwhile; the loop never sleeps), so that tests can
 * overwrite a key while its old version's persist is still in flight
 * (tests/integration/test_ssd_faults.c); see owner_test_delay.h. Never set
 * it in production.
 */
#include "owner/ssd_tier.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memdup.h"
#include "fluxon/fluxon.h"
#include "owner/owner_test_delay.h"

typedef struct ssd_persist {
    uv_work_t work;
    ssd_tier *t;
    net_conn *conn; /* the master link the request came on, referenced */
    frame_hdr hdr;
    char *key;
    size_t klen;
    ssd_put_id pid;
    const uint8_t *src; /* the memory replica in this segment */
    uint64_t len;
    int rc;            /* ssd_write's result */
    ssd_guard *guard;  /* held from the write until the commit's answer */
    struct ssd_persist *next; /* the tier's wait queue */
    uv_timer_t delay;  /* the test-only commit delay (see above) */
} ssd_persist;

static owner_test_delay commit_delay = {.env = "FLUXON_TEST_PERSIST_DELAY_MS",
                                         .what = "every SsdReplicaCommit is delayed"};

static void persist_free(ssd_persist *p)
{
    net_conn_unref(p->conn);
    free(p->key);
    free(p);
}

static void reply(net_conn *c, const frame_hdr *h, bool persisted, const char *detail)
{
    if (!net_conn_is_open(c))
        return;
    Fx__SsdReplicaPersistResp resp = FX__SSD_REPLICA_PERSIST_RESP__INIT;
    resp.persisted = persisted;
    resp.detail = (char *)(detail ? detail : "");
    net_reply(c, h, &resp.base);
}

static void on_commit_resp(int status, ProtobufCMessage *msg, void *ud)
{
    ssd_persist *p = ud;
    ssd_guard_release(p->guard); /* a short lock, no IO: fine on the loop */
    p->guard = NULL;
    if (status || msg_status(msg)) {
        char why[512];
        snprintf(why, sizeof why, "SsdReplicaCommit failed: %s%s%s",
                 fx_strerror(status ? status : msg_status(msg)), status ? "" : ": ",
                 status ? "" : msg_detail(msg));
        if (p->t->o->stopping)
            FX_LOG(INFO, "persist of a %llu-byte value: %s (stopping)", (unsigned long long)p->len,
                   why);
        else
            FX_LOG(WARN, "persist of a %llu-byte value: %s", (unsigned long long)p->len, why);
        reply(p->conn, &p->hdr, false, why);
    } else {
        /* An ignored commit is normal (the key was overwritten or its
         * replica evicted while the write ran), but worth a line. */
        if (!((Fx__SsdReplicaCommitResp *)msg)->published)
            FX_LOG(INFO, "SsdReplicaCommit of a %llu-byte value not published: the route moved on",
                   (unsigned long long)p->len);
        else
            owner_index_ssd(p->t->o, p->key, p->klen, p->pid.time_ms, p->pid.version, true,
                            p->len);
        reply(p->conn, &p->hdr, true, NULL);
    }
    persist_free(p);
}

/* Sends SsdReplicaCommit for a written entry (its guard held). */
static void send_commit(ssd_persist *p)
{
    owner *o = p->t->o;
    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = p->pid.time_ms;
    pid.version = p->pid.version;
    Fx__SsdReplicaCommitReq req = FX__SSD_REPLICA_COMMIT_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = p->klen, .data = (uint8_t *)p->key};
    req.put_id = &pid;
    req.len = p->len;
    /* The link may have dropped meanwhile: nobody waits then. */
    if (!net_conn_is_open(p->conn) || !o->mrpc || o->stopping ||
        rpc_call(o->mrpc, MSG_SSD_REPLICA_COMMIT, &req.base, OWNER_RPC_TIMEOUT_MS,
                 on_commit_resp, p) < 0) {
        ssd_guard_release(p->guard);
        reply(p->conn, &p->hdr, false, "cannot send SsdReplicaCommit");
        persist_free(p);
    }
}

static void on_delay_closed(uv_handle_t *h)
{
    send_commit(h->data);
}

static void on_delay(uv_timer_t *tm)
{
    uv_close((uv_handle_t *)tm, on_delay_closed);
}

/* Worker thread. */
static void write_work(uv_work_t *w)
{
    ssd_persist *p = w->data;
    if (atomic_load(&p->t->closing))
        p->rc = SSD_ECLOSED;
    else
        p->rc = ssd_write(p->t->store, p->key, p->klen, p->pid, p->src, p->len, &p->guard);
}

static void write_after(uv_work_t *w, int status)
{
    ssd_persist *p = w->data;
    ssd_tier *t = p->t;
    owner *o = t->o;
    t->jobs--;
    t->writes_running--;
    ssd_persist_kick(t);
    int rc = status < 0 ? SSD_ECLOSED : p->rc;
    if (rc != SSD_OK) {
        if (rc != SSD_ECLOSED) /* a failing disk fails every value: a bounded number of lines */
            FX_LOG_LIMITED(WARN, "SSD persist of a %llu-byte value failed: %s",
                           (unsigned long long)p->len, ssd_tier_strerror(rc));
        reply(p->conn, &p->hdr, false, ssd_tier_strerror(rc));
        persist_free(p);
        return;
    }
    uint64_t delay = owner_test_delay_ms(&commit_delay);
    if (delay && uv_timer_init(o->loop, &p->delay) == 0) {
        /* The open timer keeps the loop (and a stopping owner's drain) alive
         * until the commit went or was dropped. */
        p->delay.data = p;
        uv_timer_start(&p->delay, on_delay, delay, 0);
        return;
    }
    send_commit(p);
}

static void start_write(ssd_tier *t, ssd_persist *p)
{
    p->work.data = p;
    if (uv_queue_work(t->o->loop, &p->work, write_work, write_after) < 0) {
        reply(p->conn, &p->hdr, false, "cannot queue the SSD write");
        persist_free(p);
        return;
    }
    t->jobs++;
    t->writes_running++;
}

void ssd_persist_kick(ssd_tier *t)
{
    while (t->wait_head && t->writes_running < SSD_TIER_MAX_WRITES) {
        ssd_persist *p = t->wait_head;
        t->wait_head = p->next;
        if (!t->wait_head)
            t->wait_tail = NULL;
        t->persists_waiting--;
        p->next = NULL;
        start_write(t, p);
    }
}

void ssd_persist_drop_waiting(ssd_tier *t)
{
    while (t->wait_head) {
        ssd_persist *p = t->wait_head;
        t->wait_head = p->next;
        t->persists_waiting--;
        reply(p->conn, &p->hdr, false, "the owner is stopping");
        persist_free(p);
    }
    t->wait_tail = NULL;
}

void ssd_persist_on_request(owner *o, net_conn *c, const frame_hdr *h,
                            Fx__SsdReplicaPersistReq *req)
{
    ssd_tier *t = o->ssd;
    if (!req->put_id || !req->key.len) {
        net_reply_error(c, h, FX_EINVAL, "SsdReplicaPersist: %s is missing",
                        req->put_id ? "the key" : "put_id");
        return;
    }
    if (!segment_contains(&o->seg, req->target_offset, req->len)) {
        FX_LOG(ERROR, "master asked to persist %llu+%llu, outside the %llu-byte segment",
               (unsigned long long)req->target_offset, (unsigned long long)req->len,
               (unsigned long long)o->seg.size);
        net_reply_error(c, h, FX_EINVAL,
                        "SsdReplicaPersist: range %llu+%llu is outside the %llu-byte segment",
                        (unsigned long long)req->target_offset, (unsigned long long)req->len,
                        (unsigned long long)o->seg.size);
        return;
    }
    if (!t || atomic_load(&t->closing)) {
        reply(c, h, false, t ? "the owner is stopping" : "this owner has no SSD tier");
        return;
    }
    ssd_persist *p = calloc(1, sizeof *p);
    if (!p || !(p->key = fx_memdup(req->key.data, req->key.len))) {
        free(p);
        reply(c, h, false, "out of memory");
        return;
    }
    p->t = t;
    p->conn = c;
    net_conn_ref(c);
    p->hdr = *h;
    p->klen = req->key.len;
    p->pid = (ssd_put_id){.time_ms = req->put_id->time_ms, .version = req->put_id->version};
    p->src = o->seg.base + req->target_offset;
    p->len = req->len;
    if (t->wait_tail)
        t->wait_tail->next = p;
    else
        t->wait_head = p;
    t->wait_tail = p;
    t->persists_waiting++;
    ssd_persist_kick(t);
}
