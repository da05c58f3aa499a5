/*
 * conn_internal.h - the net_conn object, shared by conn.c (reading, writing,
 * handshakes, listeners) and write_scope.c (write scopes). Nothing outside
 * src/net/ includes it.
 */
#ifndef FX_NET_CONN_INTERNAL_H
#define FX_NET_CONN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "net/auth_key.h"
#include "net/conn.h"
#include "net/handshake.h"

/* A TCP or Unix stream, seen as either (connections and listeners). */
typedef union net_stream_handle {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
    uv_stream_t stream;
    uv_handle_t handle;
} net_stream_handle;

struct net_conn {
    net_stream_handle h;
    uv_loop_t *loop;
    const net_conn_ops *ops;
    void *data;
    uint8_t *rbuf; /* bytes received and not yet consumed: [0, rlen) */
    size_t rlen, rcap;
    uint32_t max_body;
    int refs;
    bool open;
    bool closing;
    bool handshake_done;  /* net_conn_handshake_done was called */
    bool over_budget;     /* on_alloc refused: the listener's budget is spent */
    bool has_deadline;    /* deadline was initialised (and holds a reference) */
    uv_timer_t deadline;  /* the handshake deadline of an accepted connection */
    net_connect_fn on_connect;
    void *connect_ud;
    char peer[64];
    handshake *hs;                 /* while the handshake runs */
    bool connect_pending;          /* a client whose on_connect waits for the handshake */
    uint8_t *hello;                /* a client's HELLO, until TCP is connected */
    size_t hello_len;
    char *auth_identity;           /* what the peer proved in the handshake */
    bool has_session;              /* session_key holds the handshake's session key */
    auth_key session_key;
    char auth_failure[160];        /* why the handshake failed, for the caller's message */
    struct net_listener *listener; /* that accepted it, while both are open */
    struct net_conn *lprev, *lnext;
    /* While the frames of one read are handled, what they answer on this
     * connection is gathered here and written once at the end: a batch of
     * pipelined requests gets its answers in one write, not one each. */
    bool corked;
    net_write_scope *scope; /* NULL: none (the connection gathers its own answers) */
    bool in_scope;          /* listed (and referenced) by scope */
    uint64_t writes; /* writes handed to the socket (net_conn_write_count) */
    uint8_t *obuf;
    size_t olen, ocap;
};

/* conn.c: writes what c gathered while corked and uncorks it. */
void conn_uncork(net_conn *c);

/* write_scope.c: a dispatch of c's frames starts (c's scope, or NULL: none)
 * and ends (the outermost end writes every gathered connection). */
net_write_scope *conn_scope_enter(net_conn *c);
void conn_scope_leave(net_write_scope *sc);
/* Corks c within its running scope: true, or false when none runs (or the
 * list cannot grow: c is written at once then). */
bool conn_scope_join(net_conn *c);

#endif
