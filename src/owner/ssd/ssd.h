/*
 * ssd.h - KvSsdStorage: the owner-local SSD tier as a library (spec 000 §2,
 * §5.3, §6; DESIGN §6).
 *
 * Like memcached's extstore: an opaque handle, a config struct in, result
 * codes out, no include from the daemon. The owner persists a value with
 * ssd_write() after PutDone and refills DRAM with ssd_load_into_addr() or the
 * chunked ssd_load_into_addr_chunks(); the ring's evictions come out of
 * ssd_pop_evictions() for the owner to batch to the master.
 *
 * Layout: one cache root per configured path,
 * <path>/<cluster_name>_cluster_kv_ssd_storage/<instance>/, created if missing
 * and locked exclusively (a second store on the same root fails to open).
 * Roots on the same device (st_dev) are de-duplicated, first wins. Each device
 * gets shards_per_device shard files (created, truncated and fully reserved
 * with fallocate at open: a limit over the file system's free space fails
 * there, before anything is reserved; removed again at close), one ring per
 * shard, and one io_uring engine. Values go to devices round-robin; one value
 * is one contiguous region of one shard.
 *
 * Every entry keeps an xxHash3 checksum of the payload, verified on every read:
 * a mismatch drops the entry and the read reports SSD_ENOTFOUND, never bytes
 * that differ from what was written.
 *
 * All functions are thread-safe. Reads and writes block the calling thread
 * until their IO completes (the owner calls them from worker threads).
 */
#ifndef FX_SSD_SSD_H
#define FX_SSD_SSD_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SSD_ALIGN 512u

/* Results are 0 or a negative errno, as liburing's and libuv's are
 * (docs/decisions.md, "One error scheme"); the names say which errno the engine
 * uses for what. The owner maps them to FX_E* codes in one place
 * (ssd_tier_fx_code), never passing them on raw. */
enum ssd_result {
    SSD_OK = 0,
    SSD_ENOTFOUND = -ENOENT,   /* no committed entry for (key, put_id), or it went stale */
    SSD_EIO = -EIO,            /* the device failed the IO (or it was short) */
    SSD_E2BIG = -EFBIG,        /* the value does not fit in one shard */
    SSD_EINVAL = -EINVAL,      /* bad argument or config */
    SSD_ENOMEM = -ENOMEM,
    SSD_ECLOSED = -ESHUTDOWN,  /* the store is closing */
};

typedef struct ssd_put_id {
    uint64_t time_ms;
    uint32_t version;
} ssd_put_id;

/* Which engine keeps the values (owner YAML ssd_backend): the native io_uring
 * ring, or RocksDB (blob files, direct IO) for the ablation of spec 000
 * §8.4.1, available when the build found librocksdb (ssd_backend_available). */
typedef enum ssd_backend {
    SSD_BACKEND_NATIVE = 0,
    SSD_BACKEND_ROCKSDB = 1,
} ssd_backend;

/* "native" / "rocksdb". */
const char *ssd_backend_name(ssd_backend b);
/* Parses a name of ssd_backend_name; false for anything else. */
bool ssd_backend_parse(const char *name, ssd_backend *out);
/* Whether this build has the engine (native: always). */
bool ssd_backend_available(ssd_backend b);

typedef struct ssd_config {
    ssd_backend backend;       /* 0: native */
    const char *cluster_name;  /* root name component, required */
    const char *instance;      /* the owner instance, required, no '/' */
    const char *const *paths;  /* large_file_paths */
    const uint64_t *limits;    /* large_limit_size, same length, each >= 512 */
    size_t n_paths;
    size_t n_limits;           /* must equal n_paths */
    unsigned shards_per_device; /* 0: 4 (native only) */
    unsigned io_depth;          /* 0: 32 (native only) */
    bool iovec_mode;            /* IORING_OP_READV/WRITEV instead of READ/WRITE (native only) */
    size_t eviction_queue_cap;  /* 0: 65536 */
} ssd_config;

typedef struct ssd_store ssd_store;
typedef struct ssd_guard ssd_guard;

/* Opens the store. Returns SSD_OK with *out set, or an error with a message
 * naming what was wrong in err (for example "large_limit_size[1]: 100 bytes is
 * under the 512-byte minimum" or "root /x/...: locked by another owner"):
 * SSD_EINVAL for a bad config (the message names the key), SSD_EIO when a
 * root cannot be created, locked or reserved, its shard files opened with
 * O_DIRECT or its io_uring started (the message names the root), SSD_ENOMEM.
 * A root de-duplicated away (same st_dev as an earlier one) contributes
 * nothing, its limit included. A limit under shards_per_device * 512 bytes
 * gets fewer shards (limit / 512). Nothing stays open or locked on failure. */
int ssd_open(const ssd_config *cfg, ssd_store **out, char *err, size_t errlen);
/* Waits for the calls in progress (writers waiting for ring space give up
 * with SSD_ECLOSED), closes the files and frees the store (NULL-safe). Chunk
 * consumers must keep popping until the last item; no call may start once
 * ssd_close has begun; guards still held become invalid (release them before,
 * never after). */
void ssd_close(ssd_store *s);

/* Persists len bytes from src as (key, put_id): copies them into a 512-aligned
 * buffer with zeroed padding, reserves aligned_len in a shard (waiting while
 * the ring is blocked by busy entries), writes, and commits only when exactly
 * aligned_len bytes were written. With guard non-NULL, *guard pins the
 * committed entry against overwrite until ssd_guard_release() (the spec's
 * KvSsdPersistGuard for the master's commit window); *guard is NULL on
 * failure. A (key, put_id) written again replaces the older entry. An empty
 * value (len 0) still takes one 512-byte block. Returns SSD_OK, SSD_EIO
 * (nothing committed), SSD_E2BIG, SSD_EINVAL, SSD_ENOMEM or SSD_ECLOSED.
 * A caller holding a guard must not expect writes to the same shard to go on
 * once the ring has wrapped around to the guarded entry: they wait for it. */
int ssd_write(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, const void *src,
              uint64_t len, ssd_guard **guard);
void ssd_guard_release(ssd_guard *g);

/* Reads the committed value of (key, put_id) into addr: exactly len bytes
 * (the entry's length) of payload land there. The read goes straight into
 * addr when addr, the file offset and the read length are 512-aligned and
 * capacity covers the aligned length (the read length of a whole value is its
 * aligned_len, so the padding lands in addr[len, aligned_len) too); otherwise
 * through an aligned scratch buffer with a copy of the real bytes only (bytes
 * of addr past len are untouched then). The value is read in 4 MiB pieces,
 * each choosing by the same rule (the stats count each IO), with up to 4 in
 * flight, submitted and reaped by the calling thread itself (a private ring
 * of the device, no engine-thread hand-off), and the
 * checksum of each piece is taken while later pieces are still being read, so
 * only the last piece's is left after the disk. On any
 * error the bytes in addr are undefined and must not be used. Returns SSD_OK,
 * SSD_ENOTFOUND (absent, stale after the IO, or checksum mismatch: the entry
 * is dropped), SSD_EIO (the entry stays), SSD_EINVAL (len differs from the
 * entry's, capacity < len), SSD_ENOMEM or SSD_ECLOSED. */
int ssd_load_into_addr(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, void *addr,
                       uint64_t len, uint64_t capacity);

/* One ready chunk of a chunked load: bytes [offset, offset+len) of the value
 * are in place at addr + offset. A chunk is queued as soon as its read
 * completed, before its bytes enter the checksum (so a consumer can move them
 * while they are being hashed). The last item has last = true, len = 0,
 * offset = the bytes delivered by the chunks before it, and carries the load's
 * final status (SSD_OK only if every chunk was read and the checksum of the
 * whole value verified); a consumer may copy chunks before that but must not
 * publish the target before it saw the last item with SSD_OK. */
typedef struct ssd_chunk {
    uint64_t offset;
    uint64_t len;
    bool last;
    int status;
} ssd_chunk;

typedef struct ssd_chunk_queue ssd_chunk_queue;

/* A bounded queue of ready chunks (slots: 0 means 8). */
ssd_chunk_queue *ssd_chunk_queue_new(unsigned slots);
void ssd_chunk_queue_free(ssd_chunk_queue *q);
/* Blocks until a chunk is ready; returns it. */
ssd_chunk ssd_chunk_queue_pop(ssd_chunk_queue *q);
/* Takes a ready chunk into *out without waiting; false when none is ready. */
bool ssd_chunk_queue_try_pop(ssd_chunk_queue *q, ssd_chunk *out);
/* Sets fn(arg) to be called on the producer's thread after every push,
 * outside the queue's lock (for a consumer on an event loop: wake the loop,
 * then try_pop). Set it before the producer starts. */
void ssd_chunk_queue_set_notify(ssd_chunk_queue *q, void (*fn)(void *arg), void *arg);

/* The producer side of the spec's remote refill pipeline: reads the value in
 * chunk_bytes pieces (0: 4 MiB, at most 1 GiB) into addr with up to
 * max_inflight reads in flight (0: 4, at most 16), pushing each chunk to q as
 * it becomes ready (in offset order), then a last item with the status. Each
 * chunk is read directly or through scratch by the rule of
 * ssd_load_into_addr, applied to the chunk: its address addr + offset, its
 * file offset, its read length (the chunk's length, or up to the aligned end
 * for the last chunk) and capacity - offset. Blocks until the last item is
 * queued; run it on its own thread while a consumer pops. The read pin is
 * released after the last chunk is queued. Returns the same status as the
 * last item; with q NULL, SSD_EINVAL and nothing is pushed. */
int ssd_load_into_addr_chunks(ssd_store *s, const void *key, size_t klen, ssd_put_id pid,
                              void *addr, uint64_t len, uint64_t capacity, uint64_t chunk_bytes,
                              unsigned max_inflight, ssd_chunk_queue *q);

/* Evicted (key, put_id) pairs, each reported exactly once, for the owner's
 * BatchSsdReplicaEvict. The queue is bounded (eviction_queue_cap): when it is
 * full, evictions are dropped and counted, and writes never wait for it. */
typedef struct ssd_eviction {
    char *key; /* malloc'd, owned by the caller after pop; key[klen] is '\0' */
    size_t klen;
    ssd_put_id pid;
} ssd_eviction;
/* Moves up to cap evictions into out; returns how many. */
size_t ssd_pop_evictions(ssd_store *s, ssd_eviction *out, size_t cap);

#define SSD_MAX_DEVICE_STATS 8

typedef struct ssd_device_stats {
    char root[512];
    size_t cfg_index;        /* the paths[] entry it came from (the first on its device) */
    uint64_t capacity_bytes; /* kv_ssd_capacity_bytes of this device */
    uint64_t used_bytes;     /* kv_ssd_used_bytes: ring space between tail and head */
} ssd_device_stats;

typedef struct ssd_stats {
    uint64_t capacity_bytes, used_bytes; /* totals */
    uint64_t entries;                    /* indexed (readable) values */
    uint64_t writes, write_errors;       /* committed writes, writes that got SSD_EIO */
    uint64_t direct_reads, scratch_reads; /* read IOs by path (a chunk is one IO) */
    uint64_t reader_loads;               /* loads read by the loading thread's own reader */
    uint64_t read_errors;                /* loads that got SSD_EIO */
    uint64_t checksum_failures, stale_reads; /* loads that dropped their entry */
    uint64_t evictions, evictions_dropped; /* indexed entries evicted; not queued (full) */
    int last_io_errno; /* errno of the latest failed read or write IO (EIO: short), 0: none */
    size_t n_devices;
    ssd_device_stats devices[SSD_MAX_DEVICE_STATS]; /* the first ones */
} ssd_stats;

void ssd_get_stats(ssd_store *s, ssd_stats *out);

#endif
