/*
 * dataplane.h - the owner-to-owner data plane: moves byte ranges between the
 * segments of two owners over TCP (the C form of the spec's
 * transfer_data_no_copy; DESIGN §4, §7, §9).
 *
 * Every owner runs one engine on its libuv loop. It listens for peers (the
 * server side, dp_server.c) and opens connections to peers for the transfers
 * the owner asks for (the client side, dp_client.c). A pull asks the peer for
 * chunks of its segment (READ) and receives them straight into our target
 * range; a push sends chunks of our segment (WRITE) straight into the peer's.
 * No byte is copied in user space: payload goes from the segment to the
 * socket and from the socket to the segment (wire format in dp_frame.h).
 *
 * Strangers: at most DP_DEFAULT_MAX_PEER_CONNS inbound connections are open at
 * once (the next one is accepted and closed at once), and one whose handshake has
 * not passed DP_DEFAULT_HELLO_MS after its accept is closed; both are logged
 * and can be changed with dp_engine_set_limits(). A connection's receive
 * memory is fixed (a header, a HELLO or PROOF body of at most DP_HELLO_MAX_BODY, or
 * the segment itself), so there is no buffer to bound beyond the count.
 *
 * Trust: nothing moves before a connection's handshake passed (dp_frame.h,
 * dp_handshake.h). The client names itself (node id, incarnation) and the
 * node it means to reach; the server answers only a live member of the
 * master's table with that very incarnation, and both prove, over fresh
 * nonces from each side, that they hold the pair key the master derived for
 * exactly these two incarnations (MemberInfo.pair_key). No member knows the
 * key of a pair it is not in, so none can pass for another, and a member that
 * leaves or re-registers loses its keys with its incarnation: the owner's
 * member table forgets it, new hellos are refused and dp_engine_forget_peer()
 * closes its connections, inbound ones included. The server proves first, so
 * a client sends no request to a data plane that cannot. Every READ and WRITE
 * range is checked against our segment before a byte moves. A refused or
 * malformed request is logged (WARN, naming the peer) and ends that
 * connection; other peers are served on.
 *
 * Transfers are split into DP_CHUNK chunks with up to DP_MAX_INFLIGHT in
 * flight; each runs on one of at most DP_CONNS_PER_PEER connections to its
 * peer (reused across transfers). Sockets use TCP_NODELAY, reno congestion
 * control and DP_SOCK_BUF buffers (DESIGN §9: bbr caps loopback near 1.5 GB/s).
 *
 * Threading: everything, including every callback, runs on the loop thread
 * the engine was created on. No locks. The process must ignore SIGPIPE (the
 * daemons do): libuv writes with write(2), and a peer may vanish mid-write.
 *
 * Lifetime: dp_engine_close() fails every pending transfer (callbacks run
 * inside it), closes every connection and the listener; the loop must then
 * run so libuv can finish closing those handles. dp_engine_free() releases the
 * engine: at once when every handle has closed, else from the last close
 * callback (so the loop must run once more to release the memory).
 */
#ifndef FX_OWNER_DATAPLANE_DATAPLANE_H
#define FX_OWNER_DATAPLANE_DATAPLANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "net/auth_key.h"

#define DP_CHUNK (1u << 20)      /* bytes per READ/WRITE request */
#define DP_MAX_INFLIGHT 8        /* requests in flight per transfer */
#define DP_CONNS_PER_PEER 2      /* connections kept to one peer */
#define DP_SOCK_BUF (4 << 20)    /* SO_SNDBUF / SO_RCVBUF asked for */
#define DP_LINGER_MS 5000        /* how long a refused peer may take to hang up */
#define DP_DEFAULT_MAX_PEER_CONNS 4096 /* inbound connections open at once */
#define DP_DEFAULT_HELLO_MS 5000 /* how long a new inbound peer has for its HELLO */

typedef struct dp_engine dp_engine;

/* The pair key we share with node_id (from the master's member table): true
 * with node_id's live incarnation in *tomb_tag and the key in *key, false when
 * node_id is not a live member or we hold no key for it. Called on every
 * handshake, inbound and outbound; the engine wipes its copy of the key after
 * use and keeps none. */
typedef bool (*dp_peer_key_fn)(void *ud, uint32_t node_id, uint64_t *tomb_tag, auth_key *key);
/* A transfer's result: status 0 or an FX_E* code; detail ("" on success) says
 * what failed and names the peer. detail is valid during the call only. */
typedef void (*dp_done_fn)(int status, const char *detail, void *ud);

typedef struct dp_stats {
    uint64_t conns_accepted;    /* inbound connections */
    uint64_t conns_opened;      /* outbound connections started */
    uint64_t refused;           /* inbound hellos and requests refused */
    uint64_t bytes_served;      /* payload sent for READs + received by WRITEs */
    uint64_t bytes_in, bytes_out; /* payload received / sent: served WRITEs and READs and
                                     our own pulls and pushes that completed */
    uint64_t transfers_ok, transfers_failed;
    uint64_t requests_sent;     /* READs and WRITEs we sent */
    uint64_t request_writes;    /* writes that carried them (several per write when batched) */
} dp_stats;

/* Listens on "HOST:PORT" (a name, looked up blocking the thread, an IPv4 or
 * an [IPv6] literal; "[::]" takes IPv4 too; port 0 = ephemeral) for peers; [seg_base,
 * +seg_size) is this owner's segment, which must outlive the engine. Returns
 * the engine (the caller frees it with dp_engine_close() + dp_engine_free()),
 * or NULL with a negative errno in *err (-EINVAL for a malformed address, a
 * UV_EAI_* code for a name that does not resolve, -EIO when libsodium cannot
 * start, or the bind/listen error, e.g. UV_EADDRINUSE). After a failure the handles it
 * opened still close, and their memory goes, on the next run of the loop. */
dp_engine *dp_engine_new(uv_loop_t *loop, uint8_t *seg_base, uint64_t seg_size,
                         const char *listen_addr, int *err);
/* The bound TCP port, or -1. */
int dp_engine_port(const dp_engine *e);
/* The bound address (the port included). Returns 0 or a libuv error. */
int dp_engine_address(const dp_engine *e, struct sockaddr_storage *out);

/* Our identity (given by the master at Register): what our hellos claim and
 * what inbound hellos must name as their server. Until it is set, every
 * inbound hello is refused and dp_transfer() fails. Changing an identity
 * already set (re-registration) closes every connection, inbound and
 * outbound, and fails every pending transfer with FX_ESTALE (their callbacks
 * run inside this call). */
void dp_engine_set_identity(dp_engine *e, uint32_t node_id, uint64_t tomb_tag);
/* Where handshakes look up pair keys. Without it every handshake fails, both
 * ways. */
void dp_engine_set_peer_keys(dp_engine *e, dp_peer_key_fn fn, void *ud);
/* Called on the loop thread when a peer's WRITE into [offset, offset + len)
 * of our segment was accepted, before any of its bytes land (the owner's
 * replica index forgets what that range held). */
typedef void (*dp_write_fn)(void *ud, uint64_t offset, uint64_t len);
void dp_engine_set_write_hook(dp_engine *e, dp_write_fn fn, void *ud);
/* Inbound limits for connections accepted from now on: max_conns open at
 * once (>= 1), hello_ms (> 0) from accept to a passed handshake. */
void dp_engine_set_limits(dp_engine *e, unsigned max_conns, uint64_t hello_ms);

/* Starts a transfer with peer_node, whose data plane listens on peer_addr
 * ("HOST:PORT": a literal is dialled at once, a name is looked up on libuv's
 * thread pool first; a lookup that fails fails the transfer with FX_ECONN).
 *   peer_is_source (pull): peer's [src_offset, +len) -> our [target_offset, +len)
 *   !peer_is_source (push): our [src_offset, +len) -> peer's [target_offset, +len)
 * Our range is checked against our segment here, the peer's by the peer.
 * Returns 0 and later calls cb exactly once on the loop thread, never from
 * inside dp_transfer(): with 0 when every byte arrived (len 0 completes with 0
 * on the next loop iteration), FX_ETIMEDOUT after timeout_ms (0: no timeout;
 * the connection is closed, it is mid-stream), FX_ECONN when the connection
 * fails or the engine closes, FX_ESTALE when the handshake failed (the peer
 * refused our hello or our proof, the peer is not a live member for us, or it
 * did not prove the pair key: then it got no request), FX_EINVAL when it
 * refused the range, FX_EPROTO
 * on a malformed reply. Transfers sharing a connection that had to close fail
 * with FX_ECONN. On failure the target range may hold part of the bytes.
 * Returns without calling cb: FX_EINVAL (bad address, our range outside the
 * segment, no cb), FX_ESTALE (no identity yet), FX_ECONN (engine closing),
 * FX_ENOMEM. */
int dp_transfer(dp_engine *e, uint32_t peer_node, const char *peer_addr, bool peer_is_source,
                uint64_t src_offset, uint64_t target_offset, uint64_t len, uint32_t timeout_ms,
                dp_done_fn cb, void *ud);

/* node_id left the cluster (the master's member table no longer lists it):
 * closes our connections to it and fails its transfers, queued or running,
 * with FX_ECONN, instead of letting them wait for their timeout on a peer
 * that may be frozen; closes its connections to us (authenticated or in the
 * middle of the handshake), so its credentials stop working at once. Runs
 * transfer callbacks. */
void dp_engine_forget_peer(dp_engine *e, uint32_t node_id);

/* Counters since the engine started. */
void dp_engine_stats(const dp_engine *e, dp_stats *out);

/* Fails every pending transfer with FX_ECONN (callbacks run inside this
 * call), closes every connection and the listener. Idempotent. Later
 * dp_transfer() calls fail with FX_ECONN. */
void dp_engine_close(dp_engine *e);
/* Releases the engine (NULL is a no-op; closes it first if needed). The
 * memory goes when libuv has run the last close callback, so run the loop
 * after this if dp_engine_close() was not followed by a loop run already. */
void dp_engine_free(dp_engine *e);

#endif
