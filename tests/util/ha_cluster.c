/*
 * ha_cluster.c - etcd, masters campaigning on it and owners that follow
 * its leader (see ha_cluster.h).
 *
 * Built from the pieces the other harnesses have: etcd_proc.c for etcd,
 * cluster_spawn_env and cluster_wait_port_file for the masters,
 * cluster_start_owners for the owners (dialling "etcd://HOST:PORT"), and
 * one etcd client of the product's own library (src/net/etcd_client.h) to
 * read the leader key. Cleanups at exit run newest first: owners, masters,
 * etcd, so nothing outlives a failed REQUIRE.
 */
#include "ha_cluster.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "net/etcd_client.h"
#include "net/leader_record.h"
#include "testlib.h"

#define PORT_FILE_TIMEOUT_MS 10000
#define FIRST_LEADER_TIMEOUT_MS 15000
#define STOP_TIMEOUT_MS 10000
#define READER_TIMEOUT_MS 500 /* the test's own etcd reads */

void ha_master_log(const ha_cluster *h, int i, int k, char *buf, size_t cap)
{
    if (k < 0)
        snprintf(buf, cap, "%s/master%d.log", h->dir, i);
    else
        snprintf(buf, cap, "%s/master%d.%d.log", h->dir, i, k);
}

void ha_dump_logs(const ha_cluster *h)
{
    char p[512];
    for (int i = 0; i < h->n_masters; i++) {
        for (int k = 0; k + 1 < h->masters[i].incarnations; k++) {
            ha_master_log(h, i, k, p, sizeof p);
            cluster_print_log_tail(p);
        }
        ha_master_log(h, i, -1, p, sizeof p);
        cluster_print_log_tail(p);
    }
    if (h->owners.dir[0])
        cluster_dump_logs(&h->owners);
    if (h->etcd.dir[0])
        etcd_proc_dump_log(&h->etcd);
}

/* At exit with the masters still up: no process, no directory left (the
 * owners' and etcd's own cleanups run around this one). */
static void ha_abandon(void *arg)
{
    ha_cluster *h = arg;
    for (int i = 0; i < h->n_masters; i++) {
        if (h->masters[i].pid > 0) {
            kill(h->masters[i].pid, SIGKILL);
            waitpid(h->masters[i].pid, NULL, 0);
            h->masters[i].pid = 0;
        }
    }
    if (test_checks_failed)
        for (int i = 0; i < h->n_masters; i++) {
            char p[512];
            ha_master_log(h, i, -1, p, sizeof p);
            cluster_print_log_tail(p);
        }
    etcd_client_free(h->etcd_reader);
    h->etcd_reader = NULL;
    if (strncmp(h->dir, "/tmp/fx-test-", 13) == 0)
        test_remove_dir(h->dir);
    h->dir[0] = 0;
}

int ha_start_master(ha_cluster *h, int i)
{
    if (i < 0 || i >= h->n_masters || h->masters[i].pid > 0) {
        fprintf(stderr, "ha_cluster: master%d is not there or still running\n", i);
        return -1;
    }
    ha_master *m = &h->masters[i];
    char log[512], port_file[512], addr[300];
    ha_master_log(h, i, -1, log, sizeof log);
    if (m->incarnations > 0) {
        char kept[512];
        ha_master_log(h, i, m->incarnations - 1, kept, sizeof kept);
        rename(log, kept);
    }
    snprintf(port_file, sizeof port_file, "%s/master%d.addr", h->dir, i);
    unlink(port_file);
    char *argv[16 + HA_MAX_MASTER_ARGS];
    int n = 0;
    argv[n++] = (char *)cluster_bin("fluxon-master");
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--port-file";
    argv[n++] = port_file;
    argv[n++] = "--cluster-name";
    argv[n++] = HA_CLUSTER_NAME;
    argv[n++] = "--etcd";
    argv[n++] = h->etcd.endpoint;
    argv[n++] = "--log-level";
    argv[n++] = "info";
    for (int a = 0; a < h->n_master_args; a++)
        argv[n++] = h->master_args[a];
    argv[n] = NULL;
    const char *env[] = {h->master_env, NULL};
    m->pid = cluster_spawn_env(argv, h->master_env[0] ? env : NULL, log);
    if (m->pid < 0) {
        fprintf(stderr, "ha_cluster: cannot fork master%d: %s\n", i, strerror(errno));
        m->pid = 0;
        return -1;
    }
    m->incarnations++;
    if (cluster_wait_port_file(port_file, m->pid, addr, sizeof addr, PORT_FILE_TIMEOUT_MS) < 0) {
        fprintf(stderr, "ha_cluster: master%d did not write its port file\n", i);
        cluster_print_log_tail(log);
        return -1;
    }
    return 0;
}

int ha_leader(ha_cluster *h, int64_t *term)
{
    if (term)
        *term = 0;
    bool found = false;
    static etcd_kv kv; /* 4 KiB: not on the stack of every poll (main thread only) */
    if (!h->etcd_reader || etcd_client_get(h->etcd_reader, h->leader_key, &found, &kv) < 0 ||
        !found)
        return -1;
    if (term)
        *term = kv.create_revision;
    leader_record rec;
    if (leader_record_decode(kv.value, kv.value_len, &rec) < 0)
        return -1;
    for (int i = 0; i < h->n_masters; i++)
        if (h->masters[i].pid > 0 && rec.pid == (int64_t)h->masters[i].pid)
            return i;
    return -1;
}

int ha_wait_leader(ha_cluster *h, int64_t above_term, int timeout_ms, int64_t *term)
{
    uint64_t until = test_now_ms() + (uint64_t)timeout_ms;
    for (;;) {
        int64_t t = 0;
        int i = ha_leader(h, &t);
        if (i >= 0 && t > above_term) {
            if (term)
                *term = t;
            return i;
        }
        if (test_now_ms() >= until)
            return -1;
        test_sleep_ms(10);
    }
}

int ha_kill_master(ha_cluster *h, int i)
{
    if (i < 0 || i >= h->n_masters || h->masters[i].pid <= 0) {
        fprintf(stderr, "ha_cluster: master%d is not running\n", i);
        return -1;
    }
    pid_t pid = h->masters[i].pid;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    h->masters[i].pid = 0;
    return 0;
}

int ha_signal_master(ha_cluster *h, int i, int sig)
{
    if (i < 0 || i >= h->n_masters || h->masters[i].pid <= 0)
        return -1;
    return kill(h->masters[i].pid, sig) == 0 ? 0 : -1;
}

int ha_wait_master_exit(ha_cluster *h, int i, int timeout_ms, int *status)
{
    if (i < 0 || i >= h->n_masters || h->masters[i].pid <= 0)
        return -1;
    pid_t pid = h->masters[i].pid;
    for (int waited = 0;; waited += 10) {
        int st = 0;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            if (status)
                *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            h->masters[i].pid = 0;
            return 0;
        }
        if (waited >= timeout_ms)
            return -1;
        test_sleep_ms(10);
    }
}

int ha_owner_log_find(const ha_cluster *h, const char *needle1, const char *needle2, char *line,
                      size_t cap)
{
    for (int o = 0; o < h->owners.n_owners; o++) {
        char p[512], buf[1024];
        snprintf(p, sizeof p, "%s/owner%d.log", h->owners.dir, o);
        FILE *f = fopen(p, "r");
        if (!f)
            continue;
        bool found = false;
        while (!found && fgets(buf, sizeof buf, f))
            found = strstr(buf, needle1) && (!needle2 || strstr(buf, needle2));
        fclose(f);
        if (found) {
            buf[strcspn(buf, "\n")] = 0;
            snprintf(line, cap, "%s", buf);
            return o;
        }
    }
    return -1;
}

/* SIGTERM (and SIGCONT, for one left stopped), then waits; SIGKILL after
 * STOP_TIMEOUT_MS. Returns 0 when master i exited with status 0. */
static int stop_master(ha_cluster *h, int i)
{
    pid_t pid = h->masters[i].pid;
    kill(pid, SIGTERM);
    kill(pid, SIGCONT);
    int st = 0;
    int r = 0;
    bool gone = false;
    for (int waited = 0; waited < STOP_TIMEOUT_MS && !gone; waited += 10) {
        gone = waitpid(pid, &st, WNOHANG) == pid;
        if (!gone)
            test_sleep_ms(10);
    }
    if (!gone) {
        fprintf(stderr, "ha_cluster: master%d did not stop on SIGTERM; killing\n", i);
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        r = -1;
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "ha_cluster: master%d exited with %s %d\n", i,
                WIFEXITED(st) ? "status" : "signal",
                WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        r = -1;
    }
    h->masters[i].pid = 0;
    return r;
}

int ha_stop(ha_cluster *h)
{
    int r = 0;
    if (h->owners.dir[0] && cluster_stop(&h->owners) < 0)
        r = -1;
    int leader = ha_leader(h, NULL);
    for (int i = 0; i < h->n_masters; i++)
        if (i != leader && h->masters[i].pid > 0)
            r |= stop_master(h, i);
    if (leader >= 0 && h->masters[leader].pid > 0)
        r |= stop_master(h, leader);
    if (r)
        ha_dump_logs(h);
    test_at_exit_cancel(ha_abandon, h);
    etcd_client_free(h->etcd_reader);
    h->etcd_reader = NULL;
    if (h->dir[0]) {
        if (test_remove_dir(h->dir) != 0)
            r = -1;
        h->dir[0] = 0;
    }
    if (etcd_proc_stop(&h->etcd) < 0)
        r = -1;
    return r ? -1 : 0;
}

int ha_start(ha_cluster *h, const ha_conf *conf)
{
    memset(h, 0, sizeof *h);
    if (conf->n_masters < 1 || conf->n_masters > HA_MAX_MASTERS) {
        fprintf(stderr, "ha_cluster: %d masters (expected 1..%d)\n", conf->n_masters,
                HA_MAX_MASTERS);
        return -1;
    }
    for (int a = 0; conf->master_args && conf->master_args[a]; a++) {
        if (a >= HA_MAX_MASTER_ARGS || strlen(conf->master_args[a]) >= sizeof h->master_args[0]) {
            fprintf(stderr, "ha_cluster: too many or too long master arguments\n");
            return -1;
        }
        snprintf(h->master_args[a], sizeof h->master_args[a], "%s", conf->master_args[a]);
        h->n_master_args = a + 1;
    }
    if (conf->master_env) {
        if (strlen(conf->master_env) >= sizeof h->master_env || !strchr(conf->master_env, '=')) {
            fprintf(stderr, "ha_cluster: master_env must be a short NAME=VALUE\n");
            return -1;
        }
        snprintf(h->master_env, sizeof h->master_env, "%s", conf->master_env);
    }
    h->n_masters = conf->n_masters;
    if (leader_key(HA_CLUSTER_NAME, h->leader_key, sizeof h->leader_key) < 0)
        return -1;
    if (etcd_proc_start(&h->etcd) < 0)
        return -1;
    snprintf(h->dir, sizeof h->dir, "/tmp/fx-test-XXXXXX");
    if (!mkdtemp(h->dir)) {
        perror("ha_cluster: mkdtemp");
        h->dir[0] = 0;
        etcd_proc_stop(&h->etcd);
        return -1;
    }
    test_at_exit(ha_abandon, h);
    etcd_client_conf ec = {.connect_timeout_ms = READER_TIMEOUT_MS,
                           .request_timeout_ms = READER_TIMEOUT_MS};
    char err[256];
    int code = 0;
    h->etcd_reader = etcd_client_new(h->etcd.endpoint, &ec, &code, err, sizeof err);
    if (!h->etcd_reader) {
        fprintf(stderr, "ha_cluster: etcd client: %s\n", err);
        goto fail;
    }
    for (int i = 0; i < h->n_masters; i++)
        if (ha_start_master(h, i) < 0)
            goto fail;
    if (ha_wait_leader(h, 0, FIRST_LEADER_TIMEOUT_MS, NULL) < 0) {
        fprintf(stderr, "ha_cluster: no master leads after %d ms\n", FIRST_LEADER_TIMEOUT_MS);
        goto fail;
    }
    char master[128];
    snprintf(master, sizeof master, "etcd://%s", h->etcd.hostport);
    if (cluster_start_owners(&h->owners, conf->n_owners, conf->memory_size, master,
                             conf->owner_yaml ? conf->owner_yaml : "") < 0)
        goto fail; /* cluster_start_owners printed the owners' logs and stopped them */
    return 0;
fail:
    ha_dump_logs(h);
    ha_stop(h);
    return -1;
}
