/*
 * owner.h - the state of fluxon-owner and the entry points of its modules.
 *
 * One event-loop thread owns all of it: the segment, the link to the master
 * (master_link.c), the client requests' calls to it, queued while there is no
 * master (master_wait.c), the batches sent over it (holder_ack.c,
 * access_report.c), the external API on the Unix socket (extapi.c, with puts
 * and gets in ext_put.c and ext_get.c), the owner-local get cache with the
 * holders handed to externals (holders.c), and the SSD tier (ssd_tier.h),
 * whose blocking engine calls run on libuv's thread pool and complete on the
 * loop. Callbacks reach this state through their context (a handle's data,
 * an rpc call's or a transfer's ud, a connection's data), never through a
 * global.
 *
 * Holder bookkeeping has three layers, as in the spec: the master's
 * get_holding keeps the allocation; here a memory_info stands for one master
 * holder and is shared (refcounted) by the get cache and by every external
 * holding that points at it; the external's MemHolder references an external
 * holding by id. When a memory_info's last reference goes, its master holder
 * id is batched to the master (BatchDeleteAck).
 *
 * The exception to the one thread: get threads (get_lanes.c, owner YAML
 * get_threads) answer gets from the get cache on lanes of their own and take
 * the releases of what they handed out. What they share with the loop is
 * guarded by hold_lock (holders.c says what), and the few side effects they
 * cause on the loop's state (acks, access reports, a session's end) are
 * queued and run by the loop.
 */
#ifndef FX_OWNER_OWNER_H
#define FX_OWNER_OWNER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "owner/owner_config.h"
#include "owner/client_access.h"
#include "common/hashtable.h"
#include "common/op_metrics.h"
#include "net/auth_key.h"
#include "net/conn.h"
#include "net/rpc.h"
#include "owner/segment.h"

#define OWNER_RPC_TIMEOUT_MS 10000u

typedef struct memory_info {
    int refs;
    uint64_t master_holder_id;
    uint64_t offset, len;
    int source; /* FX_SRC_* */
    char *key;
    size_t klen;
    bool in_cache;
    uint64_t report_gen; /* recovery_report.c: pinned in the report of this number */
    UT_hash_handle hh; /* owner.get_cache, by key */
} memory_info;

typedef struct ext_holding {
    uint64_t id;
    memory_info *mi;
    UT_hash_handle hh;
} ext_holding;

/* One external client: its session connection and every holder it holds.
 * conns, dead, holdings and next_holding_id are guarded by the owner's
 * hold_lock (get threads hold sessions too); the loop alone changes
 * owner.sessions. */
typedef struct session {
    uint64_t client_id;
    net_conn *events; /* the session connection; its close ends the session */
    int conns;        /* open connections attached to this session, lanes included */
    bool dead;
    ext_holding *holdings;
    uint64_t next_holding_id;
    struct session *reap_next; /* get_lanes.c: its last connection was a lane's */
    UT_hash_handle hh;
} session;

typedef struct ext_put {
    char *key;
    size_t klen;
    uint64_t time_ms;
    uint32_t version;
    uint64_t offset, len; /* the source (staging) range the external writes */
    /* Remote placement: the bytes are pushed to the target owner before PutDone. */
    bool remote;
    uint32_t target_node;
    uint64_t target_offset;
    char *target_addr; /* the target owner's data plane, "host:port" */
    bool aborting;     /* PutRevoke sent rather than PutDone */
    bool pooled;       /* started from a grant of the put pool: time_ms/version name it */
    uint64_t t0_us;    /* when the put started (uv_hrtime), for its latency */
    memory_info *pin;  /* recovery_report.c: keeps the range from a new master */
    struct ext_put *prev, *next;
    struct ext_put *o_prev, *o_next; /* owner.started_puts */
} ext_put;

/* Per external connection. */
typedef struct ext_conn {
    struct owner *o;
    net_conn *conn;
    session *s; /* NULL until ExternalHello */
    ext_put *puts; /* started, not yet ended: revoked if the connection drops */
} ext_conn;

/* Where one get's outcome goes (ext_get.c calls it once per waiter): a hit
 * as mi (borrowed: the callee takes its own reference if it keeps it) with
 * cacheable and source, a failure as status (an FX_E* code) and detail, mi
 * NULL. A single ExternalGet answers its connection (conn, hdr); a batch
 * fills one slot of its join (ext_batch_get.c: ctx, slot). */
struct get_waiter;
typedef void (*get_answer_fn)(struct owner *o, const struct get_waiter *w, memory_info *mi,
                              bool cacheable, int source, int status, const char *detail);

typedef struct get_waiter {
    get_answer_fn answer;
    net_conn *conn; /* referenced when the waiter is queued on a pending_get; NULL for a slot */
    frame_hdr hdr;
    void *ctx;     /* the batch of a slot */
    uint32_t slot; /* its index there */
    uint64_t t0_us; /* when the get arrived (uv_hrtime), for its latency */
    struct get_waiter *next;
} get_waiter;

/* One get in flight to the master; later gets of the same key wait on it. */
typedef struct pending_get {
    struct owner *o; /* the context of its master calls, transfers and SSD reads */
    char *key;
    size_t klen;
    get_waiter *waiters;
    int attempts; /* GetStart rounds so far (a failed pull revokes and retries) */
    bool in_table; /* false once a put or delete of the key made it stale for new gets */
    uint64_t get_id;
    uint64_t epoch; /* owner.master_epoch when get_id came: valid while they match */
    uint64_t offset, len; /* the target range in this segment */
    int source;
    bool pulled; /* the bytes came over the data plane from another owner */
    memory_info *pin; /* recovery_report.c: keeps the target from a new master */
    UT_hash_handle hh;
} pending_get;

/* One live member of the cluster as the master last told it (MemberTable),
 * with the data-plane key this owner shares with it (none for our own entry
 * or when the master sent none: then the data plane refuses it). The key is
 * wiped when the table is replaced. */
/* master_wait.c: client requests' master calls queued while no master is ready. */
typedef struct master_wait master_wait;

typedef struct peer_member {
    uint32_t node_id;
    uint64_t tomb_tag;
    char name[64]; /* its node_name (Register tells a recovering master) */
    bool has_key;
    auth_key pair_key;
} peer_member;

typedef struct owner {
    uv_loop_t *loop;
    owner_config cfg;
    segment seg;
    char master_host[256];
    int master_port;
    net_conn *master;
    /* Gathers, while one read's frames are handled, what they write on the
     * master link and the clients' connections (net/conn.h); NULL: none. */
    net_write_scope *write_scope;
    bool authenticated;   /* cluster_auth.c: we prove cluster_key to the master */
    auth_key cluster_key; /* from cfg.cluster_secret_file */
    rpc_client *mrpc;
    bool registered;      /* the current link is registered (cleared when it drops) */
    bool registered_once; /* the first registration happened: the owner serves externals */
    bool master_ready;    /* client requests' calls go straight to the master (master_wait.c) */
    master_wait *mwait;   /* the calls waiting for master_ready */
    uint64_t master_epoch; /* +1 at each loss: ids a lost master gave (get ids) are void */
    bool stopping;
    int exit_code;
    uint32_t node_id;
    uint64_t tomb_tag;
    net_listener *ext_listener;
    client_access ext_access; /* who may use ext_listener (client_access.h) */
    struct dp_engine *dp; /* the owner-to-owner data plane */
    struct ssd_tier *ssd; /* the SSD tier (ssd_tier.h), NULL without one */
    char data_addr[300];  /* where peers reach dp, "host:port" (data_address.c) */
    bool data_addr_from_link; /* wildcard data_listen: data_addr comes with the master link */
    bool data_addr_loopback;  /* data_addr is a loopback address */
    struct peer_member *members; /* the master's member table: dp peers and their pair keys */
    size_t n_members;
    session *sessions; /* by client_id */
    uint64_t next_client_id;
    memory_info *get_cache; /* by key */
    pending_get *pending_gets; /* by key */
    uint64_t *acks; /* holder_ack.c: master holder ids not yet acknowledged */
    size_t n_acks, cap_acks;
    uv_timer_t ack_timer;
    uint8_t *access_buf; /* access_report.c: {u32 len, key bytes} per read */
    size_t n_access, access_len, access_cap;
    uv_timer_t access_timer;
    uv_timer_t heartbeat_timer;
    uv_timer_t connect_timer;
    uint64_t connect_deadline_ms; /* the first registration's deadline (startup) */
    uint64_t reconnect_ms;        /* the next reconnect's delay after a loss (backoff) */
    atomic_uint_fast64_t hits_memory, hits_ssd, misses; /* get threads count hits too */
    op_metrics metrics; /* common/op_metrics.h: the heartbeat's metrics (get threads count too) */
    pthread_mutex_t hold_lock; /* holders.c: what the get threads share with the loop */
    struct get_lanes *lanes;   /* get_lanes.c: NULL without get threads */
    struct replica_index *index; /* what this owner holds (replica_index.h, index_ops.c) */
    ext_put *started_puts; /* every put between PutStart's answer and TransferEnd */
    struct put_pool *put_pool; /* put_pool.c: grants for puts that skip PutStart */
    uint64_t report_gen;   /* recovery_report.c: the number of the last report */
    struct {
        uint64_t time_ms;
        uint32_t version;
    } max_put_seen; /* index_ops.c: the newest put_id we learned of (Register's max_put_id) */
    uint64_t master_term; /* the term of the master we registered with (0 without etcd) */
    struct master_locator *locator; /* master_locator.c: with `master: etcd://...` */
    uint64_t known_term;  /* the newest leader term we know of (etcd, or a Register) */
    bool leader_known;    /* master_host/port name a master to dial */
    net_conn *fenced_master; /* a link to a master of an older term: requests refused */
} owner;

/* master_link.c */
/* Starts a connection to the master (Register follows once it is up); a
 * failure to connect is retried, at startup until the first registration's
 * deadline, after a loss for as long as the owner runs. Returns 0, or -EINVAL
 * when no connection could even be started (nothing is scheduled then). */
int owner_master_connect(owner *o);
void owner_stop(owner *o, int exit_code);

/* master_wait.c: the master calls of client requests */
/* The queue, empty (at startup, before the first connect). 0 or FX_ENOMEM. */
int owner_master_wait_init(owner *o);
/* At shutdown: fails every queued call with FX_EMASTER and frees the queue
 * once its timer has closed (run the loop after); later calls are refused. */
void owner_master_wait_close(owner *o);
/* Sends request m of the given type for a client request. With a master
 * ready: rpc_call with OWNER_RPC_TIMEOUT_MS. Without one: m is packed (the
 * caller keeps m) and queued until owner_master_ready(), at most
 * cfg.master_wait_ms; past that cb gets FX_EMASTER. cb runs exactly once,
 * never inside this call, with rpc_cb's contract (status 0 and a response,
 * or FX_ETIMEDOUT / FX_ECONN / FX_EPROTO / FX_EMASTER with resp NULL).
 * Returns 0, or FX_EMASTER (the queue is full or closed, or the link would
 * not take it), FX_ENOMEM or FX_EINVAL, and then cb is not called. */
int owner_master_call(owner *o, uint16_t type, const ProtobufCMessage *m, rpc_cb cb, void *ud);
/* The master can take client requests: sets master_ready and sends every
 * queued call, each with the time it has left (one past its deadline fails
 * with FX_EMASTER). */
void owner_master_ready(owner *o);
/* The master is gone: clears master_ready (calls queue from now on), drops
 * the holder acks meant for it and moves master_epoch on (the get ids it gave
 * are void). Calls already sent are the link's to fail (rpc_fail_all with
 * FX_EMASTER). */
void owner_master_lost(owner *o);

/* master_locator.c: a fixed master, or the leader etcd names */
typedef struct master_locator master_locator;
/* Starts finding the leader (nothing to do for a fixed address). */
int owner_locator_start(owner *o, char *err, size_t errlen);
void owner_locator_stop(owner *o);
/* master_link.c: the locator found a new leader (master_host/port and
 * known_term updated): a link to an older one is fenced, and we connect. */
void owner_master_moved(owner *o);

/* cluster_auth.c */
/* Loads cluster_secret_file into cluster_key, or, without one, refuses a
 * data_listen beyond loopback. Returns 0 or -1 with a sentence naming
 * cluster_secret_file in err. */
int owner_auth_setup(owner *o, char *err, size_t errlen);
/* True when node_id with incarnation tomb_tag is in the master's member table. */
bool owner_is_member(owner *o, uint32_t node_id, uint64_t tomb_tag);
/* The data plane's pair-key lookup (dp_peer_key_fn, ud = the owner): true
 * with node_id's live incarnation and the key we share with it. */
bool owner_peer_key(void *ud, uint32_t node_id, uint64_t *tomb_tag, auth_key *key);

/* data_address.c: the data-plane address announced in Register */
/* At startup, once the data plane listens: data_advertise (resolved, never a
 * wildcard) or data_listen's host, each with the bound port when theirs is 0.
 * Returns 0, or -1 with "<key>: <why>" in err (the owner exits 2). */
int owner_data_address_init(owner *o, char *err, size_t errlen);
/* On each connection to the master, before Register: derives data_addr from
 * the connection's local address when data_listen is a wildcard, and refuses
 * a loopback data_addr when the master is not on loopback. Returns 0, or -1
 * with "data_advertise: <why>" in err (the owner exits 2). */
int owner_data_address_for_master(owner *o, net_conn *master, char *err, size_t errlen);

/* recovery_report.c: after Register, what the master must know first */
typedef void (*owner_report_done_fn)(owner *o, int status);
/* Sends the replica index (recovering) or empties it (not), and the pinned
 * ranges; done(o, 0 or an FX_E* code) runs when the last chunk is answered.
 * Returns 0 or -1 (nothing sent, done not called). */
int owner_send_recovery_report(owner *o, bool recovering, owner_report_done_fn done);

/* holder_ack.c: released master holders, acknowledged to the master in batches */
/* Queues a master holder id for BatchDeleteAck (out of memory: logged, and
 * the master keeps the holder; no master ready: dropped, see holder_ack.c). */
void owner_ack_holder(owner *o, uint64_t master_holder_id);
/* Sends the queued ids now (nothing without a registered, ready master link). */
void owner_holder_ack_flush(owner *o);
/* Forgets the queued ids (the master they were for is gone). */
void owner_holder_ack_drop(owner *o);
void owner_holder_ack_init(owner *o);
/* Closes the batch timer; ids queued later stay queued until
 * owner_holder_ack_free. */
void owner_holder_ack_close(owner *o);
/* Frees the queue (after the loop has drained and the last holder went). */
void owner_holder_ack_free(owner *o);

/* access_report.c: reads served from the get cache, reported to the master */
void owner_report_access(owner *o, const void *key, size_t klen);
void owner_access_report_init(owner *o);
void owner_access_report_close(owner *o);

/* ext_get.c */
/* A put or delete of key finished, or the master invalidated it: this owner
 * forgets the key's old version everywhere. The get cache drops its entry
 * (the holders handed out keep theirs), and gets that arrive from now on do
 * not join the request already in flight (it may return the old version). */
void owner_forget_key(owner *o, const void *key, size_t klen);

/* index_ops.c: the replica index fed by the master's ops and our own changes */
void owner_index_apply_ops(owner *o, Fx__IndexOp **ops, size_t n);
/* Our put of (key, time_ms.version) was published: older entries of the key
 * go; a local one (target in this segment at offset) enters. */
void owner_index_put_done(owner *o, const void *key, size_t klen, uint64_t time_ms,
                          uint32_t version, bool local, uint64_t offset, uint64_t len);
/* Our delete of key was answered. */
void owner_index_deleted(owner *o, const void *key, size_t klen);
/* The SSD copy of exactly that version was published (on) or evicted (off). */
void owner_index_ssd(owner *o, const void *key, size_t klen, uint64_t time_ms, uint32_t version,
                     bool on, uint64_t ssd_len);
/* [offset, offset + len) of the segment is about to be written. */
void owner_index_writing(owner *o, uint64_t offset, uint64_t len);
/* The data plane's write hook (dp_write_fn, ud = the owner). */
void owner_index_on_peer_write(void *ud, uint64_t offset, uint64_t len);

/* extapi.c */
int owner_ext_listen(owner *o);
/* Forwards an invalidation to every external session. */
/* Tells every client to drop keys[0..n) from its weak index and near cache;
 * keys NULL: every key (the master changed; the outage's invalidations were
 * lost). */
void owner_ext_invalidate(owner *o, ProtobufCBinaryData *keys, size_t n);


/* holders.c (each call takes hold_lock unless it says _locked) */
/* A memory_info with one reference, the caller's (dropped with holders_mi_unref). */
memory_info *holders_mi_new(owner *o, const void *key, size_t klen, uint64_t master_holder_id,
                            uint64_t offset, uint64_t len, int source);
void holders_mi_ref(owner *o, memory_info *mi);
/* On the loop: the last reference acknowledges the master holder. */
void holders_mi_unref(owner *o, memory_info *mi);
/* Frees a memory_info without references that is in no cache. */
void holders_mi_free(memory_info *mi);
memory_info *holders_cache_find(owner *o, const void *key, size_t klen);
void holders_cache_insert(owner *o, memory_info *mi);
void holders_cache_drop(owner *o, const void *key, size_t klen);
void holders_cache_clear(owner *o);
/* A new external holding of mi for session s; returns its id (0: no memory). */
uint64_t holders_session_add(owner *o, session *s, memory_info *mi);
uint64_t holders_session_add_locked(session *s, memory_info *mi);
/* Releases session s's holding id; false when s has no such holding. */
bool holders_session_release(owner *o, session *s, uint64_t id);
/* The same with hold_lock held, off the loop: *last is the memory_info whose
 * last reference that was (the caller acknowledges and frees it), or NULL. */
bool holders_session_release_locked(session *s, uint64_t id, memory_info **last);
void holders_session_release_all(owner *o, session *s);

/* owner_metrics.c: counting for the heartbeat's metrics (any thread) */
uint64_t owner_now_us(void); /* monotonic microseconds */
/* A get answered with len bytes of kind's source, arrived at t0_us. */
void owner_metrics_get_answered(owner *o, uint64_t t0_us, op_kind kind, uint64_t len);
/* A get failed with status (FX_ENOTFOUND: a miss, not an error). */
void owner_metrics_get_failed(owner *o, int status);
void owner_metrics_put_done(owner *o, uint64_t t0_us, uint64_t len);
void owner_metrics_deleted(owner *o);
void owner_metrics_error(owner *o, int status);
/* The heartbeat's OwnerMetrics (loop thread); buf holds what m points at. */
typedef struct owner_metrics_buf {
    uint64_t errors[OP_METRICS_ERRORS];
    uint64_t buckets[OP_KINDS][OP_METRICS_BUCKETS];
    Fx__LatencyHistogram hist[OP_KINDS];
    Fx__LatencyHistogram *hist_ptrs[OP_KINDS];
} owner_metrics_buf;
void owner_metrics_fill(owner *o, Fx__OwnerMetrics *m, owner_metrics_buf *buf);

/* get_lanes.c: get threads (cfg.get_threads) */
/* Starts them (none for get_threads 0). 0, or -1 with why in err. */
int owner_get_lanes_start(owner *o, char *err, size_t errlen);
/* A lane for session s (counted in s->conns) on the next get thread; returns
 * the client's end of its socket pair, or -1 (no get threads, or none could
 * be made: the client goes on without). */
int owner_get_lane_open(owner *o, session *s);
/* At shutdown, before the sessions go: closes every lane, joins the threads
 * and runs what they left queued. */
void owner_get_lanes_stop(owner *o);

#endif
