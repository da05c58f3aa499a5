/*
 * down.c - `fluxon down`: stop the local cluster started in a directory (its
 * layout: cluster_dir.h) and remove its runtime files.
 *
 * down stops the daemons named by the pid files, owners first so that none
 * reports to a master that is already gone, then the masters (the one, or
 * all of `up --masters M`), then etcd, which the masters' leases live in; and
 * removes the runtime files, etcd's data and the SSD tiers' files (an owner
 * truncates its shards at start, so nothing in them outlives the cluster
 * anyway; removing them gives the disk space back). A pid file whose daemon
 * is gone, or that names a daemon not started for this directory, is never
 * signalled. Logs and cluster.lock stay.
 */
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/cluster_dir.h"
#include "cli/proc.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DOWN_TERM_MS 5000

/* Stops the daemons named by the pid files DIR/names[0..n) and removes those
 * files. A pid file whose process is gone, or was reused by another program,
 * is stale: it is removed and nothing is signalled. Returns 0, or -1 after
 * reporting a daemon that would not stop (its pid file stays). */
static int stop_group(const char *dir, char **names, size_t n)
{
    pid_t pids[CLUSTER_MAX_OWNERS] = {0};
    char path[PATH_MAX];
    int failed = 0;

    for (size_t i = 0; i < n; i++) {
        pid_t pid = cluster_pidfile_daemon(dir, names[i]);
        if (pid && cluster_started_for_dir(pid, dir, names[i]))
            pids[i] = pid;
        else if (pid)
            fprintf(stderr,
                    "fluxon down: %s/%s names pid %d, a %s not started for %s "
                    "(another cluster, or this directory moved); left running\n",
                    dir, names[i], (int)pid,
                    strcmp(names[i], CLUSTER_ETCD_PID) == 0 ? "etcd" : "Fluxon daemon", dir);
    }
    int rc = proc_stop(pids, n, DOWN_TERM_MS, CLUSTER_KILL_MS);
    for (size_t i = 0; i < n; i++) {
        if (cluster_path(path, sizeof path, dir, names[i]) != 0)
            continue;
        if (rc != 0 && pids[i] > 0 && proc_alive(pids[i])) {
            fprintf(stderr, "fluxon down: pid %d (%s) did not exit: %s\n", (int)pids[i], path,
                    strerror(-rc));
            failed = 1;
            continue;
        }
        unlink(path);
    }
    return failed ? -1 : 0;
}

int cli_down(int argc, char **argv)
{
    const char *dir_opt = NULL, *pos[1];
    size_t npos;
    const struct args_opt opts[] = {{"--dir", NULL, &dir_opt, NULL}};
    const struct args_spec spec = {"down", opts, 1, NULL, 0, 0};
    int rc = args_parse(&spec, argc, argv, pos, &npos);
    if (rc != ARGS_OK)
        return cli_args_exit(rc);

    char default_dir[PATH_MAX], dir[PATH_MAX], path[PATH_MAX];
    cli_default_dir(default_dir, sizeof default_dir);
    const char *given = dir_opt ? dir_opt : default_dir;
    if (!realpath(given, dir))
        snprintf(dir, sizeof dir, "%s", given);

    /* Locked before the pid files are read: an `up` still starting writes
     * them, and a list taken before it finished would miss its owners. */
    if (cluster_lock("down", dir, false) < 0)
        return CLI_FAIL;
    char *owners[CLUSTER_MAX_OWNERS], *masters[CLUSTER_MAX_OWNERS];
    int n = cluster_list(dir, "owner", ".pid", owners, CLUSTER_MAX_OWNERS);
    if (n < 0)
        n = 0;
    int m = cluster_list(dir, "master", ".pid", masters, CLUSTER_MAX_OWNERS);
    if (m < 0)
        m = 0;
    char etcd_name[] = CLUSTER_ETCD_PID;
    char *etcd[1] = {etcd_name};
    bool has_etcd = cluster_path(path, sizeof path, dir, etcd[0]) == 0 &&
                    access(path, F_OK) == 0;
    if (n == 0 && m == 0 && !has_etcd) {
        fprintf(stderr, "fluxon down: no cluster in %s\n", dir);
        cluster_unlock();
        return CLI_FAIL;
    }

    /* Owners first: each deregisters from a master that is still there.
     * etcd last: a leader that stops revokes its lease there. */
    int failed = stop_group(dir, owners, (size_t)n) != 0;
    cluster_names_free(owners, (size_t)n);
    if (stop_group(dir, masters, (size_t)m) != 0)
        failed = 1;
    cluster_names_free(masters, (size_t)m);
    if (has_etcd && stop_group(dir, etcd, 1) != 0)
        failed = 1;
    if (failed) {
        cluster_unlock();
        return CLI_FAIL; /* keep the sockets and configs of what still runs */
    }

    cluster_remove_matching(dir, "owner", ".sock");
    cluster_remove_matching(dir, "owner", ".yaml");
    cluster_remove_matching(dir, "owner", ".tmp");
    cluster_remove_ssd_dirs(dir);
    cluster_remove_matching(dir, "master", ".tmp");
    cluster_remove_matching(dir, "master", ".addr");
    cluster_remove_matching(dir, "master", ".http");
    cluster_remove_tree(dir, CLUSTER_ETCD_DATA);
    cluster_unlock(); /* cluster.lock itself stays: removing it could split a waiter's lock */
    return CLI_OK;
}
