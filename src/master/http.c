/*
 * http.c - /metrics over libmicrohttpd (see http.h).
 */
#include "master/http.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "master/master.h"
#include "net/addr.h"

typedef struct http_state {
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock; /* guards snapshot */
    char *snapshot;
} http_state;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_len, void **con_cls)
{
    (void)version;
    (void)upload;
    (void)upload_len;
    (void)con_cls;
    http_state *hs = cls;
    if (strcmp(method, "GET") != 0)
        return MHD_NO;
    int code = MHD_HTTP_OK;
    char *body;
    if (strcmp(url, "/metrics") == 0) {
        pthread_mutex_lock(&hs->lock);
        body = strdup(hs->snapshot ? hs->snapshot : "");
        pthread_mutex_unlock(&hs->lock);
    } else {
        code = MHD_HTTP_NOT_FOUND;
        body = strdup("not found: try /metrics\n");
    }
    if (!body)
        return MHD_NO;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
    enum MHD_Result ret = MHD_queue_response(conn, code, r);
    MHD_destroy_response(r);
    return ret;
}

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
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD;
    if (sa.ss_family == AF_INET6)
        flags |= MHD_USE_DUAL_STACK; /* IPv6; "[::]" takes IPv4 too, as the other listeners */
    hs->daemon = MHD_start_daemon(flags, (uint16_t)addr_port((struct sockaddr *)&sa), NULL, NULL,
                                  on_request, hs, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
    if (!hs->daemon) {
        FX_LOG(ERROR, "http: cannot listen on %s", addr);
        pthread_mutex_destroy(&hs->lock);
        free(hs);
        return -EADDRINUSE;
    }
    m->http = hs;
    http_publish(m);
    return 0;
}

void http_publish(master *m)
{
    http_state *hs = m->http;
    if (!hs)
        return;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return;
    fprintf(f, "fluxon_routes %zu\n", m->routes.count);
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp) {
        const char *n = mb->name;
        fprintf(f, "kvcache_segment_capacity_bytes{owner=\"%s\"} %llu\n", n,
                (unsigned long long)range_alloc_capacity(mb->space->ra));
        fprintf(f, "kvcache_segment_used_bytes{owner=\"%s\"} %llu\n", n,
                (unsigned long long)range_alloc_used(mb->space->ra));
        fprintf(f, "kv_ssd_capacity_bytes{owner=\"%s\"} %llu\n", n,
                (unsigned long long)mb->ssd_capacity);
        fprintf(f, "kv_ssd_used_bytes{owner=\"%s\"} %llu\n", n, (unsigned long long)mb->ssd_used);
        fprintf(f, "fluxon_ssd_errors_total{owner=\"%s\"} %llu\n", n,
                (unsigned long long)mb->ssd_errors);
        fprintf(f, "fluxon_hits_total{owner=\"%s\",source=\"memory\"} %llu\n", n,
                (unsigned long long)mb->hits_memory);
        fprintf(f, "fluxon_hits_total{owner=\"%s\",source=\"ssd\"} %llu\n", n,
                (unsigned long long)mb->hits_ssd);
        fprintf(f, "fluxon_misses_total{owner=\"%s\"} %llu\n", n, (unsigned long long)mb->misses);
    }
    if (fclose(f) != 0) {
        free(buf);
        return;
    }
    pthread_mutex_lock(&hs->lock);
    free(hs->snapshot);
    hs->snapshot = buf;
    pthread_mutex_unlock(&hs->lock);
}

void http_stop(master *m)
{
    http_state *hs = m->http;
    if (!hs)
        return;
    MHD_stop_daemon(hs->daemon);
    pthread_mutex_destroy(&hs->lock);
    free(hs->snapshot);
    free(hs);
    m->http = NULL;
}
