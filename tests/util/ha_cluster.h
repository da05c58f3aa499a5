/*
 * ha_cluster.h - a cluster with standby masters for failover tests and
 * benchmarks: a real etcd (etcd_proc.h), 1..HA_MAX_MASTERS fluxon-master
 * processes campaigning on it (--etcd), and owners that find the leader
 * through etcd (YAML master: 'etcd://HOST:PORT', cluster_start_owners).
 *
 * Masters listen on 127.0.0.1:0 (a new port each start: owners follow the
 * leader key, not an address), with their port file and log in the
 * harness's directory: DIR/master<i>.log for master i's running
 * incarnation, DIR/master<i>.<k>.log for its earlier ones. Which master
 * leads is read from etcd, not from logs: the leader key's value names the
 * leader's pid (leader_record.h) and its create_revision is the term.
 *
 * Processes die with the thread that started them (PR_SET_PDEATHSIG), so
 * start, kill and restart them from the main thread. ha_stop() stops the
 * owners, the masters (standbys first) and etcd, checks how they exited and
 * removes the directories; a cluster still up when the program exits (a
 * REQUIRE failed) is killed and its directories removed at exit
 * (testlib.h), so the ha_cluster must stay valid until ha_stop().
 */
#ifndef FX_TESTS_HA_CLUSTER_H
#define FX_TESTS_HA_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cluster.h"
#include "etcd_proc.h"

#define HA_MAX_MASTERS 4
#define HA_MAX_MASTER_ARGS 8
#define HA_CLUSTER_NAME "test" /* the owners' cluster_name (cluster.c) */

typedef struct ha_conf {
    int n_masters;      /* 1..HA_MAX_MASTERS */
    int n_owners;       /* 1..TEST_CLUSTER_MAX_OWNERS */
    uint64_t memory_size;   /* each owner's segment */
    const char *owner_yaml; /* top-level lines for every owner's YAML (NULL: none) */
    /* Extra fluxon-master flags (NULL-terminated, at most HA_MAX_MASTER_ARGS;
     * may be NULL), e.g. "--etcd-lease-ttl", "2s". */
    const char *const *master_args;
    /* "NAME=VALUE" in every master's environment (NULL: none), e.g.
     * "FLUXON_TEST_STALE_LEADER_MS=5000". */
    const char *master_env;
} ha_conf;

typedef struct ha_master {
    pid_t pid;        /* 0 while not running */
    int incarnations; /* started so far; DIR/master<i>.<k>.log for k < incarnations - 1 */
} ha_master;

struct etcd_client;

typedef struct ha_cluster {
    etcd_proc etcd;
    test_cluster owners;
    char dir[256]; /* the masters' logs and port files */
    int n_masters;
    ha_master masters[HA_MAX_MASTERS];
    char master_args[HA_MAX_MASTER_ARGS][128];
    int n_master_args;
    char master_env[128]; /* "" when none */
    char leader_key[300];
    struct etcd_client *etcd_reader; /* reads the leader key (main thread only) */
} ha_cluster;

/* Starts etcd, the masters, waits (up to 15 s) until one of them leads,
 * then the owners, and returns once every owner answers a ping. Returns 0,
 * or -1 after printing why (with the logs), with nothing left running. */
int ha_start(ha_cluster *h, const ha_conf *conf);

/* Which master leads according to etcd: its index, with the term in *term
 * (may be NULL). -1 when the key is absent, etcd did not answer, or the
 * leader's pid is none of ours (*term is then 0, or the foreign term). */
int ha_leader(ha_cluster *h, int64_t *term);

/* Polls etcd every 10 ms until one of our masters leads at a term above
 * above_term, up to timeout_ms. Returns its index (term in *term, may be
 * NULL), or -1 when the time ran out. */
int ha_wait_leader(ha_cluster *h, int64_t above_term, int timeout_ms, int64_t *term);

/* SIGKILL to master i, reaped. Returns 0, or -1 when it is not running. */
int ha_kill_master(ha_cluster *h, int i);

/* Starts master i again (it must not be running): a new incarnation with a
 * new log, the previous kept as DIR/master<i>.<k>.log; waits up to 10 s for
 * its port file (a standby writes it too). Returns 0, or -1 after printing
 * its log; either way ha_stop() is still needed. */
int ha_start_master(ha_cluster *h, int i);

/* Sends sig to master i (SIGSTOP, SIGCONT, ...). Returns 0, or -1 when it is
 * not running. */
int ha_signal_master(ha_cluster *h, int i, int sig);

/* Waits up to timeout_ms for master i to exit and reaps it: *status (may be
 * NULL) is its exit status, or 128 + the signal that killed it. Returns 0,
 * or -1 when it is still running (or was not). A master reaped here is not
 * counted by ha_stop(). */
int ha_wait_master_exit(ha_cluster *h, int i, int timeout_ms, int *status);

/* The path of master i's current log (incarnation -1) or of incarnation k,
 * into buf. */
void ha_master_log(const ha_cluster *h, int i, int k, char *buf, size_t cap);

/* The first line of any owner's log containing both needles (needle2 may
 * be NULL), copied into line (cap bytes). Returns the owner's index, or -1. */
int ha_owner_log_find(const ha_cluster *h, const char *needle1, const char *needle2, char *line,
                      size_t cap);

/* Stops the owners, then the masters (standbys first: no takeover on the
 * way out), then etcd, and removes the directories. Returns 0 when each of
 * them exited cleanly (masters reaped by ha_wait_master_exit or killed by
 * ha_kill_master are not counted), else -1 after printing the logs. */
int ha_stop(ha_cluster *h);

/* Prints the tail of every master's (all incarnations), owner's and etcd's
 * log to stderr. */
void ha_dump_logs(const ha_cluster *h);

#endif
