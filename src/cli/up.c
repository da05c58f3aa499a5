/*
 * up.c - `fluxon up`: start a local cluster of one master and its owners in
 * the background, out of one directory (its layout: cluster_dir.h).
 *
 * up starts the master on a free port, writes each owner's YAML with that
 * address (node_name owner<i>, its own socket, a data plane on a free port),
 * starts the owners, and returns only once every owner answers a ping on its
 * client socket, then prints the sockets one per line, owner0 first, and
 * after them the URL of the serving master's HTTP endpoint (127.0.0.1, a
 * free port: the web page, /metrics, /api/v1/cluster); if
 * anything fails on the way it stops everything it started and shows the
 * failing daemon's log. It holds the directory lock while it works, and a
 * cluster already running in the directory is refused, not replaced.
 *
 * With --masters M (M >= 2) it first starts an etcd member on free loopback
 * ports (etcd_local.h) and waits until it serves, then M masters campaigning
 * on it (--etcd), waits until each wrote its port file and one of them leads
 * (the leader key, read through the fx_etcd client), and gives the owners
 * `master: etcd://127.0.0.1:PORT` so that they follow whichever leads.
 */
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/cluster_dir.h"
#include "cli/etcd_local.h"
#include "cli/fileio.h"
#include "cli/proc.h"
#include "common/mkdir_p.h"
#include "common/size.h"
#include "net/auth_key.h"
#include "net/unix_path.h"
#include "fluxon/fluxon.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MASTER_ADDR_TIMEOUT_MS 10000
#define ETCD_READY_TIMEOUT_MS 30000
#define ETCD_START_TRIES 3 /* a start that lost its port to another process */
#define ETCD_CALL_TIMEOUT_MS 1000
#define LEADER_TIMEOUT_MS 15000
#define OWNER_READY_TIMEOUT_MS 30000
#define POLL_MS 10
#define UP_ABORT_TERM_MS 2000
#define LOG_TAIL_LINES 20
#define GIB (1024ull * 1024 * 1024)
/* proc_stop() takes at most 256 pids: the owners and the masters. */
#define UP_MAX_OWNERS 128
#define UP_MAX_MASTERS 16

/* One owner of the cluster: its files, and its pid once started. */
struct up_owner {
    pid_t pid;
    bool ready; /* answered a ping */
    char name[32]; /* "owner<i>": node_name and the base of its files */
    char pid_path[PATH_MAX];
    char yaml[PATH_MAX];
    char log[PATH_MAX];
    char sock[PATH_MAX];
    char ssd[PATH_MAX]; /* DIR/ssd<i>, its SSD tier's path (with --ssd) */
};

/* One master of the cluster: its files, its pid once started and its
 * address once it listens. */
struct up_master {
    pid_t pid;
    char name[32]; /* "master" (the one master) or "master<j>": the base of its files */
    char pid_path[PATH_MAX];
    char addr_path[PATH_MAX]; /* its --port-file */
    char http_path[PATH_MAX]; /* its --http-port-file */
    char log[PATH_MAX];
    char addr[256]; /* "HOST:PORT" from its port file */
    char http[256]; /* its HTTP endpoint's "HOST:PORT" */
};

/* What `up` has started so far, so that a failure can undo it. */
struct up_run {
    const char *dir;
    struct up_master *masters; /* n_masters entries; pid 0 until started */
    size_t n_masters;
    size_t leader; /* the master that serves (the etcd leader; 0 for one master) */
    bool standby; /* n_masters >= 2: masters on a local etcd */
    pid_t etcd;   /* the etcd member (standby only); 0 until started */
    char etcd_pid[PATH_MAX];
    char etcd_log[PATH_MAX];
    char etcd_data[PATH_MAX];
    etcd_local etcd_conf; /* its ports and command line, once prepared */
    char secret[PATH_MAX]; /* DIR/cluster.secret, made once and kept */
    struct up_owner *owners; /* n_owners entries; pid 0 until started */
    size_t n_owners;
    uint64_t ssd; /* each owner's SSD tier in bytes, 0 for none */
    const char *cache_budget; /* the master's --cache-budget, NULL: its default */
    const char *get_threads;  /* each owner's --get-threads, NULL: its default */
};

static volatile sig_atomic_t up_signal;

static void on_up_signal(int sig)
{
    up_signal = sig;
}

/* Ctrl-C during `up` stops what was started instead of leaving it half-up. */
static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_up_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* Writes "fluxon up: <message>\n" on stderr. */
static void up_vsay(const char *fmt, va_list ap)
{
    fputs("fluxon up: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

/* Reports a failure of `up`, shows the end of log (when given), stops every
 * daemon started so far and removes the files that would name them. */
static int up_fail(struct up_run *run, const char *log, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int up_fail(struct up_run *run, const char *log, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    up_vsay(fmt, ap);
    va_end(ap);
    if (log)
        fio_print_tail(stderr, log, LOG_TAIL_LINES);

    pid_t pids[UP_MAX_OWNERS + UP_MAX_MASTERS];
    size_t n = 0;
    for (size_t i = 0; i < run->n_owners; i++)
        pids[n++] = run->owners[i].pid;
    for (size_t j = 0; j < run->n_masters; j++)
        pids[n++] = run->masters[j].pid;
    /* etcd last: a master that stops revokes its lease there. */
    if (proc_stop(pids, n, UP_ABORT_TERM_MS, CLUSTER_KILL_MS) != 0 ||
        proc_stop(&run->etcd, 1, UP_ABORT_TERM_MS, CLUSTER_KILL_MS) != 0) {
        fprintf(stderr, "fluxon up: could not stop every daemon; see 'fluxon down --dir %s'\n",
                run->dir);
        return CLI_FAIL;
    }
    for (size_t i = 0; i < run->n_owners; i++) {
        unlink(run->owners[i].pid_path);
        unix_path_claim(run->owners[i].sock); /* removes it only if nobody serves it */
        unlink(run->owners[i].yaml);
    }
    if (run->ssd)
        cluster_remove_ssd_dirs(run->dir);
    for (size_t j = 0; j < run->n_masters; j++) {
        unlink(run->masters[j].pid_path);
        unlink(run->masters[j].addr_path);
        unlink(run->masters[j].http_path);
    }
    if (run->standby) {
        unlink(run->etcd_pid);
        cluster_remove_tree(run->dir, CLUSTER_ETCD_DATA);
    }
    return CLI_FAIL;
}

/* Checks whether a started daemon has exited; on exit fills why. */
static bool exited(pid_t pid, char *why, size_t cap)
{
    int status;
    if (pid <= 0 || proc_reap(pid, &status) != 1)
        return false;
    proc_describe_status(status, why, cap);
    return true;
}

/* Validates a complete "HOST:PORT\n" in buf and strips the newline.
 * Returns 1 when valid, 0 when not complete yet, -1 when malformed. */
static int parse_master_addr(char *buf)
{
    size_t n = strlen(buf);
    if (n == 0 || buf[n - 1] != '\n')
        return 0;
    buf[--n] = '\0';
    char *colon = strrchr(buf, ':');
    if (!colon || colon == buf || colon[1] == '\0' || strlen(colon + 1) > 5)
        return -1;
    for (const char *p = buf; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return -1;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    return (*end == '\0' && port > 0 && port <= 65535) ? 1 : -1;
}

/* Fails `up` when a master or etcd has exited (on signal too); else
 * CLI_OK. what ends the message: "before it was listening". */
static int check_servers(struct up_run *run, const char *what)
{
    char why[128];
    if (up_signal)
        return up_fail(run, NULL, "interrupted by signal %d", (int)up_signal);
    for (size_t j = 0; j < run->n_masters; j++) {
        struct up_master *m = &run->masters[j];
        if (exited(m->pid, why, sizeof why)) {
            m->pid = 0;
            if (run->standby)
                return up_fail(run, m->log, "fluxon-master %s %s %s", m->name, why, what);
            return up_fail(run, m->log, "fluxon-master %s %s", why, what);
        }
    }
    if (exited(run->etcd, why, sizeof why)) {
        run->etcd = 0;
        return up_fail(run, run->etcd_log, "etcd %s %s", why, what);
    }
    return CLI_OK;
}

/* Waits for every master to report where it listens (a standby too). */
static int wait_masters_listening(struct up_run *run)
{
    int rc;
    int64_t deadline = proc_now_ms() + MASTER_ADDR_TIMEOUT_MS;
    for (;;) {
        if ((rc = check_servers(run, "before it was listening")) != 0)
            return rc;
        size_t waiting = 0;
        struct up_master *slow = NULL;
        for (size_t j = 0; j < run->n_masters; j++) {
            struct up_master *m = &run->masters[j];
            if (m->addr[0])
                continue;
            char addr[sizeof m->addr];
            if (fio_read_small(m->addr_path, addr, sizeof addr, NULL) == 0) {
                int ok = parse_master_addr(addr);
                /* The HTTP port file is written first (fluxon-master --http-port-file). */
                if (ok > 0 && (fio_read_small(m->http_path, m->http, sizeof m->http, NULL) != 0 ||
                               parse_master_addr(m->http) <= 0))
                    return up_fail(run, m->log, "%s does not hold the master's HTTP HOST:PORT",
                                   m->http_path);
                if (ok > 0) {
                    memcpy(m->addr, addr, sizeof addr);
                    continue;
                }
                if (ok < 0)
                    return up_fail(run, m->log, "%s holds '%s', not HOST:PORT", m->addr_path,
                                   addr);
            }
            slow = m;
            waiting++;
        }
        if (waiting == 0)
            return CLI_OK;
        if (proc_now_ms() >= deadline)
            return up_fail(run, slow->log, "fluxon-master did not write %s within %d s",
                           slow->addr_path, MASTER_ADDR_TIMEOUT_MS / 1000);
        proc_sleep_ms(POLL_MS);
    }
}

/* A client of the local etcd with short timeouts (up polls it). */
static etcd_client *local_etcd_client(struct up_run *run, char *err, size_t errlen)
{
    etcd_client_conf conf = {.connect_timeout_ms = ETCD_CALL_TIMEOUT_MS,
                             .request_timeout_ms = ETCD_CALL_TIMEOUT_MS};
    int code = 0;
    return etcd_client_new(run->etcd_conf.endpoint, &conf, &code, err, errlen);
}

/* Waits until the etcd just started serves (a read of the leader key gets
 * an answer). Returns CLI_OK; -EAGAIN when etcd exited first and another
 * try on new ports is left (run->etcd is then 0); else fails `up`. */
static int wait_etcd_serving(struct up_run *run, bool last_try)
{
    char err[512] = "", why[128];
    etcd_client *c = local_etcd_client(run, err, sizeof err);
    if (!c)
        return up_fail(run, NULL, "etcd client: %s", err);
    int rc;
    int64_t deadline = proc_now_ms() + ETCD_READY_TIMEOUT_MS;
    for (;;) {
        if (!last_try && exited(run->etcd, why, sizeof why)) {
            run->etcd = 0; /* its ports were taken meanwhile, most likely */
            rc = -EAGAIN;
            break;
        }
        if ((rc = check_servers(run, "before it served")) != 0)
            break;
        leader_record rec;
        int64_t term;
        if (etcd_local_leader(c, CLUSTER_NAME, &rec, &term, err, sizeof err) >= 0)
            break; /* rc is CLI_OK */
        if (proc_now_ms() >= deadline) {
            rc = up_fail(run, run->etcd_log, "etcd did not serve on %s within %d s (last try: %s)",
                         run->etcd_conf.endpoint, ETCD_READY_TIMEOUT_MS / 1000, err);
            break;
        }
        proc_sleep_ms(5 * POLL_MS);
    }
    etcd_client_free(c);
    return rc;
}

/* Starts the etcd member on free loopback ports and waits until it serves;
 * a start whose port another process took in between is tried again. */
static int start_etcd(struct up_run *run, const char *etcd_bin)
{
    int rc = -EAGAIN;
    for (int attempt = 0; attempt < ETCD_START_TRIES && rc == -EAGAIN; attempt++) {
        cluster_remove_tree(run->dir, CLUSTER_ETCD_DATA); /* a failed try's, or stale */
        if ((rc = etcd_local_prepare(&run->etcd_conf, etcd_bin, run->etcd_data)) != 0)
            return up_fail(run, NULL, "cannot prepare etcd's ports: %s", strerror(-rc));
        if ((rc = proc_spawn(run->etcd_conf.argv, run->etcd_log, &run->etcd)) != 0)
            return up_fail(run, NULL, "cannot start %s: %s", etcd_bin, strerror(-rc));
        if ((rc = proc_pidfile_write(run->etcd_pid, run->etcd)) != 0)
            return up_fail(run, NULL, "cannot write %s: %s", run->etcd_pid, strerror(-rc));
        rc = wait_etcd_serving(run, attempt + 1 == ETCD_START_TRIES);
    }
    return rc;
}

/* Waits until one of the masters leads: the leader key names its pid. */
static int wait_leader(struct up_run *run)
{
    char err[512] = "", last[600] = "";
    etcd_client *c = local_etcd_client(run, err, sizeof err);
    if (!c)
        return up_fail(run, NULL, "etcd client: %s", err);
    int rc;
    int64_t deadline = proc_now_ms() + LEADER_TIMEOUT_MS;
    for (;;) {
        if ((rc = check_servers(run, "before a master led")) != 0)
            break;
        leader_record rec;
        int64_t term = 0;
        int found = etcd_local_leader(c, CLUSTER_NAME, &rec, &term, err, sizeof err);
        if (found < 0)
            snprintf(last, sizeof last, " (last try: %s)", err);
        else if (found == 0)
            snprintf(last, sizeof last, " (no leader key yet)");
        else
            snprintf(last, sizeof last, " (the leader key names pid %lld at %.300s, not ours)",
                     (long long)rec.pid, rec.addr);
        for (size_t j = 0; found > 0 && j < run->n_masters; j++)
            if (rec.pid == run->masters[j].pid) {
                run->leader = j;
                rc = CLI_OK;
                goto out;
            }
        if (proc_now_ms() >= deadline) {
            rc = up_fail(run, run->masters[0].log, "no master led on etcd %s within %d s%s",
                         run->etcd_conf.endpoint, LEADER_TIMEOUT_MS / 1000, last);
            break;
        }
        proc_sleep_ms(5 * POLL_MS);
    }
out:
    etcd_client_free(c);
    return rc;
}

/* Writes s as a YAML scalar: plain when it is a simple word (as a path or
 * HOST:PORT usually is), double-quoted and escaped otherwise. */
static void yaml_scalar(FILE *f, const char *s)
{
    bool plain = *s != '\0' && s[strlen(s) - 1] != ':';
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                (*p >= '0' && *p <= '9') || strchr("/._-:+@", *p) != NULL;
    if (plain && strchr("-:@", *s) == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* ssd_dir NULL: no SSD tier. */
static int write_owner_yaml(const char *path, const char *master, const char *node,
                            const char *secret, uint64_t memory_size, const char *socket,
                            const char *ssd_dir, uint64_t ssd_size)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return -ENOMEM;
    fprintf(f, "cluster_name: %s\nmaster: ", CLUSTER_NAME);
    yaml_scalar(f, master);
    fprintf(f, "\nnode_name: ");
    yaml_scalar(f, node);
    fprintf(f, "\ndata_listen: 127.0.0.1:0\ncluster_secret_file: ");
    yaml_scalar(f, secret);
    fprintf(f, "\nfluxonkv_spec:\n  memory_size: %" PRIu64 "\n  client_socket: ", memory_size);
    yaml_scalar(f, socket);
    fputc('\n', f);
    if (ssd_dir) {
        fputs("  large_file_paths: [", f);
        yaml_scalar(f, ssd_dir);
        fprintf(f, "]\n  large_limit_size: [%" PRIu64 "]\n", ssd_size);
    }
    if (fclose(f) != 0) {
        free(text);
        return -ENOMEM;
    }
    int rc = fio_write_atomic(path, text, len, 0644);
    free(text);
    return rc;
}

/* The owner may pre-fault its whole segment before it listens (about 0.25 to
 * 1 GB/s on small machines): give large segments the time that takes. */
static int owner_ready_timeout_ms(uint64_t dram)
{
    uint64_t extra = dram > 4 * GIB ? (dram - 4 * GIB) / GIB * 4000 : 0;
    if (extra > 3600000)
        extra = 3600000;
    return OWNER_READY_TIMEOUT_MS + (int)extra;
}

/* Connects to the owner and pings it in a child process, so that a library
 * call that blocks cannot hold `up` past its deadline. Returns 0 when the
 * owner answered, -1 otherwise with the reason in why. */
static int probe_owner(const char *sock, int64_t deadline, char *why, size_t cap)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        snprintf(why, cap, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL); /* the child must not write our buffered output again */
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, cap, "fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        close(pfd[0]);
        cluster_unlock(); /* the parent's lock is its own, not this probe's */
        int err = FX_ECONN;
        fx_client *c = fx_connect(sock, &err);
        if (c)
            err = fx_ping(c);
        if (err != 0) {
            char msg[512];
            int n = snprintf(msg, sizeof msg, "%s: %s", fx_strerror(err), fx_last_error_detail());
            if (n > 0 && write(pfd[1], msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0)
                err = FX_ECONN; /* the parent is gone or the pipe broke: nothing to report */
        }
        fx_close(c);
        _exit(err == 0 ? 0 : 1);
    }
    close(pfd[1]);

    int status = 0, r;
    while ((r = proc_reap(pid, &status)) == 0 && proc_now_ms() < deadline && !up_signal)
        proc_sleep_ms(2);
    if (r == 0) {
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        snprintf(why, cap, "no answer to a ping");
        close(pfd[0]);
        return -1;
    }
    ssize_t n = read(pfd[0], why, cap - 1);
    close(pfd[0]);
    why[n > 0 ? n : 0] = '\0';
    if (r == 1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (n <= 0)
        proc_describe_status(status, why, cap);
    return -1;
}

/* Waits until every owner answers a ping on its client socket; watches all
 * of them (and the master) for an early exit while it waits. */
static int wait_owners_ready(struct up_run *run, int timeout_ms)
{
    char why[128], last[512] = "", probe[384];
    const struct up_owner *slow = NULL; /* the last owner that did not answer */
    int64_t deadline = proc_now_ms() + timeout_ms;
    for (;;) {
        if (up_signal)
            return up_fail(run, NULL, "interrupted by signal %d", (int)up_signal);
        size_t waiting = 0;
        for (size_t i = 0; i < run->n_owners; i++) {
            struct up_owner *o = &run->owners[i];
            if (exited(o->pid, why, sizeof why)) {
                o->pid = 0;
                return up_fail(run, o->log, "fluxon-owner %s (%s) %s before it was ready",
                               o->name, o->sock, why);
            }
            if (o->ready)
                continue;
            struct stat st;
            if (stat(o->sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
                if (probe_owner(o->sock, deadline, probe, sizeof probe) == 0) {
                    o->ready = true;
                    continue;
                }
                snprintf(last, sizeof last, " (last try: %s)", probe);
            } else {
                last[0] = '\0';
            }
            slow = o;
            waiting++;
        }
        int rc = check_servers(run, "while the owners started");
        if (rc != 0)
            return rc;
        if (waiting == 0)
            return CLI_OK;
        if (proc_now_ms() >= deadline)
            return up_fail(run, slow->log, "fluxon-owner %s did not answer on %s within %d s%s",
                           slow->name, slow->sock, timeout_ms / 1000, last);
        proc_sleep_ms(POLL_MS);
    }
}

/* Creates the cluster directory and resolves it to an absolute path. The
 * default one sits in the shared /tmp, so it must be ours and private. */
static int prepare_dir(const char *dir, bool is_default, char *abs, size_t cap)
{
    struct stat st;
    int rc = mkdir_p(dir, 0777, is_default ? 0700 : 0777);
    if (rc != 0) {
        fprintf(stderr, "fluxon up: cannot create %s: %s\n", dir, strerror(-rc));
        return CLI_FAIL;
    }
    if (is_default && (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())) {
        fprintf(stderr, "fluxon up: %s is not a directory owned by you; use --dir\n", dir);
        return CLI_FAIL;
    }
    char resolved[PATH_MAX];
    if (!realpath(dir, resolved)) {
        fprintf(stderr, "fluxon up: %s: %s\n", dir, strerror(errno));
        return CLI_FAIL;
    }
    if ((size_t)snprintf(abs, cap, "%s", resolved) >= cap)
        return CLI_FAIL;
    return CLI_OK;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    up_vsay(fmt, ap);
    va_end(ap);
    return cli_args_exit(ARGS_ERROR);
}

/* Writes "DIR/<base>.<ext>" into out; 0 or -ENAMETOOLONG. */
static int base_path(char *out, size_t cap, const char *dir, const char *base, const char *ext)
{
    int n = snprintf(out, cap, "%s/%s.%s", dir, base, ext);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* Fills the paths of the masters (and etcd), and of every owner. */
static int up_paths(struct up_run *run)
{
    const char *dir = run->dir;
    if (cluster_path(run->secret, sizeof run->secret, dir, "cluster.secret") ||
        cluster_path(run->etcd_pid, sizeof run->etcd_pid, dir, CLUSTER_ETCD_PID) ||
        cluster_path(run->etcd_log, sizeof run->etcd_log, dir, "etcd.log") ||
        cluster_path(run->etcd_data, sizeof run->etcd_data, dir, CLUSTER_ETCD_DATA)) {
        fprintf(stderr, "fluxon up: %s: path too long\n", dir);
        return CLI_FAIL;
    }
    for (size_t j = 0; j < run->n_masters; j++) {
        struct up_master *m = &run->masters[j];
        /* One master keeps the names it always had. */
        if (run->standby)
            snprintf(m->name, sizeof m->name, "master%zu", j);
        else
            snprintf(m->name, sizeof m->name, "master");
        if (base_path(m->pid_path, sizeof m->pid_path, dir, m->name, "pid") ||
            base_path(m->addr_path, sizeof m->addr_path, dir, m->name, "addr") ||
            base_path(m->http_path, sizeof m->http_path, dir, m->name, "http") ||
            base_path(m->log, sizeof m->log, dir, m->name, "log")) {
            fprintf(stderr, "fluxon up: %s: path too long\n", dir);
            return CLI_FAIL;
        }
    }
    for (size_t i = 0; i < run->n_owners; i++) {
        struct up_owner *o = &run->owners[i];
        snprintf(o->name, sizeof o->name, "owner%zu", i);
        if (cluster_owner_path(o->pid_path, sizeof o->pid_path, dir, i, "pid") ||
            cluster_owner_path(o->yaml, sizeof o->yaml, dir, i, "yaml") ||
            cluster_owner_path(o->log, sizeof o->log, dir, i, "log") ||
            cluster_owner_path(o->sock, sizeof o->sock, dir, i, "sock") ||
            (size_t)snprintf(o->ssd, sizeof o->ssd, "%s/ssd%zu", dir, i) >= sizeof o->ssd) {
            fprintf(stderr, "fluxon up: %s: path too long\n", dir);
            return CLI_FAIL;
        }
        if (strlen(o->sock) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
            fprintf(stderr,
                    "fluxon up: socket path %s is longer than %zu bytes; use a shorter --dir\n",
                    o->sock, sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
            return CLI_FAIL;
        }
    }
    return CLI_OK;
}

/* The pid of a daemon named by DIR/master*.pid, any DIR/owner*.pid or
 * DIR/etcd.pid (a cluster started with more owners or masters counts too),
 * else 0. */
static pid_t running_daemon(const char *dir)
{
    static const char *const kinds[] = {"master", "owner"};
    pid_t running = cluster_live_daemon(dir, CLUSTER_ETCD_PID);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && !running; k++) {
        char *names[CLUSTER_MAX_OWNERS];
        int n = cluster_list(dir, kinds[k], ".pid", names, CLUSTER_MAX_OWNERS);
        for (int i = 0; i < n && !running; i++)
            running = cluster_live_daemon(dir, names[i]);
        if (n > 0)
            cluster_names_free(names, (size_t)n);
    }
    return running;
}

/* Starts each master (on etcd: after etcd, with --etcd) and waits until
 * each listens; on etcd, also until one leads. */
static int start_masters(struct up_run *run, char *master_bin)
{
    int rc;
    for (size_t j = 0; j < run->n_masters; j++) {
        struct up_master *m = &run->masters[j];
        if (up_signal)
            return up_fail(run, NULL, "interrupted by signal %d", (int)up_signal);
        char *argv[24] = {master_bin,    "--listen",         "127.0.0.1:0",
                          "--port-file",  m->addr_path,       "--cluster-name",
                          CLUSTER_NAME,   "--secret-file",    run->secret,
                          "--http",       "127.0.0.1:0",      "--http-port-file",
                          m->http_path};
        size_t n = 13;
        if (run->cache_budget) {
            argv[n++] = "--cache-budget";
            argv[n++] = (char *)run->cache_budget;
        }
        if (run->standby) {
            argv[n++] = "--etcd";
            argv[n++] = run->etcd_conf.endpoint;
        }
        argv[n] = NULL;
        if ((rc = proc_spawn(argv, m->log, &m->pid)) != 0)
            return up_fail(run, NULL, "cannot start %s: %s", master_bin, strerror(-rc));
        if ((rc = proc_pidfile_write(m->pid_path, m->pid)) != 0)
            return up_fail(run, NULL, "cannot write %s: %s", m->pid_path, strerror(-rc));
    }
    if ((rc = wait_masters_listening(run)) != 0)
        return rc;
    return run->standby ? wait_leader(run) : CLI_OK;
}

/* Starts the master (or etcd and the masters), then every owner, and waits
 * until all answer. */
static int up_start(struct up_run *run, char *master_bin, char *owner_bin, const char *etcd_bin,
                    uint64_t dram)
{
    const char *dir = run->dir;
    int rc;
    if ((rc = up_paths(run)) != 0)
        return rc;

    pid_t running = running_daemon(dir);
    if (running) {
        fprintf(stderr,
                "fluxon up: a cluster is already running in %s (pid %d); "
                "stop it with 'fluxon down --dir %s'\n",
                dir, (int)running, dir);
        return CLI_FAIL;
    }
    /* Leftovers of a cluster that died: a stale master.addr would be read as
     * the new master's address, stale pid files (perhaps of more owners or
     * masters than now) would be taken for this cluster's by `down`, and a
     * stale etcd.data would keep the old member's ports. */
    cluster_remove_matching(dir, "master", ".addr");
    cluster_remove_matching(dir, "master", ".http");
    cluster_remove_matching(dir, "master", ".pid");
    cluster_remove_matching(dir, "owner", ".pid");
    unlink(run->etcd_pid);
    cluster_remove_tree(dir, CLUSTER_ETCD_DATA);
    /* A socket that still answers belongs to an owner nobody tracks (its pid
     * file lost): taking the path would cut it off from its clients. */
    for (size_t i = 0; i < run->n_owners; i++) {
        int e = unix_path_claim(run->owners[i].sock);
        if (e < 0) {
            fprintf(stderr, "fluxon up: %s: %s; stop that process first\n",
                    run->owners[i].sock, unix_path_strerror(e));
            return CLI_FAIL;
        }
    }

    /* The cluster secret: made on the first `up` in DIR (0600), kept after. */
    rc = auth_secret_create(run->secret);
    if (rc < 0 && rc != -EEXIST) {
        fprintf(stderr, "fluxon up: cannot create %s: %s\n", run->secret, strerror(-rc));
        return CLI_FAIL;
    }

    catch_signals();

    if (run->standby && (rc = start_etcd(run, etcd_bin)) != 0)
        return rc;
    if ((rc = start_masters(run, master_bin)) != 0)
        return rc;
    /* The owners dial the one master, or find the leader through etcd. */
    const char *master = run->standby ? run->etcd_conf.locator : run->masters[0].addr;

    for (size_t i = 0; i < run->n_owners; i++) {
        struct up_owner *o = &run->owners[i];
        if (up_signal)
            return up_fail(run, NULL, "interrupted by signal %d", (int)up_signal);
        if (run->ssd && (rc = mkdir_p(o->ssd, 0777, 0700)) != 0)
            return up_fail(run, NULL, "cannot create %s: %s", o->ssd, strerror(-rc));
        if ((rc = write_owner_yaml(o->yaml, master, o->name, run->secret, dram, o->sock,
                                   run->ssd ? o->ssd : NULL, run->ssd)) != 0)
            return up_fail(run, NULL, "cannot write %s: %s", o->yaml, strerror(-rc));
        char *owner_argv[] = {owner_bin, "--config", o->yaml, NULL, NULL, NULL};
        if (run->get_threads) {
            owner_argv[3] = "--get-threads";
            owner_argv[4] = (char *)run->get_threads;
        }
        if ((rc = proc_spawn(owner_argv, o->log, &o->pid)) != 0)
            return up_fail(run, NULL, "cannot start %s: %s", owner_bin, strerror(-rc));
        if ((rc = proc_pidfile_write(o->pid_path, o->pid)) != 0)
            return up_fail(run, NULL, "cannot write %s: %s", o->pid_path, strerror(-rc));
    }

    /* The owners pre-fault their segments side by side: give them the time
     * that all of that memory takes. */
    uint64_t total = dram > UINT64_MAX / run->n_owners ? UINT64_MAX : dram * run->n_owners;
    if ((rc = wait_owners_ready(run, owner_ready_timeout_ms(total))) != 0)
        return rc;

    for (size_t i = 0; i < run->n_owners; i++)
        printf("%s\n", run->owners[i].sock);
    printf("http://%s/\n", run->masters[run->leader].http);
    if (fflush(stdout) != 0)
        return CLI_FAIL;
    return CLI_OK;
}

/* A whole decimal number in text, into *out: true, or false for anything
 * else (a sign, no digits, trailing text, out of long's range). */
static bool parse_long(const char *text, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(text, &end, 10);
    return !errno && end != text && !*end;
}

int cli_up(int argc, char **argv)
{
    const char *dir_opt = NULL, *dram_opt = NULL, *ssd_opt = NULL, *owners_opt = NULL;
    const char *bin_dir = NULL, *budget_opt = NULL, *masters_opt = NULL, *pos[1];
    const char *get_threads_opt = NULL;
    size_t npos;
    const struct args_opt opts[] = {
        {"--dir", NULL, &dir_opt, NULL},          {"--dram", NULL, &dram_opt, NULL},
        {"--ssd", NULL, &ssd_opt, NULL},          {"--owners", NULL, &owners_opt, NULL},
        {"--bin-dir", NULL, &bin_dir, NULL},      {"--cache-budget", NULL, &budget_opt, NULL},
        {"--masters", NULL, &masters_opt, NULL},  {"--get-threads", NULL, &get_threads_opt, NULL},
    };
    const struct args_spec spec = {"up", opts, sizeof opts / sizeof opts[0], NULL, 0, 0};
    int rc = args_parse(&spec, argc, argv, pos, &npos);
    if (rc != ARGS_OK)
        return cli_args_exit(rc);

    long owners = 1;
    if (owners_opt) {
        if (!parse_long(owners_opt, &owners) || owners < 1)
            return usage_error("invalid --owners '%s' (expected a positive integer)",
                               owners_opt);
        if (owners > UP_MAX_OWNERS)
            return usage_error("--owners %ld is more than %d", owners, UP_MAX_OWNERS);
    }
    long masters = 1;
    if (masters_opt) {
        if (!parse_long(masters_opt, &masters) || masters < 1)
            return usage_error("invalid --masters '%s' (expected a positive integer: 1 for one "
                               "master, 2 or more for standby masters on etcd)",
                               masters_opt);
        if (masters > UP_MAX_MASTERS)
            return usage_error("--masters %ld is more than %d", masters, UP_MAX_MASTERS);
    }
    uint64_t ssd = 0;
    if (ssd_opt && (size_parse(ssd_opt, &ssd) != 0 || ssd < 512))
        return usage_error("invalid --ssd '%s' (expected a size of at least 512 bytes, such as "
                           "256MB or 4GB)",
                           ssd_opt);
    if (budget_opt) {
        char *end;
        errno = 0;
        long pct = strtol(budget_opt, &end, 10);
        if (errno || end == budget_opt || (*end && strcmp(end, "%") != 0) || pct < 1 || pct > 100)
            return usage_error("invalid --cache-budget '%s' (expected a percentage 1..100)",
                               budget_opt);
    }
    long get_threads;
    if (get_threads_opt && (!parse_long(get_threads_opt, &get_threads) || get_threads < 0 ||
                            get_threads > 16))
        return usage_error("invalid --get-threads '%s' (expected 0..16: the threads beside "
                           "each owner's loop that answer gets, 0 for none)",
                           get_threads_opt);
    uint64_t dram = GIB;
    if (dram_opt && (size_parse(dram_opt, &dram) != 0 || dram == 0))
        return usage_error("invalid --dram '%s' (expected a size such as 512MB or 2GB)",
                           dram_opt);

    char master_bin[PATH_MAX], owner_bin[PATH_MAX], etcd_bin[PATH_MAX] = "";
    const char *missing = NULL;
    if (proc_find_binary("fluxon-master", bin_dir, master_bin, sizeof master_bin) != 0)
        missing = "fluxon-master";
    else if (proc_find_binary("fluxon-owner", bin_dir, owner_bin, sizeof owner_bin) != 0)
        missing = "fluxon-owner";
    if (missing) {
        fprintf(stderr, "fluxon up: cannot find the executable %s %s%s\n", missing,
                bin_dir ? "in " : "beside this program or in PATH", bin_dir ? bin_dir : "");
        return CLI_FAIL;
    }
    /* etcd is not ours: --bin-dir first, else beside this program or in PATH. */
    if (masters > 1 && (!bin_dir || proc_find_binary("etcd", bin_dir, etcd_bin,
                                                     sizeof etcd_bin) != 0) &&
        proc_find_binary("etcd", NULL, etcd_bin, sizeof etcd_bin) != 0) {
        fprintf(stderr, "fluxon up: --masters %ld needs etcd, and there is no executable etcd "
                        "%s beside this program or in PATH (Debian package etcd-server)\n",
                masters, bin_dir ? "in --bin-dir," : "");
        return CLI_FAIL;
    }

    char default_dir[PATH_MAX], dir[PATH_MAX];
    cli_default_dir(default_dir, sizeof default_dir);
    if ((rc = prepare_dir(dir_opt ? dir_opt : default_dir, !dir_opt, dir, sizeof dir)) != 0)
        return rc;

    struct up_run run = {.dir = dir,
                         .n_masters = (size_t)masters,
                         .standby = masters > 1,
                         .n_owners = (size_t)owners,
                         .ssd = ssd,
                         .cache_budget = budget_opt,
                         .get_threads = get_threads_opt};
    run.owners = calloc(run.n_owners, sizeof *run.owners);
    run.masters = calloc(run.n_masters, sizeof *run.masters);
    if (!run.owners || !run.masters) {
        fprintf(stderr, "fluxon up: %s\n", strerror(ENOMEM));
        rc = CLI_FAIL;
    } else if (cluster_lock("up", dir, true) < 0) {
        rc = CLI_FAIL;
    } else {
        rc = up_start(&run, master_bin, owner_bin, etcd_bin, dram);
        cluster_unlock();
    }
    free(run.owners);
    free(run.masters);
    return rc;
}
