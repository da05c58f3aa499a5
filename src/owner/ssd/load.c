/*
 * load.c - the read path of the SSD store: ssd_load_into_addr and
 * ssd_load_into_addr_chunks (ssd.h, spec 000 §5.3). A load looks up and pins
 * the committed record of (key, put_id), reads the value in pieces through a
 * pipeline that keeps several reads in flight (through a reader of the device
 * for a whole value, through the device's engine for a chunked one), checks
 * each piece (length, a begin gone stale) and the checksum over the whole
 * value, and drops a record that failed a check from the index. The devices'
 * pools of idle readers are kept here. Locking: see store_internal.h.
 */
#include <stdlib.h>
#include <string.h>

#include "common/bulk_hash.h"
#include "owner/ssd/chunkq.h"
#include "owner/ssd/store_internal.h"

#define DEFAULT_CHUNK (4ull << 20)
#define MAX_CHUNK (1ull << 30) /* one IO must fit uring_req.len and MAX_RW_COUNT */
#define DEFAULT_INFLIGHT 4u
#define MAX_INFLIGHT 16u

/* ---- read path ---------------------------------------------------------- */

/* Removes e from the index (a failed check of a read that holds its pin). */
static void drop_entry(native_store *s, ssd_entry *e)
{
    pthread_mutex_lock(&s->index_lock);
    index_remove(&s->ix, e);
    pthread_mutex_unlock(&s->index_lock);
}

/* Looks up (key, pid) and pins its committed record. SSD_OK with *out,
 * *begin and *off set; SSD_ENOTFOUND, SSD_EINVAL (length differs) or
 * SSD_ENOMEM otherwise. */
static int lookup_pin(native_store *s, const void *key, size_t klen, ssd_put_id pid, uint64_t len,
                      ssd_entry **out, uint64_t *begin, uint64_t *off)
{
    uint8_t kbuf[256];
    size_t hlen;
    uint8_t *hk = index_key(key, klen, pid, kbuf, sizeof kbuf, &hlen);
    if (!hk)
        return SSD_ENOMEM;
    int rc = SSD_ENOTFOUND;
    pthread_mutex_lock(&s->index_lock);
    ssd_entry *e = index_find(&s->ix, hk, hlen);
    if (e && e->len != len) {
        rc = SSD_EINVAL;
    } else if (e) {
        ssd_shard *sh = e->shard;
        pthread_mutex_lock(&sh->lock);
        if (ring_pin_read(&sh->ring, &e->re)) {
            *out = e;
            *begin = e->re.begin;
            *off = ring_file_offset(&sh->ring, &e->re);
            rc = SSD_OK;
        }
        pthread_mutex_unlock(&sh->lock);
    }
    pthread_mutex_unlock(&s->index_lock);
    if (hk != kbuf)
        free(hk);
    return rc;
}

static void unpin_read(ssd_entry *e)
{
    ssd_shard *sh = e->shard;
    pthread_mutex_lock(&sh->lock);
    ring_unpin_read(&sh->ring, &e->re);
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->lock);
}

/* The post-IO re-check: is the begin captured at pin time behind the tail? */
static bool went_stale(native_store *s, ssd_entry *e, uint64_t begin)
{
    ssd_shard *sh = e->shard;
    pthread_mutex_lock(&sh->lock);
    bool stale = ring_is_stale(&sh->ring, begin);
    pthread_mutex_unlock(&sh->lock);
#ifdef FX_FAILPOINTS
    if (!stale) {
        unsigned n = atomic_load(&s->fp_stale);
        while (n > 0 && !atomic_compare_exchange_weak(&s->fp_stale, &n, n - 1))
            ;
        stale = n > 0; /* took one */
    }
#else
    (void)s;
#endif
    return stale;
}

/* ---- the load pipeline ---------------------------------------------------
 *
 * A load reads the value in pieces and keeps up to `window` of them in flight,
 * and the loading thread checks and hashes each piece (in offset order, the
 * checksum is one stream) while the pieces after it are still being read:
 * only the last piece's hash is left after the last completion. A whole-value
 * load submits and reaps on its own reader, refilling the window as it reaps;
 * a chunked load goes through the engine, whose thread submits the next
 * prepared piece from the completion callback of the one before, so the disk
 * never waits for the loading thread (busy handing chunks to its consumer).
 *
 * The loading thread prepares pieces (direct target or scratch buffer) up to
 * two windows ahead of the oldest one it has not consumed; the pipe's lock
 * guards the counters below and the done flags of its slots. */

#define LOAD_SLOTS MAX_INFLIGHT

typedef struct load_pipe {
    io_wait w;
    uring_engine *eng;
    uring_reader *rd;       /* the loading thread's own reads (whole values), or NULL */
    unsigned window;        /* reads in flight at most */
    unsigned inflight;      /* guarded by w.lock */
    uint64_t prepared;      /* pieces [0, prepared) may be submitted; w.lock */
    uint64_t submitted;     /* pieces [0, submitted) were; w.lock */
    io_slot slots[LOAD_SLOTS];
} load_pipe;
_Static_assert(offsetof(load_pipe, w) == 0, "a slot's io_wait pointer is its pipe's");

/* Submits prepared pieces while the window has room: to the engine (w.lock
 * held) or, with a reader, on this thread in one system call. */
static void pipe_fill_locked(load_pipe *p)
{
    bool any = false;
    while (p->inflight < p->window && p->submitted < p->prepared) {
        io_slot *sl = &p->slots[p->submitted++ % LOAD_SLOTS];
        sl->done = false;
        p->inflight++;
        if (p->rd)
            uring_reader_prep(p->rd, &sl->req);
        else
            uring_submit(p->eng, &sl->req);
        any = true;
    }
    if (any && p->rd)
        uring_reader_submit(p->rd);
}

/* Makes pieces [0, prepared) submittable (and submits what the window
 * allows), or, when the load failed, retracts the prepared pieces that have
 * not gone out. Returns how many pieces went out in all. */
static uint64_t pipe_kick(native_store *s, load_pipe *p, uint64_t prepared, bool failed)
{
    pthread_mutex_lock(&p->w.lock);
    if (!failed) {
        p->prepared = prepared;
        pipe_fill_locked(p);
    } else {
        for (uint64_t i = p->submitted; i < prepared; i++) {
            io_slot *sl = &p->slots[i % LOAD_SLOTS];
            ssd_buf_put(&s->pool, sl->scratch, sl->scratch_len);
            sl->scratch = NULL;
        }
        p->prepared = p->submitted;
    }
    uint64_t submitted = p->submitted;
    pthread_mutex_unlock(&p->w.lock);
    return submitted;
}

/* Waits until piece sl has completed: woken by pipe_io_done, or, with a
 * reader, reaping completions on this thread (and refilling the window). */
static void pipe_wait(load_pipe *p, io_slot *sl)
{
    pthread_mutex_lock(&p->w.lock);
    while (!sl->done) {
        if (!p->rd) {
            pthread_cond_wait(&p->w.cv, &p->w.lock);
            continue;
        }
        uring_req *req = uring_reader_wait(p->rd);
        if (!req) { /* cannot happen: sl went out and was not reaped */
            sl->req.res = -EIO;
            break;
        }
        io_slot *d = req->ud;
        d->done = true;
        p->inflight--;
        pipe_fill_locked(p);
    }
    pthread_mutex_unlock(&p->w.lock);
}

/* A reader of device d for one load, or NULL (the engine carries it then). */
static uring_reader *reader_take(ssd_device *d)
{
    uring_reader *r = NULL;
    pthread_mutex_lock(&d->readers_lock);
    if (d->n_idle_readers)
        r = d->idle_readers[--d->n_idle_readers];
    pthread_mutex_unlock(&d->readers_lock);
    if (!r && uring_reader_open(d->eng, READER_DEPTH, &r) < 0)
        r = NULL;
    return r;
}

static void reader_give_back(ssd_device *d, uring_reader *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&d->readers_lock);
    bool kept = d->n_idle_readers < READER_POOL;
    if (kept)
        d->idle_readers[d->n_idle_readers++] = r;
    pthread_mutex_unlock(&d->readers_lock);
    if (!kept)
        uring_reader_close(r);
}

/* Engine thread: marks the piece done, submits the next prepared one and wakes
 * the loader. Touches nothing after the unlock (see io_done in io_slot.c). */
static void pipe_io_done(uring_req *req)
{
    io_slot *sl = req->ud;
    load_pipe *p = (load_pipe *)(void *)sl->w; /* w is the pipe's first member */
    pthread_mutex_lock(&p->w.lock);
    sl->done = true;
    p->inflight--;
    pipe_fill_locked(p);
    pthread_cond_signal(&p->w.cv);
    pthread_mutex_unlock(&p->w.lock);
}

/* Prepares piece [o, o + n) of the value: read straight into addr when the
 * address, the file offset and the read length are 512-aligned and capacity
 * covers the read, else into an aligned scratch buffer. The last piece reads
 * up to the entry's aligned end. Not submitted yet. */
static int piece_prepare(native_store *s, ssd_entry *e, load_pipe *p, io_slot *sl, uint8_t *addr,
                         uint64_t capacity, uint64_t foff, uint64_t o, uint64_t n, bool last)
{
    ssd_shard *sh = e->shard;
    uint64_t io_len = last ? ALIGN_UP(n) : n;
    bool direct = (uintptr_t)(addr + o) % SSD_ALIGN == 0 && (foff + o) % SSD_ALIGN == 0 &&
                  io_len % SSD_ALIGN == 0 && capacity >= o && capacity - o >= io_len;
    sl->off = o;
    sl->len = n;
    sl->scratch = NULL;
    sl->w = &p->w;
    void *buf = addr + o;
    uint64_t start = foff + o;
    if (direct) {
        count(&s->direct_reads);
    } else {
        start = ALIGN_DOWN(foff + o);
        sl->scratch_len = ALIGN_UP(foff + o + n) - start;
        sl->skip = foff + o - start;
        if (!(sl->scratch = ssd_buf_get(&s->pool, sl->scratch_len)))
            return SSD_ENOMEM;
        count(&s->scratch_reads);
        buf = sl->scratch;
        io_len = sl->scratch_len;
    }
    sl->req = (uring_req){.op = URING_READ, .fd = sh->fd, .buf = buf, .len = (uint32_t)io_len,
                          .off = start, .done = pipe_io_done, .ud = sl};
    return SSD_OK;
}

/* The load behind both public forms: pins (key, pid), reads the value in
 * pieces of chunk bytes with up to inflight reads in flight, checks each
 * completion (length, stale begin), pushes each piece to q (when not NULL)
 * and streams the checksum over the bytes in addr in offset order.
 * The pin is released after the last piece was pushed. Returns the status;
 * pushes nothing final (the caller does). */
static int load(native_store *s, const void *key, size_t klen, ssd_put_id pid, uint8_t *addr,
                uint64_t len, uint64_t capacity, uint64_t chunk, unsigned inflight,
                ssd_chunk_queue *q, uint64_t *delivered)
{
    ssd_entry *e = NULL;
    uint64_t begin = 0, foff = 0;
    int rc = lookup_pin(s, key, klen, pid, len, &e, &begin, &foff);
    if (rc != SSD_OK)
        return rc;

    /* A whole value (no queue) is read by this thread's own reader: nobody
     * else waits on it, so the engine's hand-offs would only add latency. A
     * chunked load keeps the engine (its consumer overlaps with the reads). */
    ssd_device *dev = e->shard->dev;
    load_pipe p = {.eng = dev->eng, .rd = q ? NULL : reader_take(dev), .window = inflight};
    if (p.rd)
        count(&s->reader_loads);
    _Static_assert(LOAD_INFLIGHT <= READER_DEPTH, "a reader holds a whole window");
    ssd_io_wait_init(&p.w);
    bulk_hash_state st;
    bulk_hash_reset(&st);
    uint64_t n_pieces = (len + chunk - 1) / chunk, next_done = 0;
    /* Pieces prepared ahead of the oldest unconsumed one: two windows, so a
     * completion always finds the next piece ready, and no more (a scratch
     * buffer is held per prepared piece). */
    uint64_t ahead = 2ull * inflight < LOAD_SLOTS ? 2ull * inflight : LOAD_SLOTS;
    for (;;) {
        /* Prepare ahead (outside the lock: the callback never touches a piece
         * that is not yet counted in prepared), then let the window fill. */
        uint64_t prepared = p.prepared; /* only this thread writes it */
        while (rc == SSD_OK && prepared < n_pieces && prepared - next_done < ahead) {
            uint64_t o = prepared * chunk, n = len - o < chunk ? len - o : chunk;
            rc = piece_prepare(s, e, &p, &p.slots[prepared % LOAD_SLOTS], addr, capacity, foff, o,
                               n, prepared + 1 == n_pieces);
            if (rc == SSD_OK)
                prepared++;
        }
        if (next_done == pipe_kick(s, &p, prepared, rc != SSD_OK))
            break; /* all consumed, or failed with nothing more in flight */
        io_slot *sl = &p.slots[next_done++ % LOAD_SLOTS];
        pipe_wait(&p, sl);

        bool short_io = sl->req.res < 0 || (uint32_t)sl->req.res != sl->req.len;
        if (rc == SSD_OK && short_io) {
            rc = SSD_EIO;
            count(&s->read_errors);
            note_io_error(s, sl->req.res);
        }
        if (rc == SSD_OK && sl->scratch)
            memcpy(addr + sl->off, (uint8_t *)sl->scratch + sl->skip, sl->len);
        ssd_buf_put(&s->pool, sl->scratch, sl->scratch_len);
        sl->scratch = NULL;
        if (rc != SSD_OK)
            continue; /* drain what is still in flight: it targets addr and our slots */
        if (went_stale(s, e, begin)) {
            count(&s->stale_reads);
            drop_entry(s, e);
            rc = SSD_ENOTFOUND;
            continue;
        }
        if (q) /* before the hash: the consumer publishes nothing before the last item */
            ssd_chunk_queue_push(q, (ssd_chunk){.offset = sl->off, .len = sl->len});
        *delivered = sl->off + sl->len;
        bulk_hash_update(&st, addr + sl->off, sl->len);
        if (next_done == n_pieces && bulk_hash_digest(&st) != e->checksum) {
            count(&s->checksum_failures);
            drop_entry(s, e);
            rc = SSD_ENOTFOUND;
        }
    }
    if (rc == SSD_OK && n_pieces == 0 && bulk_hash_digest(&st) != e->checksum) {
        count(&s->checksum_failures); /* an empty value: only the checksum to check */
        drop_entry(s, e);
        rc = SSD_ENOTFOUND;
    }
    ssd_io_wait_destroy(&p.w);
    reader_give_back(dev, p.rd);
    unpin_read(e);
    return rc;
}

int native_load_into_addr(ssd_store *base, const void *key, size_t klen, ssd_put_id pid,
                          void *addr, uint64_t len, uint64_t capacity)
{
    native_store *s = native_of(base);
    if (!op_enter(s))
        return SSD_ECLOSED;
    uint64_t delivered = 0;
    int rc = load(s, key, klen, pid, addr, len, capacity, LOAD_PIECE, LOAD_INFLIGHT, NULL,
                  &delivered);
    op_exit(s);
    return rc;
}

int native_load_into_addr_chunks(ssd_store *base, const void *key, size_t klen, ssd_put_id pid,
                                 void *addr, uint64_t len, uint64_t capacity,
                                 uint64_t chunk_bytes, unsigned max_inflight,
                                 ssd_chunk_queue *q, uint64_t *delivered)
{
    native_store *s = native_of(base);
    if (!op_enter(s))
        return SSD_ECLOSED;
    if (chunk_bytes == 0)
        chunk_bytes = DEFAULT_CHUNK;
    if (chunk_bytes > MAX_CHUNK)
        chunk_bytes = MAX_CHUNK;
    if (max_inflight == 0)
        max_inflight = DEFAULT_INFLIGHT;
    if (max_inflight > MAX_INFLIGHT)
        max_inflight = MAX_INFLIGHT;
    int rc = load(s, key, klen, pid, addr, len, capacity, chunk_bytes, max_inflight, q,
                  delivered);
    op_exit(s);
    return rc;
}
