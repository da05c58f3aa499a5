/*
 * cluster_bench.c - fx_bench_cluster: what the owner-to-owner data plane
 * moves, measured against what one loopback TCP stream moves on the machine
 * at hand, in one run (issue 3's target: a remote get reaches >= 70% of a
 * single loopback stream).
 *
 * Rows, each measured for FX_BENCH_SECONDS (default 2) after a short warmup:
 *   - loopback-tcp (loopback.c): two threads of this process, one 127.0.0.1 TCP
 *     connection tuned like the data plane (TCP_NODELAY, reno, 4 MiB socket
 *     buffers); the sender writes 4 MiB chunks from a pre-touched 256 MiB
 *     buffer, the receiver reads them into a distinct pre-touched 256 MiB ring
 *     (DESIGN.md §9: not a cache-hot buffer). Both buffers are on transparent
 *     huge pages, as the owners' segments are on 2 MiB pages when reserved:
 *     the ceiling of one stream, and the baseline of the target.
 *   - loopback-4k: the same stream with both buffers on 4 KiB pages, to show
 *     what the page size alone costs on this kind of guest (not the baseline).
 *   - get-pull: a 2-owner cluster with `--placement local`. A writer client on
 *     owner0 puts a round of keys (ROUND_BYTES, untimed), then T reader
 *     threads sharing one client on owner1 get disjoint subsets of them; owner1
 *     has no replica, so every get pulls the value from owner0 over the data
 *     plane. GiB/s = the round's bytes / the round's wall time; the latency is
 *     one fx_get until it returns the holder. Each next round overwrites the
 *     same keys (a new version), so every measured get pulls again.
 *   - put-push: a 2-owner cluster with `--placement remote`: writer threads on
 *     owner0 overwrite their keys in a loop and every put is pushed to owner1.
 * Every value carries a stamp (round or put sequence, key) in its first and
 * last 16 bytes; a get checks 64 bytes at the start, at every 1 MiB boundary
 * (the data plane's chunks) and at the end against the source, and the push
 * rows read every key back from owner1 afterwards. A row with any error is
 * printed as FAILED, not as a figure. Put sources come from a pre-touched
 * 256 MiB pool (no first-touch cost measured).
 *
 * Then the target check: the 1-thread get-pull rows of 16 MiB and 4 MiB
 * against loopback-tcp, and the same ratio as the median of paired rounds
 * (PAIRED_ROUNDS rounds, loopback and pulls alternating, so that both see the
 * same machine state).
 * `--json FILE` also writes every row and check as one JSON object per line.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../tests/util/cluster.h"
#include "fluxon/fluxon.h"
#include "benchutil.h"
#include "hist.h"
#include "loopback.h"

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)

#define SEGMENT_MIB 1024       /* default segment of each owner */
#define MIN_SEGMENT_MIB 512    /* two rounds / two push key sets must fit with room */
#define POOL_BYTES (256 * MIB)   /* put sources (4 KiB pages, as an application's buffers);
                                    also loopback-4k's sender buffer */
#define LB_SRC_BYTES (256 * MIB) /* the loopback sender's buffer */
#define RING_BYTES (256 * MIB)   /* the loopback receiver's ring */
#define LOOP_CHUNK LB_CHUNK      /* one loopback send / receive unit */
#define ROUND_BYTES (128 * MIB)  /* bytes of keys per pull round, and per push thread */
#define SAMPLE 64                /* bytes compared at each checked spot */
#define MAX_THREADS 2
#define MAX_ROWS 32
#define PAIRED_ROUNDS 15 /* 9 until 2026-12-03: more rounds steady the median across machine phases */
#define PAIRED_NS 300000000ull   /* each side of one paired round */

static const char *const prog = "cluster-bench";

/* ---- time ------------------------------------------------------------------ */

/* ---- rows ------------------------------------------------------------------ */

typedef struct row {
    const char *op;
    size_t size;     /* bytes per op */
    int threads;
    uint64_t ops;    /* measured ops */
    double secs;     /* measured wall time */
    double ops_s, gib_s, p50_us, p99_us;
    uint64_t errors; /* failed calls + values that did not check out; > 0: FAILED */
    char detail[256]; /* the first error */
} row;

typedef struct bench {
    uint64_t run_ns, warm_ns;
    FILE *json;
    row rows[MAX_ROWS];
    int nrows;
    uint8_t *pool; /* POOL_BYTES, pre-touched; value stamps are written into it */
} bench;

static void size_str(size_t size, char *buf, size_t cap)
{
    if (size % MIB == 0)
        snprintf(buf, cap, "%zuMiB", size / (size_t)MIB);
    else if (size % KIB == 0)
        snprintf(buf, cap, "%zuKiB", size / (size_t)KIB);
    else
        snprintf(buf, cap, "%zuB", size);
}

static void print_header(void)
{
    printf("%-14s %6s %3s %9s %11s %8s %9s %9s\n", "op", "size", "thr", "n", "ops/s", "GiB/s",
           "p50 us", "p99 us");
    printf("%-14s %6s %3s %9s %11s %8s %9s %9s\n", "--------------", "------", "---", "---------",
           "-----------", "--------", "---------", "---------");
}

static void print_row(const row *r)
{
    char sz[32];
    size_str(r->size, sz, sizeof sz);
    if (r->errors)
        printf("%-14s %6s %3d %9llu FAILED: %llu error(s), first: %s\n", r->op, sz, r->threads,
               (unsigned long long)r->ops, (unsigned long long)r->errors, r->detail);
    else
        printf("%-14s %6s %3d %9llu %11.0f %8.2f %9.1f %9.1f\n", r->op, sz, r->threads,
               (unsigned long long)r->ops, r->ops_s, r->gib_s, r->p50_us, r->p99_us);
    fflush(stdout);
}

static void json_row(bench *b, const row *r)
{
    if (!b->json)
        return;
    fprintf(b->json,
            "{\"kind\":\"row\",\"op\":\"%s\",\"size\":%zu,\"threads\":%d,\"ops\":%llu,"
            "\"seconds\":%.3f,\"ops_per_s\":%.1f,\"gib_per_s\":%.4f,\"p50_us\":%.2f,"
            "\"p99_us\":%.2f,\"errors\":%llu,\"failed\":%s}\n",
            r->op, r->size, r->threads, (unsigned long long)r->ops, r->secs, r->ops_s, r->gib_s,
            r->p50_us, r->p99_us, (unsigned long long)r->errors, r->errors ? "true" : "false");
    fflush(b->json);
}

/* Fills the derived figures of r from its ops, secs and latencies, then
 * appends, prints and logs it. */
static void add_row(bench *b, row *r, const hist *h)
{
    r->ops_s = r->secs > 0 ? (double)r->ops / r->secs : 0;
    r->gib_s = r->ops_s * (double)r->size / (double)GIB;
    r->p50_us = hist_quantile(h, 0.50) / 1e3;
    r->p99_us = hist_quantile(h, 0.99) / 1e3;
    if (b->nrows == MAX_ROWS) {
        fprintf(stderr, "%s: too many rows\n", prog);
        exit(1);
    }
    b->rows[b->nrows++] = *r;
    print_row(r);
    json_row(b, r);
}

static const row *find_row(const bench *b, const char *op, size_t size, int threads)
{
    for (int i = 0; i < b->nrows; i++)
        if (!strcmp(b->rows[i].op, op) && b->rows[i].size == size &&
            b->rows[i].threads == threads)
            return &b->rows[i];
    return NULL;
}

/* Pre-touched private memory (first touch is what DESIGN.md §9 warns about). */
static uint8_t *touched_alloc(size_t len, int seed)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "%s: cannot map %zu bytes: %s\n", prog, len, strerror(errno));
        exit(1);
    }
    memset(p, 0x5a ^ seed, len);
    return p;
}

/* ---- values: stamps and checks --------------------------------------------- */

/* A value's stamp, in its first and last 16 bytes: which write it is. */
typedef struct stamp {
    uint64_t seq; /* pull: the round; push: the thread's put sequence */
    uint64_t key; /* key index | size << 16 */
} stamp;

/* Writes the stamp of (seq, key) into the source region of a value. */
static void stamp_value(uint8_t *v, size_t size, uint64_t seq, int key)
{
    stamp s = {.seq = seq, .key = (uint64_t)key | (uint64_t)size << 16};
    memcpy(v, &s, sizeof s);
    memcpy(v + size - sizeof s, &s, sizeof s);
}

enum { CHECK_OK = 0, CHECK_BAD, CHECK_STALE };

/* Compares what a holder shows with the source region it was put from: the
 * whole stamp areas and SAMPLE bytes at every 1 MiB boundary (the data
 * plane moves 1 MiB chunks). CHECK_STALE: an older write of the same key. */
static int check_value(const uint8_t *got, size_t got_len, const uint8_t *src, size_t size,
                       char *why, size_t cap)
{
    if (got_len != size) {
        snprintf(why, cap, "holder of %zu bytes, expected %zu", got_len, size);
        return CHECK_BAD;
    }
    stamp want, head;
    memcpy(&want, src, sizeof want);
    memcpy(&head, got, sizeof head);
    if (head.key == want.key && head.seq < want.seq) {
        snprintf(why, cap, "stale value: write %llu, expected %llu",
                 (unsigned long long)head.seq, (unsigned long long)want.seq);
        return CHECK_STALE;
    }
    for (size_t at = 0;; at += MIB) {
        size_t off = at == 0 ? 0 : at - SAMPLE / 2;
        if (off + SAMPLE > size)
            off = size - SAMPLE;
        if (memcmp(got + off, src + off, SAMPLE)) {
            snprintf(why, cap, "bytes at offset %zu differ from what was put", off);
            return CHECK_BAD;
        }
        if (off == size - SAMPLE)
            break;
    }
    return CHECK_OK;
}

/* ---- loopback TCP ------------------------------------------------------------ */

/* One stream (loopback.h) for warm_ns + run_ns; the measured part is added
 * to *r (ops = 4 MiB chunks received, latency = the time to receive one
 * chunk) and *h. Returns 0 or -1 after printing why. */
static int loopback_measure(const lb_bufs *lb, uint64_t warm_ns, uint64_t run_ns, row *r,
                            hist *h, char *cc, size_t cap)
{
    uint64_t chunks;
    double secs;
    if (lb_stream(lb, warm_ns, run_ns, &chunks, &secs, h, cc, cap) < 0)
        return -1;
    r->ops += chunks;
    r->secs += secs;
    return 0;
}

static int bench_loopback(bench *b, const char *op, const lb_bufs *lb, char *cc, size_t cap)
{
    row r = {.op = op, .size = LOOP_CHUNK, .threads = 1};
    static hist h;
    memset(&h, 0, sizeof h);
    if (loopback_measure(lb, b->warm_ns, b->run_ns, &r, &h, cc, cap) < 0)
        return -1;
    add_row(b, &r, &h);
    return 0;
}

/* ---- get-pull ------------------------------------------------------------------ */

/* A set of keys of one size; key i's value comes from pool + i * size. */
typedef struct key_set {
    size_t size;
    int n;
    char (*key)[48];
} key_set;

static int key_set_init(key_set *ks, const char *prefix, size_t size, int n)
{
    ks->size = size;
    ks->n = n;
    ks->key = calloc((size_t)n, sizeof *ks->key);
    if (!ks->key)
        return -1;
    for (int i = 0; i < n; i++)
        snprintf(ks->key[i], sizeof ks->key[i], "%s/%zu/%04d", prefix, size, i);
    return 0;
}

typedef struct pull_worker {
    bench *b;
    fx_client *c;
    const key_set *ks;
    int tid, threads;
    hist h;
    uint64_t ops, errors;
    char detail[256];
} pull_worker;

static void note_error(uint64_t *errors, char *detail, size_t cap, const char *key, const char *what)
{
    if (!(*errors)++)
        snprintf(detail, cap, "%s: %s", key, what);
}

/* Gets this thread's share of the round's keys once each, checks and
 * releases every holder. */
static void *pull_main(void *arg)
{
    pull_worker *w = arg;
    const key_set *ks = w->ks;
    for (int i = w->tid; i < ks->n; i += w->threads) {
        const char *k = ks->key[i];
        fx_holder *h;
        uint64_t t0 = now_ns();
        int r = fx_get(w->c, k, strlen(k), &h);
        uint64_t t1 = now_ns();
        if (r) {
            char what[200];
            snprintf(what, sizeof what, "fx_get: %s (%s)", fx_strerror(r), fx_last_error_detail());
            note_error(&w->errors, w->detail, sizeof w->detail, k, what);
            continue;
        }
        char why[128];
        if (check_value(fx_holder_data(h), fx_holder_len(h), w->b->pool + (size_t)i * ks->size,
                        ks->size, why, sizeof why) != CHECK_OK)
            note_error(&w->errors, w->detail, sizeof w->detail, k, why);
        fx_holder_release(h);
        hist_add(&w->h, t1 - t0);
        w->ops++;
    }
    return NULL;
}

/* One round: the writer stores every key (new version, untimed), then
 * `threads` readers get them all. Returns the wall time of the gets in ns
 * (0 when the writer failed: *r then has the error) and adds counts and
 * latencies to *r and *h when measured. */
static uint64_t pull_round(bench *b, fx_client *writer, fx_client *reader, const key_set *ks,
                           int threads, uint64_t seq, bool measured, row *r, hist *h)
{
    for (int i = 0; i < ks->n; i++) {
        uint8_t *src = b->pool + (size_t)i * ks->size;
        stamp_value(src, ks->size, seq, i);
        int e = fx_put(writer, ks->key[i], strlen(ks->key[i]), src, ks->size);
        if (e) {
            char what[200];
            snprintf(what, sizeof what, "fx_put on owner0: %s (%s)", fx_strerror(e),
                     fx_last_error_detail());
            note_error(&r->errors, r->detail, sizeof r->detail, ks->key[i], what);
            return 0;
        }
    }
    static pull_worker ws[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    for (int t = 0; t < threads; t++)
        ws[t] = (pull_worker){.b = b, .c = reader, .ks = ks, .tid = t, .threads = threads};
    uint64_t t0 = now_ns();
    for (int t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, pull_main, &ws[t]) != 0) {
            fprintf(stderr, "%s: cannot start a thread\n", prog);
            exit(1);
        }
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    uint64_t wall = now_ns() - t0;
    for (int t = 0; t < threads; t++) {
        /* Errors count in warmup rounds too: a row must not hide one. */
        if (ws[t].errors && !r->errors)
            snprintf(r->detail, sizeof r->detail, "%s", ws[t].detail);
        r->errors += ws[t].errors;
        if (measured) {
            r->ops += ws[t].ops;
            hist_merge(h, &ws[t].h);
        }
    }
    if (measured)
        r->secs += (double)wall / 1e9;
    return wall ? wall : 1;
}

/* Pull rounds for at least warm_ns unmeasured (at least one round, so the
 * keys exist and both clients have mapped what they touch) and then for
 * run_ns of wall time measured, or until a round fails. Returns 0, or -1 when
 * a put failed (r says why). */
static int pull_measure(bench *b, fx_client *writer, fx_client *reader, const key_set *ks,
                        int threads, uint64_t *seq, uint64_t warm_ns, uint64_t run_ns, row *r,
                        hist *h)
{
    uint64_t t0 = now_ns();
    do {
        if (!pull_round(b, writer, reader, ks, threads, ++*seq, false, r, h))
            return -1;
    } while (now_ns() - t0 < warm_ns);
    t0 = now_ns();
    do {
        if (!pull_round(b, writer, reader, ks, threads, ++*seq, true, r, h))
            return -1;
    } while (now_ns() - t0 < run_ns);
    return 0;
}

static void bench_pull(bench *b, fx_client *writer, fx_client *reader, const key_set *ks,
                       int threads, uint64_t *seq)
{
    row r = {.op = "get-pull", .size = ks->size, .threads = threads};
    static hist h;
    memset(&h, 0, sizeof h);
    pull_measure(b, writer, reader, ks, threads, seq, b->warm_ns, b->run_ns, &r, &h);
    add_row(b, &r, &h);
}

/* ---- put-push ------------------------------------------------------------------ */

enum { PHASE_WARM, PHASE_MEASURE, PHASE_STOP };

typedef struct push_worker {
    bench *b;
    fx_client *c;
    const key_set *ks; /* this thread's keys; key i's source is src + i * size */
    uint8_t *src;      /* this thread's part of the pool */
    atomic_int *phase;
    uint64_t seq;
    hist h;
    uint64_t ops, errors;
    char detail[256];
} push_worker;

static void *push_main(void *arg)
{
    push_worker *w = arg;
    const key_set *ks = w->ks;
    for (int i = 0;; i = (i + 1) % ks->n) {
        int phase = atomic_load_explicit(w->phase, memory_order_acquire);
        if (phase == PHASE_STOP)
            break;
        uint8_t *src = w->src + (size_t)i * ks->size;
        stamp_value(src, ks->size, ++w->seq, i);
        uint64_t t0 = now_ns();
        int r = fx_put(w->c, ks->key[i], strlen(ks->key[i]), src, ks->size);
        uint64_t t1 = now_ns();
        if (r) {
            char what[200];
            snprintf(what, sizeof what, "fx_put: %s (%s)", fx_strerror(r), fx_last_error_detail());
            note_error(&w->errors, w->detail, sizeof w->detail, ks->key[i], what);
            if (w->errors > 100)
                break; /* the cluster is broken; the row fails anyway */
            continue;
        }
        /* Count a put only when it ran wholly inside the measured window. */
        if (phase == PHASE_MEASURE &&
            atomic_load_explicit(w->phase, memory_order_acquire) == PHASE_MEASURE) {
            hist_add(&w->h, t1 - t0);
            w->ops++;
        }
    }
    return NULL;
}

/* Reads every key of the thread back through a client on owner1 (where the
 * pushes went) and checks it against its last put. */
static void push_verify(push_worker *w, fx_client *reader)
{
    for (int i = 0; i < w->ks->n; i++) {
        const char *k = w->ks->key[i];
        fx_holder *h;
        int r = fx_get(reader, k, strlen(k), &h);
        if (r) {
            char what[200];
            snprintf(what, sizeof what, "read back on owner1: %s (%s)", fx_strerror(r),
                     fx_last_error_detail());
            note_error(&w->errors, w->detail, sizeof w->detail, k, what);
            continue;
        }
        char why[128];
        if (check_value(fx_holder_data(h), fx_holder_len(h), w->src + (size_t)i * w->ks->size,
                        w->ks->size, why, sizeof why) != CHECK_OK)
            note_error(&w->errors, w->detail, sizeof w->detail, k, why);
        fx_holder_release(h);
    }
}

static void bench_push(bench *b, fx_client *writer, fx_client *reader, size_t size, int threads)
{
    static push_worker ws[MAX_THREADS];
    key_set ks[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    atomic_int phase;
    row r = {.op = "put-push", .size = size, .threads = threads};
    int n = (int)(ROUND_BYTES / size);
    for (int t = 0; t < threads; t++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "push/t%d", t);
        if (key_set_init(&ks[t], prefix, size, n) < 0) {
            fprintf(stderr, "%s: out of memory\n", prog);
            exit(1);
        }
        ws[t] = (push_worker){.b = b, .c = writer, .ks = &ks[t], .phase = &phase,
                              .src = b->pool + (size_t)t * (POOL_BYTES / MAX_THREADS)};
    }
    atomic_store(&phase, PHASE_WARM);
    for (int t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, push_main, &ws[t]) != 0) {
            fprintf(stderr, "%s: cannot start a thread\n", prog);
            exit(1);
        }
    sleep_ns(b->warm_ns);
    uint64_t t0 = now_ns();
    atomic_store(&phase, PHASE_MEASURE);
    sleep_ns(b->run_ns);
    uint64_t t1 = now_ns();
    atomic_store(&phase, PHASE_STOP);
    static hist h;
    memset(&h, 0, sizeof h);
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < threads; t++) {
        push_verify(&ws[t], reader);
        if (ws[t].errors && !r.errors)
            snprintf(r.detail, sizeof r.detail, "%s", ws[t].detail);
        r.errors += ws[t].errors;
        r.ops += ws[t].ops;
        hist_merge(&h, &ws[t].h);
        for (int i = 0; i < n; i++)
            fx_delete(writer, ks[t].key[i], strlen(ks[t].key[i]));
        free(ks[t].key);
    }
    r.secs = (double)(t1 - t0) / 1e9;
    add_row(b, &r, &h);
}

/* ---- checks ---------------------------------------------------------------------- */

static void check(bench *b, const char *name, const char *what, double num, double den,
                  double target, bool *pass_out)
{
    *pass_out = false;
    if (num <= 0 || den <= 0) {
        printf("  %-36s not measured\n", name);
        return;
    }
    double ratio = num / den;
    bool pass = ratio >= target;
    *pass_out = pass;
    printf("  %-36s %s = %.0f%%  (target >= %.0f%%)  %s\n", name, what, ratio * 100,
           target * 100, pass ? "PASS" : "MISS");
    if (b->json) {
        char key[64]; /* the printed name with '_' for spaces */
        snprintf(key, sizeof key, "%s", name);
        for (char *c = key; *c; c++)
            if (*c == ' ')
                *c = '_';
        fprintf(b->json,
                "{\"kind\":\"check\",\"name\":\"%s\",\"value\":%.4f,\"baseline\":%.4f,"
                "\"ratio\":%.4f,\"target\":%.2f,\"pass\":%s}\n",
                key, num, den, ratio, target, pass ? "true" : "false");
    }
}

/* PAIRED_ROUNDS alternating rounds of PAIRED_NS of loopback and of 1-thread
 * pulls of ks; the median and range of the per-round ratios (on this shared
 * machine single rows drift by tens of percent between minutes). Returns 0,
 * or -1 when a round failed (its error is printed). */
static int paired(bench *b, const lb_bufs *lb, fx_client *writer, fx_client *reader,
                  const key_set *ks, uint64_t *seq, double *median, double *lo, double *hi)
{
    double ratio[PAIRED_ROUNDS];
    static hist h;
    for (int i = 0; i < PAIRED_ROUNDS; i++) {
        row lr = {0}, pr = {0};
        memset(&h, 0, sizeof h);
        if (loopback_measure(lb, PAIRED_NS / 4, PAIRED_NS, &lr, &h, NULL, 0) < 0)
            return -1;
        if (pull_measure(b, writer, reader, ks, 1, seq, 0, PAIRED_NS, &pr, &h) < 0 ||
            pr.errors) {
            fprintf(stderr, "%s: paired pulls of %zu B: %s\n", prog, ks->size, pr.detail);
            return -1;
        }
        double lb = (double)lr.ops * LOOP_CHUNK / lr.secs;
        double pull = (double)pr.ops * (double)ks->size / pr.secs;
        ratio[i] = pull / lb;
    }
    qsort(ratio, PAIRED_ROUNDS, sizeof ratio[0], cmp_double);
    *median = ratio[PAIRED_ROUNDS / 2];
    *lo = ratio[0];
    *hi = ratio[PAIRED_ROUNDS - 1];
    return 0;
}

/* ---- main ------------------------------------------------------------------------ */

/* The page size of the segment of c's owner, found through the holder of a
 * probe key (a get's holder always lies in the requester's own segment) in
 * this process's /proc/self/smaps: "4 KiB" or "2048 KiB (hugetlb)". */
static void segment_pages(fx_client *c, const char *probe, char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    fx_holder *h;
    if (fx_put(c, probe, strlen(probe), "x", 1) || fx_get(c, probe, strlen(probe), &h))
        return;
    uintptr_t at = (uintptr_t)fx_holder_data(h);
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    bool inside = false;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long a, e, kib;
        if (sscanf(line, "%llx-%llx ", &a, &e) == 2)
            inside = at >= a && at < e;
        else if (inside && sscanf(line, "KernelPageSize: %llu kB", &kib) == 1) {
            snprintf(buf, cap, "%llu KiB%s", kib, kib >= 2048 ? " (hugetlb)" : "");
            break;
        }
    }
    if (f)
        fclose(f);
    fx_holder_release(h);
    fx_delete(c, probe, strlen(probe));
}

/* Starts a 2-owner cluster with --placement `placement` and connects a
 * client to each owner. Returns 0 or -1 after printing why (nothing left
 * running). */
static int cluster_up(test_cluster *tc, uint64_t seg, const char *placement, fx_client **c0,
                      fx_client **c1)
{
    const char *args[] = {"--placement", placement, NULL};
    if (cluster_start_n(tc, 2, seg, args) != 0)
        return -1;
    int err = 0;
    *c0 = fx_connect(tc->sockets[0], &err);
    *c1 = *c0 ? fx_connect(tc->sockets[1], &err) : NULL;
    if (!*c1) {
        fprintf(stderr, "%s: connect: %s (%s)\n", prog, fx_strerror(err), fx_last_error_detail());
        fx_close(*c0);
        cluster_stop(tc);
        return -1;
    }
    char p0[64], p1[64];
    segment_pages(*c0, "bench/probe0", p0, sizeof p0);
    segment_pages(*c1, "bench/probe1", p1, sizeof p1);
    printf("cluster --placement %s: master pid %d, owner0 pid %d (%s pages), owner1 pid %d "
           "(%s pages)\n",
           placement, (int)tc->master_pid, (int)tc->owner_pids[0], p0, (int)tc->owner_pids[1], p1);
    fflush(stdout);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: fx_bench_cluster [--json FILE]\n"
               "  env FX_BENCH_SECONDS: measured seconds per row (default 2)\n"
               "  env FX_BENCH_SEGMENT_MIB: each owner's segment (default %d, at least %d; the\n"
               "      owners use 2 MiB huge pages when enough are reserved, scripts/hugepages.sh)\n",
            SEGMENT_MIB, MIN_SEGMENT_MIB);
}

int main(int argc, char **argv)
{
    const char *json_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            json_path = argv[++i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    double secs = 2.0, seg_mib = SEGMENT_MIB;
    if (env_number(prog, "FX_BENCH_SECONDS", 3600, false, &secs) < 0 ||
        env_number(prog, "FX_BENCH_SEGMENT_MIB", 1 << 20, false, &seg_mib) < 0)
        return 2;
    if (seg_mib < MIN_SEGMENT_MIB) {
        fprintf(stderr, "%s: FX_BENCH_SEGMENT_MIB=%.0f: the key sets need at least %d\n", prog,
                seg_mib, MIN_SEGMENT_MIB);
        return 2;
    }
    uint64_t seg = (uint64_t)seg_mib * MIB;
    static bench b;
    b.run_ns = (uint64_t)(secs * 1e9);
    b.warm_ns = b.run_ns / 4 < 500000000ull ? b.run_ns / 4 : 500000000ull;
    if (json_path) {
        b.json = fopen(json_path, "w");
        if (!b.json) {
            fprintf(stderr, "%s: cannot write %s: %s\n", prog, json_path, strerror(errno));
            return 2;
        }
    }
    b.pool = touched_alloc(POOL_BYTES, 7);
    for (size_t i = 0; i < POOL_BYTES; i += sizeof(uint64_t)) {
        uint64_t v = (uint64_t)i * 0x9e3779b97f4a7c15ull; /* every 8 bytes differ */
        memcpy(b.pool + i, &v, sizeof v);
    }
    /* The baseline stream on the owners' kind of pages, and one on 4 KiB pages
     * to show what the page size alone costs. */
    unsigned long long src_huge, ring_huge;
    lb_bufs lb = {.src = lb_huge_alloc(LB_SRC_BYTES, 3, &src_huge),
                  .src_len = LB_SRC_BYTES,
                  .ring = lb_huge_alloc(RING_BYTES, 9, &ring_huge),
                  .ring_len = RING_BYTES};
    if (!lb.src || !lb.ring)
        return 1;
    lb_bufs lb4k = {.src = b.pool, .src_len = POOL_BYTES, .ring = touched_alloc(RING_BYTES, 11),
                    .ring_len = RING_BYTES};

    char model[256];
    cpu_model(model, sizeof model);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    printf("fx_bench_cluster: %s, %ld online CPU(s)%s\n", model, cpus,
           cpus <= 2 ? " - client threads, two fluxon-owners and fluxon-master share them" : "");
    printf("each row: %.1f s measured after %.2f s warmup; owner segments %.0f MiB each\n"
           "loopback-tcp: one stream, 4 MiB sends from a 256 MiB buffer into a 256 MiB ring, "
           "both on transparent huge pages (%llu + %llu of %llu MiB given); latency = receiving "
           "one 4 MiB chunk\n"
           "loopback-4k: the same on 4 KiB pages (not the baseline: the owners' segments are on "
           "huge pages when reserved)\n"
           "get-pull: owner1 pulls from owner0 (--placement local), %llu MiB per round, "
           "GiB/s = bytes / wall time of the round's gets; latency = one fx_get\n"
           "put-push: owner0 pushes to owner1 (--placement remote), latency = one fx_put\n\n",
           secs, (double)b.warm_ns / 1e9, seg_mib, src_huge >> 10, ring_huge >> 10,
           (unsigned long long)(RING_BYTES / MIB), (unsigned long long)(ROUND_BYTES / MIB));
    if (b.json)
        fprintf(b.json,
                "{\"kind\":\"machine\",\"cpu\":\"%s\",\"cpus\":%ld,\"seconds\":%.3f,"
                "\"segment_mib\":%.0f}\n",
                model, cpus, secs, seg_mib);

    int failed = 0, stop = 0;
    char cc[32] = "?";
    print_header();
    if (bench_loopback(&b, "loopback-tcp", &lb, cc, sizeof cc) < 0 ||
        bench_loopback(&b, "loopback-4k", &lb4k, NULL, 0) < 0)
        failed = 1;
    munmap(lb4k.ring, RING_BYTES);

    /* get-pull, then the paired rounds on the same cluster. */
    test_cluster tc;
    fx_client *c0, *c1;
    double pmed[2] = {0}, plo[2] = {0}, phi[2] = {0};
    static const size_t sizes[2] = {16 * MIB, 4 * MIB};
    if (cluster_up(&tc, seg, "local", &c0, &c1) == 0) {
        uint64_t seq = 0;
        key_set ks[2];
        for (int s = 0; s < 2; s++) {
            if (key_set_init(&ks[s], "pull", sizes[s], (int)(ROUND_BYTES / sizes[s])) < 0) {
                fprintf(stderr, "%s: out of memory\n", prog);
                exit(1);
            }
        }
        for (int s = 1; s >= 0; s--) /* 4 MiB rows first, as in fx_bench_micro */
            for (int t = 1; t <= MAX_THREADS; t++)
                bench_pull(&b, c0, c1, &ks[s], t, &seq);
        for (int s = 0; s < 2; s++) {
            const row *r1 = find_row(&b, "get-pull", sizes[s], 1);
            if (r1 && !r1->errors &&
                paired(&b, &lb, c0, c1, &ks[s], &seq, &pmed[s], &plo[s], &phi[s]) < 0)
                failed = 1;
            for (int i = 0; i < ks[s].n; i++)
                fx_delete(c0, ks[s].key[i], strlen(ks[s].key[i]));
            free(ks[s].key);
        }
        fx_close(c1);
        fx_close(c0);
        stop |= cluster_stop(&tc);
    } else {
        failed = 1;
    }

    if (cluster_up(&tc, seg, "remote", &c0, &c1) == 0) {
        for (int s = 1; s >= 0; s--)
            for (int t = 1; t <= MAX_THREADS; t++)
                bench_push(&b, c0, c1, sizes[s], t);
        fx_close(c1);
        fx_close(c0);
        stop |= cluster_stop(&tc);
    } else {
        failed = 1;
    }
    munmap((void *)lb.src, LB_SRC_BYTES);
    munmap(lb.ring, RING_BYTES);
    munmap(b.pool, POOL_BYTES);
    for (int i = 0; i < b.nrows; i++)
        failed |= b.rows[i].errors > 0;

    const row *base = find_row(&b, "loopback-tcp", LOOP_CHUNK, 1);
    printf("\nloopback congestion control: %s\n", cc);
    printf("target check (remote get, 1 thread, vs one loopback stream; each size)\n");
    bool pass[2] = {false, false}, ppass[2] = {false, false};
    for (int s = 0; s < 2; s++) {
        const row *g = find_row(&b, "get-pull", sizes[s], 1);
        char name[64], what[128], sz[16];
        size_str(sizes[s], sz, sizeof sz);
        double gv = g && !g->errors ? g->gib_s : 0, lv = base && !base->errors ? base->gib_s : 0;
        snprintf(name, sizeof name, "remote_get_vs_loopback %s", sz);
        snprintf(what, sizeof what, "%.2f / %.2f GiB/s", gv, lv);
        check(&b, name, what, gv, lv, 0.7, &pass[s]);
        snprintf(name, sizeof name, "remote_get_vs_loopback_paired %s", sz);
        snprintf(what, sizeof what, "median of %d paired rounds (range %.0f%%-%.0f%%)",
                 PAIRED_ROUNDS, plo[s] * 100, phi[s] * 100);
        check(&b, name, what, pmed[s], 1.0, 0.7, &ppass[s]);
    }
    printf("target >= 70%% of loopback: 16MiB %s, 4MiB %s (rows); 16MiB %s, 4MiB %s (paired)\n",
           pass[0] ? "PASS" : "MISS", pass[1] ? "PASS" : "MISS", ppass[0] ? "PASS" : "MISS",
           ppass[1] ? "PASS" : "MISS");
    if (b.json)
        fclose(b.json);
    if (failed)
        fprintf(stderr, "%s: a row failed (see FAILED above)\n", prog);
    /* The figures stand, but a cluster that did not stop cleanly is a bug. */
    if (stop)
        fprintf(stderr, "%s: a cluster did not stop cleanly (see the logs above)\n", prog);
    return failed || stop ? 1 : 0;
}
