/*
 * http.h - the master's optional HTTP endpoint (libmicrohttpd): GET /metrics
 * answers Prometheus text with per-owner capacity, usage and hits.
 *
 * libmicrohttpd serves from its own thread; the loop thread publishes a text
 * snapshot under a mutex every sweep (100 ms), so the HTTP thread never reads
 * loop-owned state.
 */
#ifndef FX_MASTER_HTTP_H
#define FX_MASTER_HTTP_H

struct master;

/* Starts serving on "HOST:PORT" (a name, looked up blocking the thread, an
 * IPv4 or an [IPv6] literal). Returns 0, a negative errno, or a UV_EAI_* code
 * for a name that does not resolve (logged, naming the address). */
int http_start(struct master *m, const char *addr);
/* Rebuilds the snapshot (loop thread). */
void http_publish(struct master *m);
/* Stops the server (NULL-safe on a master without HTTP). */
void http_stop(struct master *m);

#endif
