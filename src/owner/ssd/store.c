/*
 * store.c - KvSsdStorage: devices, shards, the write and read paths, the
 * eviction queue and the stats of the SSD tier (see ssd.h; spec 000 §2, §5.3,
 * §6; DESIGN §6).
 *
 * Pieces: root.c finds and locks the roots, ring.c does the bookkeeping of
 * each shard file, uring.c runs one io_uring engine per device, index.c maps
 * (key, put_id) to entry records, chunkq.c is the chunk queue. This file ties
 * them together; callers' threads block on their own IO: writes and chunked
 * loads through the device's engine (a condition variable per operation,
 * signalled from the engine thread's completion callback), whole-value loads
 * on a reader of the device (uring.h) taken from a small pool, so the loading
 * thread submits and reaps its reads itself.
 *
 * Locking. The index lock guards the index and every record's `indexed` flag.
 * Each shard's lock guards its ring and the ring state of its records (state,
 * pins, FIFO links); its condition variable is broadcast whenever something
 * that can unblock a reserve happens (a pin released, a Writing entry
 * committed or aborted, the store closing). Order: index lock, then one shard
 * lock; the eviction queue's lock and the buffer pool's lock are leaves. A
 * reader looks up and pins under both locks, so a record it found cannot be
 * freed in between; the writer that evicts records collects them under the
 * shard lock and unindexes and frees them afterwards under the index lock
 * alone. An evicted record still in the index is harmless meanwhile: the tail
 * has passed its begin, so ring_pin_read refuses it.
 *
 * Record lifetime: created by a write, linked into its shard's ring by
 * ring_reserve, freed only when the ring evicts it (or at close). Pins keep the
 * ring from evicting it, so a reader or a guard holder can use it safely.
 */
#include "owner/ssd/ssd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/bulk_hash.h"
#include "owner/ssd/chunkq.h"
#include "owner/ssd/index.h"
#include "owner/ssd/ring.h"
#include "owner/ssd/root.h"
#include "owner/ssd/ssd_test.h"
#include "owner/ssd/uring.h"

#define DEFAULT_SHARDS 4u
#define MAX_SHARDS 1024u
#define DEFAULT_IO_DEPTH 32u
#define MAX_IO_DEPTH 4096u
#define DEFAULT_EVQ_CAP 65536u
#define DEFAULT_CHUNK (4ull << 20)
#define MAX_CHUNK (1ull << 30) /* one IO must fit uring_req.len and MAX_RW_COUNT */
#define DEFAULT_INFLIGHT 4u
#define MAX_INFLIGHT 16u
/* Whole values go to the engine in pieces: writes copy into WRITE_PIECE
 * buffers, WRITE_INFLIGHT of them at a time; ssd_load_into_addr reads
 * LOAD_PIECE pieces, LOAD_INFLIGHT at a time (the spec's pipeline numbers;
 * 1 MiB pieces were measured too: no faster at 4 MiB, slower at 16 MiB). */
#define WRITE_PIECE (4ull << 20)
#define WRITE_INFLIGHT 2u
#define LOAD_PIECE (4ull << 20)
#define LOAD_INFLIGHT 4u
#define BUF_ALIGN 4096u
/* Whole-value loads read through a reader of READER_DEPTH (>= LOAD_INFLIGHT);
 * up to READER_POOL idle readers are kept per device. */
#define READER_DEPTH 8u
#define READER_POOL 32u
#define HUGE_BUF (2u << 20)

/* Aligned IO buffers are reused through power-of-two classes from 4 KiB to
 * 64 MiB, so the data path does not allocate (nor fault in fresh pages: on
 * these virtual machines a first touch costs as much as the IO) per IO.
 * Writes take pieces of at most 4 MiB, so the pool holds about one set of
 * buffers per concurrent writer. Larger buffers (scratch for chunks over
 * 64 MiB) are allocated and freed each time. */
#define POOL_MIN_SHIFT 12
#define POOL_MAX_SHIFT 26
#define POOL_CLASSES (POOL_MAX_SHIFT - POOL_MIN_SHIFT + 1)
#define POOL_PER_CLASS 64
#define POOL_MAX_CACHED (256ull << 20)

#define ALIGN_UP(x) (((x) + (SSD_ALIGN - 1)) & ~(uint64_t)(SSD_ALIGN - 1))
#define ALIGN_DOWN(x) ((x) & ~(uint64_t)(SSD_ALIGN - 1))
#define ENTRY_OF(g) ((ssd_entry *)((char *)(g)-offsetof(ssd_entry, guard)))

_Static_assert(offsetof(ssd_entry, re) == 0, "a ring_entry pointer is its record's");

typedef struct ssd_shard {
    pthread_mutex_t lock; /* guards ring and the ring state of its records */
    pthread_cond_t cv;    /* something that can unblock ring_reserve happened */
    ring ring;
    int fd;               /* O_DIRECT shard file */
    struct ssd_device *dev;
} ssd_shard;

typedef struct ssd_device {
    const ssd_root *root;
    uring_engine *eng;
    ssd_shard *shards;
    unsigned n_shards;
    uint64_t shard_bytes; /* capacity of each shard */
    atomic_uint next_shard;
    /* Idle readers for whole-value loads (see load()); a load takes one and
     * gives it back, so there are about as many as loads ever ran at once. */
    pthread_mutex_t readers_lock; /* a leaf lock */
    uring_reader *idle_readers[READER_POOL];
    unsigned n_idle_readers;
} ssd_device;

typedef struct buf_pool {
    pthread_mutex_t lock; /* guards everything below */
    void *free[POOL_CLASSES][POOL_PER_CLASS];
    unsigned n[POOL_CLASSES];
    uint64_t cached;
} buf_pool;

struct ssd_store {
    ssd_root *roots;
    size_t n_roots;
    ssd_device *devs;
    size_t n_devs;
    uint64_t max_shard_bytes;
    atomic_uint next_dev;

    pthread_mutex_t index_lock; /* guards ix; taken before any shard lock */
    ssd_index ix;

    pthread_mutex_t evq_lock; /* guards the eviction queue (a leaf lock) */
    ssd_eviction *evq;        /* circular, evq_alloc slots, grows up to evq_cap */
    size_t evq_alloc, evq_cap, evq_head, evq_count;

    buf_pool pool;

    /* Operations in progress; ssd_close waits for them to finish. */
    atomic_int closing;
    atomic_ulong active;
    pthread_mutex_t close_lock;
    pthread_cond_t close_cv;

    _Atomic uint64_t writes, write_errors, direct_reads, scratch_reads, read_errors;
    _Atomic uint64_t reader_loads;
    _Atomic uint64_t checksum_failures, stale_reads, evictions, evictions_dropped;
    _Atomic int last_io_errno; /* ssd_stats.last_io_errno */
#ifdef FX_FAILPOINTS
    atomic_uint fp_stale;
#endif
};

static void count(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* Remembers why an IO failed: its negative errno, or EIO for a short one. */
static void note_io_error(ssd_store *s, int res)
{
    atomic_store_explicit(&s->last_io_errno, res < 0 ? -res : EIO, memory_order_relaxed);
}

/* ---- operations vs close ------------------------------------------------ */

static bool op_enter(ssd_store *s)
{
    atomic_fetch_add(&s->active, 1);
    if (!atomic_load(&s->closing))
        return true;
    if (atomic_fetch_sub(&s->active, 1) == 1) {
        pthread_mutex_lock(&s->close_lock);
        pthread_cond_broadcast(&s->close_cv);
        pthread_mutex_unlock(&s->close_lock);
    }
    return false;
}

static void op_exit(ssd_store *s)
{
    /* Both sides use seq_cst: either close sees active == 0, or this sees
     * closing and wakes it (under the lock close re-checks active with). */
    if (atomic_fetch_sub(&s->active, 1) == 1 && atomic_load(&s->closing)) {
        pthread_mutex_lock(&s->close_lock);
        pthread_cond_broadcast(&s->close_cv);
        pthread_mutex_unlock(&s->close_lock);
    }
}

/* ---- aligned buffers ---------------------------------------------------- */

static int pool_class(uint64_t size)
{
    int c = 0;
    while (c < POOL_CLASSES && (1ull << (POOL_MIN_SHIFT + c)) < size)
        c++;
    return c < POOL_CLASSES ? c : -1;
}

/* An aligned buffer of at least size bytes, or NULL. Free with buf_put. */
static void *buf_get(buf_pool *p, uint64_t size)
{
    int c = pool_class(size);
    void *b = NULL;
    if (c >= 0) {
        pthread_mutex_lock(&p->lock);
        if (p->n[c] > 0) {
            b = p->free[c][--p->n[c]];
            p->cached -= 1ull << (POOL_MIN_SHIFT + c);
        }
        pthread_mutex_unlock(&p->lock);
        if (b)
            return b;
        size = 1ull << (POOL_MIN_SHIFT + c);
    } else {
        size = (size + BUF_ALIGN - 1) & ~(uint64_t)(BUF_ALIGN - 1);
    }
    /* Buffers of 2 MiB and more sit on 2 MiB pages where the kernel gives them
     * (THP on request): an O_DIRECT IO from scattered 4 KiB pages reaches a
     * virtio disk as ~512 KiB requests, from a huge page as one request
     * (measured: 4 MiB writes 1.3 -> 2.2 GB/s; docs/benchmarks.md). */
    size_t align = size >= HUGE_BUF ? HUGE_BUF : BUF_ALIGN;
    if (size > SIZE_MAX || posix_memalign(&b, align, (size_t)size) != 0)
        return NULL;
    if (align == HUGE_BUF)
        madvise(b, (size_t)size, MADV_HUGEPAGE);
    return b;
}

static void buf_put(buf_pool *p, void *b, uint64_t size)
{
    if (!b)
        return;
    int c = pool_class(size);
    if (c >= 0) {
        uint64_t bytes = 1ull << (POOL_MIN_SHIFT + c);
        pthread_mutex_lock(&p->lock);
        if (p->n[c] < POOL_PER_CLASS && p->cached + bytes <= POOL_MAX_CACHED) {
            p->free[c][p->n[c]++] = b;
            p->cached += bytes;
            b = NULL;
        }
        pthread_mutex_unlock(&p->lock);
    }
    free(b);
}

static void pool_destroy(buf_pool *p)
{
    for (int c = 0; c < POOL_CLASSES; c++)
        for (unsigned i = 0; i < p->n[c]; i++)
            free(p->free[c][i]);
    pthread_mutex_destroy(&p->lock);
}

/* ---- IO: a request per piece, the caller waits -------------------------- */

typedef struct io_wait {
    pthread_mutex_t lock; /* guards the done flags of the slots that use it */
    pthread_cond_t cv;
} io_wait;

typedef struct io_slot {
    uring_req req;
    io_wait *w;
    bool done;
    /* Loads only: where the chunk goes and how it was read. */
    uint64_t off, len; /* bytes [off, off + len) of the value */
    void *scratch;     /* NULL for a direct read */
    uint64_t scratch_len, skip;
} io_slot;

static void io_wait_init(io_wait *w)
{
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cv, NULL);
}

static void io_wait_destroy(io_wait *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->lock);
}

/* Engine thread: marks the slot done and wakes its waiter. Touches nothing
 * after the unlock: the waiter may free the slot and the io_wait right then. */
static void io_done(uring_req *req)
{
    io_slot *sl = req->ud;
    io_wait *w = sl->w;
    pthread_mutex_lock(&w->lock);
    sl->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->lock);
}

static void slot_submit(uring_engine *eng, io_slot *sl, io_wait *w, int op, int fd, void *buf,
                        uint64_t len, uint64_t off)
{
    sl->req = (uring_req){.op = op, .fd = fd, .buf = buf, .len = (uint32_t)len, .off = off,
                          .done = io_done, .ud = sl};
    sl->w = w;
    sl->done = false; /* no IO of this slot is in flight: no lock needed */
    uring_submit(eng, &sl->req);
}

static void slot_wait(io_wait *w, io_slot *sl)
{
    pthread_mutex_lock(&w->lock);
    while (!sl->done)
        pthread_cond_wait(&w->cv, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

/* Writes the value at off: copies src into aligned pieces of WRITE_PIECE
 * bytes (zeroing the padding of the last), with up to WRITE_INFLIGHT pieces
 * in flight so that the copy of one overlaps the IO of the one before, and
 * sets *sum to the checksum of the len real bytes. The buffers come from the
 * pool, so a write never holds more than WRITE_INFLIGHT pieces of memory,
 * however large the value. Returns SSD_OK only when every piece transferred
 * exactly its length, else SSD_EIO or SSD_ENOMEM (after all its IO ended). */
static int write_value(ssd_store *s, ssd_device *d, int fd, const uint8_t *src, uint64_t len,
                       uint64_t alen, uint64_t off, uint64_t *sum)
{
    uint64_t n = (alen + WRITE_PIECE - 1) / WRITE_PIECE, sub = 0, done = 0;
    unsigned width = n < WRITE_INFLIGHT ? (unsigned)n : WRITE_INFLIGHT;
    uint64_t bufsz = alen < WRITE_PIECE ? alen : WRITE_PIECE;
    io_slot slots[WRITE_INFLIGHT];
    io_wait w;
    io_wait_init(&w);
    bulk_hash_state st;
    bulk_hash_reset(&st);
    int rc = SSD_OK;
    for (unsigned i = 0; i < width; i++)
        slots[i].scratch = NULL;
    while (sub < n && rc == SSD_OK) {
        io_slot *sl = &slots[sub % width];
        if (sub >= width) { /* reuse the slot of piece sub - width */
            slot_wait(&w, sl);
            done++;
            if (sl->req.res < 0 || (uint32_t)sl->req.res != sl->req.len) {
                note_io_error(s, sl->req.res);
                rc = SSD_EIO;
                break;
            }
        } else if (!(sl->scratch = buf_get(&s->pool, bufsz))) {
            rc = SSD_ENOMEM;
            break;
        }
        uint64_t o = sub * WRITE_PIECE, plen = alen - o < WRITE_PIECE ? alen - o : WRITE_PIECE;
        uint64_t real = o >= len ? 0 : len - o < plen ? len - o : plen;
        uint8_t *buf = sl->scratch;
        if (real)
            memcpy(buf, src + o, real);
        memset(buf + real, 0, plen - real);
        bulk_hash_update(&st, buf, real);
        slot_submit(d->eng, sl, &w, URING_WRITE, fd, buf, plen, off + o);
        sub++;
    }
    for (; done < sub; done++) { /* drain: the IO still uses our buffers */
        io_slot *sl = &slots[done % width];
        slot_wait(&w, sl);
        if (sl->req.res < 0 || (uint32_t)sl->req.res != sl->req.len) {
            note_io_error(s, sl->req.res);
            rc = SSD_EIO;
        }
    }
    for (unsigned i = 0; i < width; i++)
        buf_put(&s->pool, slots[i].scratch, bufsz);
    io_wait_destroy(&w);
    *sum = bulk_hash_digest(&st);
    return rc;
}

/* ---- records and evictions ---------------------------------------------- */

static void entry_free(ssd_entry *e)
{
    if (!e)
        return;
    free(e->hkey);
    free(e);
}

/* Records the tail passed, oldest first. */
typedef struct evict_list {
    ssd_entry *head, **tailp;
} evict_list;

/* ring_evict_fn: collects the records the tail passed (shard lock held). */
static void collect_evicted(ring_entry *re, void *ud)
{
    evict_list *l = ud;
    ssd_entry *e = (ssd_entry *)re;
    e->evict_next = NULL;
    *l->tailp = e;
    l->tailp = &e->evict_next;
}

/* Appends an eviction (taking the key) or drops it when the queue is full. */
static bool evq_push_locked(ssd_store *s, ssd_entry *e);

/* Unindexes the records the tail passed, reports those that were indexed, and
 * frees them. No lock held. */
static void release_evicted(ssd_store *s, ssd_entry *list)
{
    pthread_mutex_lock(&s->index_lock);
    for (ssd_entry *e = list; e; e = e->evict_next)
        e->report = index_remove(&s->ix, e);
    pthread_mutex_unlock(&s->index_lock);

    pthread_mutex_lock(&s->evq_lock);
    for (ssd_entry *e = list; e; e = e->evict_next) {
        if (!e->report)
            continue;
        count(&s->evictions);
        if (!evq_push_locked(s, e))
            count(&s->evictions_dropped);
    }
    pthread_mutex_unlock(&s->evq_lock);

    while (list) {
        ssd_entry *next = list->evict_next;
        entry_free(list);
        list = next;
    }
}

/* The eviction queue; evq_lock held. */
static bool evq_push_locked(ssd_store *s, ssd_entry *e)
{
    if (s->evq_count == s->evq_alloc) {
        if (s->evq_alloc >= s->evq_cap)
            return false;
        size_t na = s->evq_alloc ? s->evq_alloc * 2 : 1024;
        if (na > s->evq_cap)
            na = s->evq_cap;
        ssd_eviction *q = malloc(na * sizeof *q);
        if (!q)
            return false;
        for (size_t i = 0; i < s->evq_count; i++)
            q[i] = s->evq[(s->evq_head + i) % s->evq_alloc];
        free(s->evq);
        s->evq = q;
        s->evq_alloc = na;
        s->evq_head = 0;
    }
    ssd_eviction *v = &s->evq[(s->evq_head + s->evq_count) % s->evq_alloc];
    /* The key bytes lead the hash key, which is no longer in the index: the
     * put_id bytes after them make room for the terminating NUL. */
    e->hkey[e->klen] = '\0';
    v->key = (char *)e->hkey;
    v->klen = e->klen;
    v->pid = e->pid;
    e->hkey = NULL;
    s->evq_count++;
    return true;
}

/* Removes e from the index (a failed check of a read that holds its pin). */
static void drop_entry(ssd_store *s, ssd_entry *e)
{
    pthread_mutex_lock(&s->index_lock);
    index_remove(&s->ix, e);
    pthread_mutex_unlock(&s->index_lock);
}

/* ---- write path --------------------------------------------------------- */

/* Places e in sh, waiting while the ring is blocked by busy entries. Returns
 * SSD_OK with *off set, SSD_ECLOSED, SSD_E2BIG or SSD_EINVAL. */
static int reserve(ssd_store *s, ssd_shard *sh, ssd_entry *e, uint64_t *off)
{
    int rc;
    pthread_mutex_lock(&sh->lock);
    for (;;) {
        evict_list evicted = {NULL, &evicted.head};
        rc = ring_reserve(&sh->ring, &e->re, collect_evicted, &evicted);
        if (evicted.head) {
            /* Hand them on before waiting, without the shard lock. */
            pthread_mutex_unlock(&sh->lock);
            release_evicted(s, evicted.head);
            pthread_mutex_lock(&sh->lock);
            if (rc == -EBUSY)
                continue; /* the blocker may have gone meanwhile */
        }
        if (rc != -EBUSY || atomic_load(&s->closing))
            break;
        pthread_cond_wait(&sh->cv, &sh->lock);
    }
    if (rc == 0)
        *off = ring_file_offset(&sh->ring, &e->re);
    pthread_mutex_unlock(&sh->lock);
    switch (rc) {
    case 0: return SSD_OK;
    case -EBUSY: return SSD_ECLOSED;
    case -E2BIG: return SSD_E2BIG;
    default: return SSD_EINVAL;
    }
}

/* The next device (round-robin) whose shards can hold alen bytes. */
static ssd_device *pick_device(ssd_store *s, uint64_t alen)
{
    unsigned start = atomic_fetch_add_explicit(&s->next_dev, 1, memory_order_relaxed);
    for (size_t i = 0; i < s->n_devs; i++) {
        ssd_device *d = &s->devs[(start + i) % s->n_devs];
        if (alen <= d->shard_bytes)
            return d;
    }
    return NULL;
}

int ssd_write(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, const void *src,
              uint64_t len, ssd_guard **guard)
{
    if (guard)
        *guard = NULL;
    if (!s || (!key && klen) || (!src && len))
        return SSD_EINVAL;
    if (!op_enter(s))
        return SSD_ECLOSED;
    int rc;
    ssd_entry *e = NULL;
    uint64_t alen;
    if (len > s->max_shard_bytes) {
        rc = SSD_E2BIG;
        goto out;
    }
    alen = len ? ALIGN_UP(len) : SSD_ALIGN; /* an empty value still takes a block */
    ssd_device *d = pick_device(s, alen);
    if (!d) {
        rc = SSD_E2BIG;
        goto out;
    }
    ssd_shard *sh = &d->shards[atomic_fetch_add_explicit(&d->next_shard, 1,
                                                         memory_order_relaxed) % d->n_shards];
    size_t hlen;
    e = calloc(1, sizeof *e);
    if (!e || !(e->hkey = index_key(key, klen, pid, NULL, 0, &hlen))) {
        rc = SSD_ENOMEM;
        goto out;
    }
    e->klen = klen;
    e->pid = pid;
    e->guard.store = s;
    e->len = len;
    e->shard = sh;
    e->re.aligned_len = alen;

    uint64_t off = 0;
    rc = reserve(s, sh, e, &off);
    if (rc != SSD_OK)
        goto out;
    /* From here the ring owns e: it is freed when the tail passes it. */
    ssd_entry *mine = e;
    e = NULL;
    rc = write_value(s, d, sh->fd, src, len, alen, off, &mine->checksum);
    if (rc != SSD_OK) {
        pthread_mutex_lock(&sh->lock);
        ring_abort(&sh->ring, &mine->re);
        pthread_cond_broadcast(&sh->cv);
        pthread_mutex_unlock(&sh->lock);
        if (rc == SSD_EIO)
            count(&s->write_errors);
        goto out;
    }
    pthread_mutex_lock(&s->index_lock);
    pthread_mutex_lock(&sh->lock);
    ring_commit(&sh->ring, &mine->re);
    if (guard)
        ring_pin_commit(&sh->ring, &mine->re);
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->lock);
    index_insert(&s->ix, mine); /* an older record of (key, put_id) stays in its ring */
    pthread_mutex_unlock(&s->index_lock);
    /* Without a guard, mine may be evicted and freed from here on. */
    if (guard)
        *guard = &mine->guard;
    count(&s->writes);
    rc = SSD_OK;
out:
    entry_free(e);
    op_exit(s);
    return rc;
}

void ssd_guard_release(ssd_guard *g)
{
    if (!g)
        return;
    ssd_entry *e = ENTRY_OF(g);
    ssd_shard *sh = e->shard;
    pthread_mutex_lock(&sh->lock);
    ring_unpin_commit(&sh->ring, &e->re);
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->lock);
}

/* ---- read path ---------------------------------------------------------- */

/* Looks up (key, pid) and pins its committed record. SSD_OK with *out,
 * *begin and *off set; SSD_ENOTFOUND, SSD_EINVAL (length differs) or
 * SSD_ENOMEM otherwise. */
static int lookup_pin(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, uint64_t len,
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
static bool went_stale(ssd_store *s, ssd_entry *e, uint64_t begin)
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
static uint64_t pipe_kick(ssd_store *s, load_pipe *p, uint64_t prepared, bool failed)
{
    pthread_mutex_lock(&p->w.lock);
    if (!failed) {
        p->prepared = prepared;
        pipe_fill_locked(p);
    } else {
        for (uint64_t i = p->submitted; i < prepared; i++) {
            io_slot *sl = &p->slots[i % LOAD_SLOTS];
            buf_put(&s->pool, sl->scratch, sl->scratch_len);
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
 * the loader. Touches nothing after the unlock (see io_done). */
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
static int piece_prepare(ssd_store *s, ssd_entry *e, load_pipe *p, io_slot *sl, uint8_t *addr,
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
        if (!(sl->scratch = buf_get(&s->pool, sl->scratch_len)))
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
static int load(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, uint8_t *addr,
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
    io_wait_init(&p.w);
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
        buf_put(&s->pool, sl->scratch, sl->scratch_len);
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
    io_wait_destroy(&p.w);
    reader_give_back(dev, p.rd);
    unpin_read(e);
    return rc;
}

int ssd_load_into_addr(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, void *addr,
                       uint64_t len, uint64_t capacity)
{
    if (!s || (!key && klen) || (!addr && len) || capacity < len)
        return SSD_EINVAL;
    if (!op_enter(s))
        return SSD_ECLOSED;
    uint64_t delivered = 0;
    int rc = load(s, key, klen, pid, addr, len, capacity, LOAD_PIECE, LOAD_INFLIGHT, NULL,
                  &delivered);
    op_exit(s);
    return rc;
}

int ssd_load_into_addr_chunks(ssd_store *s, const void *key, size_t klen, ssd_put_id pid,
                              void *addr, uint64_t len, uint64_t capacity, uint64_t chunk_bytes,
                              unsigned max_inflight, ssd_chunk_queue *q)
{
    if (!q)
        return SSD_EINVAL;
    uint64_t delivered = 0;
    int rc;
    if (!s || (!key && klen) || (!addr && len) || capacity < len) {
        rc = SSD_EINVAL;
    } else if (!op_enter(s)) {
        rc = SSD_ECLOSED;
    } else {
        if (chunk_bytes == 0)
            chunk_bytes = DEFAULT_CHUNK;
        if (chunk_bytes > MAX_CHUNK)
            chunk_bytes = MAX_CHUNK;
        if (max_inflight == 0)
            max_inflight = DEFAULT_INFLIGHT;
        if (max_inflight > MAX_INFLIGHT)
            max_inflight = MAX_INFLIGHT;
        rc = load(s, key, klen, pid, addr, len, capacity, chunk_bytes, max_inflight, q,
                  &delivered);
        op_exit(s);
    }
    ssd_chunk_queue_push(q, (ssd_chunk){.offset = delivered, .len = 0, .last = true,
                                        .status = rc});
    return rc;
}

/* ---- evictions and stats ------------------------------------------------ */

size_t ssd_pop_evictions(ssd_store *s, ssd_eviction *out, size_t cap)
{
    if (!s || !out)
        return 0;
    pthread_mutex_lock(&s->evq_lock);
    size_t n = s->evq_count < cap ? s->evq_count : cap;
    for (size_t i = 0; i < n; i++)
        out[i] = s->evq[(s->evq_head + i) % s->evq_alloc];
    if (n) {
        s->evq_head = (s->evq_head + n) % s->evq_alloc;
        s->evq_count -= n;
    }
    pthread_mutex_unlock(&s->evq_lock);
    return n;
}

static uint64_t load_counter(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

void ssd_get_stats(ssd_store *s, ssd_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!s)
        return;
    pthread_mutex_lock(&s->index_lock);
    out->entries = index_count(&s->ix);
    pthread_mutex_unlock(&s->index_lock);
    out->n_devices = s->n_devs;
    for (size_t i = 0; i < s->n_devs; i++) {
        ssd_device *d = &s->devs[i];
        uint64_t cap = d->shard_bytes * d->n_shards, used = 0;
        for (unsigned j = 0; j < d->n_shards; j++) {
            pthread_mutex_lock(&d->shards[j].lock);
            used += ring_used(&d->shards[j].ring);
            pthread_mutex_unlock(&d->shards[j].lock);
        }
        out->capacity_bytes += cap;
        out->used_bytes += used;
        if (i < sizeof out->devices / sizeof out->devices[0]) {
            snprintf(out->devices[i].root, sizeof out->devices[i].root, "%s", d->root->path);
            out->devices[i].cfg_index = d->root->cfg_index;
            out->devices[i].capacity_bytes = cap;
            out->devices[i].used_bytes = used;
        }
    }
    out->writes = load_counter(&s->writes);
    out->write_errors = load_counter(&s->write_errors);
    out->direct_reads = load_counter(&s->direct_reads);
    out->scratch_reads = load_counter(&s->scratch_reads);
    out->reader_loads = load_counter(&s->reader_loads);
    out->read_errors = load_counter(&s->read_errors);
    out->checksum_failures = load_counter(&s->checksum_failures);
    out->last_io_errno = atomic_load_explicit(&s->last_io_errno, memory_order_relaxed);
    out->stale_reads = load_counter(&s->stale_reads);
    out->evictions = load_counter(&s->evictions);
    out->evictions_dropped = load_counter(&s->evictions_dropped);
}

/* ---- open and close ----------------------------------------------------- */

static void shard_path(char *buf, size_t cap, const ssd_root *root, unsigned i)
{
    snprintf(buf, cap, "%s/shard-%03u", root->path, i);
}

/* The bytes the shard files of root may take: the file system's free space
 * (for unprivileged users) plus what the shard files of an earlier run hold
 * (those beyond this run's count are removed first, the others truncated).
 * UINT64_MAX when statvfs fails. */
static uint64_t disk_room(const ssd_root *root)
{
    struct statvfs sv;
    if (statvfs(root->path, &sv) != 0)
        return UINT64_MAX;
    uint64_t room = (uint64_t)sv.f_bavail * sv.f_frsize;
    char path[4096];
    struct stat st;
    for (unsigned i = 0; i < MAX_SHARDS; i++) {
        shard_path(path, sizeof path, root, i);
        if (stat(path, &st) != 0)
            break;
        room += (uint64_t)st.st_blocks * 512;
    }
    return room;
}

/* Creates, truncates and reserves the shard files of d and starts its engine.
 * Shards narrower than 512 bytes make no sense: a small limit gets fewer. A
 * limit larger than the file system's free space fails before anything is
 * reserved (fallocate would fail halfway, after filling the disk). */
static int device_open(ssd_device *d, const ssd_root *root, unsigned shards, unsigned depth,
                       bool iovec_mode, char *err, size_t errlen)
{
    d->root = root;
    pthread_mutex_init(&d->readers_lock, NULL);
    if (shards > root->limit / SSD_ALIGN)
        shards = (unsigned)(root->limit / SSD_ALIGN);
    d->shard_bytes = ALIGN_DOWN(root->limit / shards);
    char path[4096];
    /* Shard files of an earlier run with more shards only waste the disk. */
    for (unsigned i = shards; i < MAX_SHARDS; i++) {
        shard_path(path, sizeof path, root, i);
        if (unlink(path) != 0)
            break;
    }
    uint64_t need = d->shard_bytes * shards, room = disk_room(root);
    if (need > room) {
        snprintf(err, errlen,
                 "large_limit_size[%zu]: %llu bytes for %s is more than its file system has "
                 "free (%llu bytes)",
                 root->cfg_index, (unsigned long long)need, root->path, (unsigned long long)room);
        return SSD_EINVAL;
    }
    d->shards = calloc(shards, sizeof *d->shards);
    if (!d->shards) {
        snprintf(err, errlen, "out of memory");
        return SSD_ENOMEM;
    }
    for (unsigned i = 0; i < shards; i++) {
        ssd_shard *sh = &d->shards[i];
        shard_path(path, sizeof path, root, i);
        sh->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
        if (sh->fd < 0) {
            snprintf(err, errlen, "root %s: cannot open shard-%03u%s: %s", root->path, i,
                     errno == EINVAL ? " (O_DIRECT refused?)" : "", strerror(errno));
            return SSD_EIO;
        }
        pthread_mutex_init(&sh->lock, NULL);
        pthread_cond_init(&sh->cv, NULL);
        ring_init(&sh->ring, d->shard_bytes);
        sh->dev = d;
        d->n_shards = i + 1; /* from here device_close cleans it up */
        if (fallocate(sh->fd, 0, 0, (off_t)d->shard_bytes) != 0) {
            snprintf(err, errlen, "root %s: cannot reserve %llu bytes for shard-%03u: %s",
                     root->path, (unsigned long long)d->shard_bytes, i, strerror(errno));
            return SSD_EIO;
        }
    }
    int rc = uring_engine_start(&d->eng, depth, iovec_mode);
    if (rc < 0) {
        snprintf(err, errlen, "root %s: cannot start the io_uring engine: %s", root->path,
                 strerror(-rc));
        return SSD_EIO;
    }
    return SSD_OK;
}

/* Stops the engine (no IO may be in flight), frees the records left in the
 * rings, closes the files and removes them: a store never reads what an
 * earlier one wrote (a restart starts empty), so they would only hold disk. */
static void device_close(ssd_device *d)
{
    char path[4096];
    for (unsigned i = 0; i < d->n_idle_readers; i++)
        uring_reader_close(d->idle_readers[i]);
    d->n_idle_readers = 0;
    pthread_mutex_destroy(&d->readers_lock);
    uring_engine_stop(d->eng);
    d->eng = NULL;
    for (unsigned i = 0; i < d->n_shards; i++) {
        ssd_shard *sh = &d->shards[i];
        for (ring_entry *re = sh->ring.oldest; re;) {
            ring_entry *next = re->next;
            entry_free((ssd_entry *)re);
            re = next;
        }
        close(sh->fd);
        shard_path(path, sizeof path, d->root, i);
        unlink(path);
        pthread_cond_destroy(&sh->cv);
        pthread_mutex_destroy(&sh->lock);
    }
    free(d->shards);
    d->shards = NULL;
    d->n_shards = 0;
}

static bool has_slash(const char *s)
{
    return strchr(s, '/') != NULL;
}

/* Checks everything that does not need the file system. */
static int config_check(const ssd_config *cfg, char *err, size_t errlen)
{
    if (!cfg) {
        snprintf(err, errlen, "config: missing");
        return SSD_EINVAL;
    }
    if (!cfg->cluster_name || !*cfg->cluster_name) {
        snprintf(err, errlen, "cluster_name: missing");
        return SSD_EINVAL;
    }
    if (has_slash(cfg->cluster_name)) {
        snprintf(err, errlen, "cluster_name: \"%s\" must not contain '/'", cfg->cluster_name);
        return SSD_EINVAL;
    }
    if (!cfg->instance || !*cfg->instance) {
        snprintf(err, errlen, "instance: missing");
        return SSD_EINVAL;
    }
    if (has_slash(cfg->instance) || !strcmp(cfg->instance, ".") ||
        !strcmp(cfg->instance, "..")) {
        snprintf(err, errlen, "instance: \"%s\" is not a valid directory name", cfg->instance);
        return SSD_EINVAL;
    }
    if (cfg->n_paths == 0 || !cfg->paths) {
        snprintf(err, errlen, "large_file_paths: empty (the SSD tier needs at least one path)");
        return SSD_EINVAL;
    }
    if (cfg->n_limits != cfg->n_paths || !cfg->limits) {
        snprintf(err, errlen,
                 "large_limit_size: %zu entries for %zu large_file_paths (lengths must match)",
                 cfg->limits ? cfg->n_limits : (size_t)0, cfg->n_paths);
        return SSD_EINVAL;
    }
    for (size_t i = 0; i < cfg->n_paths; i++) {
        if (!cfg->paths[i] || !*cfg->paths[i]) {
            snprintf(err, errlen, "large_file_paths[%zu]: empty", i);
            return SSD_EINVAL;
        }
        if (cfg->limits[i] < SSD_ALIGN) {
            snprintf(err, errlen,
                     "large_limit_size[%zu]: %llu bytes is under the %u-byte minimum", i,
                     (unsigned long long)cfg->limits[i], SSD_ALIGN);
            return SSD_EINVAL;
        }
    }
    if (cfg->shards_per_device > MAX_SHARDS) {
        snprintf(err, errlen, "shards_per_device: %u is over the maximum of %u",
                 cfg->shards_per_device, MAX_SHARDS);
        return SSD_EINVAL;
    }
    if (cfg->io_depth > MAX_IO_DEPTH) {
        snprintf(err, errlen, "io_depth: %u is over the maximum of %u", cfg->io_depth,
                 MAX_IO_DEPTH);
        return SSD_EINVAL;
    }
    return SSD_OK;
}

int ssd_open(const ssd_config *cfg, ssd_store **out, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!out) {
        snprintf(err, errlen, "out: missing");
        return SSD_EINVAL;
    }
    *out = NULL;
    int rc = config_check(cfg, err, errlen);
    if (rc != SSD_OK)
        return rc;
    ssd_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return SSD_ENOMEM;
    }
    pthread_mutex_init(&s->index_lock, NULL);
    pthread_mutex_init(&s->evq_lock, NULL);
    pthread_mutex_init(&s->pool.lock, NULL);
    pthread_mutex_init(&s->close_lock, NULL);
    pthread_cond_init(&s->close_cv, NULL);
    s->evq_cap = cfg->eviction_queue_cap ? cfg->eviction_queue_cap : DEFAULT_EVQ_CAP;

    int r = root_set_open(cfg->cluster_name, cfg->instance, cfg->paths, cfg->limits,
                          cfg->n_paths, &s->roots, &s->n_roots, err, errlen);
    if (r != 0) {
        rc = r == -ENOMEM ? SSD_ENOMEM : r == -EINVAL ? SSD_EINVAL : SSD_EIO;
        goto fail;
    }
    s->devs = calloc(s->n_roots, sizeof *s->devs);
    if (!s->devs) {
        snprintf(err, errlen, "out of memory");
        rc = SSD_ENOMEM;
        goto fail;
    }
    unsigned shards = cfg->shards_per_device ? cfg->shards_per_device : DEFAULT_SHARDS;
    unsigned depth = cfg->io_depth ? cfg->io_depth : DEFAULT_IO_DEPTH;
    for (size_t i = 0; i < s->n_roots; i++) {
        s->n_devs = i + 1;
        rc = device_open(&s->devs[i], &s->roots[i], shards, depth, cfg->iovec_mode, err,
                         errlen);
        if (rc != SSD_OK)
            goto fail;
        if (s->devs[i].shard_bytes > s->max_shard_bytes)
            s->max_shard_bytes = s->devs[i].shard_bytes;
    }
    *out = s;
    return SSD_OK;
fail:
    ssd_close(s);
    return rc;
}

void ssd_close(ssd_store *s)
{
    if (!s)
        return;
    atomic_store(&s->closing, 1);
    for (size_t i = 0; i < s->n_devs; i++) {
        ssd_device *d = &s->devs[i];
        for (unsigned j = 0; j < d->n_shards; j++) {
            pthread_mutex_lock(&d->shards[j].lock);
            pthread_cond_broadcast(&d->shards[j].cv); /* waiting writers give up */
            pthread_mutex_unlock(&d->shards[j].lock);
        }
    }
    pthread_mutex_lock(&s->close_lock);
    while (atomic_load(&s->active) > 0)
        pthread_cond_wait(&s->close_cv, &s->close_lock);
    pthread_mutex_unlock(&s->close_lock);

    index_clear(&s->ix);
    for (size_t i = 0; i < s->n_devs; i++)
        device_close(&s->devs[i]);
    free(s->devs);
    root_set_close(s->roots, s->n_roots);
    for (size_t i = 0; i < s->evq_count; i++)
        free(s->evq[(s->evq_head + i) % s->evq_alloc].key);
    free(s->evq);
    pool_destroy(&s->pool);
    pthread_cond_destroy(&s->close_cv);
    pthread_mutex_destroy(&s->close_lock);
    pthread_mutex_destroy(&s->evq_lock);
    pthread_mutex_destroy(&s->index_lock);
    free(s);
}

#ifdef FX_FAILPOINTS
uring_engine *ssd_test_engine(ssd_store *s, size_t device)
{
    return s && device < s->n_devs ? s->devs[device].eng : NULL;
}

void ssd_test_stale_next_reads(ssd_store *s, unsigned n)
{
    atomic_store(&s->fp_stale, n);
}
#endif
