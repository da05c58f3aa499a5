/*
 * cluster.c - start and stop a local test cluster (see cluster.h).
 */
#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fluxon/fluxon.h"

const char *cluster_bin(const char *name)
{
    static __thread char path[512];
    snprintf(path, sizeof path, "%s/%s", FX_BUILD_DIR, name);
    return path;
}

static pid_t spawn(char *const argv[], const char *log)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, 0);
    execv(argv[0], argv);
    _exit(127);
}

static void tail_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > 4000 ? size - 4000 : 0, SEEK_SET);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fprintf(stderr, "---- %s ----\n%s\n", path, buf);
    fclose(f);
}

void cluster_dump_logs(const test_cluster *tc)
{
    char p[512];
    snprintf(p, sizeof p, "%s/master.log", tc->dir);
    tail_file(p);
    snprintf(p, sizeof p, "%s/owner0.log", tc->dir);
    tail_file(p);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int wait_exit(pid_t pid, int timeout_ms, int *status)
{
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        sleep_ms(10);
    }
    return -1;
}

int cluster_start(test_cluster *tc, uint64_t memory_size)
{
    return cluster_start_args(tc, memory_size, NULL);
}

int cluster_start_args(test_cluster *tc, uint64_t memory_size, const char *const *master_args)
{
    memset(tc, 0, sizeof *tc);
    snprintf(tc->dir, sizeof tc->dir, "/tmp/fx-test-XXXXXX");
    if (!mkdtemp(tc->dir)) {
        perror("mkdtemp");
        return -1;
    }
    char port_file[512], log[512];
    snprintf(port_file, sizeof port_file, "%s/master.addr", tc->dir);
    snprintf(log, sizeof log, "%s/master.log", tc->dir);
    char mbin[512];
    snprintf(mbin, sizeof mbin, "%s", cluster_bin("fluxon-master"));
    char *margv[24] = {mbin, "--listen", "127.0.0.1:0", "--port-file", port_file,
                       "--cluster-name", "test", NULL};
    for (int i = 0, n = 7; master_args && master_args[i] && n < 23; i++)
        margv[n++] = (char *)master_args[i];
    tc->master_pid = spawn(margv, log);
    for (int i = 0; i < 1000 && !tc->master_addr[0]; i++) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            if (!fgets(tc->master_addr, sizeof tc->master_addr, f))
                tc->master_addr[0] = 0;
            tc->master_addr[strcspn(tc->master_addr, "\n")] = 0;
            fclose(f);
        }
        if (!tc->master_addr[0])
            sleep_ms(10);
    }
    if (!tc->master_addr[0]) {
        fprintf(stderr, "cluster: the master did not start\n");
        goto fail;
    }
    snprintf(tc->socket, sizeof tc->socket, "%s/owner0.sock", tc->dir);
    char size[32], obin[512];
    snprintf(size, sizeof size, "%llu", (unsigned long long)memory_size);
    snprintf(obin, sizeof obin, "%s", cluster_bin("fluxon-owner"));
    snprintf(log, sizeof log, "%s/owner0.log", tc->dir);
    char *oargv[] = {obin, "--master", tc->master_addr, "--memory-size", size,
                     "--client-socket", tc->socket, "--cluster-name", "test",
                     "--node-name", "owner0", NULL};
    tc->owner_pid = spawn(oargv, log);
    for (int i = 0; i < 6000; i++) {
        int err;
        fx_client *c = fx_connect(tc->socket, &err);
        if (c) {
            int r = fx_ping(c);
            fx_close(c);
            if (r == 0)
                return 0;
        }
        int st;
        if (waitpid(tc->owner_pid, &st, WNOHANG) == tc->owner_pid) {
            tc->owner_pid = 0;
            fprintf(stderr, "cluster: the owner exited during startup\n");
            goto fail;
        }
        sleep_ms(10);
    }
    fprintf(stderr, "cluster: the owner did not become ready\n");
fail:
    cluster_dump_logs(tc);
    cluster_stop(tc);
    return -1;
}

static int stop_one(pid_t pid, const char *name)
{
    if (pid <= 0)
        return 0;
    kill(pid, SIGTERM);
    int st = 0;
    if (wait_exit(pid, 10000, &st) < 0) {
        fprintf(stderr, "cluster: %s did not stop on SIGTERM; killing\n", name);
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return -1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "cluster: %s exited with %s %d\n", name,
                WIFEXITED(st) ? "status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        return -1;
    }
    return 0;
}

int cluster_stop(test_cluster *tc)
{
    int r = stop_one(tc->owner_pid, "fluxon-owner");
    r |= stop_one(tc->master_pid, "fluxon-master");
    tc->owner_pid = tc->master_pid = 0;
    if (r)
        cluster_dump_logs(tc);
    if (tc->dir[0]) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tc->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "cluster: cannot remove %s\n", tc->dir);
        tc->dir[0] = 0;
    }
    return r ? -1 : 0;
}
