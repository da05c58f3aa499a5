/*
 * ssd_stage.c - SsdStageRead on the SSD owner: the remote refill pipeline
 * (spec 000 §5.2-5.3).
 *
 * The master asks this owner to read the SSD copy of (key, put_id) into a
 * staging range of this segment and push it into the requester's target. The
 * producer, a job on libuv's thread pool, runs ssd_load_into_addr_chunks
 * (STAGE_CHUNK chunks, at most STAGE_READS reads in flight) into a ready queue
 * of STAGE_READY slots; the consumer is the loop itself: woken by the queue
 * after every push, it takes ready chunks and pushes each over the data plane
 * at once (the first chunk moves while later ones are still being read), with
 * at most STAGE_PUSHES pushes in flight. While every push slot is busy the
 * loop takes nothing, so the ready queue fills and the reads pause: that is
 * the backpressure. The answer goes back to the master when the producer has
 * returned, its last item was taken and every push completed: OK only if every
 * chunk was read, the checksum of the whole value verified and every byte
 * landed; FX_ENOTFOUND when the copy is gone or damaged (the master then drops
 * it), another error otherwise. After a failed push the loop still takes
 * every chunk (without pushing it) until the last item, as the engine
 * requires.
 *
 * Chunks are 1 MiB, not the spec's 4 MiB: with 4 MiB chunks a 4 MiB value is
 * read whole and then pushed whole, so its refill cannot be faster than the
 * sum of the two; 1 MiB chunks let the push of one overlap the reads of the
 * next (docs/decisions.md, docs/benchmarks.md "SSD refill").
 *
 * At most SSD_TIER_MAX_STAGES producers hold pool workers at once (a producer
 * can wait on its full queue); the rest wait in a FIFO on the loop, so local
 * refills always find a worker. Stages still waiting when the tier closes are
 * answered with an error.
 *
 * Test-only: FLUXON_TEST_STAGE_DELAY_MS=N (owner_test_delay.h) holds every
 * producer on its worker for N ms before it reads, so that tests can have
 * more stages arrive than may run at once (tests/integration/
 * test_ssd_faults.c). Never set it in production.
 */
#include "owner/ssd_tier.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memdup.h"
#include "fluxon/fluxon.h"
#include "owner/dataplane/dataplane.h"
#include "owner/owner_test_delay.h"

#define STAGE_CHUNK (1u << 20)
#define STAGE_READS 4u
#define STAGE_PUSHES 4u
#define STAGE_READY 8u
#define STAGE_PUSH_TIMEOUT_MS 30000u

typedef struct ssd_stage {
    owner *o;
    net_conn *conn; /* the master link, referenced */
    frame_hdr hdr;
    char *key;
    size_t klen;
    ssd_put_id pid;
    uint64_t stage_offset, stage_len, len;
    uint32_t target_node;
    char *target_addr;
    uint64_t target_offset;
    ssd_chunk_queue *q;
    uv_work_t work;
    uv_async_t async; /* the queue's notify: chunks are ready */
    uint64_t delay_ms; /* test-only, before the producer reads */
    struct ssd_stage *next; /* in the tier's FIFO of stages waiting for a worker */
    /* Loop-thread state. */
    bool load_ran;    /* set by the producer; read once producer_done */
    bool producer_done, last_seen, finished;
    unsigned pushes;  /* in flight */
    int load_status;  /* the load's final ssd_result */
    int push_status;  /* the first failed push's FX_E* code */
    char push_detail[256];
} ssd_stage;

/* ---- producer (pool thread) ------------------------------------------------- */

static void wake_loop(void *arg)
{
    uv_async_send(arg);
}

static owner_test_delay producer_delay = {
    .env = "FLUXON_TEST_STAGE_DELAY_MS", .what = "every SsdStageRead producer waits on its worker"};

static void produce(uv_work_t *w)
{
    ssd_stage *s = w->data;
    if (s->delay_ms)
        owner_test_delay_sleep(s->delay_ms);
    if (atomic_load(&s->o->ssd->closing))
        return; /* produce_after sees that the load never ran and fails the stage */
    s->load_ran = true;
    ssd_load_into_addr_chunks(s->o->ssd->store, s->key, s->klen, s->pid,
                              s->o->seg.base + s->stage_offset, s->len, s->stage_len, STAGE_CHUNK,
                              STAGE_READS, s->q);
}

/* ---- loop side -------------------------------------------------------------- */

static void stage_free(ssd_stage *s)
{
    ssd_chunk_queue_free(s->q);
    net_conn_unref(s->conn);
    free(s->key);
    free(s->target_addr);
    free(s);
}

static void on_async_closed(uv_handle_t *h)
{
    stage_free(h->data);
}

static void reply(ssd_stage *s)
{
    if (!net_conn_is_open(s->conn))
        return;
    if (s->load_status != SSD_OK)
        net_reply_error(s->conn, &s->hdr, ssd_tier_fx_code(s->load_status),
                        "SSD stage read of a %llu-byte value: %s", (unsigned long long)s->len,
                        ssd_tier_strerror(s->load_status));
    else if (s->push_status)
        net_reply_error(s->conn, &s->hdr, s->push_status, "SSD stage push to owner %u: %s",
                        s->target_node, s->push_detail);
    else
        net_reply(s->conn, &s->hdr, &((Fx__SsdStageReadResp)FX__SSD_STAGE_READ_RESP__INIT).base);
}

static void start_producer(ssd_tier *t, ssd_stage *s);

/* Starts waiting stages while producer slots are free. */
static void kick_waiting(ssd_tier *t)
{
    while (t->stage_wait_head && t->stages_running < SSD_TIER_MAX_STAGES) {
        ssd_stage *s = t->stage_wait_head;
        t->stage_wait_head = s->next;
        if (!t->stage_wait_head)
            t->stage_wait_tail = NULL;
        s->next = NULL;
        start_producer(t, s);
    }
}

/* Answers and frees the stage once nothing of it is running any more. */
static void maybe_finish(ssd_stage *s)
{
    if (s->finished || !s->producer_done || !s->last_seen || s->pushes)
        return;
    s->finished = true;
    reply(s);
    uv_close((uv_handle_t *)&s->async, on_async_closed);
}

static void on_pushed(int status, const char *detail, void *ud);

/* Takes ready chunks while a push slot is free (or, after a failure, every
 * chunk, without pushing it) and pushes them. */
static void pump(ssd_stage *s)
{
    ssd_chunk c;
    while (!s->last_seen && (s->push_status || s->pushes < STAGE_PUSHES) &&
           ssd_chunk_queue_try_pop(s->q, &c)) {
        if (c.last) {
            s->last_seen = true;
            s->load_status = c.status;
            break;
        }
        if (s->push_status)
            continue; /* a push failed: drain so that the producer can finish */
        int r = dp_transfer(s->o->dp, s->target_node, s->target_addr, false,
                            s->stage_offset + c.offset, s->target_offset + c.offset, c.len,
                            STAGE_PUSH_TIMEOUT_MS, on_pushed, s);
        if (r < 0) {
            s->push_status = r;
            snprintf(s->push_detail, sizeof s->push_detail, "cannot start the push");
            continue;
        }
        s->pushes++;
    }
    maybe_finish(s);
}

static void on_pushed(int status, const char *detail, void *ud)
{
    ssd_stage *s = ud;
    if (status && !s->push_status) {
        s->push_status = status;
        snprintf(s->push_detail, sizeof s->push_detail, "%s", detail);
    }
    s->pushes--;
    pump(s);
}

static void on_ready(uv_async_t *a)
{
    ssd_stage *s = a->data;
    if (!s->finished)
        pump(s);
}

static void produce_after(uv_work_t *w, int status)
{
    ssd_stage *s = w->data;
    ssd_tier *t = s->o->ssd;
    t->jobs--;
    t->stages_running--;
    kick_waiting(t);
    s->producer_done = true;
    if (status < 0 || !s->load_ran) { /* cancelled, or the tier is closing */
        s->last_seen = true;
        s->load_status = SSD_ECLOSED;
    }
    pump(s); /* the last item may have come after the last wake-up was handled */
}

static void start_producer(ssd_tier *t, ssd_stage *s)
{
    s->work.data = s;
    if (uv_queue_work(t->o->loop, &s->work, produce, produce_after) < 0) {
        s->producer_done = s->last_seen = true;
        s->load_status = SSD_ENOMEM;
        maybe_finish(s);
        return;
    }
    t->jobs++;
    t->stages_running++;
}

void ssd_stage_drop_waiting(ssd_tier *t)
{
    while (t->stage_wait_head) {
        ssd_stage *s = t->stage_wait_head;
        t->stage_wait_head = s->next;
        s->producer_done = s->last_seen = true;
        s->load_status = SSD_ECLOSED;
        maybe_finish(s);
    }
    t->stage_wait_tail = NULL;
}

void ssd_stage_on_request(owner *o, net_conn *c, const frame_hdr *h, Fx__SsdStageReadReq *req)
{
    uint64_t aligned = (req->len + SSD_ALIGN - 1) / SSD_ALIGN * SSD_ALIGN;
    if (!o->ssd || !o->dp) {
        net_reply_error(c, h, FX_ENOTSUP, "this owner has no SSD tier");
        return;
    }
    if (!req->put_id || !req->key.len || !segment_contains(&o->seg, req->stage_offset, req->stage_len) ||
        req->stage_len < aligned || !req->target_data_addr || !*req->target_data_addr ||
        (req->stage_offset % SSD_ALIGN) != 0) {
        FX_LOG(ERROR, "master sent an SsdStageRead this owner cannot carry out (stage %llu+%llu, "
                      "len %llu)",
               (unsigned long long)req->stage_offset, (unsigned long long)req->stage_len,
               (unsigned long long)req->len);
        net_reply_error(c, h, FX_EINVAL, "invalid SsdStageRead plan");
        return;
    }
    ssd_stage *s = calloc(1, sizeof *s);
    if (!s || !(s->key = fx_memdup(req->key.data, req->key.len)) ||
        !(s->target_addr = strdup(req->target_data_addr)) || !(s->q = ssd_chunk_queue_new(STAGE_READY)) ||
        uv_async_init(o->loop, &s->async, on_ready) < 0) {
        if (s) {
            ssd_chunk_queue_free(s->q);
            free(s->key);
            free(s->target_addr);
        }
        free(s);
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        return;
    }
    s->o = o;
    s->conn = c;
    net_conn_ref(c);
    s->hdr = *h;
    s->klen = req->key.len;
    s->pid = (ssd_put_id){.time_ms = req->put_id->time_ms, .version = req->put_id->version};
    s->stage_offset = req->stage_offset;
    s->stage_len = req->stage_len;
    s->len = req->len;
    s->target_node = req->target_node_id;
    s->target_offset = req->target_offset;
    s->async.data = s;
    s->delay_ms = owner_test_delay_ms(&producer_delay);
    ssd_chunk_queue_set_notify(s->q, wake_loop, &s->async);
    ssd_tier *t = o->ssd;
    if (atomic_load(&t->closing)) {
        s->producer_done = s->last_seen = true;
        s->load_status = SSD_ECLOSED;
        maybe_finish(s);
    } else if (t->stages_running < SSD_TIER_MAX_STAGES) {
        start_producer(t, s);
    } else {
        if (t->stage_wait_tail)
            t->stage_wait_tail->next = s;
        else
            t->stage_wait_head = s;
        t->stage_wait_tail = s;
    }
}
