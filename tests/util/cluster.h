/*
 * cluster.h - real fluxon-master + fluxon-owner processes for integration
 * tests and benchmarks, on a free port in a fresh temporary directory.
 *
 * A cluster is one master and 1..TEST_CLUSTER_MAX_OWNERS owners (or owners
 * only, dialling masters someone else runs: cluster_start_owners). Owner i gets
 * its own YAML (DIR/owner<i>.yaml: node_name owner<i>, client socket
 * DIR/owner<i>.sock, data plane on 127.0.0.1:0) and its log DIR/owner<i>.log.
 * The processes die with the thread that started them (PR_SET_PDEATHSIG) even
 * if the test crashes, so start and restart them from the main thread;
 * cluster_stop() terminates them, checks how they exited, and removes the
 * directory. The master can be killed and started again on the address it
 * first got (cluster_kill_master, cluster_restart_master), so that owners
 * dialling that address find the new one. A cluster the program leaves running when it exits (a REQUIRE
 * failed) is killed and its directory removed at exit (testlib.h), so the
 * test_cluster must stay valid until cluster_stop().
 */
#ifndef FX_TESTS_CLUSTER_H
#define FX_TESTS_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fluxon/fluxon.h"

#define TEST_CLUSTER_MAX_OWNERS 8
/* The most fluxon-master arguments a cluster keeps for restarts (the binary,
 * the harness's own flags and the test's), each shorter than
 * TEST_CLUSTER_ARG_MAX bytes; further test flags are dropped. */
#define TEST_CLUSTER_MAX_MASTER_ARGV 24
#define TEST_CLUSTER_ARG_MAX 300

/* Where a cluster listens and how its members reach each other
 * (cluster_start_addrs). A NULL field keeps the default: the master on
 * 127.0.0.1:0, an owner's data plane on 127.0.0.1:0 with no data_advertise,
 * an owner dialling the address of the master's port file. */
typedef struct cluster_addrs {
    const char *master_listen;                            /* --listen */
    const char *master_host[TEST_CLUSTER_MAX_OWNERS];     /* dialled with the port file's port */
    const char *data_listen[TEST_CLUSTER_MAX_OWNERS];
    const char *data_advertise[TEST_CLUSTER_MAX_OWNERS];
} cluster_addrs;

typedef struct test_cluster {
    char dir[256];
    char socket[320]; /* owner 0's client socket (= sockets[0]) */
    char master_addr[300]; /* what the master's port file says */
    pid_t master_pid;
    pid_t owner_pid; /* owner 0 (= owner_pids[0]); 0 while it is killed */
    int n_owners;
    pid_t owner_pids[TEST_CLUSTER_MAX_OWNERS]; /* 0 while killed */
    char sockets[TEST_CLUSTER_MAX_OWNERS][320];
    bool owner_killed[TEST_CLUSTER_MAX_OWNERS]; /* by cluster_kill_owner() */
    uint64_t memory_size; /* each owner's segment, for restarts */
    uint64_t ssd_size;    /* each owner's SSD tier under dir/ssd<i> (0: none) */
    char secret_file[300]; /* dir/cluster.secret with FX_CLUSTER_SECRET=1, else "" */
    /* Owner i's YAML: master, data_listen, data_advertise ("" leaves it out). */
    char owner_master[TEST_CLUSTER_MAX_OWNERS][300];
    char data_listen[TEST_CLUSTER_MAX_OWNERS][80];
    char data_advertise[TEST_CLUSTER_MAX_OWNERS][80];
    char owner_yaml[512]; /* top-level lines added to each owner's YAML ("" none) */
    /* The master's command line, kept for cluster_restart_master: argv[2] is
     * the --listen value, which a restart replaces by the address first bound. */
    char master_argv[TEST_CLUSTER_MAX_MASTER_ARGV][TEST_CLUSTER_ARG_MAX];
    int master_argc;
    bool master_killed;  /* by cluster_kill_master(), until it is restarted */
    int master_restarts; /* DIR/master.<k>.log is incarnation k's log, k < this */
} test_cluster;

/* cluster_start_n with an SSD tier of ssd_size bytes per owner, in
 * tc->dir/ssd<i> (removed with the directory by cluster_stop). */
int cluster_start_ssd(test_cluster *tc, int n_owners, uint64_t memory_size, uint64_t ssd_size,
                      const char *const *master_args);

/* cluster_start_n with owner_yaml (top-level YAML lines, e.g.
 * "handshake_timeout: 500ms\n"; at most 511 bytes) added to every owner's
 * file, restarts included. */
int cluster_start_yaml(test_cluster *tc, int n_owners, uint64_t memory_size,
                       const char *const *master_args, const char *owner_yaml);

/* cluster_start_ssd with owner_yaml added to every owner's file (as
 * cluster_start_yaml). */
int cluster_start_ssd_yaml(test_cluster *tc, int n_owners, uint64_t memory_size,
                           uint64_t ssd_size, const char *const *master_args,
                           const char *owner_yaml);

/* n_owners owners and no master of the cluster's own: every owner's YAML
 * says master: '<master>' (e.g. "etcd://127.0.0.1:PORT", whose leader the
 * caller runs), with owner_yaml added as in cluster_start_yaml. Returns once
 * every owner answers a ping (0), or -1 as cluster_start_n. The cluster's
 * master functions do not apply (there is none); cluster_stop() stops the
 * owners. */
int cluster_start_owners(test_cluster *tc, int n_owners, uint64_t memory_size, const char *master,
                         const char *owner_yaml);

/* Starts a master and one owner with a memory_size-byte segment. Returns 0, or
 * -1 after printing why (with the logs) to stderr. */
int cluster_start(test_cluster *tc, uint64_t memory_size);
/* The same with extra fluxon-master flags (NULL-terminated, may be NULL). */
int cluster_start_args(test_cluster *tc, uint64_t memory_size, const char *const *master_args);
/* Starts a master (with master_args, NULL-terminated, may be NULL) and
 * n_owners owners (1..TEST_CLUSTER_MAX_OWNERS) of memory_size bytes each, and
 * returns once every owner answers a ping. Returns 0, or -1 after printing why
 * (with the logs) to stderr, with nothing left running. */
int cluster_start_n(test_cluster *tc, int n_owners, uint64_t memory_size,
                    const char *const *master_args);
/* cluster_start_n with the addresses of addrs (may be NULL: the defaults). */
int cluster_start_addrs(test_cluster *tc, int n_owners, uint64_t memory_size,
                        const cluster_addrs *addrs, const char *const *master_args);
/* Runs argv (argv[0] a path, output to log) to its end, up to timeout_ms.
 * Returns its exit status, or -1 when it died by a signal or did not end in
 * time (it is then killed and reaped). */
int cluster_run(char *const argv[], const char *log, int timeout_ms);
/* Starts argv (output to log) in the background; it dies with this thread.
 * Returns its pid or -1. */
pid_t cluster_spawn(char *const argv[], const char *log);
/* cluster_spawn with env ("NAME=VALUE" strings, NULL-terminated; may be
 * NULL) added to this process's environment, replacing a variable of the
 * same name. The strings are not kept after the call. */
pid_t cluster_spawn_env(char *const argv[], const char *const *env, const char *log);
/* Waits up to timeout_ms for a master's port file to hold a whole line and
 * copies it, without the newline, into addr. Returns 0, or -1 when the time
 * ran out or pid (when > 0) exited first (it is left to be reaped). */
int cluster_wait_port_file(const char *path, pid_t pid, char *addr, size_t cap, int timeout_ms);

/* Sends SIGKILL to owner i and reaps it; no clean exit is expected, and
 * cluster_stop() does not count it as a failure. Returns 0, or -1 when i is
 * out of range or the owner is not running. */
int cluster_kill_owner(test_cluster *tc, int i);
/* Starts owner i again (a new process on the same socket path, so a new
 * incarnation for the master) and waits until it answers a ping. An owner
 * still running is killed first. Returns 0, or -1 after printing why (with
 * its log); the cluster stays up either way and cluster_stop() is still
 * needed. */
int cluster_restart_owner(test_cluster *tc, int i);
/* True while owner i's process runs. When it has exited, false, with how
 * (status or signal) written to why (cap bytes; may be NULL); the process
 * is not reaped, so cluster_stop() still reports it. False also for an owner
 * killed by cluster_kill_owner() or out of range. */
bool cluster_owner_running(const test_cluster *tc, int i, char *why, size_t cap);
/* Sends SIGKILL to the master and reaps it; the owners keep running.
 * cluster_stop() does not count it as a failure, and a cluster whose master
 * is killed and not restarted stops only its owners. Returns 0, or -1 when
 * the master is not running. */
int cluster_kill_master(test_cluster *tc);
/* Starts the master again with the same arguments, listening on the same
 * host and port as the first master bound (the host of its --listen, the
 * port of its port file: tc->master_addr), and waits up to 10 s for its port
 * file, which must name tc->master_addr again. A master still running is
 * killed first. The previous incarnation's log is kept as DIR/master.<k>.log
 * (k = 0 for the first master); the new one writes DIR/master.log. Owners
 * are not waited for: they find the new master on their own. Returns 0, or
 * -1 after printing why (with its log); either way the new master, if it
 * runs, is stopped and its exit status checked by cluster_stop(). */
int cluster_restart_master(test_cluster *tc);
/* Stops every owner, then the master (SIGTERM, then SIGKILL after 10 s).
 * Returns 0 when each of them exited cleanly with status 0 (owners killed by
 * cluster_kill_owner() and a master killed by cluster_kill_master(), not
 * restarted, are not counted; a restarted master is), else -1 (and prints
 * their logs). */
int cluster_stop(test_cluster *tc);
/* The node id of each of owners 0..n-1 ("owner<i>" in fx_stat) through
 * client c, into node_of. Returns 0, or -1 when stat fails or an owner is
 * missing (node_of[i] is then 0). */
int cluster_node_ids(fx_client *c, uint32_t *node_of, int n);
/* Prints the tail of the processes' logs to stderr. */
void cluster_dump_logs(const test_cluster *tc);
/* Prints the tail of one log file to stderr. */
void cluster_print_log_tail(const char *path);
/* True when a line of the log file at path contains needle. */
bool cluster_log_contains(const char *path, const char *needle);
/* Path of a binary of the build tree ("fluxon-master", "fluxon", ...). */
const char *cluster_bin(const char *name);

#endif
