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

/* Starts serving on "host:port". Returns 0 or a negative errno. */
int http_start(struct master *m, const char *addr);
/* Rebuilds the snapshot (loop thread). */
void http_publish(struct master *m);
/* Stops the server (NULL-safe on a master without HTTP). */
void http_stop(struct master *m);

#endif
