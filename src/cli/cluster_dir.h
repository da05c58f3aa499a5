/*
 * cluster_dir.h - the directory of a local cluster, as `fluxon up` and
 * `fluxon down` share it: its layout, its lock, and the pid files that name
 * its daemons.
 *
 *   DIR/master.pid  master.addr  master.http  master.log      (one master)
 *   DIR/owner<i>.pid  owner<i>.yaml  owner<i>.log  owner<i>.sock   (i = 0..N-1)
 *   DIR/ssd<i>/      owner i's SSD tier, with --ssd SIZE (large_file_paths:
 *                    [DIR/ssd<i>], large_limit_size: [SIZE])
 *
 * With --masters M (M >= 2), standby masters on a local etcd instead of the
 * one master's files:
 *   DIR/etcd.pid  etcd.log  etcd.data/   the etcd member and its data
 *   DIR/master<j>.pid  master<j>.addr  master<j>.http  master<j>.log  (j = 0..M-1)
 *
 * DIR/cluster.lock  held by `up` and `down` while they work (it stays)
 *
 * Pid files name the running daemons; master.addr (master<j>.addr) is a
 * master's "HOST:PORT\n", written by the master once it listens (a standby
 * too), master.http (master<j>.http) its HTTP endpoint's, written just before; logs stay after `down` for a post-mortem, etcd.data does not. A pid
 * file outlives its daemon and pids are reused, so a pid counts as this
 * directory's daemon only when it runs a Fluxon daemon (or etcd, for
 * etcd.pid) that was started with this directory's file as an argument.
 */
#ifndef FX_CLI_CLUSTER_DIR_H
#define FX_CLI_CLUSTER_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The cluster_name of every local cluster (and so the name of its SSD
 * tiers' directories). */
#define CLUSTER_NAME "fluxon"
/* The most entries of one kind (owner pid files, SSD directories) listed. */
#define CLUSTER_MAX_OWNERS 256
/* How long stopping the daemons (`down`, or `up` undoing a failed start)
 * waits for them after SIGKILL. */
#define CLUSTER_KILL_MS 5000
/* The etcd member's pid file and data directory (--masters M >= 2). */
#define CLUSTER_ETCD_PID "etcd.pid"
#define CLUSTER_ETCD_DATA "etcd.data"

/* Write "DIR/NAME" and "DIR/owner<i>.EXT" into out. Return 0, or
 * -ENAMETOOLONG. */
int cluster_path(char *out, size_t cap, const char *dir, const char *name);
int cluster_owner_path(char *out, size_t cap, const char *dir, size_t i, const char *ext);

/* Lists the entries of dir named PREFIX*SUFFIX, sorted, into names (each
 * malloc'd; free with cluster_names_free). Returns the count (at most max)
 * or -errno (-ENOENT when dir is absent). */
int cluster_list(const char *dir, const char *prefix, const char *suffix, char **names,
                 size_t max);
void cluster_names_free(char **names, size_t n);

/* Removes DIR/PREFIX*SUFFIX (a missing file is fine). */
void cluster_remove_matching(const char *dir, const char *prefix, const char *suffix);

/* Removes the SSD tier files an owner of this cluster created under
 * DIR/ssd<i>: <cluster>_cluster_kv_ssd_storage/<instance>/{lock,shard-NNN},
 * then the directories, each only when it is empty (nothing else is
 * touched). */
void cluster_remove_ssd_dirs(const char *dir);

/* Removes DIR/NAME and everything under it, symbolic links themselves and
 * not what they point to (a missing NAME is fine). For etcd's data. */
void cluster_remove_tree(const char *dir, const char *name);

/* True when pid, a running daemon, is the one that DIR/pidname (master.pid,
 * master<j>.pid, owner<i>.pid, etcd.pid) stands for: started with this
 * directory's file as an argument (a master's --port-file DIR/master.addr
 * or DIR/master<j>.addr, an owner's --config DIR/owner<i>.yaml, etcd's
 * --data-dir DIR/etcd.data). A reused pid, even of another cluster's
 * daemon, is not. */
bool cluster_started_for_dir(pid_t pid, const char *dir, const char *pidname);

/* The pid in DIR/NAME, 0 when there is none or it names no running daemon
 * of the kind NAME is for (etcd for etcd.pid, else a Fluxon daemon): a
 * stale file. */
pid_t cluster_pidfile_daemon(const char *dir, const char *name);

/* The pid in DIR/NAME when it names this directory's running daemon, else 0. */
pid_t cluster_live_daemon(const char *dir, const char *name);

/* Holds DIR/cluster.lock while `up` or `down` works in DIR, so that two of
 * them never interleave (two `up`s would both find no cluster and start two).
 * cmd ("up", "down") names the command in messages. create: make the file
 * when it is missing (`up`); else a missing file means no `up` of this
 * version ever ran there, and nothing is locked (0 returned). Waits while
 * another process holds the lock. Returns 0 with the lock held (or not, see
 * create), or -1 after saying why on stderr. */
int cluster_lock(const char *cmd, const char *dir, bool create);

/* Releases the lock of cluster_lock (nothing when none is held). A forked
 * child that does not exec (`up`'s ping probe) calls it first thing: it
 * closes only the child's copy, and a probe that outlives a killed `up`
 * cannot keep the directory locked. */
void cluster_unlock(void);

#endif
