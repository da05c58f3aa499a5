/*
 * dp_engine.c - the data-plane engine: its listener, identity and pair-key
 * lookup, forgetting a peer that left, the one timer that drives queued
 * starts, timeouts and lingers, socket tuning, and the close/free sequence
 * (see dataplane.h). The inbound protocol lives in dp_server.c, the outbound
 * one in dp_client.c.
 */
#include "owner/dataplane/dp_internal.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "fluxon/fluxon.h"
#include "net/addr.h"

/* ---- helpers shared with the two sides --------------------------------------- */

/* Setting SO_RCVBUF turns receive autotuning off, so the size must be large:
 * DP_SOCK_BUF matches net.core.rmem_max on these machines (DESIGN §9). */
void dp_tune_socket(uv_tcp_t *t)
{
    uv_os_fd_t fd;
    uv_tcp_nodelay(t, 1);
    if (uv_fileno((uv_handle_t *)t, &fd) != 0)
        return;
    static const char cc[] = "reno";
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, sizeof cc - 1) < 0)
        FX_LOG(DEBUG, "data plane: TCP_CONGESTION reno refused: %s", strerror(errno));
    int sz = DP_SOCK_BUF;
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz) < 0)
        FX_LOG(DEBUG, "data plane: socket buffers of %d bytes refused: %s", sz, strerror(errno));
}

/* ---- the timer ------------------------------------------------------------- */

static void on_timer(uv_timer_t *t)
{
    dp_engine *e = t->data;
    e->timer_due = DP_NO_DEADLINE;
    uint64_t now = uv_now(e->loop);
    uint64_t next = dp_client_sweep(e, now);
    if (e->closing)
        return;
    uint64_t s = dp_server_sweep(e, now);
    dp_engine_schedule(e, s < next ? s : next);
}

void dp_engine_schedule(dp_engine *e, uint64_t due)
{
    if (e->closing || due >= e->timer_due)
        return;
    uint64_t now = uv_now(e->loop);
    e->timer_due = due;
    uv_timer_start(&e->timer, on_timer, due > now ? due - now : 0, 0);
}

/* ---- lifetime -------------------------------------------------------------- */

void dp_engine_handle_closed(dp_engine *e)
{
    if (--e->handles == 0 && e->free_requested)
        free(e);
}

static void on_own_handle_closed(uv_handle_t *h)
{
    dp_engine_handle_closed(h->data);
}

static void on_connection(uv_stream_t *server, int status)
{
    dp_engine *e = server->data;
    if (status < 0) {
        FX_LOG(WARN, "data plane: accept failed: %s", uv_strerror(status));
        return;
    }
    dp_server_accept(e);
}

static int engine_listen(dp_engine *e, const struct sockaddr *sa)
{
    int r = uv_tcp_init_ex(e->loop, &e->listener, sa->sa_family);
    if (r < 0)
        return r;
    e->listener.data = e;
    e->handles++;
    /* Accepted sockets inherit the buffer sizes, which fixes the window
     * scale during the handshake; dp_server_accept() tunes them again. */
    dp_tune_socket(&e->listener);
    r = uv_tcp_bind(&e->listener, sa, 0);
    if (r == 0)
        r = uv_listen((uv_stream_t *)&e->listener, 512, on_connection);
    return r;
}

dp_engine *dp_engine_new(uv_loop_t *loop, uint8_t *seg_base, uint64_t seg_size,
                         const char *listen_addr, int *err)
{
    struct sockaddr_storage sa;
    int r = addr_resolve(loop, listen_addr, &sa, NULL, 0); /* at startup: may block on a name */
    if (r < 0) {
        *err = r;
        return NULL;
    }
    if (auth_init() < 0) { /* nonces and proofs need libsodium */
        *err = -EIO;
        return NULL;
    }
    dp_engine *e = calloc(1, sizeof *e);
    if (!e) {
        *err = -ENOMEM;
        return NULL;
    }
    e->loop = loop;
    e->seg_base = seg_base;
    e->seg_size = seg_size;
    e->timer_due = DP_NO_DEADLINE;
    e->next_id = 1;
    e->max_sconns = DP_DEFAULT_MAX_PEER_CONNS;
    e->hello_ms = DP_DEFAULT_HELLO_MS;
    uv_timer_init(loop, &e->timer);
    e->timer.data = e;
    e->handles++;
    r = engine_listen(e, (const struct sockaddr *)&sa);
    if (r < 0) {
        *err = r;
        dp_engine_free(e); /* released once the loop closed its handles */
        return NULL;
    }
    return e;
}

int dp_engine_address(const dp_engine *e, struct sockaddr_storage *out)
{
    int len = sizeof *out;
    return uv_tcp_getsockname(&e->listener, (struct sockaddr *)out, &len);
}

int dp_engine_port(const dp_engine *e)
{
    struct sockaddr_storage ss;
    if (dp_engine_address(e, &ss) != 0)
        return -1;
    return addr_port((struct sockaddr *)&ss);
}

void dp_engine_set_identity(dp_engine *e, uint32_t node_id, uint64_t tomb_tag)
{
    bool changed = e->have_identity && (e->node_id != node_id || e->tomb_tag != tomb_tag);
    e->have_identity = true;
    e->node_id = node_id;
    e->tomb_tag = tomb_tag;
    if (changed && !e->closing) {
        FX_LOG(INFO, "data plane: identity changed (node %u, tomb %llu); reconnecting peers",
               node_id, (unsigned long long)tomb_tag);
        dp_server_close_all(e);
        dp_client_close_all(e, FX_ESTALE, "the data-plane identity changed (re-registered)");
    }
}

void dp_engine_set_limits(dp_engine *e, unsigned max_conns, uint64_t hello_ms)
{
    e->max_sconns = max_conns ? max_conns : 1;
    e->hello_ms = hello_ms ? hello_ms : 1;
}

void dp_engine_set_write_hook(dp_engine *e, dp_write_fn fn, void *ud)
{
    e->on_write = fn;
    e->on_write_ud = ud;
}

void dp_engine_set_peer_keys(dp_engine *e, dp_peer_key_fn fn, void *ud)
{
    e->peer_key = fn;
    e->peer_key_ud = ud;
}

bool dp_peer_key(dp_engine *e, uint32_t node_id, uint64_t *tomb_tag, auth_key *key)
{
    if (e->peer_key && e->peer_key(e->peer_key_ud, node_id, tomb_tag, key))
        return true;
    auth_key_wipe(key);
    return false;
}

void dp_engine_forget_peer(dp_engine *e, uint32_t node_id)
{
    dp_client_forget_peer(e, node_id);
    dp_server_forget_peer(e, node_id);
}

void dp_engine_stats(const dp_engine *e, dp_stats *out)
{
    *out = e->stats;
}

void dp_engine_close(dp_engine *e)
{
    if (!e || e->closing)
        return;
    /* Closing first: callbacks that run below cannot start new transfers. */
    e->closing = true;
    dp_client_close_all(e, FX_ECONN, "the data plane is shutting down");
    dp_server_close_all(e);
    uv_close((uv_handle_t *)&e->timer, on_own_handle_closed);
    if (e->listener.data)
        uv_close((uv_handle_t *)&e->listener, on_own_handle_closed);
}

void dp_engine_free(dp_engine *e)
{
    if (!e)
        return;
    dp_engine_close(e);
    e->free_requested = true;
    if (e->handles == 0)
        free(e);
}
