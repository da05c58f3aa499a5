/*
 * http.h - the master's optional HTTP endpoint (libmicrohttpd): GET /metrics
 * (Prometheus text, metrics_text.c), /api/v1/cluster (JSON, cluster_json.c)
 * and the web page at / (web_page.c).
 *
 * libmicrohttpd serves from its own thread; the loop thread builds the
 * /metrics and /api/v1/cluster snapshots under a mutex at the sweep (100 ms)
 * after a request asked for one, so the HTTP thread never reads loop-owned
 * state and a master nobody scrapes formats nothing.
 */
#ifndef FX_MASTER_HTTP_H
#define FX_MASTER_HTTP_H

struct master;

/* Starts serving on "HOST:PORT" (a name, looked up blocking the thread, an
 * IPv4 or an [IPv6] literal). Returns 0, a negative errno, or a UV_EAI_* code
 * for a name that does not resolve (logged, naming the address). */
int http_start(struct master *m, const char *addr);
/* The bound port (0 without HTTP). */
int http_port(const struct master *m);
/* Rebuilds the snapshots if a request waits for them (loop thread). */
void http_publish(struct master *m);
/* Stops the server (NULL-safe on a master without HTTP). */
void http_stop(struct master *m);

#endif
