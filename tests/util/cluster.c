/*
 * cluster.c - start and stop a local test cluster (see cluster.h).
 *
 * The master writes its address to DIR/master.addr once it listens; each
 * owner then gets a YAML file with that address and is ready when it answers
 * a ping on its client socket. Owners start side by side and are waited for
 * together; stopping sends SIGTERM to every owner first (each deregisters
 * from a master that is still there), then to the master. The master's
 * command line is kept in the test_cluster, so that a restart runs the same
 * one on the address the first master bound.
 */
#include "cluster.h"
#include "net/auth_key.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include "testlib.h"

const char *cluster_bin(const char *name)
{
    static __thread char path[512];
    snprintf(path, sizeof path, "%s/%s", FX_BUILD_DIR, name);
    return path;
}

pid_t cluster_spawn(char *const argv[], const char *log)
{
    return cluster_spawn_env(argv, NULL, log);
}

extern char **environ;

pid_t cluster_spawn_env(char *const argv[], const char *const *env, const char *log)
{
    /* The environment is built before the fork: the child of a threaded
     * program may only call async-signal-safe functions (no malloc). */
    size_t n_env = 0, n_extra = 0;
    while (environ && environ[n_env])
        n_env++;
    while (env && env[n_extra])
        n_extra++;
    char **envp = calloc(n_env + n_extra + 1, sizeof *envp);
    if (!envp)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++) {
        bool replaced = false; /* NAME=... in env replaces NAME from ours */
        for (size_t j = 0; j < n_extra && !replaced; j++) {
            size_t name = strcspn(env[j], "=");
            replaced = strncmp(environ[i], env[j], name + 1) == 0;
        }
        if (!replaced)
            envp[k++] = environ[i];
    }
    for (size_t j = 0; j < n_extra; j++)
        envp[k++] = (char *)env[j];
    envp[k] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) {
        free(envp);
        return pid;
    }
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
    execve(argv[0], argv, envp);
    _exit(127);
}

int cluster_node_ids(fx_client *c, uint32_t *node_of, int n)
{
    fx_owner_stat st[2 * TEST_CLUSTER_MAX_OWNERS];
    size_t got = 0;
    memset(node_of, 0, (size_t)n * sizeof *node_of);
    if (fx_stat(c, st, 2 * TEST_CLUSTER_MAX_OWNERS, &got) != 0)
        return -1;
    for (size_t i = 0; i < got && i < 2 * TEST_CLUSTER_MAX_OWNERS; i++)
        for (int o = 0; o < n; o++) {
            char name[16];
            snprintf(name, sizeof name, "owner%d", o);
            if (strcmp(st[i].name, name) == 0)
                node_of[o] = st[i].node_id;
        }
    for (int o = 0; o < n; o++)
        if (!node_of[o])
            return -1;
    return 0;
}

void cluster_print_log_tail(const char *path)
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

bool cluster_log_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

void cluster_dump_logs(const test_cluster *tc)
{
    char p[512];
    for (int k = 0; k < tc->master_restarts; k++) {
        snprintf(p, sizeof p, "%s/master.%d.log", tc->dir, k);
        cluster_print_log_tail(p);
    }
    snprintf(p, sizeof p, "%s/master.log", tc->dir);
    cluster_print_log_tail(p);
    int n = tc->n_owners > 0 ? tc->n_owners : 1;
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/owner%d.log", tc->dir, i);
        cluster_print_log_tail(p);
    }
}

static int wait_exit(pid_t pid, int timeout_ms, int *status)
{
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 0;
        test_sleep_ms(10);
    }
    return -1;
}

int cluster_run(char *const argv[], const char *log, int timeout_ms)
{
    pid_t pid = cluster_spawn(argv, log);
    if (pid < 0)
        return -1;
    int st = 0;
    if (wait_exit(pid, timeout_ms, &st) < 0) {
        fprintf(stderr, "cluster: %s did not end within %d ms; killing\n", argv[0], timeout_ms);
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return -1;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int cluster_wait_port_file(const char *path, pid_t pid, char *addr, size_t cap, int timeout_ms)
{
    addr[0] = 0;
    for (int waited = 0; waited < timeout_ms; waited += 10) {
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(addr, (int)cap, f))
                addr[0] = 0;
            fclose(f);
            /* The master writes "HOST:PORT\n"; a read before the newline is
             * a partial line: try again. */
            if (strchr(addr, '\n')) {
                addr[strcspn(addr, "\n")] = 0;
                return 0;
            }
            addr[0] = 0;
        }
        siginfo_t si = {0}; /* looked at, not reaped: the caller still stops it */
        if (pid > 0 && waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            si.si_pid == pid)
            return -1;
        test_sleep_ms(10);
    }
    return -1;
}

/* owner_pid mirrors owner_pids[0] for the tests written for one owner. */
static void set_owner_pid(test_cluster *tc, int i, pid_t pid)
{
    tc->owner_pids[i] = pid;
    if (i == 0)
        tc->owner_pid = pid;
}

static int write_owner_yaml(const test_cluster *tc, int i, char *path, size_t cap)
{
    snprintf(path, cap, "%s/owner%d.yaml", tc->dir, i);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cluster: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f,
            "cluster_name: test\n"
            "master: '%s'\n"
            "node_name: owner%d\n"
            "data_listen: '%s'\n",
            tc->owner_master[i], i, tc->data_listen[i]);
    if (tc->data_advertise[i][0])
        fprintf(f, "data_advertise: '%s'\n", tc->data_advertise[i]);
    if (tc->secret_file[0])
        fprintf(f, "cluster_secret_file: %s\n", tc->secret_file);
    fprintf(f,
            "%s"
            "fluxonkv_spec:\n"
            "  memory_size: %" PRIu64 "\n"
            "  client_socket: %s\n",
            tc->owner_yaml, tc->memory_size, tc->sockets[i]);
    if (tc->ssd_size) {
        char ssd_dir[300];
        snprintf(ssd_dir, sizeof ssd_dir, "%s/ssd%d", tc->dir, i);
        mkdir(ssd_dir, 0700);
        fprintf(f, "  large_file_paths: [%s]\n  large_limit_size: [%" PRIu64 "]\n", ssd_dir,
                tc->ssd_size);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "cluster: cannot write %s\n", path);
        return -1;
    }
    return 0;
}

/* Writes owner i's YAML and starts it (without waiting for it). */
static int spawn_owner(test_cluster *tc, int i)
{
    char yaml[512], log[512], obin[512];
    if (write_owner_yaml(tc, i, yaml, sizeof yaml) < 0)
        return -1;
    snprintf(log, sizeof log, "%s/owner%d.log", tc->dir, i);
    snprintf(obin, sizeof obin, "%s", cluster_bin("fluxon-owner"));
    char *oargv[] = {obin, "--config", yaml, NULL};
    pid_t pid = cluster_spawn(oargv, log);
    if (pid < 0) {
        fprintf(stderr, "cluster: cannot fork owner%d: %s\n", i, strerror(errno));
        return -1;
    }
    set_owner_pid(tc, i, pid);
    tc->owner_killed[i] = false;
    return 0;
}

static bool owner_answers(const char *socket)
{
    int err;
    fx_client *c = fx_connect(socket, &err);
    if (!c)
        return false;
    int r = fx_ping(c);
    fx_close(c);
    return r == 0;
}

/* Waits up to 60 s until every owner in [first, last] answers a ping.
 * Returns 0, or -1 after saying which owner (or the master) failed. */
static int wait_owners_ready(test_cluster *tc, int first, int last)
{
    bool ready[TEST_CLUSTER_MAX_OWNERS] = {false};
    for (int tries = 0; tries < 6000; tries++) {
        int waiting = 0;
        for (int i = first; i <= last; i++) {
            if (ready[i])
                continue;
            if (owner_answers(tc->sockets[i])) {
                ready[i] = true;
                continue;
            }
            int st;
            if (waitpid(tc->owner_pids[i], &st, WNOHANG) == tc->owner_pids[i]) {
                set_owner_pid(tc, i, 0);
                fprintf(stderr, "cluster: owner%d exited during startup\n", i);
                return -1;
            }
            waiting++;
        }
        if (waiting == 0)
            return 0;
        int st; /* no master (killed): waitpid(0) would reap any child */
        if (tc->master_pid > 0 && waitpid(tc->master_pid, &st, WNOHANG) == tc->master_pid) {
            tc->master_pid = 0;
            fprintf(stderr, "cluster: the master exited while the owners started\n");
            return -1;
        }
        test_sleep_ms(10);
    }
    for (int i = first; i <= last; i++)
        if (!ready[i])
            fprintf(stderr, "cluster: owner%d did not become ready\n", i);
    return -1;
}

int cluster_start(test_cluster *tc, uint64_t memory_size)
{
    return cluster_start_n(tc, 1, memory_size, NULL);
}

int cluster_start_args(test_cluster *tc, uint64_t memory_size, const char *const *master_args)
{
    return cluster_start_n(tc, 1, memory_size, master_args);
}

static void cluster_abandon(void *arg);

static int start_cluster(test_cluster *tc, int n_owners, uint64_t memory_size, uint64_t ssd_size,
                         const cluster_addrs *addrs, const char *const *master_args,
                         const char *owner_yaml, const char *owners_master);

int cluster_start_n(test_cluster *tc, int n_owners, uint64_t memory_size,
                    const char *const *master_args)
{
    return start_cluster(tc, n_owners, memory_size, 0, NULL, master_args, "", NULL);
}

int cluster_start_ssd(test_cluster *tc, int n_owners, uint64_t memory_size, uint64_t ssd_size,
                      const char *const *master_args)
{
    return start_cluster(tc, n_owners, memory_size, ssd_size, NULL, master_args, "", NULL);
}

int cluster_start_addrs(test_cluster *tc, int n_owners, uint64_t memory_size,
                        const cluster_addrs *addrs, const char *const *master_args)
{
    return start_cluster(tc, n_owners, memory_size, 0, addrs, master_args, "", NULL);
}

/* Owner i's master, data_listen and data_advertise, from addrs or the
 * defaults, once the master's port file was read. */
static void set_owner_addrs(test_cluster *tc, int i, const cluster_addrs *addrs)
{
    const char *host = addrs ? addrs->master_host[i] : NULL;
    const char *port = strrchr(tc->master_addr, ':');
    if (host && port)
        snprintf(tc->owner_master[i], sizeof tc->owner_master[i], "%s%s", host, port);
    else
        snprintf(tc->owner_master[i], sizeof tc->owner_master[i], "%s", tc->master_addr);
    const char *dl = addrs && addrs->data_listen[i] ? addrs->data_listen[i] : "127.0.0.1:0";
    snprintf(tc->data_listen[i], sizeof tc->data_listen[i], "%s", dl);
    const char *da = addrs && addrs->data_advertise[i] ? addrs->data_advertise[i] : "";
    snprintf(tc->data_advertise[i], sizeof tc->data_advertise[i], "%s", da);
}

int cluster_start_yaml(test_cluster *tc, int n_owners, uint64_t memory_size,
                       const char *const *master_args, const char *owner_yaml)
{
    return start_cluster(tc, n_owners, memory_size, 0, NULL, master_args, owner_yaml, NULL);
}

int cluster_start_ssd_yaml(test_cluster *tc, int n_owners, uint64_t memory_size,
                           uint64_t ssd_size, const char *const *master_args,
                           const char *owner_yaml)
{
    return start_cluster(tc, n_owners, memory_size, ssd_size, NULL, master_args, owner_yaml, NULL);
}

/* Appends one argument to the master's kept command line. Returns 0, or -1
 * after saying why (too long; too many is not an error: the caller stops). */
static int add_master_arg(test_cluster *tc, const char *arg)
{
    if (strlen(arg) >= TEST_CLUSTER_ARG_MAX) {
        fprintf(stderr, "cluster: master argument of %zu bytes (at most %d): %.60s...\n",
                strlen(arg), TEST_CLUSTER_ARG_MAX - 1, arg);
        return -1;
    }
    snprintf(tc->master_argv[tc->master_argc++], TEST_CLUSTER_ARG_MAX, "%s", arg);
    return 0;
}

/* Starts fluxon-master with tc->master_argv and waits up to 10 s for the
 * port file, removed first so that a file left by an earlier master is not
 * taken for this one's; its line goes to addr. Returns 0, or -1 when the
 * master did not write it (tc->master_pid is left set, for cluster_stop). */
static int spawn_master(test_cluster *tc, char *addr, size_t cap)
{
    char port_file[512], log[512];
    snprintf(port_file, sizeof port_file, "%s/master.addr", tc->dir);
    snprintf(log, sizeof log, "%s/master.log", tc->dir);
    unlink(port_file);
    char *margv[TEST_CLUSTER_MAX_MASTER_ARGV + 1];
    for (int i = 0; i < tc->master_argc; i++)
        margv[i] = tc->master_argv[i];
    margv[tc->master_argc] = NULL;
    tc->master_pid = cluster_spawn(margv, log);
    if (tc->master_pid < 0) {
        fprintf(stderr, "cluster: cannot fork the master: %s\n", strerror(errno));
        tc->master_pid = 0;
        return -1;
    }
    return cluster_wait_port_file(port_file, tc->master_pid, addr, cap, 10000);
}

/* The cluster's own master: the harness's flags, a secret with
 * FX_CLUSTER_SECRET=1, then master_args; waits for its port file. Returns 0,
 * or -1 after saying why (tc->master_pid stays set for cluster_stop). */
static int start_own_master(test_cluster *tc, const cluster_addrs *addrs,
                            const char *const *master_args)
{
    char port_file[512];
    snprintf(port_file, sizeof port_file, "%s/master.addr", tc->dir);
    const char *listen = addrs && addrs->master_listen ? addrs->master_listen : "127.0.0.1:0";
    const char *const fixed[] = {cluster_bin("fluxon-master"), "--listen", listen, "--port-file",
                                 port_file, "--cluster-name", "test"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (add_master_arg(tc, fixed[i]) < 0)
            return -1;
    /* FX_CLUSTER_SECRET=1: an authenticated cluster, as fluxon up makes. */
    const char *want_secret = getenv("FX_CLUSTER_SECRET");
    if (want_secret && strcmp(want_secret, "1") == 0) {
        snprintf(tc->secret_file, sizeof tc->secret_file, "%s/cluster.secret", tc->dir);
        if (auth_secret_create(tc->secret_file) < 0) {
            fprintf(stderr, "cluster: cannot create %s\n", tc->secret_file);
            return -1;
        }
        if (add_master_arg(tc, "--secret-file") < 0 || add_master_arg(tc, tc->secret_file) < 0)
            return -1;
    }
    for (int i = 0; master_args && master_args[i] && tc->master_argc < TEST_CLUSTER_MAX_MASTER_ARGV - 1;
         i++)
        if (add_master_arg(tc, master_args[i]) < 0)
            return -1;
    if (spawn_master(tc, tc->master_addr, sizeof tc->master_addr) < 0) {
        fprintf(stderr, "cluster: the master did not start\n");
        return -1;
    }
    return 0;
}

int cluster_start_owners(test_cluster *tc, int n_owners, uint64_t memory_size, const char *master,
                         const char *owner_yaml)
{
    return start_cluster(tc, n_owners, memory_size, 0, NULL, NULL, owner_yaml, master);
}

/* owners_master: what the owners dial, with no master of the cluster's own;
 * NULL: start a master and dial the address of its port file. */
static int start_cluster(test_cluster *tc, int n_owners, uint64_t memory_size, uint64_t ssd_size,
                         const cluster_addrs *addrs, const char *const *master_args,
                         const char *owner_yaml, const char *owners_master)
{
    memset(tc, 0, sizeof *tc);
    tc->ssd_size = ssd_size;
    if (strlen(owner_yaml) >= sizeof tc->owner_yaml) {
        fprintf(stderr, "cluster: %zu bytes of owner YAML (at most %zu)\n", strlen(owner_yaml),
                sizeof tc->owner_yaml - 1);
        return -1;
    }
    snprintf(tc->owner_yaml, sizeof tc->owner_yaml, "%s", owner_yaml);
    if (n_owners < 1 || n_owners > TEST_CLUSTER_MAX_OWNERS) {
        fprintf(stderr, "cluster: %d owners (expected 1..%d)\n", n_owners,
                TEST_CLUSTER_MAX_OWNERS);
        return -1;
    }
    tc->n_owners = n_owners;
    tc->memory_size = memory_size;
    snprintf(tc->dir, sizeof tc->dir, "/tmp/fx-test-XXXXXX");
    if (!mkdtemp(tc->dir)) {
        perror("mkdtemp");
        tc->dir[0] = 0;
        return -1;
    }
    test_at_exit_cancel(cluster_abandon, tc); /* a struct started twice */
    test_at_exit(cluster_abandon, tc);
    for (int i = 0; i < n_owners; i++)
        snprintf(tc->sockets[i], sizeof tc->sockets[i], "%s/owner%d.sock", tc->dir, i);
    snprintf(tc->socket, sizeof tc->socket, "%s", tc->sockets[0]);

    if (owners_master) {
        if (strlen(owners_master) >= sizeof tc->owner_master[0]) {
            fprintf(stderr, "cluster: master '%.60s...' is too long\n", owners_master);
            goto fail;
        }
        for (int i = 0; i < n_owners; i++) {
            set_owner_addrs(tc, i, NULL);
            snprintf(tc->owner_master[i], sizeof tc->owner_master[i], "%s", owners_master);
        }
    } else {
        if (start_own_master(tc, addrs, master_args) < 0)
            goto fail;
        for (int i = 0; i < n_owners; i++)
            set_owner_addrs(tc, i, addrs);
    }
    for (int i = 0; i < n_owners; i++)
        if (spawn_owner(tc, i) < 0)
            goto fail;
    if (wait_owners_ready(tc, 0, n_owners - 1) == 0)
        return 0;
fail:
    cluster_dump_logs(tc);
    cluster_stop(tc);
    return -1;
}

int cluster_kill_owner(test_cluster *tc, int i)
{
    if (i < 0 || i >= tc->n_owners || tc->owner_pids[i] <= 0) {
        fprintf(stderr, "cluster: owner%d is not running\n", i);
        return -1;
    }
    pid_t pid = tc->owner_pids[i];
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    set_owner_pid(tc, i, 0);
    tc->owner_killed[i] = true;
    return 0;
}

int cluster_restart_owner(test_cluster *tc, int i)
{
    if (i < 0 || i >= tc->n_owners) {
        fprintf(stderr, "cluster: no owner%d (the cluster has %d)\n", i, tc->n_owners);
        return -1;
    }
    if (tc->owner_pids[i] > 0 && cluster_kill_owner(tc, i) < 0)
        return -1;
    unlink(tc->sockets[i]); /* a ping must not reach the old file */
    if (spawn_owner(tc, i) < 0 || wait_owners_ready(tc, i, i) < 0) {
        char p[512];
        snprintf(p, sizeof p, "%s/owner%d.log", tc->dir, i);
        cluster_print_log_tail(p);
        return -1;
    }
    return 0;
}

bool cluster_owner_running(const test_cluster *tc, int i, char *why, size_t cap)
{
    if (why && cap)
        why[0] = 0;
    if (i < 0 || i >= tc->n_owners || tc->owner_pids[i] <= 0) {
        if (why && cap)
            snprintf(why, cap, "owner%d is not started (or was killed by the test)", i);
        return false;
    }
    siginfo_t si = {0}; /* looked at, not reaped: cluster_stop still reports it */
    if (waitid(P_PID, (id_t)tc->owner_pids[i], &si, WEXITED | WNOHANG | WNOWAIT) < 0 ||
        si.si_pid != tc->owner_pids[i])
        return true;
    if (why && cap)
        snprintf(why, cap, "owner%d (pid %d) %s %d", i, (int)tc->owner_pids[i],
                 si.si_code == CLD_EXITED ? "exited with status" : "was killed by signal",
                 si.si_status);
    return false;
}

int cluster_kill_master(test_cluster *tc)
{
    if (tc->master_pid <= 0) {
        fprintf(stderr, "cluster: the master is not running\n");
        return -1;
    }
    pid_t pid = tc->master_pid;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    tc->master_pid = 0;
    tc->master_killed = true;
    return 0;
}

/* The --listen of a restart: the host of the first master's --listen with
 * the port its port file named (the one it bound, unless --advertise gave
 * one), so "127.0.0.1:0" becomes tc->master_addr and "[::]:0" "[::]:PORT". */
static int restart_listen(const test_cluster *tc, char *out, size_t cap)
{
    const char *first = tc->master_argv[2];
    const char *host_end = strrchr(first, ':');
    const char *port = strrchr(tc->master_addr, ':');
    if (!host_end || !port || !port[1]) {
        fprintf(stderr, "cluster: cannot tell the master's port from --listen %s, address %s\n",
                first, tc->master_addr);
        return -1;
    }
    snprintf(out, cap, "%.*s%s", (int)(host_end - first), first, port);
    return 0;
}

int cluster_restart_master(test_cluster *tc)
{
    if (tc->master_argc < 3 || !tc->dir[0]) {
        fprintf(stderr, "cluster: no master to restart (the cluster is not started)\n");
        return -1;
    }
    if (tc->master_pid > 0 && cluster_kill_master(tc) < 0)
        return -1;
    char listen[TEST_CLUSTER_ARG_MAX];
    if (restart_listen(tc, listen, sizeof listen) < 0)
        return -1;
    snprintf(tc->master_argv[2], TEST_CLUSTER_ARG_MAX, "%s", listen);
    char log[512], kept[512];
    snprintf(log, sizeof log, "%s/master.log", tc->dir);
    snprintf(kept, sizeof kept, "%s/master.%d.log", tc->dir, tc->master_restarts);
    if (rename(log, kept) == 0)
        tc->master_restarts++;
    tc->master_killed = false;
    char addr[sizeof tc->master_addr];
    if (spawn_master(tc, addr, sizeof addr) < 0) {
        fprintf(stderr, "cluster: the restarted master did not write its port file (listen %s)\n",
                listen);
        cluster_print_log_tail(log);
        return -1;
    }
    if (strcmp(addr, tc->master_addr) != 0) {
        fprintf(stderr, "cluster: the restarted master is at %s, not %s\n", addr, tc->master_addr);
        cluster_print_log_tail(log);
        return -1;
    }
    return 0;
}

/* Waits for a process sent SIGTERM; SIGKILL after 10 s. Returns 0 when it
 * exited with status 0. */
static int reap_one(pid_t pid, const char *name)
{
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

/* At exit with the cluster still up (a REQUIRE failed, or the program
 * ended early): its logs when a check failed, then no process and no file
 * left behind. */
static void cluster_abandon(void *arg)
{
    test_cluster *tc = arg;
    if (test_checks_failed)
        cluster_dump_logs(tc);
    int n = tc->n_owners > 0 ? tc->n_owners : 1;
    tc->owner_pids[0] = tc->owner_pid;
    pid_t pids[TEST_CLUSTER_MAX_OWNERS + 1];
    int np = 0;
    for (int i = 0; i < n; i++)
        if (tc->owner_pids[i] > 0)
            pids[np++] = tc->owner_pids[i];
    if (tc->master_pid > 0)
        pids[np++] = tc->master_pid;
    for (int i = 0; i < np; i++)
        kill(pids[i], SIGKILL);
    for (int i = 0; i < np; i++)
        waitpid(pids[i], NULL, 0);
    for (int i = 0; i < n; i++)
        set_owner_pid(tc, i, 0);
    tc->master_pid = 0;
    if (strncmp(tc->dir, "/tmp/fx-test-", 13) == 0)
        test_remove_dir(tc->dir);
    tc->dir[0] = 0;
}

int cluster_stop(test_cluster *tc)
{
    test_at_exit_cancel(cluster_abandon, tc);
    int r = 0;
    int n = tc->n_owners > 0 ? tc->n_owners : 1;
    tc->owner_pids[0] = tc->owner_pid; /* a test may only know owner_pid */
    for (int i = 0; i < n; i++)
        if (tc->owner_pids[i] > 0)
            kill(tc->owner_pids[i], SIGTERM);
    for (int i = 0; i < n; i++) {
        if (tc->owner_pids[i] <= 0)
            continue;
        char name[32];
        snprintf(name, sizeof name, "fluxon-owner %d", i);
        r |= reap_one(tc->owner_pids[i], name);
        set_owner_pid(tc, i, 0);
    }
    if (tc->master_pid > 0) {
        kill(tc->master_pid, SIGTERM);
        r |= reap_one(tc->master_pid, "fluxon-master");
    }
    tc->master_pid = 0;
    if (r)
        cluster_dump_logs(tc);
    if (tc->dir[0]) {
        if (test_remove_dir(tc->dir) != 0)
            fprintf(stderr, "cluster: cannot remove %s\n", tc->dir);
        tc->dir[0] = 0;
    }
    return r ? -1 : 0;
}
