/*
 * fluxon.h - the public C API of Fluxon KV (libfluxon).
 *
 * An application connects to its local owner over a Unix socket, maps the
 * owner's shared memory segment, and then puts, gets and deletes values. A get
 * returns a holder: a read-only, zero-copy view of the value's bytes inside the
 * shared segment. The bytes behind a holder stay valid and unchanged until the
 * holder is released, even if the key is overwritten or deleted meanwhile.
 *
 * Every call is thread-safe. Calls that can fail return 0 or a negative FX_E*
 * code; fx_strerror() names the code and fx_last_error_detail() gives the
 * message of the last failure on the calling thread.
 */
#ifndef FLUXON_FLUXON_H
#define FLUXON_FLUXON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum fx_error {
    FX_OK = 0,
    FX_ENOTFOUND = -1,  /* "KeyNotFound": no readable replica of the key */
    FX_ENOSPC = -2,     /* "NoSpace": no room in the cluster's memory */
    FX_EINVAL = -3,     /* "InvalidArgument" */
    FX_ECONN = -4,      /* "ConnectionError": owner unreachable or connection lost */
    FX_ETIMEDOUT = -5,  /* "Timeout" */
    FX_ENOMEM = -6,     /* "OutOfMemory" (local allocation failed) */
    FX_EPROTO = -7,     /* "ProtocolError": a malformed or unexpected message */
    FX_EEXIST = -8,     /* "AlreadyExists" */
    FX_EBUSY = -9,      /* "Busy" */
    FX_ENOTSUP = -10,   /* "NotImplemented" */
    FX_ESTALE = -11,    /* "Stale": the operation's version or member is gone */
    FX_EINTERNAL = -12, /* "InternalError" */
    FX_EAUTH = -13,     /* "AuthenticationFailed": the cluster secret did not match */
    FX_EMASTER = -14,   /* "MasterUnavailable": the owner has no master (lost, not yet back)
                         * for its master_wait; values already held stay readable */
};

enum fx_source {
    FX_SRC_MEMORY = 1, /* the value was served from a DRAM replica */
    FX_SRC_SSD = 2,    /* the value was refilled from the SSD tier */
};

typedef struct fx_client fx_client;
typedef struct fx_holder fx_holder;

/* Connects to the owner listening on socket_path (NULL: $FLUXON_SOCKET) and maps
 * its segment. Returns the client, or NULL with the FX_E* code in *err (err may
 * be NULL). The caller owns the client and frees it with fx_close(). */
fx_client *fx_connect(const char *socket_path, int *err);

/* Stores len bytes of val under key (klen bytes, binary-safe, 1..4096 bytes).
 * Returns 0 once the value is stored: from then on every new get on this
 * client reads it. Other clients may still read the previous value from
 * their indexes until the master's invalidation reaches them: asynchronous,
 * within 100 ms (well under 5 ms on one machine). Holders already taken keep
 * the bytes they had. FX_ENOSPC when the value does not fit. */
int fx_put(fx_client *c, const char *key, size_t klen, const void *val, size_t len);

/* Options of fx_put_opts (zero-initialize, then set what you need). */
typedef struct fx_put_options {
    /* Binds the value to a lease from fx_lease_allocate (0: none): it is never
     * evicted from memory, and it is deleted when the lease expires.
     * FX_ESTALE when the lease is unknown or expired. */
    uint64_t lease_id;
    /* FX_EEXIST when the key already has a value, checked when the put starts
     * and again when it commits (put-if-absent). */
    int reject_if_exists;
    /* FX_EBUSY when another put of the same key is in flight. */
    int reject_if_inflight_same_key;
} fx_put_options;

/* fx_put with options (opts may be NULL: the same as fx_put). */
int fx_put_opts(fx_client *c, const char *key, size_t klen, const void *val, size_t len,
                const fx_put_options *opts);

/* fx_put that does not wait for the master's answer (an opt-in: one round
 * trip to the owner and none to the master on the caller's time). It returns
 * once the owner has written the value into its segment and sent its commit
 * to the master. From then on gets through the same owner (this client and
 * every client of that owner) read the new value, since the owner's later
 * calls reach the master after the commit; gets through other owners may
 * read the previous value until the master has applied it (one owner-master
 * round trip, well under a millisecond on one machine). If the master then
 * refuses the commit (the master was lost and did not come back within the
 * owner's master_wait, say), the owner logs it and the key keeps its
 * previous value: 0 here means "sent", not "stored". Values larger than
 * FX_PUT_INLINE_MAX wait for the master as fx_put does. */
int fx_put_nowait(fx_client *c, const char *key, size_t klen, const void *val, size_t len);

/* Looks key up. On success *out is a holder owned by the caller, released with
 * fx_holder_release(). FX_ENOTFOUND on a miss; *out is untouched on failure. */
int fx_get(fx_client *c, const char *key, size_t klen, fx_holder **out);

/* The holder's bytes (read-only, valid until release) and their length
 * (NULL and 0 for a NULL holder). */
const void *fx_holder_data(const fx_holder *h);
size_t fx_holder_len(const fx_holder *h);
/* FX_SRC_MEMORY or FX_SRC_SSD: where the cluster found the value (FX_EINVAL
 * for a NULL holder). */
int fx_holder_source(const fx_holder *h);
/* Releases the holder (NULL is a no-op). The bytes may be reused afterwards. */
void fx_holder_release(fx_holder *h);

/* The near cache: a released holder of a value of up to 256 KiB stays in this
 * client, pinned in the owner's memory, so that the next get of the key is
 * answered here without a call to the owner. Its staleness is that of a held
 * holder (fx_put): the master's invalidation drops it, and overwrites and
 * deletes through this client drop it at once. max_bytes bounds the bytes it
 * pins (the oldest go first); 0 turns it off. The default is 1/64 of the
 * owner's segment, at most 8 MiB, or FLUXON_NEAR_CACHE_BYTES (bytes) when set
 * at fx_connect. Returns 0 or FX_EINVAL. */
int fx_set_near_cache(fx_client *c, size_t max_bytes);

/* Copies the value of key straight into buf (cap bytes) without handing out
 * a holder; *len (may be NULL) receives the value's length. FX_ENOTFOUND on a
 * miss; FX_EINVAL, with *len set and nothing written, when cap is smaller
 * than the value. */
int fx_get_into(fx_client *c, const char *key, size_t klen, void *buf, size_t cap, size_t *len);

/* ---- batches: many keys per round trip to the owner ---------------------------- */

/* Most keys one batch call takes. */
#define FX_BATCH_MAX 1024
/* fx_put of a value of up to this many bytes sends it in its one request to
 * the owner (one round trip instead of two); larger values are written into
 * the shared segment. */
#define FX_PUT_INLINE_MAX (256u << 10)

/* Puts n values (1..FX_BATCH_MAX) in two round trips to the owner. results[i]
 * receives key i's own result (0 or an FX_E* code: one key's NoSpace does not
 * fail the others). Returns 0 when every key was attempted (check results),
 * or an FX_E* code when the batch as a whole failed (bad arguments, lost
 * connection): then results[i] say which keys were stored before the failure
 * (0) and which not. */
int fx_batch_put(fx_client *c, size_t n, const char *const *keys, const size_t *klens,
                 const void *const *vals, const size_t *lens, int *results);
/* Gets n keys (1..FX_BATCH_MAX) in one round trip. For each key, results[i]
 * is 0 with a holder in out[i] (released by the caller), or an FX_E* code
 * (FX_ENOTFOUND on a miss) with out[i] = NULL. Returns 0 when every key was
 * looked up, else an FX_E* code for the batch (then every out[i] is NULL). */
int fx_batch_get(fx_client *c, size_t n, const char *const *keys, const size_t *klens,
                 fx_holder **out, int *results);

/* ---- batches for inference engines: lookups, copies in and out, deletes ------
 *
 * One call per batch of keys, the shape SGLang HiCache, LMCache and vLLM's
 * connectors use. n may be 0 (nothing to do) up to FX_BATCH_MAX; more is
 * refused with FX_EINVAL (split the batch). Every call returns 0 when each
 * key has its own outcome in results[i] (0 or, for exists, 1 / 0; else an
 * FX_E* code for that key alone), or an FX_E* code when the batch as a whole
 * failed (a NULL array, a lost owner): then results[i] are that code for
 * every key not yet known. */

/* results[i]: 1 when key i has a readable value, 0 when not, or a negative
 * FX_E* code (an invalid key). One message to the owner and one to the
 * master, answered in one pass there. */
int fx_batch_exists(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                    int results[]);

/* *hits: how many keys, from keys[0] on, have a readable value before the
 * first that has not (the prefix of a token sequence already cached). The
 * master stops at the first miss. */
int fx_prefix_hits(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                   size_t *hits);

/* Copies each key's value into bufs[i] (caps[i] bytes; a larger buffer is
 * fine). lens[i] receives the value's length. results[i]: 0, FX_ENOTFOUND
 * on a miss (lens[i] 0), FX_EINVAL when caps[i] is smaller than the value
 * (nothing written; lens[i] is the length needed), or another FX_E* code. */
int fx_batch_get_into(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                      void *const bufs[], const size_t caps[], size_t lens[], int results[]);

/* Scatter form of fx_batch_get_into: key i's value fills iovs[i][0..iovcnts[i]-1]
 * in order (the value may end inside any of them); FX_EINVAL for that key when
 * their total is smaller than the value. */
int fx_batch_get_iov(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                     const struct iovec *const iovs[], const size_t iovcnts[], size_t lens[],
                     int results[]);

/* Stores vals[i] (lens[i] bytes) under keys[i]; opts (may be NULL) applies to
 * every key: with reject_if_exists a key that already has a value reports
 * FX_EEXIST and the others are stored. results[i]: 0 or an FX_E* code. Each
 * stored key is visible as after fx_put when the call returns. */
int fx_batch_put_from(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                      const void *const vals[], const size_t lens[], const fx_put_options *opts,
                      int results[]);

/* Gather form of fx_batch_put_from: key i's value is the concatenation of
 * iovs[i][0..iovcnts[i]-1] (for example one segment per layer). */
int fx_batch_put_iov(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                     const struct iovec *const iovs[], const size_t iovcnts[],
                     const fx_put_options *opts, int results[]);

/* Deletes each key. results[i]: 0, FX_ENOTFOUND when it was absent, or
 * another FX_E* code. Visibility as fx_delete. */
int fx_batch_delete(fx_client *c, size_t n, const char *const keys[], const size_t klens[],
                    int results[]);

/* ---- zero-copy put: write the value straight into shared memory --------------- */

typedef struct fx_put_handle fx_put_handle;

/* Starts a put of len bytes under key (opts may be NULL) and hands out the
 * staging range in the shared segment to fill (fx_put_handle_data), so a
 * producer writes its bytes once. End it with fx_put_commit (the value
 * becomes readable, as fx_put) or fx_put_abort; either frees the handle.
 * Until then the staging range is held. fx_close() revokes and frees every
 * handle still open: using one after fx_close() is undefined, as for holders.
 * Returns 0 with *out set, or an FX_E* code. */
int fx_put_begin(fx_client *c, const char *key, size_t klen, size_t len,
                 const fx_put_options *opts, fx_put_handle **out);
/* The len writable bytes of the put (valid until commit or abort). */
void *fx_put_handle_data(fx_put_handle *p);
size_t fx_put_handle_len(const fx_put_handle *p);
/* Publishes the value; frees p. Returns 0 or an FX_E* code. */
int fx_put_commit(fx_put_handle *p);
/* Drops the put; nothing is stored; frees p (NULL is a no-op). */
void fx_put_abort(fx_put_handle *p);

/* Removes key. FX_ENOTFOUND if it was absent. Once it returns, this client
 * no longer reads key; other clients stop within 100 ms (the invalidation is
 * asynchronous, as for an overwriting put). Holders already taken stay valid. */
int fx_delete(fx_client *c, const char *key, size_t klen);

/* 1 when key has a readable value, 0 when not, or a negative FX_E* code. */
int fx_exists(fx_client *c, const char *key, size_t klen);
/* The value's length in *size, or FX_ENOTFOUND (FX_EINVAL when size is NULL). */
int fx_get_size(fx_client *c, const char *key, size_t klen, uint64_t *size);
/* How many keys start with prefix (plen may be 0: all keys), from the
 * master's prefix index; eventually consistent with puts in flight.
 * FX_EINVAL when count is NULL. */
int fx_count_prefix(fx_client *c, const char *prefix, size_t plen, uint64_t *count);

/* Creates a lease that expires ttl_ms milliseconds from now unless kept
 * alive; its id goes to *lease_id (see fx_put_options.lease_id). */
int fx_lease_allocate(fx_client *c, uint64_t ttl_ms, uint64_t *lease_id);
/* Moves the lease's expiry to its ttl from now. FX_ESTALE when it already
 * expired (its keys are gone then). */
int fx_lease_keepalive(fx_client *c, uint64_t lease_id);

/* Per-owner figures of the cluster, as `fluxon stat` prints them. */
typedef struct fx_owner_stat {
    uint32_t node_id;
    int live;
    uint64_t memory_capacity, memory_used;
    uint64_t ssd_capacity, ssd_used;
    uint64_t hits_memory, hits_ssd, misses;
    char name[64];
    /* memory_used split: bytes held by the current versions' memory replicas,
     * and bytes held only by get holders (temporary copies, replaced
     * versions); the rest is in-flight puts and gets. */
    uint64_t replica_bytes, holding_bytes;
    /* Eviction: the bytes that evictable replicas plus reservations may take
     * (cache_budget % of the segment), the evictable replicas' bytes, the
     * reserved bytes (durable gets in flight, SSD persists in flight, leased
     * replicas), and how many replicas were evicted so far. */
    uint64_t cache_budget, cache_weight, cache_reserved, evictions;
    /* SSD writes and reads that failed, plus values that failed their
     * checksum on a refill, since the owner started (its log says more). */
    uint64_t ssd_errors;
} fx_owner_stat;

/* Fills up to cap entries of out and sets *n to the number of owners known.
 * Returns 0 or an FX_E* code. */
int fx_stat(fx_client *c, fx_owner_stat *out, size_t cap, size_t *n);

/* The master that answers the cluster's calls (with standby masters on
 * etcd, the leader). Kept apart from fx_owner_stat, which callers allocate
 * in arrays: a field added there would change the stride of arrays built
 * against an older header. */
typedef struct fx_master_stat {
    char addr[300]; /* its advertised "HOST:PORT" ("" from a master that does not say) */
    uint64_t term;  /* its term as leader on etcd; 0 without etcd */
    int64_t pid;    /* its process id on host (0 when it does not say) */
    char host[256]; /* its host name (gethostname), "" when it does not say */
} fx_master_stat;

/* Asks the master about itself, through the owner (the Stat call that
 * fx_stat makes). Returns 0 with *out filled, or an FX_E* code with *out
 * unchanged. */
int fx_stat_master(fx_client *c, fx_master_stat *out);

/* Round trip to the owner without touching the master (for latency baselines). */
int fx_ping(fx_client *c);

/* Closes the connection and unmaps the segment. Holders still alive are
 * released first; using them after fx_close() is undefined. NULL is a no-op. */
void fx_close(fx_client *c);

/* "KeyNotFound", "NoSpace", ... for an FX_E* code; "Unknown" otherwise. */
const char *fx_strerror(int err);
/* The detail message of the calling thread's last failed call ("" if none). */
const char *fx_last_error_detail(void);

#ifdef __cplusplus
}
#endif
#endif
