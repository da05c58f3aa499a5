/*
 * store_internal.h - what the parts of the SSD store share: the store with its
 * devices and shards, the aligned buffer pool, the wait slots of an IO and the
 * helpers every operation uses (counters, entering and leaving an operation).
 * Not for use outside src/owner/ssd/; the engine's interface is ssd.h.
 *
 * The store (KvSsdStorage; spec 000 §2, §5.3, §6; DESIGN §6) is split so:
 * store.c opens and closes the store and its devices, writes and evicts;
 * load.c is the read path (the load pipeline and the devices' readers);
 * buf_pool.c keeps the aligned IO buffers; io_slot.c is one IO request that
 * its caller waits for; stats.c reads the counters. Below them: root.c finds
 * and locks the roots, ring.c does the bookkeeping of each shard file, uring.c
 * runs one io_uring engine per device, index.c maps (key, put_id) to entry
 * records, chunkq.c is the chunk queue. Callers' threads block on their own
 * IO: writes and chunked loads through the device's engine (a condition
 * variable per operation, signalled from the engine thread's completion
 * callback), whole-value loads on a reader of the device (uring.h) taken from
 * a small pool, so the loading thread submits and reaps its reads itself.
 * Calls go one way: store.c and load.c call buf_pool.c and io_slot.c, never
 * each other.
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
#ifndef FX_SSD_STORE_INTERNAL_H
#define FX_SSD_STORE_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "owner/ssd/engine.h"
#include "owner/ssd/evict_queue.h"
#include "owner/ssd/index.h"
#include "owner/ssd/ring.h"
#include "owner/ssd/root.h"
#include "owner/ssd/ssd.h"
#include "owner/ssd/uring.h"

/* Whole values go to the engine in pieces: writes copy into WRITE_PIECE
 * buffers, WRITE_INFLIGHT of them at a time; ssd_load_into_addr reads
 * LOAD_PIECE pieces, LOAD_INFLIGHT at a time (the spec's pipeline numbers;
 * 1 MiB pieces were measured too: no faster at 4 MiB, slower at 16 MiB). */
#define WRITE_PIECE (4ull << 20)
#define WRITE_INFLIGHT 2u
#define LOAD_PIECE (4ull << 20)
#define LOAD_INFLIGHT 4u
/* Whole-value loads read through a reader of READER_DEPTH (>= LOAD_INFLIGHT);
 * up to READER_POOL idle readers are kept per device. */
#define READER_DEPTH 8u
#define READER_POOL 32u

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
    /* Idle readers for whole-value loads (see load() in load.c); a load takes one and
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

/* The native engine's store; base first (engine.h). */
typedef struct native_store {
    ssd_store base;
    ssd_root *roots;
    size_t n_roots;
    ssd_device *devs;
    size_t n_devs;
    uint64_t max_shard_bytes;
    atomic_uint next_dev;

    pthread_mutex_t index_lock; /* guards ix; taken before any shard lock */
    ssd_index ix;

    evict_queue evq;

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
} native_store;

extern const ssd_engine native_engine;

/* Its calls of the engine table (engine.h): store.c, load.c, stats.c. */
int native_write(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, const void *src,
                 uint64_t len, ssd_guard **guard);
void native_guard_release(ssd_guard *g);
int native_load_into_addr(ssd_store *s, const void *key, size_t klen, ssd_put_id pid,
                          void *addr, uint64_t len, uint64_t capacity);
int native_load_into_addr_chunks(ssd_store *s, const void *key, size_t klen, ssd_put_id pid,
                                 void *addr, uint64_t len, uint64_t capacity,
                                 uint64_t chunk_bytes, unsigned max_inflight,
                                 ssd_chunk_queue *q, uint64_t *delivered);
size_t native_pop_evictions(ssd_store *s, ssd_eviction *out, size_t cap);
void native_get_stats(ssd_store *s, ssd_stats *out);
void native_close(ssd_store *s);

static inline native_store *native_of(ssd_store *s)
{
    return (native_store *)s;
}

/* ---- counters (static inline: they stay on the hot paths of each file) --- */

static inline void count(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* Remembers why an IO failed: its negative errno, or EIO for a short one. */
static inline void note_io_error(native_store *s, int res)
{
    atomic_store_explicit(&s->last_io_errno, res < 0 ? -res : EIO, memory_order_relaxed);
}

/* ---- operations vs close ------------------------------------------------ */

static inline bool op_enter(native_store *s)
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

static inline void op_exit(native_store *s)
{
    /* Both sides use seq_cst: either close sees active == 0, or this sees
     * closing and wakes it (under the lock close re-checks active with). */
    if (atomic_fetch_sub(&s->active, 1) == 1 && atomic_load(&s->closing)) {
        pthread_mutex_lock(&s->close_lock);
        pthread_cond_broadcast(&s->close_cv);
        pthread_mutex_unlock(&s->close_lock);
    }
}

/* ---- buf_pool.c --------------------------------------------------------- */

/* An aligned buffer of at least size bytes, or NULL. Free with ssd_buf_put. */
void *ssd_buf_get(buf_pool *p, uint64_t size);
/* Gives b (from ssd_buf_get(p, size), or NULL) back to the pool, or frees it. */
void ssd_buf_put(buf_pool *p, void *b, uint64_t size);
/* Frees the buffers the pool holds and destroys its lock (at close). */
void ssd_buf_pool_destroy(buf_pool *p);

/* ---- io_slot.c ---------------------------------------------------------- */

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

void ssd_io_wait_init(io_wait *w);
void ssd_io_wait_destroy(io_wait *w);
/* Submits one IO of sl to eng; its completion marks sl done under w's lock. */
void ssd_slot_submit(uring_engine *eng, io_slot *sl, io_wait *w, int op, int fd, void *buf,
                 uint64_t len, uint64_t off);
/* Waits until the IO of sl (submitted with ssd_slot_submit and w) completed. */
void ssd_slot_wait(io_wait *w, io_slot *sl);

#endif
