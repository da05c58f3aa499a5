/*
 * cluster.h - the files of a local cluster's directory, shared by `fluxon up`
 * (which creates them) and `fluxon down` (which removes them).
 *
 *   DIR/master.pid  master.addr  master.log
 *   DIR/owner0.pid  owner0.yaml  owner0.log  owner0.sock
 *
 * Pid files name the running daemons; master.addr is the master's
 * "HOST:PORT\n", written by the master once it listens; logs are kept after
 * `down` for a post-mortem.
 */
#ifndef FX_CLI_CLUSTER_H
#define FX_CLI_CLUSTER_H

#include <stddef.h>

#define CLUSTER_NAME "fluxon"
#define CLUSTER_MAX_OWNERS 256

/* Writes "DIR/NAME" into out. Returns 0, or -ENAMETOOLONG. */
int cluster_path(char *out, size_t cap, const char *dir, const char *name);

/* Lists the entries of dir named PREFIX*SUFFIX, sorted, into names (each
 * malloc'd; free with cluster_names_free). Returns the count (at most max)
 * or -errno (-ENOENT when dir is absent). */
int cluster_list(const char *dir, const char *prefix, const char *suffix, char **names,
                 size_t max);
void cluster_names_free(char **names, size_t n);

#endif
