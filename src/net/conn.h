/*
 * conn.h - a framed message connection on a libuv stream (TCP or Unix socket).
 *
 * A net_conn reads frames, decodes each body with msg_decode() and hands the
 * message to ops->on_frame on the loop thread. Anything malformed (an unknown
 * type, a body that does not decode, a declared length over the maximum,
 * unknown flags) is logged with the peer's name and the connection is closed;
 * the process goes on serving others. Sends are encoded at once and written
 * in order (uv_try_write first, the rest queued).
 *
 * Lifetime: a connection is refcounted. The open connection holds one
 * reference; net_conn_close() starts closing, calls ops->on_close once, and
 * drops that reference. Code that keeps a pointer across an asynchronous step
 * (a request waiting on the master) takes net_conn_ref() and checks
 * net_conn_is_open() before replying. All functions run on the loop thread.
 */
#ifndef FX_NET_CONN_H
#define FX_NET_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "net/auth_key.h"
#include "net/msg.h"

typedef struct net_conn net_conn;

typedef struct net_conn_ops {
    /* A decoded frame. msg is freed after the call returns. */
    void (*on_frame)(net_conn *c, const frame_hdr *h, ProtobufCMessage *msg);
    /* The connection closed (peer gone, protocol error or net_conn_close). */
    void (*on_close)(net_conn *c);
} net_conn_ops;

typedef void (*net_accept_fn)(net_conn *c, void *ud);
typedef void (*net_connect_fn)(net_conn *c, int status, void *ud);

typedef struct net_listener net_listener;

/* Listens on "HOST:PORT" (is_unix false: a name, looked up blocking the
 * thread, an IPv4 or an [IPv6] literal; "[::]" takes IPv4 too) or a Unix
 * socket path (is_unix true;
 * a stale socket file is replaced, a live one or a non-socket is refused with
 * -EADDRINUSE or -EEXIST, see unix_path.h; closing removes the file only while
 * it is still ours). Accepted connections use ops and are passed to on_accept
 * before reading starts. Returns NULL with a negative errno in *err
 * (-EINVAL for a malformed address, a UV_EAI_* code when the name does not
 * resolve). */
net_listener *net_listen(uv_loop_t *loop, const char *addr, bool is_unix, const net_conn_ops *ops,
                         net_accept_fn on_accept, void *ud, int *err);
/* What a listener allows its peers. Every limit is off (0) until
 * net_listener_set_limits is called. */
typedef struct net_listener_limits {
    const char *name;      /* the listener in logs, e.g. "master listener" (copied) */
    unsigned max_conns;    /* accepted connections open at once; the next one is accepted
                            * and closed at once (logged); 0: no cap */
    uint64_t handshake_ms; /* a connection not past net_conn_handshake_done this long after
                            * its accept is closed (logged); 0: no deadline */
    size_t buffer_budget;  /* bytes received and not yet consumed (partial frames) across
                            * the listener's connections; a read that would take one still
                            * in its handshake past it closes that one (logged); 0: none */
} net_listener_limits;

/* Sets l's limits for the connections it accepts from now on (the budget
 * counts those already open too). */
void net_listener_set_limits(net_listener *l, const net_listener_limits *lim);
/* The bound TCP port (after listening on port 0). */
int net_listener_port(const net_listener *l);
/* Stops listening and closes every connection it accepted that is still open. */
void net_listener_close(net_listener *l);

/* A connection over fd, a connected Unix stream socket this process already
 * holds (one end of a socketpair), served on loop from now on: reading starts
 * at once, with data as its net_conn_data and peer as its name in logs. The
 * connection owns fd (closed with it, also when this fails). Returns NULL
 * when out of memory or when libuv refuses fd. */
net_conn *net_conn_adopt_unix(uv_loop_t *loop, int fd, const net_conn_ops *ops, void *data,
                              const char *peer);
/* Connects over TCP to host (a name, an IPv4 or an IPv6 literal, brackets
 * optional) and port. A literal is connected to at once; a name is looked up
 * on libuv's thread pool first, so the loop never waits for DNS. on_connect
 * gets the connection and 0, or a negative errno or UV_EAI_* code (the
 * connection is then already closing); it never runs inside this call.
 * Returns NULL when out of memory or when host or port is malformed. */
net_conn *net_connect_tcp(uv_loop_t *loop, const char *host, int port, const net_conn_ops *ops,
                          net_connect_fn on_connect, void *ud);

/* Every connection l accepts from now on must pass the handshake of
 * handshake.h with key before its first frame; one that fails is logged
 * (rate-limited) and closed, and a peer that sends a frame instead gets an
 * AuthenticationFailed answer to it first. */
void net_listener_require_auth(net_listener *l, const auth_key *key);
/* Makes the client connection c (call right after net_connect_tcp) prove
 * key, claiming role and identity, before anything else; its on_connect then
 * reports 0 only once the server accepted the proof, or -EACCES when the
 * handshake failed (net_conn_auth_failure says why). */
void net_conn_auth_client(net_conn *c, const auth_key *key, uint8_t role, const char *identity);
/* The identity the peer proved in the handshake, or NULL (no handshake, or
 * not done yet). */
const char *net_conn_auth_identity(const net_conn *c);
/* The session key the handshake left (handshake.h) in *out: true, or false
 * for a connection without one. The caller wipes its copy. */
bool net_conn_session_key(const net_conn *c, auth_key *out);
/* Why the handshake failed ("" when it did not). */
const char *net_conn_auth_failure(const net_conn *c);

/* Encodes and sends one frame. Returns 0, -ECONNRESET when closed, -EINVAL when
 * the message does not match the type, or a libuv error. */
int net_send(net_conn *c, uint16_t type, uint16_t flags, uint64_t req_id, const ProtobufCMessage *m);
/* Sends m as the response to request h. */
int net_reply(net_conn *c, const frame_hdr *h, const ProtobufCMessage *m);
/* Sends an error response (status + formatted detail) to request h. */
void net_reply_error(net_conn *c, const frame_hdr *h, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A write scope: while the frames of one read on one of its connections are
 * handled, what they write on any of its connections (not only the answers
 * on their own) is gathered and written once, per connection, when that
 * read's frames are handled. A process gives one scope to the connections of
 * its loop; a connection without one gathers only its own answers. Free the
 * scope once the loop has stopped and its connections are closed. */
typedef struct net_write_scope net_write_scope;
net_write_scope *net_write_scope_new(void); /* NULL when out of memory */
void net_write_scope_free(net_write_scope *sc);
void net_conn_set_write_scope(net_conn *c, net_write_scope *sc);
/* The connections l accepts from now on join sc. */
void net_listener_set_write_scope(net_listener *l, net_write_scope *sc);
/* How many writes c has handed to its socket (gathered frames count once). */
uint64_t net_conn_write_count(const net_conn *c);

void net_conn_close(net_conn *c);
bool net_conn_is_open(const net_conn *c);
void net_conn_ref(net_conn *c);
void net_conn_unref(net_conn *c);
void *net_conn_data(const net_conn *c);
void net_conn_set_data(net_conn *c, void *data);
/* The peer, for logs ("127.0.0.1:4242", "[::1]:4242" or "unix:<fd>"). */
const char *net_conn_peer(const net_conn *c);
/* The local / remote address of a connected TCP connection. Returns 0 or a
 * libuv error (not connected, a Unix socket); *out is then unspecified. */
int net_conn_local_addr(const net_conn *c, struct sockaddr_storage *out);
int net_conn_peer_addr(const net_conn *c, struct sockaddr_storage *out);
/* The OS file descriptor (for SCM_RIGHTS on Unix sockets), or -1. */
int net_conn_fd(const net_conn *c);
/* Bytes accepted by net_send and not yet written to the socket. */
size_t net_conn_write_queue(const net_conn *c);
/* Largest body accepted from this peer (default FRAME_MAX_BODY). */
void net_conn_set_max_body(net_conn *c, uint32_t max_body);
/* The peer introduced itself (Register, ExternalHello): stops the handshake
 * deadline of its listener, and its reads are no longer refused by the
 * listener's buffer budget (max_body bounds them). */
void net_conn_handshake_done(net_conn *c);

#endif
