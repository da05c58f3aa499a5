/*
 * dp_internal.h - what the data plane's three parts share: the engine struct
 * (dp_engine.c), the inbound side (dp_server.c) and the outbound side
 * (dp_client.c); both sides prove themselves with dp_handshake.h. Not for use
 * outside src/owner/dataplane/.
 *
 * Ownership: the engine owns its listener, its deadline timer, every inbound
 * connection (sconns), every peer with its outbound connections (peers) and
 * every transfer that has not completed (queued, xfers). All of it belongs to
 * the loop thread.
 *
 * Handle accounting: every libuv handle the engine opens counts in
 * e->handles until its close callback ran; the engine's memory is released
 * when that reaches 0 after dp_engine_free().
 */
#ifndef FX_OWNER_DATAPLANE_DP_INTERNAL_H
#define FX_OWNER_DATAPLANE_DP_INTERNAL_H

#include <netinet/in.h>

#include "owner/dataplane/dataplane.h"
#include "owner/dataplane/dp_frame.h"
#include "owner/dataplane/dp_handshake.h"

#define DP_NO_DEADLINE UINT64_MAX
#define DP_DRAIN_BUF (64u * 1024u)

struct dp_sconn;
struct dp_peer;
struct dp_xfer;

struct dp_engine {
    uv_loop_t *loop;
    uint8_t *seg_base;
    uint64_t seg_size;
    uv_tcp_t listener;
    /* One timer for everything time-driven: starting queued transfers (due
     * at once), transfer timeouts, the HELLO deadline of new inbound peers
     * and the linger of refused ones.
     * timer_due is when it is armed to fire (DP_NO_DEADLINE: not armed). */
    uv_timer_t timer;
    uint64_t timer_due;

    bool have_identity;
    uint32_t node_id;
    uint64_t tomb_tag;
    dp_peer_key_fn peer_key; /* where handshakes find pair keys; NULL: none passes */
    void *peer_key_ud;
    dp_write_fn on_write; /* a peer's WRITE is about to land; may be NULL */
    void *on_write_ud;

    struct dp_sconn *sconns; /* inbound, open or lingering */
    unsigned n_sconns;       /* how many sconns holds */
    unsigned max_sconns;     /* the cap on n_sconns (dp_engine_set_limits) */
    uint64_t hello_ms;       /* from accept to a passed HELLO */
    struct dp_peer *peers;   /* outbound, by (node, addr) */
    struct dp_xfer *queued;  /* accepted by dp_transfer, not started yet */
    struct dp_xfer *xfers;   /* started, callback not yet run */
    uint64_t next_id;        /* request and hello ids */

    dp_stats stats;
    int handles;
    bool closing;
    bool free_requested;
    uint8_t drain[DP_DRAIN_BUF]; /* where the bytes of refused peers are discarded */
};

/* ---- dp_engine.c ------------------------------------------------------------ */

/* Arms the engine timer to fire at loop time due at the latest. */
void dp_engine_schedule(dp_engine *e, uint64_t due);
/* A handle of the engine finished closing; may free the engine. */
void dp_engine_handle_closed(dp_engine *e);
/* TCP_NODELAY, reno, DP_SOCK_BUF buffers; failures are ignored (logged at DEBUG). */
void dp_tune_socket(uv_tcp_t *t);
/* The pair key for node_id and its live incarnation (dp_peer_key_fn); false
 * without a lookup or when it refuses. *key is wiped on false; the caller
 * wipes it after use on true. */
bool dp_peer_key(dp_engine *e, uint32_t node_id, uint64_t *tomb_tag, auth_key *key);

/* ---- dp_server.c ------------------------------------------------------------ */

/* Accepts one pending connection on the listener. */
void dp_server_accept(dp_engine *e);
/* Closes inbound connections whose deadline passed (no HELLO in time, or a
 * refused one still lingering); returns the next deadline. */
uint64_t dp_server_sweep(dp_engine *e, uint64_t now);
/* Closes every inbound connection. */
void dp_server_close_all(dp_engine *e);
/* Closes the inbound connections of node_id (authenticated or mid-handshake). */
void dp_server_forget_peer(dp_engine *e, uint32_t node_id);

/* ---- dp_client.c ------------------------------------------------------------ */

/* Starts queued transfers and fails those past their deadline; returns the
 * next deadline. Runs transfer callbacks. */
uint64_t dp_client_sweep(dp_engine *e, uint64_t now);
/* Fails every transfer with (status, detail) and closes every outbound
 * connection. Runs transfer callbacks. */
void dp_client_close_all(dp_engine *e, int status, const char *detail);
/* Closes our connections to node_id and fails its transfers, queued or
 * running, with FX_ECONN. Runs transfer callbacks. */
void dp_client_forget_peer(dp_engine *e, uint32_t node_id);

#endif
