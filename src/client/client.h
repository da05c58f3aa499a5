/*
 * client.h - libfluxon's internals: the client object, its pooled blocking
 * connections to the owner, the session thread, and the holder weak index.
 *
 * A client has one session connection (opened first; it receives the segment
 * fd and the owner's ExternalInvalidateWeakIndex pushes, read by the session
 * thread) and a pool of request connections, each used by one thread at a time
 * for a synchronous request/response. Threads never share a connection, so
 * there is no response matching beyond checking the req_id.
 */
#ifndef FX_CLIENT_CLIENT_H
#define FX_CLIENT_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/hashtable.h"
#include "fluxon/fluxon.h"
#include "net/msg.h"

#define CLIENT_HIT_REPORT_BATCH 64

typedef struct xconn {
    int fd;
    uint64_t next_req_id;
    /* The connection's get lane (a get thread of the owner; see
     * ExternalHelloReq in fluxon.proto), NULL without one. */
    struct xconn *lane;
    struct xconn *next;
} xconn;

struct fx_holder {
    int refs; /* guarded by the client's index_lock */
    bool indexed;
    fx_client *c;
    const uint8_t *data;
    size_t len;
    int source;
    uint64_t holder_id;
    char *key;
    size_t klen;
    bool near; /* released and kept by the near cache (refs 0, indexed) */
    bool via_lane; /* given by a get thread of the owner: released there too */
    UT_hash_handle hh;                /* weak index, by key */
    struct fx_holder *prev, *next;    /* every live holder, for fx_close */
    struct fx_holder *near_prev, *near_next; /* the near cache, newest first */
};

#define CLIENT_LANE_HINT_SLOTS 4096u
struct fx_client {
    char path[108];
    uint64_t client_id;
    uint8_t *base; /* the owner's segment, mapped */
    uint64_t seg_size;
    int timeout_ms;
    int session_fd;
    pthread_t session_thread;
    atomic_bool dead; /* the owner closed the session */

    pthread_mutex_t pool_lock; /* guards idle, n_idle, puts */
    xconn *idle;
    int n_idle;
    struct fx_put_handle *puts; /* begun, not yet ended (put.c); fx_close drops them */

    pthread_mutex_t index_lock; /* guards weak, live, near*, and every holder's refs/indexed/near */
    fx_holder *weak;
    fx_holder *live;
    atomic_uint_fast64_t inval_epoch;
    /* The near cache (holder.c): released holders kept in the weak index. */
    fx_holder *near;
    uint64_t near_bytes, near_max_bytes;
    /* Gets the weak index answered, not yet reported to the owner (holder.c):
     * copies of their keys, sent CLIENT_HIT_REPORT_BATCH at a time. */
    char *hit_keys[CLIENT_HIT_REPORT_BATCH];
    size_t hit_lens[CLIENT_HIT_REPORT_BATCH];
    size_t n_hits;
    /* Keys whose get skips the owner's get threads (lane_hint.c). */
    atomic_uint_fast64_t lane_hint[CLIENT_LANE_HINT_SLOTS];
};

/* lane_hint.c: which gets go straight to the owner's loop. */
uint64_t lane_hint_hash(const void *key, size_t klen);
/* Whether the key of hash missed the get threads last time. */
bool lane_hint_skip(fx_client *c, uint64_t hash);
/* After the loop answered the key of hash: lane_would_answer when it is in
 * the owner's get cache now (the answer was cacheable). */
void lane_hint_note(fx_client *c, uint64_t hash, bool lane_would_answer);

/* errors.c: the calling thread's detail message. Returns err. */
int client_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void client_clear_error(void);
#define CLIENT_MAX_KEY_LEN 4096u
/* FX_EINVAL (with the detail) unless key is 1..CLIENT_MAX_KEY_LEN bytes. */
int client_check_key(const char *key, size_t klen);
/* The shape of a batch call: c set, n within min_n..FX_BATCH_MAX, and (for
 * n > 0) keys, klens and results set. 0 or FX_EINVAL with the detail. */
int client_check_batch(fx_client *c, size_t n, size_t min_n, const char *const *keys,
                       const size_t *klens, const void *results);

/* Whether the owner's range offset+len lies inside the mapped segment. */
static inline bool client_range_ok(const fx_client *c, uint64_t offset, uint64_t len)
{
    return offset <= c->seg_size && len <= c->seg_size - offset;
}

/* packed_keys.c: keys[slot[j]] (slot NULL: keys[j]), j < m, back to back in
 * bytes (total bytes) with their lengths in lens: the key list of the batch
 * messages. 0, or FX_ENOMEM with the detail (pk then empty). */
typedef struct packed_keys {
    uint8_t *bytes;
    size_t total;
    uint32_t *lens;
    size_t n;
} packed_keys;
int packed_keys_make(packed_keys *pk, size_t m, const char *const keys[], const size_t klens[],
                     const size_t *slot);
void packed_keys_free(packed_keys *pk);

/* batch_get_call.c: one ExternalBatchGet for keys[slot[j]], j < m (each
 * checked by the caller), on a pooled connection. On success *out (freed by
 * the caller with msg_free) has exactly m results, in that order, and the
 * caller owns every holder they name (status 0): it wraps or acks each. On
 * failure (transport, the owner refused the batch, a malformed answer) an
 * FX_E* code with the detail, *out NULL, and no holder left pinned. */
int client_batch_get_call(fx_client *c, size_t m, const size_t *slot, const char *const *keys,
                          const size_t *klens, Fx__ExternalBatchGetResp **out);

/* batch_put.c: the pipelined put of fx_batch_put, fx_batch_put_from and
 * fx_batch_put_iov. A value source is either contiguous (vals, lens) or a
 * gather (iovs, iovcnts; vals NULL). */
typedef struct put_source {
    const void *const *vals;
    const size_t *lens;
    const struct iovec *const *iovs;
    const size_t *iovcnts;
} put_source;
/* Puts keys[0..n) (shape already checked) from src with opts (may be NULL)
 * in two round trips on one connection; results and the return as
 * fx_batch_put_from. Every key's weak-index entry is invalidated. */
int client_batch_put(fx_client *c, size_t n, const char *const *keys, const size_t *klens,
                     const put_source *src, const fx_put_options *opts, int *results);

/* put.c: drops the puts begun and never ended (their connections close, so
 * the owner revokes them). For fx_close. */
void client_puts_drop_all(fx_client *c);
/* opts on the wire in *w; NULL (nothing filled) without options. */
Fx__PutOptions *client_put_options(const fx_put_options *opts, Fx__PutOptions *w);

/* conn.c */
xconn *client_conn_get(fx_client *c, int *err);
/* Returns the connection to the pool, or closes it when broken is true. */
void client_conn_put(fx_client *c, xconn *x, bool broken);
void client_conn_close(xconn *x);
/* One request/response on x. On success *resp is a decoded response the
 * caller frees with msg_free; its status may still be an error. Returns 0 or
 * an FX_E* code (x is then broken). */
int client_call(fx_client *c, xconn *x, uint16_t type, const ProtobufCMessage *req,
                ProtobufCMessage **resp);
/* Pipelining: sends n requests of one type on x back to back (one write),
 * then reads their n responses, in whatever order the owner completes them,
 * matched by request id, into resps[i] (decoded; the caller frees each
 * non-NULL one with msg_free, also on failure). Returns 0 or an FX_E* code
 * (x is then broken). */
int client_call_many(fx_client *c, xconn *x, uint16_t type, size_t n,
                     const ProtobufCMessage *const *reqs, ProtobufCMessage **resps);
/* One request/response on a pooled connection: fills *resp (freed by the
 * caller with msg_free, NULL-safe) and returns the call's FX status, the
 * transport's or the response's own (with its detail recorded). */
int client_request(fx_client *c, uint16_t type, const ProtobufCMessage *req,
                   ProtobufCMessage **resp);
/* The status of an answer, its detail recorded as the last error when not 0. */
int client_answer_status(const ProtobufCMessage *resp);
/* Sends a one-way request. */
int client_notify(fx_client *c, xconn *x, uint16_t type, const ProtobufCMessage *req);
/* Reads one whole frame from fd into a malloc'd body. */
int client_read_frame(int fd, frame_hdr *h, uint8_t **body, int timeout_ms);
/* Connects a Unix socket and sends ExternalHello; for the session connection
 * (client_id 0) also receives the segment fd (seg_fd), for a further one
 * asks for a get lane (lane_fd non-NULL: its fd, or -1 when the owner gave
 * none). */
int client_open(fx_client *c, uint64_t client_id, int *out_fd, Fx__ExternalHelloResp **hello,
                int *seg_fd, int *lane_fd);
/* Where a holder release goes: the connection's get lane when the holders
 * came from one (via_lane) and it has one, else the connection, whose loop
 * gave them: a release that wakes a get thread for the loop's holders costs a
 * thread's wake-up beside the loop's for nothing. */
xconn *client_release_conn(xconn *x, bool via_lane);

/* put.c: the wake function of put_copy.h for a put on connection x: a
 * one-way ExternalPing. A failed write leaves failed set: the connection may
 * hold part of a frame and must not carry the commit. */
typedef struct owner_wake {
    fx_client *c;
    xconn *x;
    bool failed;
} owner_wake;
void owner_wake_ping(void *owner_wake_ctx);

/* holder.c */
fx_holder *holder_index_get(fx_client *c, const char *key, size_t klen);
/* Tells the owner (ExternalDeleteAck) that these holder ids are released:
 * holders it handed out that the client will never wrap (a failed batch, an
 * answer out of bounds, out of memory), so they do not stay pinned until
 * fx_close. via_lane: a get thread gave them (client_release_conn). */
void holder_ack_ids(fx_client *c, const uint64_t *ids, size_t n, bool via_lane);
fx_holder *holder_new(fx_client *c, const char *key, size_t klen, const Fx__ExternalGetResp *r);
/* Puts h in the weak index if no invalidation happened since epoch. */
void holder_index_offer(fx_client *c, fx_holder *h, uint64_t epoch);
/* Drops key from the weak index (a near-cached holder of it is released). */
void holder_index_invalidate(fx_client *c, const void *key, size_t klen);
/* Drops every key from the weak index (near-cached holders are released). */
void holder_index_invalidate_all(fx_client *c);
/* The session ended: the owner reclaimed every holder; none may be served. */
void holder_index_clear(fx_client *c);
/* The near cache's budget from FLUXON_NEAR_CACHE_BYTES or the default (after
 * the segment is mapped). */
void holder_near_init(fx_client *c);
void holder_free_all(fx_client *c);

#endif
