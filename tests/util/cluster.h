/*
 * cluster.h - real fluxon-master + fluxon-owner processes for integration
 * tests and benchmarks, on a free port in a fresh temporary directory.
 *
 * The processes die with the test (PR_SET_PDEATHSIG) even if it crashes;
 * cluster_stop() terminates them, checks how they exited, and removes the
 * directory.
 */
#ifndef FX_TESTS_CLUSTER_H
#define FX_TESTS_CLUSTER_H

#include <stdint.h>
#include <sys/types.h>

typedef struct test_cluster {
    char dir[256];
    char socket[320];
    char master_addr[64];
    pid_t master_pid;
    pid_t owner_pid;
} test_cluster;

/* Starts a master and one owner with a memory_size-byte segment. Returns 0, or
 * -1 after printing why (with the logs) to stderr. */
int cluster_start(test_cluster *tc, uint64_t memory_size);
/* The same with extra fluxon-master flags (NULL-terminated, may be NULL). */
int cluster_start_args(test_cluster *tc, uint64_t memory_size, const char *const *master_args);
/* Stops both processes (SIGTERM, then SIGKILL after 10 s). Returns 0 when
 * both exited cleanly with status 0, else -1 (and prints their logs). */
int cluster_stop(test_cluster *tc);
/* Prints the tail of the processes' logs to stderr. */
void cluster_dump_logs(const test_cluster *tc);
/* Path of a binary of the build tree ("fluxon-master", "fluxon", ...). */
const char *cluster_bin(const char *name);

#endif
