/*
 * cluster_json.h - the master's /api/v1/cluster: the cluster as JSON, what
 * the web page (web_page.c) draws every 2 s.
 */
#ifndef FX_MASTER_CLUSTER_JSON_H
#define FX_MASTER_CLUSTER_JSON_H

#include <stdbool.h>

struct master;

/* The document as a malloc'd string (loop thread), or NULL when out of
 * memory; serving: master_serving(m), as "leading". */
char *cluster_json_build(const struct master *m, bool serving);

#endif
