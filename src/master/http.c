/*
 * http.c - the master's HTTP endpoint over libmicrohttpd (see http.h):
 * /metrics (metrics_text.c), /api/v1/cluster (cluster_json.c) and the web
 * page (web_page.c). Only GET and HEAD; the page may load nothing from
 * elsewhere (Content-Security-Policy default-src 'self').
 *
 * libmicrohttpd polls with epoll on its own thread, so thousands of open
 * connections do not stop it answering (select() ends at fd 1023). It holds
 * at most max_connections at once and closes a connection idle for
 * handshake_timeout, rounded up to whole seconds; what it reports goes to
 * our log, rate-limited. The cap is counted here (its accept policy and
 * connection notifications) rather than left to its own limit, which stops
 * accepting and leaves the next peers waiting in the listen queue: like the
 * other listeners, the one over the cap is accepted and closed at once.
 */
#include "master/http.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "master/master.h"
#include "net/addr.h"
#include "master/cluster_json.h"
#include "master/metrics_text.h"
#include "master/web_page.h"

typedef struct http_state {
    struct MHD_Daemon *daemon;
    int port;             /* the bound port */
    pthread_mutex_t lock; /* guards the snapshots and the build requests */
    pthread_cond_t built; /* broadcast after each build */
    char *metrics;        /* /metrics */
    char *cluster;        /* /api/v1/cluster */
    bool wanted;          /* a request waits for a build */
    uint64_t builds;      /* builds so far */
    unsigned max_conns;   /* max_connections */
    unsigned open_conns;  /* libmicrohttpd's thread only: connections it holds */
} http_state;

/* Copies a snapshot built after the request came: the loop builds on demand
 * (next sweep, within 100 ms), so a master nobody scrapes formats nothing.
 * Past HTTP_FRESH_WAIT_MS (a stalled loop) the last one is served. */
#define HTTP_FRESH_WAIT_MS 1000

static char *snapshot_copy(http_state *hs, char *const *which)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += HTTP_FRESH_WAIT_MS / 1000;
    pthread_mutex_lock(&hs->lock);
    uint64_t need = hs->builds + 1;
    hs->wanted = true;
    while (hs->builds < need &&
           pthread_cond_timedwait(&hs->built, &hs->lock, &until) != ETIMEDOUT) {
    }
    char *body = strdup(*which ? *which : "");
    pthread_mutex_unlock(&hs->lock);
    return body;
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned code, const char *type,
                               struct MHD_Response *r)
{
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Content-Security-Policy", "default-src 'self'");
    enum MHD_Result ret = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result respond_text(struct MHD_Connection *conn, unsigned code, const char *type,
                                    char *body)
{
    if (!body)
        return MHD_NO;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, "Allow", "GET, HEAD"); /* RFC 9110 §15.5.6 */
    return respond(conn, code, type, r);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_len, void **con_cls)
{
    (void)version;
    (void)upload;
    (void)upload_len;
    (void)con_cls;
    http_state *hs = cls;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
                            strdup("only GET and HEAD\n"));
    if (strcmp(url, "/metrics") == 0)
        return respond_text(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
                            snapshot_copy(hs, &hs->metrics));
    if (strcmp(url, "/api/v1/cluster") == 0)
        return respond_text(conn, MHD_HTTP_OK, "application/json",
                            snapshot_copy(hs, &hs->cluster));
    web_asset a;
    if (web_asset_find(url, &a))
        return respond(conn, MHD_HTTP_OK, a.content_type,
                       MHD_create_response_from_buffer(a.len, (void *)a.data,
                                                       MHD_RESPMEM_PERSISTENT));
    return respond_text(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8",
                        strdup("not found: try /, /metrics or /api/v1/cluster\n"));
}

/* libmicrohttpd's own messages (accept errors, for one), on its thread. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = 0;
    FX_LOG_LIMITED(WARN, "master HTTP: %s", msg);
}

/* Accept policy (libmicrohttpd's thread): refuses a peer while the cap is full. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)addrlen;
    http_state *hs = cls;
    if (hs->open_conns < hs->max_conns)
        return MHD_YES;
    char ip[ADDR_TEXT_MAX] = "?";
    if (addr)
        addr_format(addr, ip, sizeof ip);
    FX_LOG_LIMITED(WARN, "master HTTP: %u connections open, its cap (max_connections); "
                   "closing the new one from %s", hs->open_conns, ip);
    return MHD_NO;
}

/* Connection notifications (libmicrohttpd's thread): the count on_accept checks. */
static void on_connection_change(void *cls, struct MHD_Connection *conn, void **socket_context,
                                 enum MHD_ConnectionNotificationCode toe)
{
    (void)conn;
    (void)socket_context;
    http_state *hs = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED)
        hs->open_conns++;
    else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && hs->open_conns > 0)
        hs->open_conns--;
}

static void publish(master *m, http_state *hs);

int http_start(master *m, const char *addr)
{
    struct sockaddr_storage sa;
    char why[256];
    int r = addr_resolve(m->loop, addr, &sa, why, sizeof why); /* at startup: may block */
    if (r < 0) {
        FX_LOG(ERROR, "http: %s", why);
        return r;
    }
    http_state *hs = calloc(1, sizeof *hs);
    if (!hs)
        return -ENOMEM;
    pthread_mutex_init(&hs->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&hs->built, &ca);
    pthread_condattr_destroy(&ca);
    hs->max_conns = m->cfg.max_connections;
    uint64_t idle_s = (m->cfg.handshake_timeout_ms + 999) / 1000;
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (sa.ss_family == AF_INET6)
        flags |= MHD_USE_DUAL_STACK; /* IPv6; "[::]" takes IPv4 too, as the other listeners */
    /* Its own limit one above ours, never reached: on_accept refuses first. */
    hs->daemon = MHD_start_daemon(
        flags, (uint16_t)addr_port((struct sockaddr *)&sa), on_accept, hs, on_request, hs,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_SOCK_ADDR, &sa,
        MHD_OPTION_CONNECTION_LIMIT, hs->max_conns + 1, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection_change, hs, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)(idle_s > UINT32_MAX ? UINT32_MAX : idle_s), MHD_OPTION_END);
    if (!hs->daemon) {
        FX_LOG(ERROR, "http: cannot listen on %s", addr);
        pthread_cond_destroy(&hs->built);
        pthread_mutex_destroy(&hs->lock);
        free(hs);
        return -EADDRINUSE;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(hs->daemon, MHD_DAEMON_INFO_BIND_PORT);
    hs->port = info ? (int)info->port : (int)addr_port((struct sockaddr *)&sa);
    m->http = hs;
    publish(m, hs);
    FX_LOG(INFO, "HTTP on %s (port %d): /, /metrics, /api/v1/cluster", addr, hs->port);
    return 0;
}

int http_port(const master *m)
{
    const http_state *hs = m->http;
    return hs ? hs->port : 0;
}

static void publish(master *m, http_state *hs)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return;
    bool serving = master_serving(m); /* one answer for both documents */
    metrics_text_write(f, m, serving);
    if (fclose(f) != 0) {
        free(buf);
        return;
    }
    char *cluster = cluster_json_build(m, serving);
    pthread_mutex_lock(&hs->lock);
    free(hs->metrics);
    hs->metrics = buf;
    if (cluster) { /* out of memory: the last one stays */
        free(hs->cluster);
        hs->cluster = cluster;
    }
    hs->builds++;
    pthread_cond_broadcast(&hs->built);
    pthread_mutex_unlock(&hs->lock);
}

void http_publish(master *m)
{
    http_state *hs = m->http;
    if (!hs)
        return;
    pthread_mutex_lock(&hs->lock);
    bool wanted = hs->wanted;
    hs->wanted = false;
    pthread_mutex_unlock(&hs->lock);
    if (wanted)
        publish(m, hs);
}

void http_stop(master *m)
{
    http_state *hs = m->http;
    if (!hs)
        return;
    MHD_stop_daemon(hs->daemon);
    pthread_cond_destroy(&hs->built);
    pthread_mutex_destroy(&hs->lock);
    free(hs->metrics);
    free(hs->cluster);
    free(hs);
    m->http = NULL;
}
