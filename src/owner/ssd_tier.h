/*
 * ssd_tier.h - the owner's SSD tier: the SSD engine (owner/ssd/ssd.h) wired
 * into fluxon-owner (spec 000 §2-3, §5.1, §6-7; DESIGN §4, §6).
 *
 * The engine's calls block their thread until the IO completes, so they never
 * run on the loop thread: each one is a uv_queue_work job on libuv's thread
 * pool whose completion runs on the loop. Persist writes may wait for ring
 * space (a route-commit pin is released only when the master answers), so at
 * most SSD_TIER_MAX_WRITES of them occupy workers at once and the rest wait in
 * a FIFO on the loop; remote refill producers (which wait on their ready
 * queue) likewise, at most SSD_TIER_MAX_STAGES; the pool is sized so that
 * local refill reads always find a free worker behind them.
 *
 *   ssd_tier.c     open / shutdown / close, the worker hand-off for local
 *                  refill reads, usage for heartbeats
 *   ssd_errors.c   names for the engine's result codes, the failure counters
 *                  reported with each heartbeat
 *   ssd_persist.c  SsdReplicaPersist: write, SsdReplicaCommit, release the
 *                  persist guard, answer
 *   ssd_stage.c    SsdStageRead: the remote refill pipeline (read chunks into
 *                  staging on a worker, push each from the loop to the
 *                  requester's target)
 *   ssd_evict.c    the ring's evictions batched to the master
 *                  (BatchSsdReplicaEvict: 256 entries or 10 ms, one batch in
 *                  flight, retried on failure)
 *
 * Threads: everything in ssd_tier is owned by the loop thread except `store`
 * (thread-safe) and `closing` (atomic, read by the workers). Shutdown order
 * (main.c): ssd_tier_shutdown() once the loop stopped (queued jobs then skip
 * the store, waiting persists and the unsent eviction batch are dropped), the
 * master link closes (pending commits complete, releasing their guards), the
 * loop runs until the last job completed, then ssd_tier_close() closes the
 * store: no engine thread, file or guard outlives it.
 */
#ifndef FX_OWNER_SSD_TIER_H
#define FX_OWNER_SSD_TIER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "owner/owner.h"
#include "owner/ssd/ssd.h"

#define SSD_TIER_MAX_WRITES 4u   /* persist writes on workers at once */
#define SSD_TIER_MAX_STAGES 4u   /* SsdStageRead producers on workers at once */
#define SSD_TIER_THREADS 12u     /* UV_THREADPOOL_SIZE when the environment sets none */
#define SSD_EVICT_BATCH 256u     /* evictions per BatchSsdReplicaEvict */
#define SSD_EVICT_TICK_MS 10u

struct ssd_persist;
struct ssd_stage;

typedef struct ssd_tier {
    owner *o;
    ssd_store *store;
    atomic_bool closing;     /* set by ssd_tier_shutdown; workers then skip the store */
    unsigned jobs;           /* jobs queued on or running in the pool */
    unsigned writes_running; /* persist writes among them (<= SSD_TIER_MAX_WRITES) */
    struct ssd_persist *wait_head, *wait_tail; /* persists waiting for a write slot */
    unsigned persists_waiting;                 /* how many */
    unsigned stages_running; /* stage producers among the jobs (<= SSD_TIER_MAX_STAGES) */
    struct ssd_stage *stage_wait_head, *stage_wait_tail; /* stages waiting for a worker */
    /* Eviction notices (ssd_evict.c). */
    bool evict_timer_init;
    uv_timer_t evict_timer;
    ssd_eviction batch[SSD_EVICT_BATCH]; /* popped, not yet acknowledged by the master */
    size_t n_batch;
    bool batch_in_flight;
    unsigned batch_failures; /* consecutive failed sends of the current batch */
    /* The engine's failure counters at the last ssd_tier_report_errors(). */
    uint64_t seen_write_errors, seen_read_errors, seen_checksum_failures;
} ssd_tier;

/* ssd_errors.c */
/* Logs one WARN line when SSD writes or reads failed, or values failed their
 * checksum, since the last call (with the latest IO error's errno), and
 * returns all of them so far (0 without a tier): the heartbeat's ssd_errors.
 * The engine only counts; the owner calls this with each heartbeat, so a
 * failing disk costs one line per heartbeat, not one per value. */
uint64_t ssd_tier_report_errors(owner *o);
/* A short name for an ssd_result ("not found", "I/O error", ...). */
const char *ssd_tier_strerror(int rc);
/* The FX_E* code that answers a peer for an ssd_result: FX_OK, FX_ENOTFOUND
 * when the copy is gone or damaged, FX_EINTERNAL for any failure of this
 * owner's tier. The one place where the engine's codes (negative errno
 * values) become the cluster's. */
int ssd_tier_fx_code(int rc);

/* ssd_tier.c */
/* Opens the tier when fluxonkv_spec.large_limit_size is configured (o->ssd
 * stays NULL otherwise): one cache root per large_file_paths[i] under the
 * cluster name and node_name ("default" when node_name is not configured:
 * call it before node_name gets its per-process default), shard files created
 * and truncated, so nothing of an earlier run can be read. Sets UV_THREADPOOL_SIZE unless the environment
 * did; call it before anything uses the thread pool. Returns 0, or -1 with a
 * message naming the key in err (nothing stays open). */
int ssd_tier_open(owner *o, char *err, size_t errlen);
/* Starts the eviction notices (once registered). */
void ssd_tier_start(owner *o);
/* Stops taking work: see the shutdown order above. NULL-safe. */
void ssd_tier_shutdown(owner *o);
/* Closes the store once no job is left (the loop has drained); NULL-safe. */
void ssd_tier_close(owner *o);
/* Capacity and used bytes of the tier (0, 0 without one). */
void ssd_tier_usage(owner *o, uint64_t *capacity, uint64_t *used);

/* Called on the loop thread with SSD_OK or an ssd_result. */
typedef void (*ssd_tier_load_cb)(int rc, void *ud);
/* Local refill: reads the committed value (key, pid) of len bytes into the
 * segment at [offset, offset + len) on a worker; the read may write up to
 * capacity bytes from offset (aligned direct read). The caller has checked the
 * range against the segment and keeps it alive until cb. key is copied.
 * Returns 0 (cb will run exactly once), or FX_ENOTSUP without a tier or
 * FX_ENOMEM (cb is not called). */
int ssd_tier_load(owner *o, const void *key, size_t klen, ssd_put_id pid, uint64_t offset,
                  uint64_t len, uint64_t capacity, ssd_tier_load_cb cb, void *ud);

/* ssd_persist.c */
/* SsdReplicaPersist from the master on connection c (answered later). */
void ssd_persist_on_request(owner *o, net_conn *c, const frame_hdr *h,
                            Fx__SsdReplicaPersistReq *req);
/* Starts waiting persists while write slots are free (after a write ended). */
void ssd_persist_kick(ssd_tier *t);
/* Drops the persists still waiting for a slot (shutdown). */
void ssd_persist_drop_waiting(ssd_tier *t);

/* ssd_stage.c */
/* SsdStageRead from the master on connection c: the remote refill pipeline
 * (answered when every chunk was read and pushed, or on the first failure). */
void ssd_stage_on_request(owner *o, net_conn *c, const frame_hdr *h, Fx__SsdStageReadReq *req);
/* Fails the stages still waiting for a worker (shutdown). */
void ssd_stage_drop_waiting(ssd_tier *t);

/* ssd_evict.c */
void ssd_evict_start(ssd_tier *t);
/* Stops the timer and drops the batch (the master tombs this incarnation's
 * replicas when it leaves anyway). */
void ssd_evict_stop(ssd_tier *t);

#endif
