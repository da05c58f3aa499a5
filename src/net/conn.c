/*
 * conn.c - framed message connections and listeners on libuv (see conn.h).
 *
 * The read side keeps one growable buffer per connection; frames are parsed in
 * place and the remainder is moved to the front after each read, and a buffer
 * grown for a large frame goes back to its usual size once that frame is
 * consumed. Frame bodies are bounded by max_body, so a peer cannot make us
 * allocate more than that.
 *
 * Listener limits (net_listener_set_limits): a cap on the connections open at
 * once (the one over it is accepted and closed at once), a deadline for the
 * handshake (armed at accept, stopped by net_conn_handshake_done) and a
 * budget for the bytes received and not yet consumed across the listener's
 * connections. A read that would take a connection still in its handshake
 * past the budget closes that connection instead; connections past their
 * handshake are bounded by their own max_body and are never refused, so
 * strangers cannot crowd out members, but their bytes count against what
 * strangers may hold.
 *
 * Authenticated connections (a listener with net_listener_require_auth, a
 * client with net_conn_auth_client) run the handshake of handshake.h over
 * the same buffer first: until it is done no byte is taken for a frame, and
 * a client's on_connect reports success only once the server accepted it.
 */
#include "net/conn_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hashtable.h"
#include "common/log.h"
#include "fluxon/fluxon.h"
#include "net/addr.h"
#include "net/frame.h"
#include "net/handshake.h"
#include "net/unix_path.h"

#define READ_CHUNK (64u * 1024u)
/* How long a client waits for the server's side of the handshake. */
#define NET_CLIENT_HANDSHAKE_MS 5000u
/* A peer that leaves more than this unread in our write queue is not reading:
 * it is dropped rather than allowed to grow our memory without bound. */
#define MAX_WRITE_QUEUE (64u << 20)
#define MAX_CORK (1u << 20) /* answers gathered per read, at most (conn.corked) */

struct net_listener {
    net_stream_handle h;
    bool is_unix;
    const net_conn_ops *ops;
    net_accept_fn on_accept;
    void *ud;
    char path[108];
    unix_path_id path_id; /* the socket file we bound, removed at close */
    bool require_auth;    /* accepted connections start with the handshake */
    auth_key key;
    net_conn *conns; /* accepted and still open */
    unsigned n_conns; /* how many conns holds */
    size_t held;      /* bytes received and not consumed, summed over conns */
    net_listener_limits lim;
    char name[48];    /* lim.name, copied ("" until limits are set) */
    net_write_scope *scope; /* given to the connections it accepts */
};

typedef struct write_req {
    uv_write_t req;
    uint8_t *buf;
} write_req;

static net_conn *conn_alloc(uv_loop_t *loop, const net_conn_ops *ops)
{
    net_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->loop = loop;
    c->ops = ops;
    c->refs = 1;
    c->max_body = FRAME_MAX_BODY;
    snprintf(c->peer, sizeof c->peer, "?");
    return c;
}

void net_conn_ref(net_conn *c)
{
    c->refs++;
}

void net_conn_unref(net_conn *c)
{
    if (!c)
        return;
    if (--c->refs == 0) {
        free(c->rbuf);
        free(c->obuf);
        if (c->hs) {
            handshake_wipe(c->hs);
            free(c->hs);
        }
        free(c->auth_identity);
        free(c->hello);
        auth_key_wipe(&c->session_key);
        free(c);
    }
}

static void on_handle_closed(uv_handle_t *h)
{
    net_conn *c = h->data;
    if (c->listener) {
        DL_DELETE2(c->listener->conns, c, lprev, lnext);
        c->listener->n_conns--;
        c->listener->held -= c->rlen;
        c->listener = NULL;
    }
    if (c->ops && c->ops->on_close)
        c->ops->on_close(c);
    net_conn_unref(c);
}

static void report_connect(net_conn *c, int status);
static void on_deadline_closed(uv_handle_t *h)
{
    net_conn_unref(h->data);
}

/* Writes what the connection gathered while corked (best effort when it is
 * closing: uv_close cancels what could not be written at once). */
static int write_owned(net_conn *c, uint8_t *buf, size_t len);
void conn_uncork(net_conn *c)
{
    c->corked = false;
    if (!c->olen)
        return;
    uint8_t *buf = c->obuf;
    size_t len = c->olen;
    c->obuf = NULL;
    c->olen = c->ocap = 0;
    if (!c->closing) {
        write_owned(c, buf, len);
        return;
    }
    uv_buf_t b = uv_buf_init((char *)buf, (unsigned)len);
    uv_try_write(&c->h.stream, &b, 1);
    free(buf);
}

void net_conn_close(net_conn *c)
{
    if (!c || c->closing)
        return;
    bool handshaking = c->open && c->connect_pending;
    c->closing = true;
    conn_uncork(c); /* the answers gathered so far go before the close */
    c->open = false;
    if (handshaking) /* a client closed while its handshake ran */
        report_connect(c, -ECONNRESET);
    if (c->has_deadline)
        uv_close((uv_handle_t *)&c->deadline, on_deadline_closed);
    uv_close(&c->h.handle, on_handle_closed);
}

uint64_t net_conn_write_count(const net_conn *c)
{
    return c->writes;
}

void net_listener_set_write_scope(net_listener *l, net_write_scope *sc)
{
    l->scope = sc;
}


static void on_deadline(uv_timer_t *t)
{
    net_conn *c = t->data;
    if (c->connect_pending) { /* our own handshake, as a client */
        snprintf(c->auth_failure, sizeof c->auth_failure,
                 "the server did not answer the handshake within %u ms", NET_CLIENT_HANDSHAKE_MS);
        FX_LOG(WARN, "%s: %s", c->peer, c->auth_failure);
        report_connect(c, -ETIMEDOUT);
        net_conn_close(c);
        return;
    }
    const net_listener *l = c->listener;
    FX_LOG_LIMITED(WARN, "%s: %s did not complete its handshake within %llu ms; closing",
                   l ? l->name : "listener", c->peer,
                   l ? (unsigned long long)l->lim.handshake_ms : 0ull);
    net_conn_close(c);
}

/* Starts the handshake deadline of a connection just accepted; the timer
 * holds a reference until its close callback. */
static void arm_deadline(net_conn *c, uint64_t ms)
{
    if (uv_timer_init(c->loop, &c->deadline) < 0)
        return;
    c->deadline.data = c;
    c->has_deadline = true;
    net_conn_ref(c);
    uv_timer_start(&c->deadline, on_deadline, ms, 0);
}

void net_conn_handshake_done(net_conn *c)
{
    c->handshake_done = true;
    if (c->has_deadline)
        uv_timer_stop(&c->deadline);
}

bool net_conn_is_open(const net_conn *c)
{
    return c && c->open && !c->closing;
}

void *net_conn_data(const net_conn *c)
{
    return c->data;
}

void net_conn_set_data(net_conn *c, void *data)
{
    c->data = data;
}

const char *net_conn_peer(const net_conn *c)
{
    return c->peer;
}

void net_conn_set_max_body(net_conn *c, uint32_t max_body)
{
    c->max_body = max_body;
}

int net_conn_fd(const net_conn *c)
{
    uv_os_fd_t fd;
    if (uv_fileno(&c->h.handle, &fd) != 0)
        return -1;
    return fd;
}

int net_conn_local_addr(const net_conn *c, struct sockaddr_storage *out)
{
    int len = sizeof *out;
    return uv_tcp_getsockname(&c->h.tcp, (struct sockaddr *)out, &len);
}

int net_conn_peer_addr(const net_conn *c, struct sockaddr_storage *out)
{
    int len = sizeof *out;
    return uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)out, &len);
}

size_t net_conn_write_queue(const net_conn *c)
{
    return uv_stream_get_write_queue_size(&c->h.stream);
}

/* How many more bytes c may hold now: unbounded past its handshake or without
 * a budget, else what is left of its listener's budget. */
static size_t budget_room(const net_conn *c)
{
    const net_listener *l = c->listener;
    if (!l || c->handshake_done || !l->lim.buffer_budget)
        return SIZE_MAX;
    return l->held < l->lim.buffer_budget ? l->lim.buffer_budget - l->held : 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    net_conn *c = h->data;
    size_t room = budget_room(c);
    if (room == 0) { /* on_read gets UV_ENOBUFS and closes */
        c->over_budget = true;
        buf->base = NULL;
        buf->len = 0;
        return;
    }
    size_t want = c->rlen + READ_CHUNK;
    if (c->rcap < want) {
        size_t cap = c->rcap ? c->rcap : READ_CHUNK * 2;
        while (cap < want)
            cap *= 2;
        uint8_t *nb = realloc(c->rbuf, cap);
        if (!nb) {
            buf->base = NULL;
            buf->len = 0;
            return;
        }
        c->rbuf = nb;
        c->rcap = cap;
    }
    buf->base = (char *)c->rbuf + c->rlen;
    buf->len = c->rcap - c->rlen < room ? c->rcap - c->rlen : room;
}

/* A buffer grown for a large frame goes back to its usual size once little
 * is left in it; a failed realloc keeps the large one. */
static void shrink_rbuf(net_conn *c)
{
    if (c->rcap <= 2 * READ_CHUNK || c->rlen > READ_CHUNK)
        return;
    uint8_t *nb = realloc(c->rbuf, 2 * READ_CHUNK);
    if (nb) {
        c->rbuf = nb;
        c->rcap = 2 * READ_CHUNK;
    }
}

/* Parses and dispatches every whole frame in the buffer. Returns false when the
 * connection was closed (by a protocol error or by a handler). */
static int send_copy(net_conn *c, const uint8_t *p, size_t n);

static bool dispatch_frames(net_conn *c)
{
    size_t pos = 0;
    bool ok = true;
    net_conn_ref(c);
    net_write_scope *sc = conn_scope_enter(c);
    if (!conn_scope_join(c))
        c->corked = true;
    while (c->open) {
        frame_hdr h;
        int r = frame_parse(c->rbuf + pos, c->rlen - pos, c->max_body, &h);
        if (r == 0)
            break;
        if (r < 0 && pos == 0 && c->listener && !c->listener->require_auth &&
            handshake_is_hello(c->rbuf, c->rlen)) {
            /* An owner with a cluster secret: tell it why, in its protocol. */
            FX_LOG_LIMITED(WARN, "%s: a peer offered the cluster handshake, but this server "
                                 "has no cluster secret; closing", c->peer);
            uint8_t no_secret[HS_RESULT_LEN];
            handshake_no_secret_result(no_secret);
            send_copy(c, no_secret, sizeof no_secret);
            net_conn_close(c);
            ok = false;
            break;
        }
        if (r < 0) {
            FX_LOG_LIMITED(WARN, "%s: %s; closing connection", c->peer,
                           r == -EMSGSIZE ? "frame longer than the maximum"
                                          : "unknown frame flags");
            net_conn_close(c);
            ok = false;
            break;
        }
        const uint8_t *body = c->rbuf + pos + FRAME_HDR_LEN;
        ProtobufCMessage *m = msg_decode(h.type, h.flags & FRAME_RESPONSE, body, h.len);
        if (!m) {
            FX_LOG_LIMITED(WARN, "%s: malformed %s frame (type %u, %u bytes); closing connection",
                           c->peer, msg_name(h.type), h.type, h.len);
            net_conn_close(c);
            ok = false;
            break;
        }
        pos += FRAME_HDR_LEN + h.len;
        c->ops->on_frame(c, &h, m);
        msg_free(m);
    }
    if (c->open && pos > 0) {
        memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
        c->rlen -= pos;
        if (c->listener)
            c->listener->held -= pos;
        shrink_rbuf(c);
    }
    conn_scope_leave(sc);
    if (!c->in_scope && c->corked) /* no scope, or c could not join it */
        conn_uncork(c);
    ok = ok && c->open;
    net_conn_unref(c);
    return ok;
}

static bool run_handshake(net_conn *c);

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    net_conn *c = s->data;
    if (nread < 0) {
        if (c->over_budget && c->listener)
            FX_LOG_LIMITED(WARN,
                           "%s: partial frames of its connections hold %zu bytes of its budget "
                           "of %zu; closing %s, which has not completed its handshake",
                           c->listener->name, c->listener->held, c->listener->lim.buffer_budget,
                           c->peer);
        else if (nread != UV_EOF)
            FX_LOG(INFO, "%s: read error: %s", c->peer, uv_strerror((int)nread));
        if (c->connect_pending) { /* not a refusal (that comes as RESULT): retry */
            snprintf(c->auth_failure, sizeof c->auth_failure,
                     "the server closed the connection during the handshake");
            FX_LOG(WARN, "%s: %s", c->peer, c->auth_failure);
            report_connect(c, -ECONNRESET);
        }
        net_conn_close(c);
        return;
    }
    if (nread == 0)
        return;
    c->rlen += (size_t)nread;
    if (c->listener)
        c->listener->held += (size_t)nread;
    if (c->hs && !run_handshake(c))
        return;
    dispatch_frames(c);
}

static int conn_start(net_conn *c)
{
    c->open = true;
    c->h.handle.data = c;
    return uv_read_start(&c->h.stream, on_alloc, on_read);
}

static void on_written(uv_write_t *req, int status)
{
    write_req *w = (write_req *)req;
    if (status < 0 && status != UV_ECANCELED) {
        net_conn *c = req->handle->data;
        FX_LOG(INFO, "%s: write error: %s", c->peer, uv_strerror(status));
        net_conn_close(c);
    }
    free(w->buf);
    free(w);
}

/* Writes len bytes of buf (malloc'd; ours from here on) in order after what
 * is queued. Returns 0, or a negative error after closing the connection. */
static int write_owned(net_conn *c, uint8_t *buf, size_t len)
{
    if (!c->corked)
        conn_scope_join(c);
    if (c->corked && c->olen + len <= MAX_CORK) {
        if (c->olen + len > c->ocap) {
            size_t cap = c->ocap ? c->ocap : 4096;
            while (cap < c->olen + len)
                cap *= 2;
            uint8_t *n = realloc(c->obuf, cap);
            if (!n) {
                conn_uncork(c); /* what is gathered goes first, then buf */
                return write_owned(c, buf, len);
            }
            c->obuf = n;
            c->ocap = cap;
        }
        memcpy(c->obuf + c->olen, buf, len);
        c->olen += len;
        free(buf);
        return 0;
    }
    if (c->corked)
        conn_uncork(c); /* a large answer: in order, after what is gathered */
    uv_buf_t b = uv_buf_init((char *)buf, (unsigned)len);
    c->writes++;
    int n = uv_try_write(&c->h.stream, &b, 1);
    if (n == (int)len) {
        free(buf);
        return 0;
    }
    if (n < 0 && n != UV_EAGAIN) {
        free(buf);
        net_conn_close(c);
        return n;
    }
    size_t done = n > 0 ? (size_t)n : 0;
    write_req *w = malloc(sizeof *w);
    if (!w) {
        free(buf);
        net_conn_close(c);
        return -ENOMEM;
    }
    w->buf = buf;
    b = uv_buf_init((char *)buf + done, (unsigned)(len - done));
    int r = uv_write(&w->req, &c->h.stream, &b, 1, on_written);
    if (r < 0) {
        free(buf);
        free(w);
        net_conn_close(c);
        return r;
    }
    if (uv_stream_get_write_queue_size(&c->h.stream) > MAX_WRITE_QUEUE) {
        FX_LOG_LIMITED(WARN, "%s: more than %u bytes of answers unread; closing", c->peer,
                       MAX_WRITE_QUEUE);
        net_conn_close(c);
        return -ECONNRESET;
    }
    return 0;
}

int net_send(net_conn *c, uint16_t type, uint16_t flags, uint64_t req_id, const ProtobufCMessage *m)
{
    if (!net_conn_is_open(c))
        return -ECONNRESET;
    size_t len;
    uint8_t *buf = msg_encode(type, flags, req_id, m, &len);
    if (!buf) {
        FX_LOG(ERROR, "cannot encode %s (flags %u)", msg_name(type), flags);
        return -EINVAL;
    }
    return write_owned(c, buf, len);
}

/* ---- the handshake (authenticated connections) ------------------------------ */

static void report_connect(net_conn *c, int status)
{
    if (!c->connect_pending)
        return;
    c->connect_pending = false;
    c->on_connect(c, status, c->connect_ud);
}

static int send_copy(net_conn *c, const uint8_t *p, size_t n)
{
    uint8_t *b = malloc(n);
    if (!b) {
        net_conn_close(c);
        return -ENOMEM;
    }
    memcpy(b, p, n);
    return write_owned(c, b, n);
}

/* A peer that spoke a frame where the handshake belongs has no cluster
 * secret: answer its first request in its own protocol, so that an owner
 * started without the secret learns why it is turned away. */
static void refuse_unauthenticated_frame(net_conn *c)
{
    frame_hdr h;
    if (c->rlen < FRAME_HDR_LEN)
        return;
    frame_hdr_decode(c->rbuf, &h);
    if (frame_hdr_check(&h, FRAME_MAX_BODY) < 0 || (h.flags & FRAME_RESPONSE) ||
        !msg_descriptor(h.type, true))
        return;
    net_reply_error(c, &h, FX_EAUTH,
                    "authentication failed: this cluster requires its cluster secret "
                    "(owner cluster_secret_file)");
}

static void handshake_failed(net_conn *c)
{
    snprintf(c->auth_failure, sizeof c->auth_failure, "%s", c->hs->failure);
    if (c->connect_pending) {
        FX_LOG(ERROR, "%s: authentication failed: %s", c->peer, c->auth_failure);
        report_connect(c, -EACCES);
    } else {
        FX_LOG_LIMITED(WARN, "%s: authentication failed: %s; closing", c->peer, c->auth_failure);
        if (c->hs->not_handshake)
            refuse_unauthenticated_frame(c);
    }
    net_conn_close(c);
}

static void handshake_done(net_conn *c)
{
    if (c->connect_pending && c->has_deadline)
        uv_timer_stop(&c->deadline);
    c->auth_identity = strdup(c->hs->identity);
    handshake_session_key(c->hs, &c->session_key);
    c->has_session = true;
    handshake_wipe(c->hs);
    free(c->hs);
    c->hs = NULL;
    if (!c->auth_identity) {
        snprintf(c->auth_failure, sizeof c->auth_failure, "out of memory");
        report_connect(c, -ENOMEM);
        net_conn_close(c);
        return;
    }
    report_connect(c, 0);
}

/* Feeds the received bytes to the handshake. Returns true when it is done
 * (and the connection still open): what is left in rbuf is frames. */
static bool run_handshake(net_conn *c)
{
    while (c->hs && c->open) {
        uint8_t out[HS_OUT_MAX];
        size_t out_len;
        int r = handshake_step(c->hs, c->rbuf, c->rlen, out, &out_len);
        if (out_len && send_copy(c, out, out_len) < 0)
            return false;
        if (r < 0) {
            handshake_failed(c);
            return false;
        }
        if (r == 0)
            return false;
        memmove(c->rbuf, c->rbuf + r, c->rlen - (size_t)r);
        c->rlen -= (size_t)r;
        if (c->listener)
            c->listener->held -= (size_t)r;
        if (c->hs->state == HS_DONE)
            handshake_done(c);
    }
    return c->open;
}

void net_conn_auth_client(net_conn *c, const auth_key *key, uint8_t role, const char *identity)
{
    handshake *hs = malloc(sizeof *hs);
    if (!hs) {
        c->connect_pending = false;
        return; /* the connection then fails at the server, which expects the handshake */
    }
    c->hello = malloc(HS_OUT_MAX); /* sent once TCP is connected */
    if (!c->hello) {
        free(hs);
        c->connect_pending = false;
        return;
    }
    handshake_client_start(hs, key, role, identity, c->hello, &c->hello_len);
    c->hs = hs;
    c->connect_pending = true;
}

void net_listener_require_auth(net_listener *l, const auth_key *key)
{
    l->require_auth = true;
    l->key = *key;
}

const char *net_conn_auth_identity(const net_conn *c)
{
    return c->auth_identity;
}

bool net_conn_session_key(const net_conn *c, auth_key *out)
{
    if (!c || !c->has_session)
        return false;
    *out = c->session_key;
    return true;
}

const char *net_conn_auth_failure(const net_conn *c)
{
    return c->auth_failure;
}

int net_reply(net_conn *c, const frame_hdr *h, const ProtobufCMessage *m)
{
    if (h->flags & FRAME_ONEWAY)
        return 0;
    return net_send(c, h->type, FRAME_RESPONSE, h->req_id, m);
}

void net_reply_error(net_conn *c, const frame_hdr *h, int status, const char *fmt, ...)
{
    if (h->flags & FRAME_ONEWAY)
        return;
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    const ProtobufCMessageDescriptor *d = msg_descriptor(h->type, true);
    if (!d)
        return;
    ProtobufCMessage *m = msg_new_error(d, status, detail);
    if (!m)
        return;
    net_reply(c, h, m);
    msg_free_built(m);
}

static void on_connection(uv_stream_t *server, int status)
{
    net_listener *l = server->data;
    if (status < 0) {
        FX_LOG_LIMITED(WARN, "accept failed: %s", uv_strerror(status));
        return;
    }
    net_conn *c = conn_alloc(server->loop, l->ops);
    if (!c)
        return;
    int r = l->is_unix ? uv_pipe_init(server->loop, &c->h.pipe, 0)
                       : uv_tcp_init(server->loop, &c->h.tcp);
    if (r < 0) {
        free(c);
        return;
    }
    c->h.handle.data = c;
    if (uv_accept(server, &c->h.stream) < 0) {
        c->open = true;
        net_conn_close(c);
        return;
    }
    if (l->is_unix) {
        snprintf(c->peer, sizeof c->peer, "unix:%d", net_conn_fd(c));
    } else {
        struct sockaddr_storage ss;
        if (net_conn_peer_addr(c, &ss) == 0)
            addr_format((struct sockaddr *)&ss, c->peer, sizeof c->peer);
        uv_tcp_nodelay(&c->h.tcp, 1);
    }
    if (l->lim.max_conns && l->n_conns >= l->lim.max_conns) {
        FX_LOG_LIMITED(WARN, "%s: %u connections open, its cap; closing the new one from %s",
                       l->name, l->n_conns, c->peer);
        c->open = true;
        net_conn_close(c);
        return;
    }
    if (l->require_auth) {
        c->hs = malloc(sizeof *c->hs);
        if (!c->hs) {
            c->open = true;
            net_conn_close(c);
            return;
        }
        handshake_server_start(c->hs, &l->key);
    }
    c->listener = l;
    c->scope = l->scope;
    DL_APPEND2(l->conns, c, lprev, lnext);
    l->n_conns++;
    if (conn_start(c) < 0) {
        net_conn_close(c);
        return;
    }
    if (l->lim.handshake_ms)
        arm_deadline(c, l->lim.handshake_ms);
    if (l->on_accept)
        l->on_accept(c, l->ud);
}

net_conn *net_conn_adopt_unix(uv_loop_t *loop, int fd, const net_conn_ops *ops, void *data,
                              const char *peer)
{
    net_conn *c = conn_alloc(loop, ops);
    if (!c) {
        close(fd);
        return NULL;
    }
    if (uv_pipe_init(loop, &c->h.pipe, 0) < 0) {
        close(fd);
        free(c);
        return NULL;
    }
    c->h.handle.data = c;
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    if (uv_pipe_open(&c->h.pipe, fd) < 0) {
        close(fd); /* not the handle's yet */
        c->open = true;
        net_conn_close(c);
        return NULL;
    }
    if (conn_start(c) < 0) {
        net_conn_close(c);
        return NULL;
    }
    c->data = data; /* on_close runs for connections that were adopted only */
    return c;
}

net_listener *net_listen(uv_loop_t *loop, const char *addr, bool is_unix, const net_conn_ops *ops,
                         net_accept_fn on_accept, void *ud, int *err)
{
    net_listener *l = calloc(1, sizeof *l);
    int r;
    if (!l) {
        *err = -ENOMEM;
        return NULL;
    }
    l->is_unix = is_unix;
    l->ops = ops;
    l->on_accept = on_accept;
    l->ud = ud;
    if (is_unix) {
        if (strlen(addr) >= sizeof l->path) {
            free(l);
            *err = -ENAMETOOLONG;
            return NULL;
        }
        snprintf(l->path, sizeof l->path, "%s", addr);
        r = unix_path_claim(addr);
        if (r < 0) {
            free(l);
            *err = r;
            return NULL;
        }
        uv_pipe_init(loop, &l->h.pipe, 0);
        l->h.handle.data = l;
        r = uv_pipe_bind(&l->h.pipe, addr);
        if (r == 0)
            l->path_id = unix_path_identify(addr);
    } else {
        struct sockaddr_storage sa; /* a name is looked up here: listeners start at startup */
        r = addr_resolve(loop, addr, &sa, NULL, 0);
        if (r < 0) {
            free(l);
            *err = r;
            return NULL;
        }
        uv_tcp_init(loop, &l->h.tcp);
        l->h.handle.data = l;
        r = uv_tcp_bind(&l->h.tcp, (struct sockaddr *)&sa, 0);
    }
    if (r == 0)
        r = uv_listen(&l->h.stream, 512, on_connection);
    if (r < 0) {
        *err = r;
        if (l->is_unix)
            unix_path_release(l->path, l->path_id); /* bound but not listening */
        uv_close(&l->h.handle, (uv_close_cb)free);
        return NULL;
    }
    return l;
}

void net_listener_set_limits(net_listener *l, const net_listener_limits *lim)
{
    l->lim = *lim;
    snprintf(l->name, sizeof l->name, "%s", lim->name ? lim->name : "listener");
    l->lim.name = l->name;
}

int net_listener_port(const net_listener *l)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (l->is_unix || uv_tcp_getsockname(&l->h.tcp, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    return addr_port((struct sockaddr *)&ss);
}

void net_listener_close(net_listener *l)
{
    if (!l)
        return;
    net_conn *c, *tmp;
    DL_FOREACH_SAFE2(l->conns, c, tmp, lnext) {
        DL_DELETE2(l->conns, c, lprev, lnext);
        c->listener = NULL;
        net_conn_close(c);
    }
    if (l->is_unix)
        unix_path_release(l->path, l->path_id);
    auth_key_wipe(&l->key);
    uv_close(&l->h.handle, (uv_close_cb)free);
}

static void on_connected(uv_connect_t *req, int status)
{
    net_conn *c = req->data;
    free(req);
    if (status == 0 && conn_start(c) == 0) {
        uv_tcp_nodelay(&c->h.tcp, 1);
        if (c->hs) { /* on_connect runs when the server accepted us, or at the deadline */
            arm_deadline(c, NET_CLIENT_HANDSHAKE_MS);
            uint8_t *hello = c->hello;
            c->hello = NULL;
            write_owned(c, hello, c->hello_len);
        }
        else
            c->on_connect(c, 0, c->connect_ud);
        return;
    }
    c->connect_pending = false;
    c->open = true;
    c->on_connect(c, status ? status : -EIO, c->connect_ud);
    net_conn_close(c);
}

/* A name being looked up for net_connect_tcp; holds a reference to c. */
typedef struct connect_lookup {
    addr_lookup lk;
    net_conn *c;
} connect_lookup;

/* Starts connecting c to sa. Returns 0, or a libuv error with nothing
 * started (c is the caller's to fail). */
static int connect_to(net_conn *c, const struct sockaddr *sa)
{
    uv_connect_t *req = malloc(sizeof *req);
    if (!req)
        return -ENOMEM;
    req->data = c;
    int r = uv_tcp_connect(req, &c->h.tcp, sa, on_connected);
    if (r < 0)
        free(req);
    return r;
}

static void on_connect_resolved(addr_lookup *lk, int status, const struct sockaddr *sa)
{
    connect_lookup *cl = lk->data;
    net_conn *c = cl->c;
    free(cl);
    if (c->closing) { /* closed by its owner meanwhile: as a cancelled connect */
        c->connect_pending = false;
        c->on_connect(c, UV_ECANCELED, c->connect_ud);
    } else if (status == 0) {
        status = connect_to(c, sa);
    }
    if (status < 0 && !c->closing) {
        c->connect_pending = false;
        c->open = true;
        c->on_connect(c, status, c->connect_ud);
        net_conn_close(c);
    }
    net_conn_unref(c);
}

net_conn *net_connect_tcp(uv_loop_t *loop, const char *host, int port, const net_conn_ops *ops,
                          net_connect_fn on_connect, void *ud)
{
    struct sockaddr_storage sa;
    int numeric = addr_from_numeric(host, port, &sa);
    if (numeric < 0 && numeric != -EAGAIN)
        return NULL;
    net_conn *c = conn_alloc(loop, ops);
    connect_lookup *cl = numeric == -EAGAIN ? calloc(1, sizeof *cl) : NULL;
    if (!c || (numeric == -EAGAIN && !cl)) {
        free(c);
        free(cl);
        return NULL;
    }
    uv_tcp_init(loop, &c->h.tcp); /* the socket, of sa's family, comes with the connect */
    c->h.handle.data = c;
    c->on_connect = on_connect;
    c->connect_ud = ud;
    addr_join(host, port, c->peer, sizeof c->peer);
    int r;
    if (cl) { /* a name: looked up on the thread pool, the loop goes on */
        cl->c = c;
        cl->lk.data = cl;
        net_conn_ref(c);
        r = addr_lookup_start(loop, &cl->lk, host, port, on_connect_resolved);
        if (r < 0) {
            free(cl);
            net_conn_unref(c);
        }
    } else {
        r = connect_to(c, (struct sockaddr *)&sa);
    }
    if (r < 0) {
        c->open = true;
        net_conn_close(c);
        return NULL;
    }
    return c;
}
