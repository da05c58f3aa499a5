/*
 * dp_server.c - the inbound side of the data plane: peers' connections,
 * their handshake, and the READs and WRITEs they send into our segment.
 *
 * Handshake (dp_handshake.h): a HELLO must name us as its server and a live
 * member with its live incarnation; we answer with a challenge that proves
 * our pair key with that member, and serve nothing until its HELLO_PROOF
 * proved the same key. The key is looked up at each step and never kept.
 *
 * Receiving: a connection reads one unit at a time and the libuv alloc
 * callback hands out exactly the rest of that unit: the rest of the 32-byte
 * header while a header is expected (so a read never runs past a header), the
 * rest of a handshake body into a small buffer, or, for a WRITE, a pointer into
 * the segment at the rest of the target range. Sending: a READ is answered by
 * one uv_write of two buffers, a header from a preallocated reply slot and
 * the segment range itself. No payload byte is copied in user space.
 *
 * Backpressure: a connection has DP_SERVER_REPLIES reply slots. When all are
 * queued in libuv it stops reading, so a peer that asks faster than it reads
 * the answers is held back by TCP rather than by our memory.
 *
 * Strangers: a connection over the engine's cap is accepted and closed at
 * once; one whose handshake has not passed by its deadline is closed (the engine
 * timer runs dp_server_sweep).
 *
 * Refusals: a request before the handshake passed, a hello for another node,
 * from a node that is not a live member (or from another incarnation of it),
 * a proof that fails, or a range outside the segment is answered with an
 * error reply (status and detail), logged at WARN, and ends the connection:
 * we stop serving it, shut our side down after the reply, and discard what
 * the peer still sends until it hangs up (or DP_LINGER_MS passed), so the
 * reply is not lost to a reset. A malformed header closes at once.
 */
#include "owner/dataplane/dp_internal.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashtable.h"
#include "common/log.h"
#include "fluxon/fluxon.h"
#include "net/addr.h"

#define DP_SERVER_REPLIES 16

enum srx {
    SRX_HDR,       /* expecting a header into hbuf */
    SRX_HANDSHAKE, /* expecting cur.len bytes of a HELLO or HELLO_PROOF body into body */
    SRX_PAYLOAD,   /* expecting cur.len bytes of WRITE payload into dst */
    SRX_DRAIN,     /* refused: discarding until the peer hangs up */
};

/* How far a connection's handshake got. */
enum shs {
    SHS_START,      /* no HELLO yet */
    SHS_CHALLENGED, /* HELLO_CHALLENGE sent, waiting for HELLO_PROOF */
    SHS_AUTHED,     /* proof checked: READs and WRITEs are served */
};

/* One answer queued in libuv: its header must live until the write completes. */
typedef struct dp_reply {
    uv_write_t req; /* first: the write callback casts back */
    struct dp_reply *next; /* free list */
    uint8_t hdr[DP_HDR_LEN];
} dp_reply;

typedef struct dp_sconn {
    uv_tcp_t tcp;
    uv_shutdown_t shutdown;
    dp_engine *e;
    struct dp_sconn *prev, *next; /* e->sconns */
    char addr[ADDR_TEXT_MAX]; /* "127.0.0.1:5555", "[::1]:5555" */
    char peer[ADDR_TEXT_MAX + 32]; /* for logs: addr, "node 3 at <addr>" once authed */
    enum srx rx;
    uint32_t got; /* bytes of the current unit received */
    uint8_t hbuf[DP_HDR_LEN];
    dp_hdr cur; /* the request being received */
    uint8_t *dst;
    enum shs hs_state;
    dp_handshake hs; /* from the HELLO on: who the peer claims to be, both nonces */
    bool closing;
    bool read_stopped;
    uint64_t deadline; /* for the HELLO, then for hanging up after a refusal;
                        * DP_NO_DEADLINE while served after a passed HELLO */
    dp_reply *free_replies;
    dp_reply replies[DP_SERVER_REPLIES];
    uint8_t body[DP_HELLO_LEN];          /* a HELLO or HELLO_PROOF body */
    uint8_t challenge[DP_CHALLENGE_LEN]; /* our HELLO_CHALLENGE body, until written */
    char detail[DP_DETAIL_MAX + 1]; /* the one refusal's text, until written */
} dp_sconn;

_Static_assert(DP_PROOF_LEN <= DP_HELLO_LEN, "dp_sconn.body holds either handshake body");

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

/* ---- lifetime -------------------------------------------------------------- */

static void on_closed(uv_handle_t *h)
{
    dp_sconn *c = h->data;
    dp_engine *e = c->e;
    free(c);
    dp_engine_handle_closed(e);
}

static void sconn_close(dp_sconn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    DL_DELETE2(c->e->sconns, c, prev, next);
    c->e->n_sconns--;
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void name_peer(dp_sconn *c)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0)
        addr_format((struct sockaddr *)&ss, c->addr, sizeof c->addr);
    else
        snprintf(c->addr, sizeof c->addr, "?");
    snprintf(c->peer, sizeof c->peer, "%s", c->addr);
}

void dp_server_accept(dp_engine *e)
{
    dp_sconn *c = calloc(1, sizeof *c);
    if (!c) {
        FX_LOG(ERROR, "data plane: out of memory accepting a peer");
        return;
    }
    c->e = e;
    c->deadline = DP_NO_DEADLINE;
    for (int i = 0; i < DP_SERVER_REPLIES; i++) {
        c->replies[i].next = c->free_replies;
        c->free_replies = &c->replies[i];
    }
    uv_tcp_init(e->loop, &c->tcp);
    c->tcp.data = c;
    e->handles++;
    DL_APPEND2(e->sconns, c, prev, next);
    e->n_sconns++;
    if (uv_accept((uv_stream_t *)&e->listener, (uv_stream_t *)&c->tcp) < 0) {
        sconn_close(c);
        return;
    }
    name_peer(c);
    if (e->n_sconns > e->max_sconns) {
        FX_LOG_LIMITED(WARN, "data plane: %u peer connections open, its cap; closing the new one "
                       "from %s", e->max_sconns, c->peer);
        sconn_close(c);
        return;
    }
    e->stats.conns_accepted++;
    dp_tune_socket(&c->tcp);
    c->deadline = uv_now(e->loop) + e->hello_ms;
    dp_engine_schedule(e, c->deadline);
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
        sconn_close(c);
}

void dp_server_close_all(dp_engine *e)
{
    while (e->sconns)
        sconn_close(e->sconns);
}

void dp_server_forget_peer(dp_engine *e, uint32_t node_id)
{
    dp_sconn *c, *tmp;
    DL_FOREACH_SAFE2(e->sconns, c, tmp, next) {
        if (c->hs_state != SHS_START && c->hs.client_node == node_id) {
            FX_LOG(INFO, "data plane: closing %s: node %u left the cluster", c->peer, node_id);
            sconn_close(c);
        }
    }
}

uint64_t dp_server_sweep(dp_engine *e, uint64_t now)
{
    uint64_t soonest = DP_NO_DEADLINE;
    dp_sconn *c, *tmp;
    DL_FOREACH_SAFE2(e->sconns, c, tmp, next) {
        if (c->deadline > now) {
            if (c->deadline < soonest)
                soonest = c->deadline;
            continue;
        }
        if (c->rx == SRX_DRAIN)
            FX_LOG(INFO, "data plane: %s did not hang up after a refusal; closing", c->peer);
        else
            FX_LOG_LIMITED(WARN, "data plane: %s did not complete its handshake within %llu ms; "
                                 "closing", c->peer, (unsigned long long)e->hello_ms);
        sconn_close(c);
    }
    return soonest;
}

/* ---- sending --------------------------------------------------------------- */

static void on_reply_written(uv_write_t *req, int status)
{
    dp_reply *r = (dp_reply *)req;
    dp_sconn *c = req->data;
    r->next = c->free_replies;
    c->free_replies = r;
    if (status < 0 && status != UV_ECANCELED) {
        FX_LOG(INFO, "data plane: write to %s failed: %s", c->peer, uv_strerror(status));
        sconn_close(c);
        return;
    }
    if (c->read_stopped && !c->closing) {
        c->read_stopped = false;
        if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
            sconn_close(c);
    }
}

/* Queues header h followed by n bytes at body (segment payload or detail
 * text, which must stay put until the write completes). A slot is always
 * free here: reading stops while none is. Returns 0 or a libuv error (the
 * connection is then closing). */
static int send_reply(dp_sconn *c, const dp_hdr *h, const void *body, uint32_t n)
{
    dp_reply *r = c->free_replies;
    c->free_replies = r->next;
    dp_hdr_encode(h, r->hdr);
    r->req.data = c;
    uv_buf_t bufs[2] = {uv_buf_init((char *)r->hdr, DP_HDR_LEN), uv_buf_init((char *)body, n)};
    int rc = uv_write(&r->req, (uv_stream_t *)&c->tcp, bufs, n ? 2 : 1, on_reply_written);
    if (rc < 0) {
        r->next = c->free_replies;
        c->free_replies = r;
        FX_LOG(INFO, "data plane: cannot answer %s: %s", c->peer, uv_strerror(rc));
        sconn_close(c);
    }
    return rc;
}

static uint8_t reply_op(uint8_t request_op)
{
    switch (request_op) {
    case DP_HELLO:
    case DP_HELLO_PROOF:
        return DP_HELLO_REFUSED;
    case DP_READ:
        return DP_READ_DATA;
    default:
        return DP_WRITE_ACK;
    }
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    (void)req;
    (void)status;
}

/* Answers the current request with (status, detail), then stops serving the
 * connection: our side is shut down after the reply, and what the peer still
 * sends is discarded until it hangs up or DP_LINGER_MS passed. */
static void refuse(dp_sconn *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(dp_sconn *c, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
    FX_LOG_LIMITED(WARN, "data plane: refused %s from %s: %s; closing the connection",
                   dp_op_name(c->cur.op), c->peer, c->detail);
    c->e->stats.refused++;
    dp_hdr h = {.op = reply_op(c->cur.op), .id = c->cur.id, .status = status,
                .offset = c->cur.offset, /* 0 for the handshake ops (dp_hdr_check) */
                .len = (uint32_t)strlen(c->detail)};
    if (send_reply(c, &h, c->detail, h.len) < 0)
        return;
    c->rx = SRX_DRAIN;
    c->got = 0;
    uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, on_shutdown);
    c->deadline = uv_now(c->e->loop) + DP_LINGER_MS;
    dp_engine_schedule(c->e, c->deadline);
}

/* ---- requests ---------------------------------------------------------------- */

/* The pair key with the node c's HELLO claims, if that node is live with the
 * incarnation it claims; else refuses the current request and returns false. */
static bool claimed_key(dp_sconn *c, auth_key *key)
{
    uint64_t live_tomb = 0;
    if (dp_peer_key(c->e, c->hs.client_node, &live_tomb, key) && live_tomb == c->hs.client_tomb)
        return true;
    auth_key_wipe(key);
    refuse(c, FX_ESTALE, "node %u (tomb %llu) is not a live member", c->hs.client_node,
           (unsigned long long)c->hs.client_tomb);
    return false;
}

static void on_hello(dp_sconn *c)
{
    dp_engine *e = c->e;
    dp_hello h;
    if (dp_hello_decode(c->body, c->cur.len, &h) < 0) { /* dp_hdr_check fixed len */
        sconn_close(c);
        return;
    }
    if (!e->have_identity) {
        refuse(c, FX_ESTALE, "node %u: this owner is not registered yet", h.client_node);
        return;
    }
    if (h.server_node != e->node_id) {
        refuse(c, FX_ESTALE, "node %u asked for node %u; this is node %u", h.client_node,
               h.server_node, e->node_id);
        return;
    }
    c->hs = (dp_handshake){.client_node = h.client_node, .client_tomb = h.client_tomb,
                           .server_node = e->node_id, .server_tomb = e->tomb_tag};
    auth_key key;
    if (!claimed_key(c, &key))
        return;
    memcpy(c->hs.client_nonce, h.nonce, DP_NONCE_LEN);
    auth_random(c->hs.server_nonce, DP_NONCE_LEN);
    dp_challenge ch;
    memcpy(ch.nonce, c->hs.server_nonce, DP_NONCE_LEN);
    dp_handshake_prove(&key, DP_SIDE_SERVER, &c->hs, ch.proof);
    auth_key_wipe(&key);
    dp_challenge_encode(&ch, c->challenge);
    c->hs_state = SHS_CHALLENGED;
    dp_hdr reply = {.op = DP_HELLO_CHALLENGE, .id = c->cur.id, .len = DP_CHALLENGE_LEN};
    send_reply(c, &reply, c->challenge, DP_CHALLENGE_LEN);
}

static void on_proof(dp_sconn *c)
{
    auth_key key;
    if (!claimed_key(c, &key))
        return;
    bool ok = dp_handshake_check(&key, DP_SIDE_CLIENT, &c->hs, c->body);
    auth_key_wipe(&key);
    if (!ok) {
        refuse(c, FX_ESTALE, "node %u failed to prove its pair key", c->hs.client_node);
        return;
    }
    c->hs_state = SHS_AUTHED;
    c->deadline = DP_NO_DEADLINE;
    snprintf(c->peer, sizeof c->peer, "node %u at %s", c->hs.client_node, c->addr);
    FX_LOG(DEBUG, "data plane: %s proved its pair key", c->peer);
    dp_hdr ok_reply = {.op = DP_HELLO_OK, .id = c->cur.id};
    send_reply(c, &ok_reply, NULL, 0);
}

/* Refuses a READ or WRITE that came before the HELLO passed or whose range is
 * outside the segment. Returns true when it was refused. */
static bool refuse_request(dp_sconn *c)
{
    const dp_hdr *h = &c->cur;
    if (c->hs_state != SHS_AUTHED) {
        refuse(c, FX_EPROTO, "%s before a successful HELLO", dp_op_name(h->op));
        return true;
    }
    if (!dp_range_ok(c->e->seg_size, h->offset, h->len)) {
        refuse(c, FX_EINVAL, "range [%llu, +%u) is outside the segment (%llu bytes)",
               (unsigned long long)h->offset, h->len, (unsigned long long)c->e->seg_size);
        return true;
    }
    return false;
}

static void on_read_request(dp_sconn *c)
{
    if (refuse_request(c))
        return;
    dp_hdr h = {.op = DP_READ_DATA, .id = c->cur.id, .offset = c->cur.offset, .len = c->cur.len};
    if (send_reply(c, &h, c->e->seg_base + c->cur.offset, c->cur.len) == 0) {
        c->e->stats.bytes_served += c->cur.len;
        c->e->stats.bytes_out += c->cur.len;
    }
}

static void on_write_payload(dp_sconn *c)
{
    c->rx = SRX_HDR;
    c->e->stats.bytes_served += c->cur.len;
    c->e->stats.bytes_in += c->cur.len;
    dp_hdr h = {.op = DP_WRITE_ACK, .id = c->cur.id, .offset = c->cur.offset};
    send_reply(c, &h, NULL, 0);
}

static void on_header(dp_sconn *c)
{
    dp_hdr_decode(c->hbuf, &c->cur);
    int r = dp_hdr_check(&c->cur, DP_DIR_REQUEST);
    if (r < 0) {
        FX_LOG_LIMITED(WARN, "data plane: malformed header from %s (op %u %s, len %u: %s); closing",
                       c->peer, c->cur.op, dp_op_name(c->cur.op), c->cur.len,
                       r == -EMSGSIZE ? "length out of bounds" : "bad field");
        sconn_close(c);
        return;
    }
    switch (c->cur.op) {
    case DP_HELLO:
        if (c->hs_state != SHS_START)
            refuse(c, FX_EPROTO, "a second HELLO");
        else
            c->rx = SRX_HANDSHAKE;
        break;
    case DP_HELLO_PROOF:
        if (c->hs_state != SHS_CHALLENGED)
            refuse(c, FX_EPROTO, "HELLO_PROOF without a pending HELLO_CHALLENGE");
        else
            c->rx = SRX_HANDSHAKE;
        break;
    case DP_READ:
        on_read_request(c);
        break;
    case DP_WRITE:
        if (!refuse_request(c)) {
            if (c->e->on_write)
                c->e->on_write(c->e->on_write_ud, c->cur.offset, c->cur.len);
            c->rx = SRX_PAYLOAD;
            c->dst = c->e->seg_base + c->cur.offset;
        }
        break;
    }
}

/* ---- receiving ---------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    dp_sconn *c = h->data;
    switch (c->rx) {
    case SRX_HDR:
        *buf = uv_buf_init((char *)c->hbuf + c->got, DP_HDR_LEN - c->got);
        break;
    case SRX_HANDSHAKE:
        *buf = uv_buf_init((char *)c->body + c->got, c->cur.len - c->got);
        break;
    case SRX_PAYLOAD:
        *buf = uv_buf_init((char *)c->dst + c->got, c->cur.len - c->got);
        break;
    case SRX_DRAIN:
        *buf = uv_buf_init((char *)c->e->drain, sizeof c->e->drain);
        break;
    }
}

/* Called when the current unit is complete. */
static void on_unit(dp_sconn *c)
{
    enum srx rx = c->rx;
    c->got = 0;
    c->rx = SRX_HDR;
    if (rx == SRX_HDR)
        on_header(c);
    else if (rx == SRX_HANDSHAKE && c->cur.op == DP_HELLO)
        on_hello(c);
    else if (rx == SRX_HANDSHAKE)
        on_proof(c);
    else
        on_write_payload(c);
}

static uint32_t unit_len(const dp_sconn *c)
{
    return c->rx == SRX_HDR ? DP_HDR_LEN : c->cur.len;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    dp_sconn *c = s->data;
    if (n < 0) {
        if (n != UV_EOF && c->rx != SRX_DRAIN)
            FX_LOG(INFO, "data plane: read from %s failed: %s", c->peer, uv_strerror((int)n));
        else if (c->rx != SRX_DRAIN && (c->rx != SRX_HDR || c->got))
            FX_LOG(INFO, "data plane: %s hung up in the middle of a request", c->peer);
        sconn_close(c);
        return;
    }
    if (n == 0 || c->rx == SRX_DRAIN)
        return;
    c->got += (uint32_t)n;
    if (c->got == unit_len(c))
        on_unit(c);
    if (!c->closing && c->rx != SRX_DRAIN && !c->free_replies) {
        uv_read_stop(s);
        c->read_stopped = true;
    }
}
