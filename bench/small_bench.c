/*
 * small_bench.c - fx_bench_small: single-key small operations of Fluxon side
 * by side with memcached, in the same run on the same machine.
 *
 * Why: the targets for small values are ratios to memcached, the
 * cache people replace with Fluxon: one 4 KiB get with one client thread at
 * >= 1.5x memcached's rate and with two threads at >= 1x; one 4 KiB put at
 * >= 1x with one and with two threads; one 64 KiB put at >= 1.5x. A figure
 * taken on another day or another machine says nothing about such a ratio on
 * a shared, noisy guest, so both systems run here, interleaved.
 *
 * Fluxon: one master and one owner (`--placement local`, a 256 MiB segment);
 * each client thread has its own fx_client on owner 0's socket and calls
 * fx_put (fx_put_nowait in the "nowait" rows), or fx_get + fx_holder_release.
 * The get rows run with the client's default near cache (1/64 of the
 * segment: every key of a row fits, so after the first pass a get is answered
 * in the client); the "owner" get rows turn it off (fx_set_near_cache 0), so
 * that every get is a call answered by the owner's cache.
 * memcached (/usr/bin/memcached, started here: -t 4 -m 1024 -U 0, RAM only,
 * on a free loopback port): each client thread has one blocking TCP
 * connection (TCP_NODELAY) and speaks the
 * plain text protocol, `set` answered STORED and `get` answered VALUE/END
 * (bench/pressure/netio.c does the socket I/O). Every row works on KEYS keys
 * of its own, written once before any timing (gets then always hit, puts
 * always overwrite); with two threads each takes every second key. Every get
 * checks the value's length and its first and last byte, on both systems.
 *
 * A timed pass runs a fixed number of operations per thread (FX_BENCH_SMALL_OPS,
 * default 20000 for 4 KiB; a quarter of it for 64 KiB) and its rate is all
 * threads' operations over the wall time from the start barrier to the last
 * join. ROUNDS rounds (FX_BENCH_SMALL_ROUNDS, default 5) each run every row on
 * both systems, Fluxon first in even rounds and memcached first in odd ones.
 * Per row: the median and range of each system's rate and of the per-round
 * ratio fluxon / memcached. Exits 77 when memcached is not installed.
 *
 * FX_BENCH_SMALL_OWNERS=2 runs two owners instead of one: client thread t
 * talks to owner t and key i lives on owner i % 2 (filled through it), so the
 * two threads of a row never share an owner's loop. What a second loop in one
 * owner could give at most (issue 21, Build item 5) is what this row gains,
 * since two owner processes are two loops with nothing shared but the master.
 * FX_BENCH_SMALL_GET_THREADS=N sets the owners' get_threads (default: the
 * owner's own, 2): 0 has the loop answer every get, as before get threads.
 * FX_BENCH_SMALL_ROWS=TEXT runs only the rows whose name contains TEXT
 * (e.g. "owner-get"), for A/B runs of one kind of call.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tests/util/cluster.h"
#include "../tests/util/sock_probe.h"
#include "../tests/util/testlib.h"
#include "benchutil.h"
#include "fluxon/fluxon.h"
#include "pressure/netio.h"

#define SEGMENT (256ull << 20)
#define KEYS 1000
#define OPS_SMALL 20000 /* operations per thread and pass, 4 KiB rows */
#define OPS_MAX 10000000
#define ROUNDS 5
#define MAX_ROUNDS 64
#define MAX_THREADS 2
#define MAX_VALUE (64u << 10)

#define MC_BIN "/usr/bin/memcached"
#define MC_START_TRIES 5  /* a start that lost its port to someone else */
#define MC_READY_MS 5000  /* until it accepts connections */
#define MC_STOP_MS 2000   /* SIGTERM, then SIGKILL */
#define MC_IO_MS 10000    /* a send or receive that makes no progress */
#define MC_LINE_MAX 256
#define MC_READER_CAP (64u << 10)

static const char *const prog = "fx_bench_small";

enum op { OP_GET, OP_GET_OWNER, OP_PUT, OP_PUT_NOWAIT };

static bool is_put(enum op op) { return op == OP_PUT || op == OP_PUT_NOWAIT; }
enum sys { SYS_FX, SYS_MC, NSYS };

typedef struct row_spec {
    const char *name;
    enum op op;
    size_t size;
    int threads;
    double target; /* the fluxon / memcached line */
} row_spec;

static const row_spec row_specs[] = {
    {"get 4KiB x1", OP_GET, 4096, 1, 1.5}, {"get 4KiB x2", OP_GET, 4096, 2, 1.0},
    /* The same gets with the near cache off: a call to the owner each. */
    {"owner-get x1", OP_GET_OWNER, 4096, 1, 0}, {"owner-get x2", OP_GET_OWNER, 4096, 2, 0},
    {"put 4KiB x1", OP_PUT, 4096, 1, 1.0}, {"put 4KiB x2", OP_PUT, 4096, 2, 1.0},
    {"put 64KiB x1", OP_PUT, 65536, 1, 1.5}, {"put 64KiB x2", OP_PUT, 65536, 2, 1.5},
    /* The opt-in fx_put_nowait (no wait for the master's answer) against the
     * same memcached set. */
    {"nowait 4KiB x1", OP_PUT_NOWAIT, 4096, 1, 1.0},
    {"nowait 4KiB x2", OP_PUT_NOWAIT, 4096, 2, 1.0},
    {"nowait 64KiB x1", OP_PUT_NOWAIT, 65536, 1, 1.5},
    {"nowait 64KiB x2", OP_PUT_NOWAIT, 65536, 2, 1.5},
};
#define NROWS ((int)(sizeof row_specs / sizeof row_specs[0]))

/* One memcached connection, used by one thread. */
typedef struct mc_conn {
    int fd;
    netio_reader rd;
    netio_buf val; /* the last value and its CRLF */
} mc_conn;

typedef struct bench {
    int rounds;
    int owners; /* 1, or 2: thread t on owner t (FX_BENCH_SMALL_OWNERS) */
    int get_threads; /* the owners' get_threads (FX_BENCH_SMALL_GET_THREADS), -1: their default */
    long ops_small, ops_large;
    test_cluster tc;
    bool cluster_up;
    fx_client *fx[MAX_THREADS];
    pid_t mc_pid; /* 0: not running */
    char mc_dir[64], mc_log[128], mc_addr[32], mc_version[32];
    mc_conn mc[MAX_THREADS];
    uint8_t *value[MAX_THREADS]; /* each thread's put buffer, MAX_VALUE bytes */
    bool row_on[NROWS]; /* FX_BENCH_SMALL_ROWS */
    double rate[NROWS][NSYS][MAX_ROUNDS];
} bench;

/* Where a pass's threads wait until the main thread lets them all go (1)
 * or sends them home (-1). */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
} gate;

/* One thread's share of a pass (or the untimed fill, on the main thread). */
typedef struct worker {
    bench *b;
    enum sys sys;
    enum op op;
    char prefix; /* the keys of get rows ('g') and of put rows ('p') */
    size_t size;
    int t, nthreads;
    long ops;
    gate *go; /* NULL: start at once */
    int rc;
    char err[300];
} worker;

/* A value's first and last byte, per key, so that a wrong value is caught. */
static uint8_t stamp_first(int idx) { return (uint8_t)(idx * 7 + 1); }
static uint8_t stamp_last(int idx) { return (uint8_t)(idx * 13 + 5); }

static int fx_op(worker *w, const char *key, size_t klen, int idx)
{
    /* With two owners key idx lives on owner idx % 2, whose client is
     * fx[idx % 2]: a timed thread's keys are all its own owner's. */
    fx_client *c = w->b->fx[w->b->owners > 1 ? idx % w->b->owners : w->t];
    fx_holder *h = NULL;
    int r = w->op == OP_PUT          ? fx_put(c, key, klen, w->b->value[w->t], w->size)
            : w->op == OP_PUT_NOWAIT ? fx_put_nowait(c, key, klen, w->b->value[w->t], w->size)
                                     : fx_get(c, key, klen, &h);
    if (r) {
        snprintf(w->err, sizeof w->err, "%s %s: %s (%s)",
                 !is_put(w->op) ? "fx_get" : w->op == OP_PUT ? "fx_put" : "fx_put_nowait",
                 key, fx_strerror(r), fx_last_error_detail());
        return -1;
    }
    if (is_put(w->op))
        return 0;
    const uint8_t *d = fx_holder_data(h);
    bool ok = fx_holder_len(h) == w->size && d[0] == stamp_first(idx) &&
              d[w->size - 1] == stamp_last(idx);
    fx_holder_release(h);
    if (!ok)
        snprintf(w->err, sizeof w->err, "fx_get %s: wrong value", key);
    return ok ? 0 : -1;
}

/* Reads one reply line into *line; 0 or -1 with the reason in w->err. */
static int mc_line(worker *w, mc_conn *c, const char *key, char **line)
{
    ssize_t n = netio_read_line(&c->rd, MC_LINE_MAX, line);
    if (n < 0)
        snprintf(w->err, sizeof w->err, "memcached %s: reply: %s", key, strerror((int)-n));
    return n < 0 ? -1 : 0;
}

/* Reads one reply line and checks that it is want (STORED, END). */
static int mc_expect(worker *w, mc_conn *c, const char *key, const char *want)
{
    char *line;
    if (mc_line(w, c, key, &line) < 0)
        return -1;
    if (strcmp(line, want) == 0)
        return 0;
    snprintf(w->err, sizeof w->err, "memcached %s: \"%s\" where %s was due", key, line, want);
    return -1;
}

static int mc_op(worker *w, const char *key, int idx)
{
    mc_conn *c = &w->b->mc[w->t];
    char hdr[MC_LINE_MAX], *line;
    int rc;
    if (is_put(w->op)) {
        int n = snprintf(hdr, sizeof hdr, "set %s 0 0 %zu\r\n", key, w->size);
        struct iovec iov[3] = {{hdr, (size_t)n}, {w->b->value[w->t], w->size}, {"\r\n", 2}};
        if ((rc = netio_sendv(c->fd, iov, 3)) < 0)
            goto io_error;
        return mc_expect(w, c, key, "STORED");
    }
    int n = snprintf(hdr, sizeof hdr, "get %s\r\n", key);
    if ((rc = netio_send(c->fd, hdr, (size_t)n)) < 0)
        goto io_error;
    if (mc_line(w, c, key, &line) < 0)
        return -1;
    size_t len;
    if (sscanf(line, "VALUE %*s %*u %zu", &len) != 1 || len != w->size) {
        snprintf(w->err, sizeof w->err, "memcached get %s: %s", key, line);
        return -1;
    }
    if ((rc = netio_read_exact(&c->rd, &c->val, len + 2, MAX_VALUE + 2)) < 0)
        goto io_error;
    const uint8_t *d = c->val.p;
    if (d[len] != '\r' || d[len + 1] != '\n' || d[0] != stamp_first(idx) ||
        d[len - 1] != stamp_last(idx)) {
        snprintf(w->err, sizeof w->err, "memcached get %s: wrong value", key);
        return -1;
    }
    return mc_expect(w, c, key, "END");
io_error:
    snprintf(w->err, sizeof w->err, "memcached %s: %s", key, strerror(-rc));
    return -1;
}

/* Key j of thread t: every nthreads-th key, so threads never share one. */
static void *worker_run(void *arg)
{
    worker *w = arg;
    if (w->go) {
        pthread_mutex_lock(&w->go->mu);
        while (w->go->state == 0)
            pthread_cond_wait(&w->go->cv, &w->go->mu);
        bool go = w->go->state > 0;
        pthread_mutex_unlock(&w->go->mu);
        if (!go)
            return NULL;
    }
    for (long j = 0; j < w->ops && w->rc == 0; j++) {
        int idx = (int)((j * w->nthreads + w->t) % KEYS);
        char key[32];
        int klen = snprintf(key, sizeof key, "%c%zu/%d", w->prefix, w->size, idx);
        if (is_put(w->op)) {
            w->b->value[w->t][0] = stamp_first(idx);
            w->b->value[w->t][w->size - 1] = stamp_last(idx);
        }
        w->rc = w->sys == SYS_FX ? fx_op(w, key, (size_t)klen, idx) : mc_op(w, key, idx);
    }
    return NULL;
}

static worker worker_of(bench *b, const row_spec *row, enum sys sys, int t)
{
    return (worker){.b = b, .sys = sys, .op = row->op, .prefix = is_put(row->op) ? 'p' : 'g',
                    .size = row->size, .t = t, .nthreads = row->threads,
                    .ops = row->size > 4096 ? b->ops_large : b->ops_small};
}

static const char *sys_name(enum sys s) { return s == SYS_FX ? "fluxon" : "memcached"; }

/* One timed pass of row ri on sys: its rate in ops/s into *rate. The clock
 * starts when the gate opens and stops when the last thread is joined. */
static int measure(bench *b, int ri, enum sys sys, double *rate)
{
    const row_spec *row = &row_specs[ri];
    worker w[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    gate go = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    int started = 0, e = 0;
    for (int t = 0; sys == SYS_FX && t < row->threads; t++)
        fx_set_near_cache(b->fx[t], row->op == OP_GET_OWNER ? 0 : SEGMENT / 64);
    while (started < row->threads) {
        w[started] = worker_of(b, row, sys, started);
        w[started].go = &go;
        if ((e = pthread_create(&th[started], NULL, worker_run, &w[started])) != 0)
            break;
        started++;
    }
    uint64_t t0 = now_ns();
    pthread_mutex_lock(&go.mu);
    go.state = e ? -1 : 1;
    pthread_cond_broadcast(&go.cv);
    pthread_mutex_unlock(&go.mu);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    uint64_t t1 = now_ns();
    if (e) {
        fprintf(stderr, "%s: pthread_create: %s\n", prog, strerror(e));
        return -1;
    }
    for (int t = 0; t < row->threads; t++)
        if (w[t].rc) {
            fprintf(stderr, "%s: %s, %s, thread %d: %s\n", prog, row->name, sys_name(sys), t,
                    w[t].err);
            return -1;
        }
    *rate = (double)row->threads * (double)w[0].ops * 1e9 / (double)(t1 - t0 ? t1 - t0 : 1);
    return 0;
}

/* Writes every key of every row once on both systems (untimed). Rows with
 * two threads share the keys of the one-thread row before them. */
static int fill(bench *b)
{
    for (int ri = 0; ri < NROWS; ri++) {
        if (row_specs[ri].threads != 1 || !b->row_on[ri])
            continue;
        for (int s = 0; s < NSYS; s++) {
            worker w = worker_of(b, &row_specs[ri], (enum sys)s, 0);
            w.op = OP_PUT;
            w.ops = KEYS;
            worker_run(&w);
            if (w.rc) {
                fprintf(stderr, "%s: filling %s: %s\n", prog, row_specs[ri].name, w.err);
                return -1;
            }
        }
    }
    return 0;
}

static int run_rounds(bench *b)
{
    for (int r = 0; r < b->rounds; r++)
        for (int ri = 0; ri < NROWS; ri++)
            for (int k = 0; k < NSYS && b->row_on[ri]; k++) {
                enum sys s = (r & 1) ? (k ? SYS_FX : SYS_MC) : (k ? SYS_MC : SYS_FX);
                if (measure(b, ri, s, &b->rate[ri][s][r]) < 0)
                    return -1;
            }
    return 0;
}

/* Median (the upper one for an even count), min and max of v[0..n). */
static void stats(const double *v, int n, double out[3])
{
    double s[MAX_ROUNDS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    out[0] = s[n / 2];
    out[1] = s[0];
    out[2] = s[n - 1];
}

static void report(const bench *b)
{
    for (int ri = 0; ri < NROWS; ri++) {
        if (!b->row_on[ri])
            continue;
        double fx[3], mc[3], ratio[3], pair[MAX_ROUNDS];
        for (int r = 0; r < b->rounds; r++)
            pair[r] = b->rate[ri][SYS_FX][r] / b->rate[ri][SYS_MC][r];
        stats(b->rate[ri][SYS_FX], b->rounds, fx);
        stats(b->rate[ri][SYS_MC], b->rounds, mc);
        stats(pair, b->rounds, ratio);
        const row_spec *row = &row_specs[ri];
        printf("  %-15s fluxon %6.0f ops/s [%.0f-%.0f]  memcached %6.0f [%.0f-%.0f]  "
               "ratio %.2f [%.2f-%.2f]",
               row->name, fx[0], fx[1], fx[2], mc[0], mc[1], mc[2], ratio[0], ratio[1], ratio[2]);
        if (row->target > 0)
            printf("  (target >= %.1f: %s)", row->target,
                   ratio[0] >= row->target ? "met" : "not met");
        printf("\n");
    }
}

static void mc_disconnect(mc_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    netio_reader_free(&c->rd);
    netio_buf_free(&c->val);
}

/* Stops memcached (SIGTERM, SIGKILL after MC_STOP_MS) and reaps it. */
static void mc_stop(bench *b)
{
    if (b->mc_pid <= 0)
        return;
    kill(b->mc_pid, SIGTERM);
    int waited = 0;
    while (waitpid(b->mc_pid, NULL, WNOHANG) != b->mc_pid) {
        if (waited >= MC_STOP_MS) {
            fprintf(stderr, "%s: memcached did not stop on SIGTERM; killing it\n", prog);
            kill(b->mc_pid, SIGKILL);
            waitpid(b->mc_pid, NULL, 0);
            break;
        }
        test_sleep_ms(10);
        waited += 10;
    }
    b->mc_pid = 0;
}

/* One start of memcached on a port that was free a moment ago. Returns 0
 * once it accepts connections, 1 when it exited first (try again), -1. */
static int mc_try_start(bench *b)
{
    int port = probe_free_port();
    if (port <= 0)
        return 1;
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    snprintf(b->mc_addr, sizeof b->mc_addr, "127.0.0.1:%d", port);
    /* memcached refuses to run as root without -u root; otherwise argv ends
     * before it. */
    char *argv[] = {MC_BIN, "-t", "4", "-m", "1024", "-U", "0", "-l", "127.0.0.1", "-p", port_s,
                    geteuid() == 0 ? "-u" : NULL, "root", NULL};
    b->mc_pid = cluster_spawn(argv, b->mc_log);
    if (b->mc_pid < 0) {
        b->mc_pid = 0;
        perror("fx_bench_small: fork");
        return -1;
    }
    for (int waited = 0; waited < MC_READY_MS; waited += 20) {
        if (waitpid(b->mc_pid, NULL, WNOHANG) == b->mc_pid) {
            b->mc_pid = 0;
            fprintf(stderr, "%s: memcached exited on port %d; log:\n", prog, port);
            cluster_print_log_tail(b->mc_log);
            return 1;
        }
        int fd = netio_connect(b->mc_addr, 200, MC_IO_MS, NULL, 0);
        if (fd >= 0) {
            close(fd);
            return 0;
        }
        test_sleep_ms(20);
    }
    fprintf(stderr, "%s: memcached did not accept connections on %s within %d ms\n", prog,
            b->mc_addr, MC_READY_MS);
    cluster_print_log_tail(b->mc_log);
    mc_stop(b);
    return -1;
}

/* Starts memcached in a fresh directory (its log there), connects one
 * connection per thread and reads its version. */
static int mc_start(bench *b)
{
    snprintf(b->mc_dir, sizeof b->mc_dir, "/tmp/fx-bench-small-XXXXXX");
    if (!mkdtemp(b->mc_dir)) {
        perror("fx_bench_small: mkdtemp");
        b->mc_dir[0] = '\0';
        return -1;
    }
    snprintf(b->mc_log, sizeof b->mc_log, "%s/memcached.log", b->mc_dir);
    int rc = 1;
    for (int i = 0; i < MC_START_TRIES && rc == 1; i++)
        rc = mc_try_start(b);
    if (rc != 0)
        return -1;
    char err[200], *line = NULL;
    for (int t = 0; t < MAX_THREADS; t++) {
        mc_conn *c = &b->mc[t];
        if ((c->fd = netio_connect(b->mc_addr, 2000, MC_IO_MS, err, sizeof err)) < 0) {
            fprintf(stderr, "%s: memcached: %s\n", prog, err);
            return -1;
        }
        if (netio_reader_init(&c->rd, c->fd, MC_READER_CAP) < 0) {
            fprintf(stderr, "%s: out of memory\n", prog);
            return -1;
        }
    }
    /* Also tells memcached from a stranger that took the port first. */
    if (netio_send(b->mc[0].fd, "version\r\n", 9) < 0 ||
        netio_read_line(&b->mc[0].rd, MC_LINE_MAX, &line) < 0 || strncmp(line, "VERSION ", 8)) {
        fprintf(stderr, "%s: %s does not answer as memcached\n", prog, b->mc_addr);
        return -1;
    }
    snprintf(b->mc_version, sizeof b->mc_version, "%s", line + 8);
    return 0;
}

static int fx_start(bench *b)
{
    const char *args[] = {"--placement", "local", NULL};
    char yaml[64] = "";
    if (b->get_threads >= 0)
        snprintf(yaml, sizeof yaml, "get_threads: %d\n", b->get_threads);
    if (cluster_start_yaml(&b->tc, b->owners, SEGMENT, args, yaml) != 0)
        return -1;
    b->cluster_up = true;
    for (int t = 0; t < MAX_THREADS; t++) {
        int err = 0;
        b->fx[t] = fx_connect(b->tc.sockets[t % b->owners], &err);
        if (!b->fx[t]) {
            fprintf(stderr, "%s: fx_connect: %s (%s)\n", prog, fx_strerror(err),
                    fx_last_error_detail());
            return -1;
        }
    }
    return 0;
}

/* Closes every connection and stops both systems; -1 when the cluster did
 * not exit cleanly. */
static int teardown(bench *b)
{
    int rc = 0;
    for (int t = 0; t < MAX_THREADS; t++) {
        mc_disconnect(&b->mc[t]);
        fx_close(b->fx[t]);
        free(b->value[t]);
    }
    mc_stop(b);
    if (b->mc_dir[0])
        test_remove_dir(b->mc_dir);
    if (b->cluster_up && cluster_stop(&b->tc) != 0)
        rc = -1;
    return rc;
}

static int read_settings(bench *b)
{
    double rounds = ROUNDS, ops = OPS_SMALL, owners = 1, get_threads = -1;
    if (env_number(prog, "FX_BENCH_SMALL_ROUNDS", MAX_ROUNDS, false, &rounds) < 0 ||
        env_number(prog, "FX_BENCH_SMALL_OPS", OPS_MAX, false, &ops) < 0 ||
        env_number(prog, "FX_BENCH_SMALL_OWNERS", MAX_THREADS, false, &owners) < 0 ||
        env_number(prog, "FX_BENCH_SMALL_GET_THREADS", 16, true, &get_threads) < 0)
        return -1;
    b->get_threads = (int)get_threads;
    const char *rows = getenv("FX_BENCH_SMALL_ROWS");
    int n_on = 0;
    for (int ri = 0; ri < NROWS; ri++)
        n_on += b->row_on[ri] = !rows || strstr(row_specs[ri].name, rows) != NULL;
    if (!n_on) {
        fprintf(stderr, "%s: FX_BENCH_SMALL_ROWS='%s' names no row\n", prog, rows);
        return -1;
    }
    b->rounds = (int)rounds;
    b->owners = (int)owners;
    if (b->owners < 1) {
        fprintf(stderr, "%s: FX_BENCH_SMALL_OWNERS must be 1 or 2\n", prog);
        return -1;
    }
    b->ops_small = (long)ops;
    b->ops_large = b->ops_small / 4 ? b->ops_small / 4 : 1;
    if (b->rounds < 1 || b->ops_small < 1) {
        fprintf(stderr, "%s: rounds and ops must be whole numbers >= 1\n", prog);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "usage: %s (no arguments; env FX_BENCH_SMALL_ROUNDS, "
                        "FX_BENCH_SMALL_OPS: ops per thread and pass at 4 KiB, FX_BENCH_SMALL_OWNERS: 1 or 2, "
                        "FX_BENCH_SMALL_GET_THREADS: the owners' get_threads, FX_BENCH_SMALL_ROWS: rows whose "
                        "name contains it)\n", prog);
        return 2;
    }
    if (access(MC_BIN, X_OK) != 0) {
        fprintf(stderr, "%s: %s not found: install memcached (scripts/deps.sh --bench); "
                        "skipped\n", prog, MC_BIN);
        return 77;
    }
    signal(SIGPIPE, SIG_IGN);
    bench *b = calloc(1, sizeof *b);
    if (!b) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    for (int t = 0; t < MAX_THREADS; t++)
        b->mc[t].fd = -1;
    int rc = read_settings(b) < 0 ? 2 : 0;
    for (int t = 0; t < MAX_THREADS && rc == 0; t++)
        if ((b->value[t] = calloc(1, MAX_VALUE)) == NULL)
            rc = 1;
    if (rc == 0 && (fx_start(b) < 0 || mc_start(b) < 0 || fill(b) < 0))
        rc = 1;
    if (rc == 0) {
        char cpu[128];
        cpu_model(cpu, sizeof cpu);
        printf("%s: %d rounds, alternating; memcached %s -t 4 (RAM); %s x %ld CPUs\n", prog,
               b->rounds, b->mc_version, cpu, sysconf(_SC_NPROCESSORS_ONLN));
        printf("  %d keys a row; %ld ops a thread a pass (4 KiB), %ld (64 KiB); fluxon: "
               "1 master + %d owner%s, --placement local\n",
               KEYS, b->ops_small, b->ops_large, b->owners,
               b->owners > 1 ? "s (thread t on owner t)" : "");
        fflush(stdout);
        if (run_rounds(b) < 0)
            rc = 1;
        else
            report(b);
    }
    if (teardown(b) < 0 && rc == 0)
        rc = 1;
    free(b);
    return rc;
}
