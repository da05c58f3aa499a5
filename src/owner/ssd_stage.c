/*
 * ssd_stage.c - SsdStageRead on the SSD owner: the remote refill pipeline
 * (spec 000 §5.2-5.3).
 *
 * The master asks this owner to read the SSD copy of (key, put_id) into a
 * staging range of this segment and push it into the requester's target. A
 * producer thread runs ssd_load_into_addr_chunks (4 MiB chunks, at most
 * STAGE_READS reads in flight, a ready queue of STAGE_READY slots); a consumer
 * thread pops each ready chunk and hands it to the loop, which pushes it over
 * the data plane at once (the first chunk moves while later ones are still
 * being read), with at most STAGE_PUSHES pushes in flight (the consumer waits
 * for a free push slot, so the ready queue fills and the reads pause). The
 * answer goes back to the master when the last item of the load arrived and
 * every push completed: OK only if every chunk was read, the checksum of the
 * whole value verified and every byte landed; FX_ENOTFOUND when the copy is
 * gone or damaged (the master then drops it), another error otherwise.
 *
 * Both threads are plain pthreads (not the libuv pool, so a pipeline can never
 * wait for a worker held by another one); they talk to the loop through a
 * locked event list and a uv_async_t, and are joined before the stage is
 * freed. The consumer pops until the last item even after a push failed, as
 * the engine requires.
 */
#include "owner/ssd_tier.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memdup.h"
#include "fluxon/fluxon.h"
#include "owner/dataplane/dataplane.h"

#define STAGE_CHUNK (4u << 20)
#define STAGE_READS 4u
#define STAGE_PUSHES 4u
#define STAGE_READY 8u
#define STAGE_PUSH_TIMEOUT_MS 30000u

typedef struct stage_event {
    ssd_chunk chunk;
    struct stage_event *next;
} stage_event;

typedef struct stage {
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
    pthread_t producer, consumer;
    bool producer_started, consumer_started;
    uv_async_t async;
    pthread_mutex_t lock;
    pthread_cond_t slot_free;
    stage_event *events, **events_tail; /* consumer -> loop */
    unsigned pushes;                    /* in flight; under lock */
    /* Loop-thread state. */
    bool last_seen;
    int load_status;  /* the load's final ssd_result */
    int push_status;  /* the first failed push's FX_E* code */
    char push_detail[256];
} stage;

/* ---- threads ---------------------------------------------------------------- */

static void *produce(void *arg)
{
    stage *s = arg;
    ssd_load_into_addr_chunks(s->o->ssd->store, s->key, s->klen, s->pid,
                              s->o->seg.base + s->stage_offset, s->len, s->stage_len, STAGE_CHUNK,
                              STAGE_READS, s->q);
    return NULL;
}

static void post(stage *s, ssd_chunk c)
{
    stage_event *ev = malloc(sizeof *ev);
    pthread_mutex_lock(&s->lock);
    if (ev) {
        ev->chunk = c;
        ev->next = NULL;
        *s->events_tail = ev;
        s->events_tail = &ev->next;
    }
    pthread_mutex_unlock(&s->lock);
    uv_async_send(&s->async);
}

static void *consume(void *arg)
{
    stage *s = arg;
    for (;;) {
        ssd_chunk c = ssd_chunk_queue_pop(s->q);
        if (!c.last) { /* wait for a push slot: this is the backpressure */
            pthread_mutex_lock(&s->lock);
            while (s->pushes >= STAGE_PUSHES)
                pthread_cond_wait(&s->slot_free, &s->lock);
            s->pushes++;
            pthread_mutex_unlock(&s->lock);
        }
        post(s, c);
        if (c.last)
            return NULL;
    }
}

/* ---- loop side -------------------------------------------------------------- */

static void on_async_closed(uv_handle_t *h)
{
    stage *s = h->data;
    stage_event *ev = s->events;
    while (ev) {
        stage_event *n = ev->next;
        free(ev);
        ev = n;
    }
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->slot_free);
    ssd_chunk_queue_free(s->q);
    net_conn_unref(s->conn);
    free(s->key);
    free(s->target_addr);
    free(s);
}

static void finish(stage *s)
{
    if (s->producer_started)
        pthread_join(s->producer, NULL);
    if (s->consumer_started)
        pthread_join(s->consumer, NULL);
    s->o->ssd->jobs--;
    if (net_conn_is_open(s->conn)) {
        if (s->load_status != SSD_OK)
            net_reply_error(s->conn, &s->hdr,
                            s->load_status == SSD_ENOTFOUND ? FX_ENOTFOUND : FX_EINTERNAL,
                            "SSD stage read of a %llu-byte value: %s",
                            (unsigned long long)s->len, ssd_tier_strerror(s->load_status));
        else if (s->push_status)
            net_reply_error(s->conn, &s->hdr, s->push_status, "SSD stage push to owner %u: %s",
                            s->target_node, s->push_detail);
        else
            net_reply(s->conn, &s->hdr,
                      &((Fx__SsdStageReadResp)FX__SSD_STAGE_READ_RESP__INIT).base);
    }
    uv_close((uv_handle_t *)&s->async, on_async_closed);
}

static bool done(stage *s)
{
    pthread_mutex_lock(&s->lock);
    bool idle = s->pushes == 0;
    pthread_mutex_unlock(&s->lock);
    return s->last_seen && idle;
}

static void release_slot(stage *s)
{
    pthread_mutex_lock(&s->lock);
    s->pushes--;
    pthread_cond_signal(&s->slot_free);
    pthread_mutex_unlock(&s->lock);
}

static void on_pushed(int status, const char *detail, void *ud)
{
    stage *s = ud;
    if (status && !s->push_status) {
        s->push_status = status;
        snprintf(s->push_detail, sizeof s->push_detail, "%s", detail);
    }
    release_slot(s);
    if (done(s))
        finish(s);
}

static void on_events(uv_async_t *a)
{
    stage *s = a->data;
    pthread_mutex_lock(&s->lock);
    stage_event *ev = s->events;
    s->events = NULL;
    s->events_tail = &s->events;
    pthread_mutex_unlock(&s->lock);
    while (ev) {
        stage_event *n = ev->next;
        ssd_chunk c = ev->chunk;
        free(ev);
        ev = n;
        if (c.last) {
            s->last_seen = true;
            s->load_status = c.status;
            continue;
        }
        /* A chunk is pushed only while nothing failed; it holds its slot
         * until the push completes. */
        int r = s->push_status ? -1
                               : dp_transfer(s->o->dp, s->target_node, s->target_addr, false,
                                             s->stage_offset + c.offset, s->target_offset + c.offset,
                                             c.len, STAGE_PUSH_TIMEOUT_MS, on_pushed, s);
        if (r < 0) {
            if (!s->push_status) {
                s->push_status = r;
                snprintf(s->push_detail, sizeof s->push_detail, "cannot start the push");
            }
            release_slot(s);
        }
    }
    if (!uv_is_closing((uv_handle_t *)&s->async) && done(s))
        finish(s);
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
    stage *s = calloc(1, sizeof *s);
    if (!s || !(s->key = fx_memdup(req->key.data, req->key.len)) ||
        !(s->target_addr = strdup(req->target_data_addr)) || !(s->q = ssd_chunk_queue_new(STAGE_READY))) {
        if (s) {
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
    s->events_tail = &s->events;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->slot_free, NULL);
    uv_async_init(o->loop, &s->async, on_events);
    s->async.data = s;
    o->ssd->jobs++;
    s->producer_started = pthread_create(&s->producer, NULL, produce, s) == 0;
    if (s->producer_started)
        s->consumer_started = pthread_create(&s->consumer, NULL, consume, s) == 0;
    if (!s->producer_started || !s->consumer_started) {
        /* Without a consumer the producer would block on a full queue:
         * drain it here, then fail. */
        if (s->producer_started) {
            for (ssd_chunk k = ssd_chunk_queue_pop(s->q); !k.last; k = ssd_chunk_queue_pop(s->q))
                ;
        }
        s->last_seen = true;
        s->load_status = SSD_ENOMEM;
        finish(s);
    }
}
