/*
 * dp_client.c - the outbound side of the data plane: transfers, the peers
 * they go to, and the connections kept to each peer.
 *
 * A connection starts with the handshake (dp_handshake.h): HELLO with a fresh
 * nonce; the server's HELLO_CHALLENGE must prove the pair key we share with
 * the peer node the transfer named (else the connection fails with
 * FX_ESTALE before we sent it anything but the hello); then our HELLO_PROOF,
 * and requests go out once HELLO_OK came. Connections are reused across
 * transfers, so this happens once per connection.
 *
 * A transfer is queued by dp_transfer() and started from the engine timer on
 * the next loop iteration (so no callback ever runs inside dp_transfer()). It
 * then runs on one connection to its peer: the least busy of at most
 * DP_CONNS_PER_PEER, a new one while fewer are open and all are busy. It is
 * cut into DP_CHUNK requests, up to DP_MAX_INFLIGHT in flight, each with a
 * preallocated slot (write request and header) inside the transfer.
 *
 * Batching: every request a transfer has room for goes out in one uv_write,
 * so a 4 MiB pull is one 128-byte packet of four READ headers, not four.
 *
 * Zero copy: a WRITE goes out as two buffers of that write, the slot's
 * header and our segment range; a READ_DATA's payload is read straight into
 * our target range, because the alloc callback hands out exactly the rest of
 * the header while a header is expected and then a pointer into the target.
 *
 * The server answers in request order, so a connection keeps its requests in
 * a FIFO and checks each reply (op, id, offset, length) against the head.
 * Anything else is a protocol error. Whenever a connection can no longer be
 * trusted to be in step (a timeout mid-stream, a refusal, a drop, a malformed
 * reply) it is closed and every transfer on it fails; the one that caused it
 * gets the specific status.
 *
 * Lifetime: a transfer's memory lives until its callback ran and libuv gave
 * back every write request that points into it (closing a connection cancels
 * them before its close callback).
 */
#include "owner/dataplane/dp_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/hashtable.h"
#include "common/log.h"
#include "fluxon/fluxon.h"
#include "net/addr.h"

/* A peer's "HOST:PORT": a name of up to 255 bytes, brackets, port, NUL. */
#define DP_ADDR_MAX 264
#define DP_DETAIL_LEN 1024 /* room for a peer named by a long host name */

enum cstate {
    C_CONNECTING,
    C_HELLO, /* HELLO sent, waiting for HELLO_CHALLENGE */
    C_PROOF, /* HELLO_PROOF sent, waiting for HELLO_OK */
    C_READY,
};
enum crx { CRX_HDR, CRX_PAYLOAD, CRX_DETAIL, CRX_CHALLENGE };

struct dp_cconn;

/* One request of a transfer: in flight from issue until its reply arrived and
 * libuv gave back its write request. */
typedef struct dp_chunk {
    uv_write_t req; /* first: the write callback casts back */
    struct dp_xfer *x;
    struct dp_chunk *fnext; /* the connection's FIFO of unanswered requests */
    uint64_t id;
    uint64_t off; /* within the transfer */
    uint32_t len;
    uint32_t batch; /* when req carries a write: the slots it sends (bit i: chunks[i]) */
    bool writing; /* libuv holds the write that sends this request */
    bool waiting; /* no reply yet */
    uint8_t hdr[DP_HDR_LEN];
} dp_chunk;

_Static_assert(DP_MAX_INFLIGHT <= 32, "dp_chunk.batch has a bit per slot");

typedef struct dp_xfer {
    dp_engine *e;
    struct dp_cconn *c;           /* while started and not finished */
    struct dp_xfer **list;        /* &e->queued or &e->xfers, NULL when finished */
    struct dp_xfer *eprev, *enext;
    struct dp_xfer *cprev, *cnext; /* c->xfers */
    uint32_t peer_node;
    char addr[DP_ADDR_MAX];
    bool pull;
    bool finished; /* the callback ran */
    uint64_t src, tgt, len;
    uint64_t issued, done; /* bytes asked for / answered */
    uint64_t deadline;
    uint32_t timeout_ms;
    int writes; /* chunk write requests libuv still holds */
    dp_done_fn cb;
    void *ud;
    dp_chunk chunks[DP_MAX_INFLIGHT];
} dp_xfer;

typedef struct dp_peer {
    struct dp_peer *prev, *next; /* e->peers */
    uint32_t node;
    char addr[DP_ADDR_MAX];
    struct dp_cconn *conns[DP_CONNS_PER_PEER]; /* open ones; closing ones are detached */
} dp_peer;

typedef struct dp_cconn {
    uv_tcp_t tcp; /* initialized once the address is known (has_tcp) */
    uv_connect_t connect;
    addr_lookup lookup; /* the peer's name, while resolving */
    bool resolving;
    bool has_tcp;
    uv_write_t hello_req, proof_req;
    dp_engine *e;
    dp_peer *peer; /* NULL once closing */
    uint32_t node; /* the peer's node id */
    char name[DP_ADDR_MAX + 32]; /* "peer 3 (127.0.0.1:5555)", "peer 3 ([::1]:5555)" */
    enum cstate state;
    bool closing;
    dp_xfer *xfers; /* started on this connection, not finished */
    int nxfers;
    dp_chunk *fifo_head, *fifo_tail;
    uint64_t hs_id; /* the handshake request waiting for its answer */
    dp_handshake hs;
    enum crx rx;
    uint32_t got; /* bytes of the current unit received */
    uint8_t hbuf[DP_HDR_LEN];
    dp_hdr cur; /* the reply being received */
    uint8_t *dst;
    char detail[DP_DETAIL_MAX + 1];
    uint8_t challenge[DP_CHALLENGE_LEN];
    uint8_t hello_hdr[DP_HDR_LEN], proof_hdr[DP_HDR_LEN];
    uint8_t hello_body[DP_HELLO_LEN], proof_body[DP_PROOF_LEN];
} dp_cconn;

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

/* ---- transfers ending ------------------------------------------------------------ */

static void xfer_unlink(dp_xfer *x)
{
    if (x->list) {
        DL_DELETE2(*x->list, x, eprev, enext);
        x->list = NULL;
    }
    if (x->c) {
        DL_DELETE2(x->c->xfers, x, cprev, cnext);
        x->c->nxfers--;
        x->c = NULL;
    }
}

/* Runs the callback once; the memory goes when libuv holds no write of it. */
static void xfer_finish(dp_xfer *x, int status, const char *detail)
{
    if (x->finished)
        return;
    x->finished = true;
    xfer_unlink(x);
    if (status == 0) {
        x->e->stats.transfers_ok++;
        if (x->pull)
            x->e->stats.bytes_in += x->len;
        else
            x->e->stats.bytes_out += x->len;
    } else
        x->e->stats.transfers_failed++;
    x->cb(status, detail ? detail : "", x->ud);
    if (x->writes == 0)
        free(x);
}

/* ---- peers and connections ------------------------------------------------------- */

static void peer_drop_if_empty(dp_engine *e, dp_peer *p)
{
    for (int i = 0; i < DP_CONNS_PER_PEER; i++)
        if (p->conns[i])
            return;
    DL_DELETE(e->peers, p);
    free(p);
}

static void peer_detach(dp_cconn *c)
{
    dp_peer *p = c->peer;
    if (!p)
        return;
    for (int i = 0; i < DP_CONNS_PER_PEER; i++)
        if (p->conns[i] == c)
            p->conns[i] = NULL;
    c->peer = NULL;
    peer_drop_if_empty(c->e, p);
}

static void on_cconn_closed(uv_handle_t *h)
{
    dp_cconn *c = h->data;
    dp_engine *e = c->e;
    free(c);
    dp_engine_handle_closed(e);
}

/* Closes c: culprit (may be NULL) fails with (cstatus, cdetail), every other
 * transfer on c with (status, detail). Reads stop at once, so no byte lands
 * in a target range after its transfer failed. */
static void cconn_close(dp_cconn *c, dp_xfer *culprit, int cstatus, const char *cdetail,
                        int status, const char *detail)
{
    if (c->closing)
        return;
    c->closing = true;
    peer_detach(c);
    if (c->has_tcp)
        uv_close((uv_handle_t *)&c->tcp, on_cconn_closed);
    else if (c->resolving)
        addr_lookup_cancel(&c->lookup); /* its callback releases c */
    if (culprit)
        xfer_finish(culprit, cstatus, cdetail);
    while (c->xfers)
        xfer_finish(c->xfers, status, detail);
}

static void cconn_fail(dp_cconn *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void cconn_fail(dp_cconn *c, int status, const char *fmt, ...)
{
    char detail[DP_DETAIL_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    if (status == FX_EPROTO || status == FX_ESTALE)
        FX_LOG(WARN, "data plane: %s", detail);
    else
        FX_LOG(INFO, "data plane: %s", detail);
    cconn_close(c, NULL, 0, NULL, status, detail);
}

static void on_handshake_written(uv_write_t *req, int status)
{
    dp_cconn *c = req->data;
    if (status < 0 && status != UV_ECANCELED)
        cconn_fail(c, FX_ECONN, "cannot send the handshake to %s: %s", c->name,
                   uv_strerror(status));
}

/* Sends handshake request op (HELLO or HELLO_PROOF): hdr_buf, then the n
 * bytes at body (both inside c, so they live until the write completes). */
static void send_handshake(dp_cconn *c, uv_write_t *req, uint8_t op, uint8_t *hdr_buf,
                           uint8_t *body, uint32_t n, enum cstate next)
{
    c->hs_id = c->e->next_id++;
    dp_hdr h = {.op = op, .id = c->hs_id, .len = n};
    dp_hdr_encode(&h, hdr_buf);
    uv_buf_t bufs[2] = {uv_buf_init((char *)hdr_buf, DP_HDR_LEN), uv_buf_init((char *)body, n)};
    req->data = c;
    c->state = next;
    int r = uv_write(req, (uv_stream_t *)&c->tcp, bufs, 2, on_handshake_written);
    if (r < 0)
        cconn_fail(c, FX_ECONN, "cannot send the %s to %s: %s", dp_op_name(op), c->name,
                   uv_strerror(r));
}

static void send_hello(dp_cconn *c)
{
    dp_engine *e = c->e;
    c->hs = (dp_handshake){.client_node = e->node_id, .client_tomb = e->tomb_tag,
                           .server_node = c->node};
    auth_random(c->hs.client_nonce, DP_NONCE_LEN);
    dp_hello h = {.client_tomb = e->tomb_tag, .client_node = e->node_id, .server_node = c->node};
    memcpy(h.nonce, c->hs.client_nonce, DP_NONCE_LEN);
    dp_hello_encode(&h, c->hello_body);
    send_handshake(c, &c->hello_req, DP_HELLO, c->hello_hdr, c->hello_body, DP_HELLO_LEN,
                   C_HELLO);
}

/* The server's challenge: it must prove the pair key of our two incarnations
 * (its live one from our member table) before it gets our proof. */
static void on_challenge(dp_cconn *c)
{
    dp_challenge ch;
    dp_challenge_decode(c->challenge, sizeof c->challenge, &ch); /* length checked */
    const char *addr = c->peer->addr; /* not closing: still attached */
    auth_key key;
    if (!dp_peer_key(c->e, c->node, &c->hs.server_tomb, &key)) {
        cconn_fail(c, FX_ESTALE, "peer %u (at %s) is not a live member: we hold no pair key for it",
                   c->node, addr);
        return;
    }
    memcpy(c->hs.server_nonce, ch.nonce, DP_NONCE_LEN);
    bool ok = dp_handshake_check(&key, DP_SIDE_SERVER, &c->hs, ch.proof);
    if (ok)
        dp_handshake_prove(&key, DP_SIDE_CLIENT, &c->hs, c->proof_body);
    auth_key_wipe(&key);
    if (!ok) {
        cconn_fail(c, FX_ESTALE, "peer %u did not prove the pair key (at %s): it got no request",
                   c->node, addr);
        return;
    }
    send_handshake(c, &c->proof_req, DP_HELLO_PROOF, c->proof_hdr, c->proof_body, DP_PROOF_LEN,
                   C_PROOF);
}

static void on_connected(uv_connect_t *req, int status)
{
    dp_cconn *c = req->data;
    if (c->closing)
        return;
    if (status < 0) {
        cconn_fail(c, FX_ECONN, "cannot connect to %s: %s", c->name, uv_strerror(status));
        return;
    }
    int r = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (r < 0) {
        cconn_fail(c, FX_ECONN, "cannot read from %s: %s", c->name, uv_strerror(r));
        return;
    }
    send_hello(c);
}

/* Creates c's socket, of sa's family, and starts connecting. Returns 0, or a
 * libuv error; c->has_tcp says whether the handle exists (then closing c
 * closes it). */
static int cconn_connect(dp_cconn *c, const struct sockaddr *sa)
{
    int r = uv_tcp_init_ex(c->e->loop, &c->tcp, sa->sa_family);
    if (r < 0)
        return r;
    c->has_tcp = true;
    c->tcp.data = c;
    dp_tune_socket(&c->tcp); /* before the SYN: the buffers fix the window scale */
    c->connect.data = c;
    return uv_tcp_connect(&c->connect, &c->tcp, sa, on_connected);
}

/* A closed connection that never got a socket (and is not looked up any
 * more) has no close callback to come: its memory goes here. */
static void cconn_release_if_handleless(dp_cconn *c)
{
    if (c->closing && !c->has_tcp && !c->resolving) {
        dp_engine *e = c->e;
        free(c);
        dp_engine_handle_closed(e);
    }
}

static void on_peer_resolved(addr_lookup *lk, int status, const struct sockaddr *sa)
{
    dp_cconn *c = lk->data;
    c->resolving = false;
    if (!c->closing) {
        int r = status < 0 ? status : cconn_connect(c, sa);
        if (r < 0)
            cconn_fail(c, FX_ECONN, "cannot %s %s: %s", status < 0 ? "resolve" : "connect to",
                       c->name, uv_strerror(r));
    }
    cconn_release_if_handleless(c);
}

/* Opens a connection to p into slot: at once to a numeric address, after an
 * asynchronous lookup to a name (transfers wait on it as on a connect).
 * Returns NULL with the reason in err; p is then freed if it has no other
 * connection. */
static dp_cconn *cconn_open(dp_engine *e, dp_peer *p, int slot, char *err, size_t errlen)
{
    char host[DP_ADDR_MAX];
    int port;
    struct sockaddr_storage sa;
    config_parse_hostport(p->addr, host, sizeof host, &port); /* checked by dp_transfer() */
    int numeric = addr_from_numeric(host, port, &sa);
    dp_cconn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory connecting to peer %u", p->node);
        peer_drop_if_empty(e, p);
        return NULL;
    }
    c->e = e;
    c->node = p->node;
    snprintf(c->name, sizeof c->name, "peer %u (%s)", p->node, p->addr);
    e->handles++; /* the lookup, then the socket */
    e->stats.conns_opened++;
    c->peer = p;
    p->conns[slot] = c;
    int r;
    if (numeric == -EAGAIN) {
        c->lookup.data = c;
        r = addr_lookup_start(e->loop, &c->lookup, host, port, on_peer_resolved);
        c->resolving = r == 0;
    } else {
        r = numeric < 0 ? numeric : cconn_connect(c, (struct sockaddr *)&sa);
    }
    if (r < 0) {
        snprintf(err, errlen, "cannot connect to %s: %s", c->name, uv_strerror(r));
        cconn_close(c, NULL, 0, NULL, FX_ECONN, err);
        cconn_release_if_handleless(c);
        return NULL;
    }
    return c;
}

static dp_peer *peer_get(dp_engine *e, uint32_t node, const char *addr)
{
    dp_peer *p;
    DL_FOREACH(e->peers, p)
        if (p->node == node && strcmp(p->addr, addr) == 0)
            return p;
    p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->node = node;
    snprintf(p->addr, sizeof p->addr, "%s", addr);
    DL_APPEND(e->peers, p);
    return p;
}

/* An idle connection if there is one, else a new one while fewer than
 * DP_CONNS_PER_PEER are open, else the least busy. NULL with err on failure. */
static dp_cconn *pick_conn(dp_engine *e, const dp_xfer *x, char *err, size_t errlen)
{
    dp_peer *p = peer_get(e, x->peer_node, x->addr);
    if (!p) {
        snprintf(err, errlen, "out of memory connecting to peer %u", x->peer_node);
        return NULL;
    }
    dp_cconn *best = NULL;
    int slot = -1;
    for (int i = 0; i < DP_CONNS_PER_PEER; i++) {
        dp_cconn *c = p->conns[i];
        if (!c) {
            if (slot < 0)
                slot = i;
        } else if (!best || c->nxfers < best->nxfers) {
            best = c;
        }
    }
    if ((best && best->nxfers == 0) || slot < 0)
        return best;
    return cconn_open(e, p, slot, err, errlen);
}

/* ---- requests going out -------------------------------------------------------------- */

static void xfer_pump(dp_xfer *x);

static void on_chunks_written(uv_write_t *req, int status)
{
    dp_chunk *lead = (dp_chunk *)req;
    dp_xfer *x = lead->x;
    for (int i = 0; i < DP_MAX_INFLIGHT; i++)
        if (lead->batch & (1u << i))
            x->chunks[i].writing = false;
    lead->batch = 0;
    x->writes--;
    if (x->finished) {
        if (x->writes == 0)
            free(x);
        return;
    }
    if (status < 0) {
        if (status != UV_ECANCELED && x->c)
            cconn_fail(x->c, FX_ECONN, "write to %s failed: %s", x->c->name, uv_strerror(status));
        return;
    }
    xfer_pump(x);
}

static dp_chunk *free_chunk(dp_xfer *x)
{
    for (int i = 0; i < DP_MAX_INFLIGHT; i++)
        if (!x->chunks[i].writing && !x->chunks[i].waiting)
            return &x->chunks[i];
    return NULL;
}

/* Makes the next request of x in slot k, appends its buffers (the header,
 * and for a WRITE our segment range) to bufs and queues it on c's FIFO. */
static void chunk_prepare(dp_xfer *x, dp_cconn *c, dp_chunk *k, uv_buf_t *bufs, unsigned *nbufs)
{
    uint64_t left = x->len - x->issued;
    k->x = x;
    k->id = x->e->next_id++;
    k->off = x->issued;
    k->len = (uint32_t)(left < DP_CHUNK ? left : DP_CHUNK);
    dp_hdr h = {.op = x->pull ? DP_READ : DP_WRITE, .id = k->id,
                .offset = (x->pull ? x->src : x->tgt) + k->off, .len = k->len};
    dp_hdr_encode(&h, k->hdr);
    bufs[(*nbufs)++] = uv_buf_init((char *)k->hdr, DP_HDR_LEN);
    if (!x->pull) /* the payload goes from our segment straight to the socket */
        bufs[(*nbufs)++] = uv_buf_init((char *)x->e->seg_base + x->src + k->off, k->len);
    x->issued += k->len;
    k->writing = true;
    k->waiting = true;
    k->fnext = NULL;
    if (c->fifo_tail)
        c->fifo_tail->fnext = k;
    else
        c->fifo_head = k;
    c->fifo_tail = k;
}

/* Issues every request x has room for (bytes left, a free slot) in one
 * uv_write, so N READ headers cost the peer one wake-up and us one syscall.
 * A failed write closes the connection and finishes x (maybe freeing it). */
static void xfer_pump(dp_xfer *x)
{
    dp_cconn *c = x->c;
    if (x->finished || !c || c->closing || c->state != C_READY)
        return;
    uv_buf_t bufs[2 * DP_MAX_INFLIGHT];
    unsigned nbufs = 0;
    dp_chunk *lead = NULL;
    dp_chunk *k;
    while (x->issued < x->len && (k = free_chunk(x))) {
        chunk_prepare(x, c, k, bufs, &nbufs);
        if (!lead)
            lead = k;
        lead->batch |= 1u << (k - x->chunks);
    }
    if (!lead)
        return;
    int r = uv_write(&lead->req, (uv_stream_t *)&c->tcp, bufs, nbufs, on_chunks_written);
    if (r < 0) {
        cconn_fail(c, FX_ECONN, "cannot write to %s: %s", c->name, uv_strerror(r));
        return;
    }
    x->writes++;
    x->e->stats.request_writes++;
    x->e->stats.requests_sent += (uint64_t)__builtin_popcount(lead->batch);
}

/* ---- replies coming in ---------------------------------------------------------------- */

static void on_ready(dp_cconn *c)
{
    c->state = C_READY;
    dp_xfer *x, *tmp;
    DL_FOREACH_SAFE2(c->xfers, x, tmp, cnext) {
        xfer_pump(x);
        if (c->closing)
            return;
    }
}

static void chunk_done(dp_cconn *c)
{
    dp_chunk *k = c->fifo_head;
    c->fifo_head = k->fnext;
    if (!c->fifo_head)
        c->fifo_tail = NULL;
    k->waiting = false;
    dp_xfer *x = k->x;
    x->done += k->len;
    if (x->done == x->len)
        xfer_finish(x, 0, "");
    else
        xfer_pump(x);
}

/* The detail text is the peer's: keep it printable for logs. */
static const char *clean_detail(dp_cconn *c)
{
    c->detail[c->cur.len] = 0;
    for (uint32_t i = 0; i < c->cur.len; i++)
        if (c->detail[i] < 0x20 || c->detail[i] > 0x7e)
            c->detail[i] = '?';
    return c->detail;
}

static void on_refusal(dp_cconn *c)
{
    const char *why = clean_detail(c);
    char detail[DP_DETAIL_LEN];
    if (c->cur.op == DP_HELLO_REFUSED) {
        snprintf(detail, sizeof detail, "%s refused our hello: %s", c->name, why);
        FX_LOG(WARN, "data plane: %s", detail);
        cconn_close(c, NULL, 0, NULL, c->cur.status, detail);
        return;
    }
    dp_chunk *k = c->fifo_head;
    snprintf(detail, sizeof detail, "%s refused %s of [%llu, +%u): %s", c->name,
             k->x->pull ? "a read" : "a write", (unsigned long long)c->cur.offset, k->len, why);
    FX_LOG(WARN, "data plane: %s", detail);
    char others[DP_DETAIL_LEN];
    snprintf(others, sizeof others, "connection to %s closed: it refused another transfer",
             c->name);
    cconn_close(c, k->x, c->cur.status, detail, FX_ECONN, others);
}

/* A reply while the handshake runs: HELLO_CHALLENGE after our HELLO,
 * HELLO_OK after our proof, or a refusal of either. */
static void on_handshake_reply(dp_cconn *c)
{
    const dp_hdr *h = &c->cur;
    uint8_t want = c->state == C_HELLO ? DP_HELLO_CHALLENGE : DP_HELLO_OK;
    if (h->id != c->hs_id || (h->op != want && h->op != DP_HELLO_REFUSED)) {
        cconn_fail(c, FX_EPROTO, "%s answered our %s with %s (id %llu)", c->name,
                   c->state == C_HELLO ? "hello" : "proof", dp_op_name(h->op),
                   (unsigned long long)h->id);
    } else if (h->op == DP_HELLO_CHALLENGE) {
        c->rx = CRX_CHALLENGE;
    } else if (h->op == DP_HELLO_OK) {
        on_ready(c);
    } else if (h->len) {
        c->rx = CRX_DETAIL;
    } else {
        on_refusal(c);
    }
}

static void on_chunk_reply(dp_cconn *c)
{
    const dp_hdr *h = &c->cur;
    dp_chunk *k = c->fifo_head;
    if (!k) {
        cconn_fail(c, FX_EPROTO, "%s sent %s with no request outstanding", c->name,
                   dp_op_name(h->op));
        return;
    }
    dp_xfer *x = k->x;
    uint8_t want = x->pull ? DP_READ_DATA : DP_WRITE_ACK;
    uint64_t off = (x->pull ? x->src : x->tgt) + k->off;
    if (h->op != want || h->id != k->id || h->offset != off ||
        (h->status == 0 && h->op == DP_READ_DATA && h->len != k->len)) {
        cconn_fail(c, FX_EPROTO, "%s sent %s (id %llu, offset %llu, len %u) out of step", c->name,
                   dp_op_name(h->op), (unsigned long long)h->id, (unsigned long long)h->offset,
                   h->len);
    } else if (h->status < 0) {
        if (h->len)
            c->rx = CRX_DETAIL;
        else
            on_refusal(c);
    } else if (h->op == DP_READ_DATA) {
        c->rx = CRX_PAYLOAD;
        c->dst = x->e->seg_base + x->tgt + k->off;
    } else {
        chunk_done(c);
    }
}

static void on_header(dp_cconn *c)
{
    dp_hdr_decode(c->hbuf, &c->cur);
    int r = dp_hdr_check(&c->cur, DP_DIR_REPLY);
    if (r < 0) {
        cconn_fail(c, FX_EPROTO, "%s sent a malformed header (op %u, len %u, status %d)", c->name,
                   c->cur.op, c->cur.len, c->cur.status);
        return;
    }
    if (c->state == C_HELLO || c->state == C_PROOF)
        on_handshake_reply(c);
    else
        on_chunk_reply(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    dp_cconn *c = h->data;
    switch (c->rx) {
    case CRX_HDR:
        *buf = uv_buf_init((char *)c->hbuf + c->got, DP_HDR_LEN - c->got);
        break;
    case CRX_PAYLOAD:
        *buf = uv_buf_init((char *)c->dst + c->got, c->cur.len - c->got);
        break;
    case CRX_DETAIL:
        *buf = uv_buf_init(c->detail + c->got, c->cur.len - c->got);
        break;
    case CRX_CHALLENGE:
        *buf = uv_buf_init((char *)c->challenge + c->got, c->cur.len - c->got);
        break;
    }
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    dp_cconn *c = s->data;
    if (n < 0) {
        cconn_fail(c, FX_ECONN, "connection to %s lost: %s", c->name,
                   n == UV_EOF ? "the peer hung up" : uv_strerror((int)n));
        return;
    }
    if (n == 0)
        return;
    c->got += (uint32_t)n;
    uint32_t want = c->rx == CRX_HDR ? DP_HDR_LEN : c->cur.len;
    if (c->got < want)
        return;
    enum crx rx = c->rx;
    c->got = 0;
    c->rx = CRX_HDR;
    if (rx == CRX_HDR)
        on_header(c);
    else if (rx == CRX_DETAIL)
        on_refusal(c);
    else if (rx == CRX_CHALLENGE)
        on_challenge(c);
    else
        chunk_done(c);
}

/* ---- starting, timing out, closing --------------------------------------------------- */

int dp_transfer(dp_engine *e, uint32_t peer_node, const char *peer_addr, bool peer_is_source,
                uint64_t src_offset, uint64_t target_offset, uint64_t len, uint32_t timeout_ms,
                dp_done_fn cb, void *ud)
{
    if (!e || !cb || !peer_addr || strlen(peer_addr) >= DP_ADDR_MAX ||
        config_parse_hostport(peer_addr, NULL, 0, NULL) < 0)
        return FX_EINVAL;
    if (e->closing)
        return FX_ECONN;
    if (!e->have_identity)
        return FX_ESTALE;
    uint64_t local = peer_is_source ? target_offset : src_offset;
    if (!dp_range_ok(e->seg_size, local, len)) {
        FX_LOG(WARN, "data plane: transfer with peer %u: our range [%llu, +%llu) is outside "
                     "the segment (%llu bytes)", peer_node, (unsigned long long)local,
               (unsigned long long)len, (unsigned long long)e->seg_size);
        return FX_EINVAL;
    }
    dp_xfer *x = calloc(1, sizeof *x);
    if (!x)
        return FX_ENOMEM;
    x->e = e;
    x->peer_node = peer_node;
    snprintf(x->addr, sizeof x->addr, "%s", peer_addr);
    x->pull = peer_is_source;
    x->src = src_offset;
    x->tgt = target_offset;
    x->len = len;
    x->timeout_ms = timeout_ms;
    uint64_t now = uv_now(e->loop);
    x->deadline = timeout_ms ? now + timeout_ms : DP_NO_DEADLINE;
    x->cb = cb;
    x->ud = ud;
    x->list = &e->queued;
    DL_APPEND2(e->queued, x, eprev, enext);
    dp_engine_schedule(e, now);
    return 0;
}

static void start_one(dp_engine *e, dp_xfer *x)
{
    DL_DELETE2(e->queued, x, eprev, enext);
    x->list = &e->xfers;
    DL_APPEND2(e->xfers, x, eprev, enext);
    if (x->len == 0) {
        xfer_finish(x, 0, "");
        return;
    }
    char err[DP_DETAIL_LEN];
    dp_cconn *c = pick_conn(e, x, err, sizeof err);
    if (!c) {
        FX_LOG(INFO, "data plane: %s", err);
        xfer_finish(x, FX_ECONN, err);
        return;
    }
    x->c = c;
    DL_APPEND2(c->xfers, x, cprev, cnext);
    c->nxfers++;
    xfer_pump(x);
}

static void time_out(dp_xfer *x)
{
    char detail[DP_DETAIL_LEN], others[DP_DETAIL_LEN];
    dp_cconn *c = x->c;
    snprintf(detail, sizeof detail,
             "%s of %llu bytes with peer %u (%s) timed out after %u ms (%llu bytes done)",
             x->pull ? "pull" : "push", (unsigned long long)x->len, x->peer_node, x->addr,
             x->timeout_ms, (unsigned long long)x->done);
    FX_LOG(INFO, "data plane: %s", detail);
    if (!c) {
        xfer_finish(x, FX_ETIMEDOUT, detail);
        return;
    }
    snprintf(others, sizeof others, "connection to %s closed: another transfer on it timed out",
             c->name);
    cconn_close(c, x, FX_ETIMEDOUT, detail, FX_ECONN, others);
}

/* Callbacks may change every list: after each step, look again from the start. */
static uint64_t expire(dp_engine *e, uint64_t now)
{
    dp_xfer *x;
again:
    DL_FOREACH2(e->xfers, x, enext) {
        if (x->deadline <= now) {
            time_out(x);
            if (e->closing)
                return DP_NO_DEADLINE;
            goto again;
        }
    }
    uint64_t soonest = e->queued ? now : DP_NO_DEADLINE;
    DL_FOREACH2(e->xfers, x, enext)
        if (x->deadline < soonest)
            soonest = x->deadline;
    return soonest;
}

uint64_t dp_client_sweep(dp_engine *e, uint64_t now)
{
    /* Only those queued before the sweep: a callback that queues another
     * transfer gets it started on the next round. */
    size_t n = 0;
    dp_xfer *x;
    DL_COUNT2(e->queued, x, n, enext);
    while (n-- && e->queued && !e->closing)
        start_one(e, e->queued);
    if (e->closing)
        return DP_NO_DEADLINE;
    return expire(e, now);
}

void dp_client_close_all(dp_engine *e, int status, const char *detail)
{
    size_t n = 0;
    dp_xfer *x;
    DL_COUNT2(e->queued, x, n, enext);
    while (e->peers) {
        dp_peer *p = e->peers;
        dp_cconn *c = NULL;
        for (int i = 0; i < DP_CONNS_PER_PEER && !c; i++)
            c = p->conns[i];
        if (c)
            cconn_close(c, NULL, 0, NULL, status, detail); /* frees p with its last conn */
        else
            peer_drop_if_empty(e, p);
    }
    while (e->xfers)
        xfer_finish(e->xfers, status, detail);
    while (n-- && e->queued)
        xfer_finish(e->queued, status, detail);
}

void dp_client_forget_peer(dp_engine *e, uint32_t node_id)
{
    char detail[DP_DETAIL_LEN];
    snprintf(detail, sizeof detail, "peer %u left the cluster", node_id);
    dp_peer *p, *ptmp;
    DL_FOREACH_SAFE(e->peers, p, ptmp) {
        if (p->node != node_id)
            continue;
        for (int i = 0; i < DP_CONNS_PER_PEER; i++) {
            /* Closing the last connection frees p: look it up afresh. */
            dp_cconn *c = p->conns[i];
            if (c) {
                FX_LOG(INFO, "data plane: closing %s: %s", c->name, detail);
                bool last = true;
                for (int j = 0; j < DP_CONNS_PER_PEER; j++)
                    if (j != i && p->conns[j])
                        last = false;
                cconn_close(c, NULL, 0, NULL, FX_ECONN, detail);
                if (last)
                    break;
            }
        }
    }
    /* Transfers not started yet: fail them before they connect. */
    dp_xfer *x;
again:
    DL_FOREACH2(e->queued, x, enext) {
        if (x->peer_node == node_id) {
            xfer_finish(x, FX_ECONN, detail);
            goto again;
        }
    }
}
