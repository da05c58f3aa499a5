/*
 * control_bench.c - fx_bench_control: what one operation costs each process
 * of a 2-owner cluster in CPU time and in sleeps (voluntary context
 * switches), next to one Unix-socket round trip between two processes.
 *
 * Why: a remote get's fixed cost (GetStart, the data plane's first request,
 * GetDone, the client's hop) decides how close a 4 MiB get comes to one
 * loopback stream (docs/benchmarks.md, "Cluster data plane"). On a guest where
 * each wake-up is a context switch the hypervisor takes part in, that cost is
 * the number of hand-offs times the price of one, and this program measures
 * both so the claim can be checked on any machine.
 *
 * The cluster is started with `--placement local`: a writer client on owner0
 * puts a round of KEYS keys (untimed, not counted), then
 *   - remote-get: a client on owner1 gets each key once (owner1 has no replica:
 *     GetStart, a pull from owner0, GetDone, the answer), releasing the holder;
 *   - local-get:  the writer's client gets each key once (owner0 serves it from
 *     its own replica without the master);
 * and, separately, put: the writer overwrites each key (local placement: no
 * data plane). Every value is checked on its first and last byte. For each
 * row: the p50 latency of one call, and per call the CPU time (from
 * /proc/PID/task/TID/schedstat, ns) and the sleeps (.../status) summed over
 * the threads of the master, owner0, owner1 and this program. Rows for 64-byte and 4 MiB values.
 * unix-rtt: a 64-byte ping-pong over a socketpair with a forked echo process,
 * both blocking: the price of one hand-off with nothing else in it.
 */
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tests/util/cluster.h"
#include "benchutil.h"
#include "fluxon/fluxon.h"
#include "hist.h"

#define SEGMENT (1024ull << 20)
#define ROUNDS_SMALL 64 /* rounds of KEYS keys for 64-byte values */
#define ROUNDS_LARGE 8  /* ... for 4 MiB values (KEYS x 4 MiB = 128 MiB a round) */
#define KEYS 32
#define RTT_ROUNDS 20000

static const char *const prog = "fx_bench_control";

enum { P_MASTER, P_OWNER0, P_OWNER1, P_SELF, NPROC };
static const char *const proc_name[NPROC] = {"master", "owner0", "owner1", "client"};

typedef struct usage {
    uint64_t cpu_ns;
    uint64_t sleeps;
} usage;

/* Adds one thread's CPU ns (schedstat's first field) and voluntary
 * switches, read from dir (/proc/PID/task/TID). */
static void add_task(const char *dir, usage *u)
{
    char path[400], line[128];
    snprintf(path, sizeof path, "%s/schedstat", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        unsigned long long ns;
        if (fscanf(f, "%llu", &ns) == 1)
            u->cpu_ns += ns;
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/status", dir);
    f = fopen(path, "r");
    if (f) {
        unsigned long long v;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1)
                u->sleeps += v;
        fclose(f);
    }
}

/* CPU ns and voluntary switches of every thread of pid (0: this process):
 * /proc/PID/schedstat and status cover the main thread only, and a client
 * has a session thread too. Threads that ended are not counted. */
static usage read_usage(pid_t pid)
{
    usage u = {0, 0};
    char dir[64], tdir[320];
    snprintf(dir, sizeof dir, pid ? "/proc/%d/task" : "/proc/self/task", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return u;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(tdir, sizeof tdir, "%s/%s", dir, e->d_name);
            add_task(tdir, &u);
        }
    closedir(d);
    return u;
}

typedef struct row {
    const char *op;
    size_t size;
    uint64_t ops;
    hist lat;
    usage spent[NPROC]; /* summed over the measured sections */
} row;

typedef struct cluster_ctx {
    test_cluster tc;
    fx_client *c0, *c1;
    pid_t pids[NPROC];
} cluster_ctx;

static void snapshot(const cluster_ctx *x, usage out[NPROC])
{
    for (int p = 0; p < NPROC; p++)
        out[p] = read_usage(x->pids[p]);
}

static void add_spent(row *r, const usage before[NPROC], const usage after[NPROC])
{
    for (int p = 0; p < NPROC; p++) {
        r->spent[p].cpu_ns += after[p].cpu_ns - before[p].cpu_ns;
        r->spent[p].sleeps += after[p].sleeps - before[p].sleeps;
    }
}

static int fail(const char *what, const char *key, int r)
{
    fprintf(stderr, "%s: %s %s: %s (%s)\n", prog, what, key, fx_strerror(r),
            fx_last_error_detail());
    return -1;
}

/* Each value's first and last byte carry (round, key) so a stale or foreign
 * value is caught. */
static uint8_t stamp(int round, int key)
{
    return (uint8_t)(round * 31 + key + 1);
}

static int put_round(fx_client *c, uint8_t *buf, size_t size, int round, row *timed)
{
    for (int k = 0; k < KEYS; k++) {
        char key[32];
        snprintf(key, sizeof key, "ctl/%zu/%d", size, k);
        buf[0] = buf[size - 1] = stamp(round, k);
        uint64_t t0 = now_ns();
        int r = fx_put(c, key, strlen(key), buf, size);
        if (r)
            return fail("put", key, r);
        if (timed) {
            hist_add(&timed->lat, now_ns() - t0);
            timed->ops++;
        }
    }
    return 0;
}

static int get_round(fx_client *c, size_t size, int round, row *r)
{
    for (int k = 0; k < KEYS; k++) {
        char key[32];
        snprintf(key, sizeof key, "ctl/%zu/%d", size, k);
        fx_holder *h;
        uint64_t t0 = now_ns();
        int e = fx_get(c, key, strlen(key), &h);
        uint64_t t1 = now_ns();
        if (e)
            return fail("get", key, e);
        const uint8_t *d = fx_holder_data(h);
        bool ok = fx_holder_len(h) == size && d[0] == stamp(round, k) &&
                  d[size - 1] == stamp(round, k);
        fx_holder_release(h);
        if (!ok) {
            fprintf(stderr, "%s: get %s: wrong bytes (round %d)\n", prog, key, round);
            return -1;
        }
        hist_add(&r->lat, t1 - t0);
        r->ops++;
    }
    return 0;
}

/* One size: rounds of (put untimed, remote gets, local gets), then rounds of
 * timed puts. Fills rows[0..2]. */
static int measure_size(cluster_ctx *x, size_t size, int rounds, row rows[3])
{
    uint8_t *buf = malloc(size);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    memset(buf, 0x5a, size);
    rows[0] = (row){.op = "put", .size = size};
    rows[1] = (row){.op = "remote-get", .size = size};
    rows[2] = (row){.op = "local-get", .size = size};
    usage a[NPROC], b[NPROC];
    int rc = 0;
    /* round 0 warms up: connections, mappings, first touches */
    for (int round = 0; round <= rounds && rc == 0; round++) {
        if (put_round(x->c0, buf, size, round, NULL) < 0) {
            rc = -1;
            break;
        }
        snapshot(x, a);
        row scratch = {0};
        rc = get_round(x->c1, size, round, round ? &rows[1] : &scratch);
        snapshot(x, b);
        if (round)
            add_spent(&rows[1], a, b);
        if (rc)
            break;
        snapshot(x, a);
        rc = get_round(x->c0, size, round, round ? &rows[2] : &scratch);
        snapshot(x, b);
        if (round)
            add_spent(&rows[2], a, b);
    }
    for (int round = rounds + 1; round <= 2 * rounds && rc == 0; round++) {
        snapshot(x, a);
        rc = put_round(x->c0, buf, size, round, &rows[0]);
        snapshot(x, b);
        add_spent(&rows[0], a, b);
    }
    free(buf);
    return rc;
}

static void size_str(size_t size, char *buf, size_t cap)
{
    if (size >= (1u << 20))
        snprintf(buf, cap, "%zuMiB", size >> 20);
    else
        snprintf(buf, cap, "%zuB", size);
}

static void print_row(const row *r)
{
    char sz[32];
    size_str(r->size, sz, sizeof sz);
    double n = r->ops ? (double)r->ops : 1;
    double cpu_total = 0, sleeps_total = 0;
    printf("%-11s %6s %6llu %8.1f  ", r->op, sz, (unsigned long long)r->ops,
           hist_quantile(&r->lat, 0.5) / 1e3);
    for (int p = 0; p < NPROC; p++) {
        printf(" %7.1f", (double)r->spent[p].cpu_ns / 1e3 / n);
        cpu_total += (double)r->spent[p].cpu_ns / 1e3 / n;
    }
    printf(" %7.1f  ", cpu_total);
    for (int p = 0; p < NPROC; p++) {
        printf(" %7.1f", (double)r->spent[p].sleeps / n);
        sleeps_total += (double)r->spent[p].sleeps / n;
    }
    printf(" %7.1f\n", sleeps_total);
}

/* p50 of a blocking 64-byte ping-pong with a forked echo process, in ns; 0
 * when it could not run. */
static double unix_rtt(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return 0;
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    if (pid == 0) {
        close(sv[0]);
        char b[64];
        for (;;) {
            ssize_t n = read(sv[1], b, sizeof b);
            if (n <= 0 || write(sv[1], b, (size_t)n) != n)
                _exit(0);
        }
    }
    close(sv[1]);
    static hist h;
    char b[64] = {0};
    for (int i = 0; i < RTT_ROUNDS; i++) {
        uint64_t t0 = now_ns();
        size_t got = 0;
        if (write(sv[0], b, sizeof b) != (ssize_t)sizeof b)
            break;
        while (got < sizeof b) {
            ssize_t n = read(sv[0], b + got, sizeof b - got);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got < sizeof b)
            break;
        hist_add(&h, now_ns() - t0);
    }
    close(sv[0]);
    waitpid(pid, NULL, 0);
    return hist_quantile(&h, 0.5);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        fprintf(argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? stdout
                                                                                      : stderr,
                "usage: %s\n  per-process CPU time and sleeps of put, remote get and local get\n"
                "  on a 2-owner cluster, next to one Unix-socket round trip\n",
                prog);
        return argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? 0 : 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    printf("%s: %s, %ld online CPU(s); %d keys a round, %d rounds (64 B), %d (4 MiB)\n", prog,
           cpu, sysconf(_SC_NPROCESSORS_ONLN), KEYS, ROUNDS_SMALL, ROUNDS_LARGE);
    double rtt = unix_rtt();
    printf("unix-rtt: p50 %.1f us (64 bytes there and back, two processes, blocking)\n\n",
           rtt / 1e3);

    cluster_ctx x;
    memset(&x, 0, sizeof x);
    const char *args[] = {"--placement", "local", NULL};
    if (cluster_start_n(&x.tc, 2, SEGMENT, args) != 0)
        return 1;
    int err = 0;
    x.c0 = fx_connect(x.tc.sockets[0], &err);
    x.c1 = x.c0 ? fx_connect(x.tc.sockets[1], &err) : NULL;
    if (!x.c1) {
        fprintf(stderr, "%s: connect: %s (%s)\n", prog, fx_strerror(err), fx_last_error_detail());
        fx_close(x.c0);
        cluster_stop(&x.tc);
        return 1;
    }
    x.pids[P_MASTER] = x.tc.master_pid;
    x.pids[P_OWNER0] = x.tc.owner_pids[0];
    x.pids[P_OWNER1] = x.tc.owner_pids[1];
    x.pids[P_SELF] = 0;

    printf("%-11s %6s %6s %8s   %-42s   sleeps per op:\n", "op", "size", "n", "p50 us",
           "cpu us per op:");
    printf("%-11s %6s %6s %8s  ", "", "", "", "");
    for (int p = 0; p < NPROC; p++)
        printf(" %7s", proc_name[p]);
    printf(" %7s  ", "total");
    for (int p = 0; p < NPROC; p++)
        printf(" %7s", proc_name[p]);
    printf(" %7s\n", "total");

    static row rows[6];
    int rc = measure_size(&x, 64, ROUNDS_SMALL, rows);
    if (rc == 0)
        rc = measure_size(&x, 4u << 20, ROUNDS_LARGE, rows + 3);
    if (rc == 0)
        for (int i = 0; i < 6; i++)
            print_row(&rows[i]);
    fx_close(x.c0);
    fx_close(x.c1);
    if (cluster_stop(&x.tc) != 0)
        rc = -1;
    if (rc == 0)
        printf("\ncpu and sleeps (voluntary context switches, each one a wake-up later) are "
               "summed over each process's threads; client: this program, its two clients' "
               "session threads included\n");
    return rc ? 1 : 0;
}
