/*
 * master.h - the state of fluxon-master and the entry points of its call flows.
 *
 * One event-loop thread owns everything here (no locks on routes): members and
 * their segment spaces, kv_routes, the in-flight put and get tables, and
 * get_holding. The tables live in their own modules and call no flow:
 * members.h (the member table and the clock), inflight.h (in-flight puts and
 * gets), invalidation.h (the invalidation broadcast), route.h (kv_routes) and
 * holding.c (get_holding). Each call flow of the spec lives in its own file
 * (register.c, member_left.c, put.c, get.c, delete.c, holding.c, ssd.c,
 * lease.c, query.c, stat.c) and uses the tables; flows do not call each
 * other by name. server.c decodes frames and dispatches to them.
 */
#ifndef FX_MASTER_MASTER_H
#define FX_MASTER_MASTER_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "master/master_config.h"
#include "common/hashtable.h"
#include "common/op_metrics.h"
#include "net/auth_key.h"
#include "net/conn.h"
#include "net/rpc.h"
#include "master/allocation.h"
#include "master/placement.h"
#include "master/route.h"

#define MASTER_DURABLE_SLOTS 2u /* concurrent DurableReplica gets per route */

/* What a member's last heartbeat reported of its operations (member_metrics.c). */
typedef struct member_metrics {
    bool reported; /* a heartbeat carried metrics */
    op_metrics ops;
    uint64_t ssd_evictions, dataplane_bytes_in, dataplane_bytes_out;
    uint32_t ssd_jobs, ssd_writes, ssd_stages, ssd_persists_waiting;
} member_metrics;

typedef struct member {
    uint32_t node_id;
    uint64_t tomb_tag; /* incarnation: replicas tagged with another value are dead */
    char name[64];
    char data_addr[264]; /* "HOST:PORT" peers dial: a name of up to 255 bytes fits */
    bool kv_ssd_storage;
    net_conn *conn;
    rpc_client *rpc; /* requests the master sends to this owner (SsdReplicaPersist) */
    seg_space *space;
    uint64_t capacity;
    uint64_t ssd_capacity, ssd_used; /* from the last heartbeat */
    uint64_t ssd_capacity_registered; /* the most a heartbeat may report */
    uint64_t ssd_errors;             /* from the last heartbeat: failed SSD IO + bad checksums */
    uint64_t last_heartbeat_ms;
    uint64_t hits_memory, hits_ssd, misses;
    /* Puts it requested that were installed, by how they started: from its
     * put pool (put_grant.c) or by PutStart. */
    uint64_t puts_pool, puts_started;
    member_metrics metrics; /* from its last heartbeat */
    char **pending_invalidations; /* invalidation.c: keys to send in the next batch */
    size_t *pending_inval_lens;
    size_t n_pending_inval, cap_pending_inval;
    struct index_op *pending_ops; /* index_sync.c: replica-index ops for the next batch */
    size_t n_pending_ops, cap_pending_ops;
    bool batch_dirty;     /* a batch must go out at the next flush (ops, or a reply waits) */
    uint64_t index_seq;   /* the number of the batch being filled (starts at 1) */
    uint64_t index_acked; /* the highest batch number the owner acknowledged */
    struct unacked_drop *unacked_drops; /* index_sync.c: by key, in batch order */
    bool recovering; /* recovery.c: took its identity back; its replicas are taken */
    bool ready;      /* recovery.c: its report ended; placement may choose it */
    struct report_range *report_ranges; /* recovery.c: ranges its report created */
    UT_hash_handle hh;
} member;

/* The in-flight tables' entries (inflight.h). */
typedef struct inflight_put inflight_put;
typedef struct inflight_key inflight_key;
typedef struct inflight_get inflight_get;

typedef struct lease lease;

typedef struct holding {
    uint64_t holder_id;
    uint32_t node_id;
    allocation *target;
    UT_hash_handle hh;
} holding;

typedef struct alloc_waiter alloc_waiter;
typedef struct index_wait index_wait;
typedef struct recovery recovery;
typedef struct election election;

typedef struct master {
    uv_loop_t *loop;
    master_config cfg;
    uint32_t next_node_id;
    uint64_t next_tomb_tag;
    member *members; /* members.c: by node_id, live members only */
    route_table routes;
    inflight_put *inflight_puts;      /* inflight.c: by (put_id, key) */
    inflight_put *inflight_put_order; /* oldest first, for the TTL sweep */
    inflight_key *inflight_keys;      /* by key: count of in-flight puts */
    lease *leases;                    /* lease.c, by id */
    uint64_t next_lease_id;
    inflight_get *inflight_gets;      /* inflight.c: by get_id */
    inflight_get *inflight_get_order;
    uint64_t next_get_id;
    holding *holdings; /* holding.c: get_holding, by holder_id */
    uint64_t next_holder_id;
    uint64_t last_put_ms;
    uint32_t next_put_version;
    auth_key pair_root; /* random at start; every data-plane pair key derives from it (members.c) */
    const placement_policy *placement;
    bool stopping;
    uint32_t n_ssd_members; /* members.c: live members with an SSD tier (placement's SSD rule) */
    index_wait *index_waits;       /* index_sync.c: replies waiting for owners' indexes */
    bool test_kill_at_put_done_answer; /* FLUXON_TEST_KILL_AT_PUT_DONE_ANSWER (index_sync.c) */
    recovery *recovery;            /* recovery.c: non-NULL during the recovery phase */
    election *election;            /* election.c: with --etcd, NULL otherwise */
    bool leading;                  /* election.c: won the election (always false without etcd) */
    uint64_t term;                 /* election.c: our term as leader (0 without etcd) */
    char advertised[300];          /* server.c master_start: the HOST:PORT told to others */
    int exit_code;                 /* main's exit status once the loop ends */
    alloc_waiter *alloc_waiters;   /* alloc_wait.c: requests waiting for room */
    alloc_waiter *alloc_replaying; /* the waiter being replayed, if any */
    bool alloc_requeued;
    int get_attempt; /* get.c: set while a failed remote refill re-runs GetStart */
    uv_timer_t alloc_timer;
    uv_timer_t sweep_timer;
    uint64_t last_sweep_ms; /* server.c: when the sweep last ran (or was started) */
    bool sweep_skipped;     /* server.c: the last round was skipped after a stall */
    uv_check_t flush_check;
    void *http; /* http.c state, NULL when disabled */
    const char *http_port_file; /* --http-port-file: gets HTTP's "HOST:PORT" at start */
    uint64_t stat_pass; /* stat.c: number of the latest Stat pass (allocation.stat_mark) */
    struct net_listener *listener;
    /* Gathers, while one read's frames are handled, what they write on
     * every owner's connection (net/conn.h); NULL: none. */
    struct net_write_scope *write_scope;
    bool authenticated;   /* cluster_auth.c: owners must prove cluster_key */
    auth_key cluster_key; /* from cfg.secret_file */
} master;

/* server.c */
#define MASTER_SWEEP_MS 100 /* the period of the TTL, lease and heartbeat sweep */
/* What each accepted connection's data pointer holds: the master it talks to
 * and, once it registered, its member (NULL before Register and after
 * member-left). Allocated at accept, freed when the connection closes. */
typedef struct master_conn {
    master *m;
    member *mb;
} master_conn;
int master_start(master *m, uv_loop_t *loop, const char *port_file);
void master_stop(master *m);
/* After the loop ended: frees what is left (routes, indexes, leases). */
void master_free_state(master *m);

/* cluster_auth.c */
/* Loads cfg.secret_file into cluster_key, or, without one, refuses a listen
 * address beyond loopback. Returns 0 or -1 with a sentence naming
 * --secret-file in err. */
int master_auth_setup(master *m, char *err, size_t errlen);

/* register.c */
/* Registers the owner on connection c and answers it. Returns the new member
 * (in the member table), or NULL when refused (answered with the error). */
member *master_on_register(master *m, net_conn *c, const frame_hdr *h, Fx__RegisterReq *req);
void master_on_heartbeat(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__HeartbeatReq *req);

/* member_metrics.c */
/* Keeps what a heartbeat's metrics report (NULL: none) as mb's, after checking
 * its shape: a histogram of an unknown operation or with another bucket
 * count is dropped (logged), extra error kinds are ignored. */
void member_metrics_take(member *mb, const Fx__OwnerMetrics *m);
/* "recovering" (took its identity back, its recovery report not ended) or "ready". */
const char *member_state(const member *mb);

/* election.c: leadership on etcd (--etcd) */
/* Starts campaigning (a thread); advertised goes into the leader's key. */
int master_election_start(master *m, const char *advertised, char *err, size_t errlen);
/* Stops campaigning; a leader revokes its lease. Blocks for the thread. */
void master_election_stop(master *m);
/* True when this master may handle and send: always without etcd; with it,
 * only while leading and before its lease's local deadline. */
bool master_serving(const master *m);
uint64_t election_mono_ms(void);
/* server.c: the lease is gone: stop serving at once and exit 1. */
void master_lost_leadership(master *m, const char *why);

/* recovery.c */
/* Enters the recovery phase (at start). */
void master_recovery_begin(master *m);
bool master_recovering(const master *m);
/* Register's part in recovery: new put_ids and identities go above what req
 * names. Returns false when req registers as usual (fresh identity), or
 * true with *node_id set and *tomb_tag set: the identity req had, taken back
 * (its report follows), or with *node_id 0: req was parked until recovery
 * ends (nothing to answer now), then handed to replay. */
typedef member *(*master_register_fn)(master *m, net_conn *c, const frame_hdr *h,
                                      Fx__RegisterReq *req);
bool master_recovery_take_register(master *m, net_conn *c, const frame_hdr *h,
                                   Fx__RegisterReq *req, master_register_fn replay,
                                   uint32_t *node_id, uint64_t *tomb_tag);
void master_on_recovery_report(master *m, member *mb, net_conn *c, const frame_hdr *h,
                               Fx__RecoveryReportReq *req);
/* Ends recovery when its condition holds (the sweep, each report). */
void master_recovery_check(master *m);
/* At shutdown. */
void master_recovery_free(master *m);
/* Frees mb's report bookkeeping (mb leaves during its report). */
void master_report_ranges_free(member *mb);

/* member_left.c */
/* mb leaves (why is logged): removed from every table, its connection
 * closed, mb freed. */
void master_member_left(master *m, member *mb, const char *why);
/* Member-left for every member whose heartbeats stopped. */
void master_check_heartbeats(master *m);

/* put.c */
void master_on_put_start(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__PutStartReq *req);
void master_on_put_done(master *m, member *mb, net_conn *c, const frame_hdr *h, Fx__PutDoneReq *req);
/* put.c: the next put_id (one master-wide sequence, never going back). */
put_id master_next_put_id(master *m);
/* put_grant.c */
void master_on_put_grant(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__PutGrantReq *req);
/* PutDone of a pool put (granted_len set): the grant req->put_id names
 * becomes the in-flight put of req's key under a new put_id, its range cut
 * to granted_len. NULL with the answer's status and detail when mb has no
 * such grant or the request does not fit it. */
struct inflight_put *master_put_grant_use(master *m, member *mb, const Fx__PutDoneReq *req,
                                          int *status, const char **why);
void master_on_put_revoke(master *m, member *mb, net_conn *c, const frame_hdr *h,
                          Fx__PutRevokeReq *req);

/* get.c */
void master_on_get_start(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__GetStartReq *req);
void master_on_get_done(master *m, member *mb, net_conn *c, const frame_hdr *h, Fx__GetDoneReq *req);
void master_on_get_revoke(master *m, member *mb, net_conn *c, const frame_hdr *h,
                          Fx__GetRevokeReq *req);

/* delete.c */
void master_on_delete(master *m, member *mb, net_conn *c, const frame_hdr *h, Fx__DeleteReq *req);
void master_on_batch_delete(master *m, member *mb, net_conn *c, const frame_hdr *h,
                            Fx__BatchDeleteReq *req);

/* holding.c */
void master_on_batch_delete_ack(master *m, member *mb, net_conn *c, const frame_hdr *h,
                                Fx__BatchDeleteAckReq *req);
uint64_t master_holding_add(master *m, uint32_t node_id, allocation *target);
void master_holdings_drop_node(master *m, uint32_t node_id);

/* ssd.c: the SSD tier's control plane */
/* After PutDone answered: keeps the target alive and asks its owner to
 * persist it (SsdReplicaPersist). Takes a new reference to target. */
void master_ssd_persist(master *m, const char *key, size_t klen, put_id pid, uint32_t node,
                        allocation *target);
void master_on_ssd_commit(master *m, member *mb, net_conn *c, const frame_hdr *h,
                          Fx__SsdReplicaCommitReq *req);
void master_on_ssd_evict(master *m, member *mb, net_conn *c, const frame_hdr *h,
                         Fx__BatchSsdReplicaEvictReq *req);
/* Clears node's ssd copy of r (and the entry, and r from the table, when
 * they are left empty). */
void master_drop_ssd(master *m, route *r, uint32_t node);

/* capacity.c: the replica caches, the budget and the reservations */
/* Allocates len bytes on mb; when they do not fit, evicts memory replicas of
 * mb (the policy's victims) until they do or until the evicted bytes still
 * referenced elsewhere would cover them. NULL with -ENOSPC / -ENOMEM. */
allocation *master_alloc_evicting(master *m, member *mb, uint64_t len, int *err);
/* rep (with memory) of the current route r was just published: it enters its
 * owner's replica cache (a leased route's replica is reserved instead), and
 * the owner's budget is enforced, which may evict r itself: the caller must
 * hold its own reference to r to use it afterwards. */
void master_replica_published(master *m, route *r, replica *rep);
/* Evicts until s's cache weight plus its reservations fit its budget. */
void master_enforce_budget(master *m, seg_space *s);
/* An access to r's memory replica on node_id (a hit for the policy). */
void master_note_access(route *r, uint32_t node_id);

/* alloc_wait.c */
/* Replays a waiting request: the handler of the flow that parked it, called
 * with the context it gave, the requester, the connection and header the
 * request came with, and the request decoded again (freed after the call). */
typedef void (*alloc_replay_fn)(void *ctx, member *mb, net_conn *c, const frame_hdr *h,
                                ProtobufCMessage *req);
/* A request (of message type `type`) found no room: queues it for a replay
 * through replay(replay_ctx, ...) in 2 ms and returns true, or returns false
 * when it has waited its 5 s or out of memory (the caller then answers
 * NoSpace). Called during a replay, it requeues the waiter being replayed. */
bool master_alloc_defer(master *m, member *mb, net_conn *c, const frame_hdr *h, uint16_t type,
                        const ProtobufCMessage *req, alloc_replay_fn replay, void *replay_ctx);
/* Replays the waiting requests on the next loop turn (bytes came back). */
void master_alloc_wait_kick(master *m);
void master_alloc_wait_init(master *m);
void master_alloc_wait_close(master *m);

/* lease.c */
void master_on_lease(master *m, net_conn *c, const frame_hdr *h, Fx__LeaseReq *req);
/* True when lease id exists and has not expired. */
bool master_lease_live(master *m, uint64_t id);
/* Remembers that key was put under lease id. 0 or an FX_E* code. */
int master_lease_bind(master *m, uint64_t id, const char *key, size_t klen);
/* Deletes the keys of expired leases, and the leases. */
void master_sweep_leases(master *m);
void master_leases_free(master *m);

/* query.c: what the master knows of keys (exists, size, prefix counts) */
void master_on_key_info(master *m, net_conn *c, const frame_hdr *h, Fx__KeyInfoReq *req);
/* BatchKeyInfo: per key 1 / 0 / FX_EINVAL (a bad length) in one pass; a bad
 * shape (net/batch_keys.h) is answered FX_EINVAL as a whole. */
void master_on_batch_key_info(master *m, net_conn *c, const frame_hdr *h,
                              Fx__BatchKeyInfoReq *req);
/* AccessReport: reads served from an owner's get cache, for the policy. */
void master_on_access_report(master *m, member *mb, Fx__AccessReportReq *req);

/* stat.c */
void master_on_stat(master *m, net_conn *c, const frame_hdr *h);
void master_on_route_info(master *m, net_conn *c, const frame_hdr *h, Fx__RouteInfoReq *req);

#endif
