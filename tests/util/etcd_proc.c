/*
 * etcd_proc.c - one real etcd member for tests (see etcd_proc.h).
 *
 * Spawned like the cluster's processes (cluster_spawn: output to a log, dies
 * with its parent thread), on ports from probe_free_port. Ready means that
 * GET /health answers 200 with "health":"true", which a single member says
 * once it has elected itself and can serve. A start whose etcd exits before
 * that (its port was taken meanwhile) is tried again on new ports.
 */
#include "etcd_proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "sock_probe.h"
#include "testlib.h"

#define START_TRIES 3
#define READY_TIMEOUT_MS 30000
#define STOP_TIMEOUT_MS 5000

bool etcd_proc_available(void)
{
    return access(ETCD_PROC_BIN, X_OK) == 0;
}

void etcd_proc_dump_log(const etcd_proc *ep)
{
    char log[300];
    snprintf(log, sizeof log, "%s/etcd.log", ep->dir);
    cluster_print_log_tail(log);
}

/* Sends SIGTERM and waits; SIGKILL after STOP_TIMEOUT_MS. Returns 0 when it
 * exited on SIGTERM (etcd exits 0, or dies by the signal it was sent). */
static int end_process(pid_t pid)
{
    int st = 0;
    kill(pid, SIGTERM);
    for (int waited = 0; waited < STOP_TIMEOUT_MS; waited += 10) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return (WIFEXITED(st) && WEXITSTATUS(st) == 0) ||
                           (WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM)
                       ? 0
                       : -1;
        test_sleep_ms(10);
    }
    fprintf(stderr, "etcd_proc: etcd %d did not stop on SIGTERM; killing\n", (int)pid);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

/* At exit with etcd still up: its log when a check failed, then no process
 * and no directory left. */
static void etcd_proc_abandon(void *arg)
{
    etcd_proc *ep = arg;
    if (test_checks_failed)
        etcd_proc_dump_log(ep);
    if (ep->pid > 0) {
        kill(ep->pid, SIGKILL);
        waitpid(ep->pid, NULL, 0);
        ep->pid = 0;
    }
    if (ep->dir[0])
        test_remove_dir(ep->dir);
    ep->dir[0] = '\0';
}

/* True once etcd answers /health with "true". */
static bool answers(const etcd_proc *ep)
{
    char *body = NULL;
    int status = probe_http_get(ep->hostport, "/health", 1000, &body);
    bool ok = status == 200 && body && strstr(body, "\"true\"");
    free(body);
    return ok;
}

/* One try on fresh ports, data in DIR/data<attempt>. Returns 0 when etcd
 * answers; -EAGAIN when it exited first (try again); -1 when it did not get
 * ready in time (it is killed). ep->pid is 0 unless it returns 0. */
static int try_start(etcd_proc *ep, int attempt)
{
    int client = probe_free_port(), peer = probe_free_port();
    if (client <= 0 || peer <= 0 || client == peer)
        return -EAGAIN;
    const char *name = strrchr(ep->dir, '/') + 1;
    char data[300], log[300], client_url[64], peer_url[64], cluster[128];
    snprintf(data, sizeof data, "%s/data%d", ep->dir, attempt);
    snprintf(log, sizeof log, "%s/etcd.log", ep->dir);
    snprintf(client_url, sizeof client_url, "http://127.0.0.1:%d", client);
    snprintf(peer_url, sizeof peer_url, "http://127.0.0.1:%d", peer);
    snprintf(cluster, sizeof cluster, "%s=%s", name, peer_url);
    snprintf(ep->endpoint, sizeof ep->endpoint, "%s", client_url);
    snprintf(ep->hostport, sizeof ep->hostport, "127.0.0.1:%d", client);
    char *argv[] = {ETCD_PROC_BIN, "--name", (char *)name, "--data-dir", data,
                    "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
                    "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                    "--initial-cluster", cluster, "--initial-cluster-state", "new", NULL};
    ep->pid = cluster_spawn(argv, log);
    if (ep->pid < 0) {
        ep->pid = 0;
        perror("etcd_proc: fork");
        return -1;
    }
    for (int waited = 0; waited < READY_TIMEOUT_MS; waited += 50) {
        int st;
        if (waitpid(ep->pid, &st, WNOHANG) == ep->pid) {
            fprintf(stderr, "etcd_proc: etcd exited before it answered (ports %d, %d)\n", client,
                    peer);
            etcd_proc_dump_log(ep);
            ep->pid = 0;
            return -EAGAIN;
        }
        if (answers(ep))
            return 0;
        test_sleep_ms(50);
    }
    fprintf(stderr, "etcd_proc: etcd did not answer on %s within %d ms\n", ep->hostport,
            READY_TIMEOUT_MS);
    etcd_proc_dump_log(ep);
    kill(ep->pid, SIGKILL);
    waitpid(ep->pid, NULL, 0);
    ep->pid = 0;
    return -1;
}

int etcd_proc_start(etcd_proc *ep)
{
    memset(ep, 0, sizeof *ep);
    snprintf(ep->dir, sizeof ep->dir, "/tmp/fx-test-etcd-XXXXXX");
    if (!mkdtemp(ep->dir)) {
        perror("etcd_proc: mkdtemp");
        ep->dir[0] = '\0';
        return -1;
    }
    test_at_exit(etcd_proc_abandon, ep);
    int rc = -EAGAIN;
    for (int attempt = 0; attempt < START_TRIES && rc == -EAGAIN; attempt++)
        rc = try_start(ep, attempt);
    if (rc == 0)
        return 0;
    test_at_exit_cancel(etcd_proc_abandon, ep);
    test_remove_dir(ep->dir);
    ep->dir[0] = '\0';
    return -1;
}

int etcd_proc_stop(etcd_proc *ep)
{
    test_at_exit_cancel(etcd_proc_abandon, ep);
    int rc = 0;
    if (ep->pid > 0) {
        rc = end_process(ep->pid);
        ep->pid = 0;
        if (rc < 0)
            etcd_proc_dump_log(ep);
    }
    if (ep->dir[0]) {
        if (test_remove_dir(ep->dir) != 0)
            rc = -1;
        ep->dir[0] = '\0';
    }
    return rc;
}
