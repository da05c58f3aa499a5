/*
 * pressure.c - fx_bench_pressure: the load generator and window coordinator
 * of the pressure benchmark (spec 000 §8), for one case against one running
 * system (run.sh starts and stops the servers around it).
 *
 *   fx_bench_pressure bootstrap --system S --addr A --payload BYTES --keys N
 *                               [--pace-ms MS]
 *   fx_bench_pressure run --system S --addr A --payload BYTES --keys N
 *                         --threads T --procs P --mode holder|bytes
 *                         [--warmup S] [--window S] [--zipf THETA] [--seed X]
 *                         [--ssd 0|1] [--server-pids P1,P2] [--json FILE]
 *
 * bootstrap puts every key once, serially (one value per key, its first and
 * last 8 bytes stamped with the key's index), pacing between puts.
 *
 * run forks P worker processes of T threads each (layout cN = N threads in
 * all). Every worker thread opens its own connection and does gets only: the
 * key of its i-th operation is a Zipf(theta) draw over the keys made from a
 * hash of (seed, process, thread, i), so the sequence is deterministic per
 * thread and operation index. Operations that start after the warmup and
 * complete before the window's end are counted: hit or miss, and for a hit
 * its source (the adapter's per-operation source, else the server's window
 * counters: memcached's extstore reads, sampled by this coordinator at the
 * window's start and end; redis has DRAM only). Counts and latency histograms
 * live in one shared mapping that the workers fill and the coordinator sums.
 *
 * A case is SUCCESS only when there was no error, every hit has exactly one
 * source (nothing unknown) and any server counter used is consistent (it
 * grows, and by no more than the window's hits); otherwise FAILED with the
 * reason: never silently included. The row (one JSON object) goes to stdout
 * and, with --json, is appended to FILE. Resource figures: the peak RSS
 * (VmHWM, plus huge pages mapped) and CPU seconds of each --server-pids
 * process, summed.
 * tier logical read GiB/s = tier hits x payload bytes / window s / 2^30.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../benchutil.h"
#include "../hist.h"
#include "adapter.h"

#define MAX_WORKERS 64
#define STAMP 8 /* bytes of key index at each end of a value */

typedef struct worker_stats {
    uint64_t gets, hits, misses, errors, corrupt;
    uint64_t src[3]; /* by enum pr_source */
    char error[160]; /* the first error */
    hist lat;
    /* Hits by the source the operation itself reported (Fluxon; memcached's
     * source is only known per window), and the time spent in each: which
     * stage bounds a case is read from these, not guessed. */
    hist lat_src[3];
    uint64_t ns_src[3], ns_miss;
} worker_stats;

typedef struct opts {
    const char *cmd, *system, *addr, *mode_name, *json, *server_pids;
    const pr_adapter *ad;
    uint64_t payload;
    uint32_t keys;
    int threads, procs, mode;
    double warmup_s, window_s, theta, pace_ms;
    uint64_t seed;
    int ssd;
} opts;

static opts o = {.warmup_s = 5, .window_s = 30, .theta = 0.99, .seed = 1, .threads = 1,
                 .procs = 1};
static double *zipf_cdf;     /* cumulative probabilities of key ranks */
static uint32_t *rank_key;   /* rank -> key: a seeded shuffle */
static worker_stats *shared; /* procs x threads entries, MAP_SHARED */
static uint64_t t_start_ns, t_window_ns, t_end_ns;

static void key_name(uint32_t i, char *buf, size_t cap, size_t *klen)
{
    *klen = (size_t)snprintf(buf, cap, "pr%07u", i);
}

static void stamp(uint8_t *v, uint64_t len, uint32_t i)
{
    uint64_t s = i;
    if (len >= 2 * STAMP) {
        memcpy(v, &s, STAMP);
        memcpy(v + len - STAMP, &s, STAMP);
    }
}

static bool stamped(const uint8_t *v, uint64_t len, uint32_t i)
{
    uint64_t a, b;
    if (len < 2 * STAMP)
        return true;
    memcpy(&a, v, STAMP);
    memcpy(&b, v + len - STAMP, STAMP);
    return a == i && b == i;
}

/* splitmix64: the hash that makes operation i of a thread deterministic. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int build_zipf(void)
{
    zipf_cdf = malloc(o.keys * sizeof *zipf_cdf);
    if (!zipf_cdf)
        return -1;
    double sum = 0;
    for (uint32_t i = 0; i < o.keys; i++)
        sum += 1.0 / pow((double)(i + 1), o.theta);
    double acc = 0;
    for (uint32_t i = 0; i < o.keys; i++) {
        acc += 1.0 / pow((double)(i + 1), o.theta) / sum;
        zipf_cdf[i] = acc;
    }
    zipf_cdf[o.keys - 1] = 1.0;
    /* Hot ranks land on keys spread at random over the bootstrap order (a
     * seeded Fisher-Yates shuffle), so which keys the bootstrap left resident
     * is not correlated with how hot they are. */
    rank_key = malloc(o.keys * sizeof *rank_key);
    if (!rank_key)
        return -1;
    for (uint32_t i = 0; i < o.keys; i++)
        rank_key[i] = i;
    uint64_t s = o.seed;
    for (uint32_t i = o.keys - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(mix(s++) % (i + 1));
        uint32_t t = rank_key[i];
        rank_key[i] = rank_key[j];
        rank_key[j] = t;
    }
    return 0;
}

/* The key of operation op of (proc, thread): rank by inverse CDF, then the
 * seeded permutation of ranks to keys. */
static uint32_t op_key(int proc, int thread, uint64_t op)
{
    uint64_t h = mix(o.seed ^ mix(((uint64_t)proc << 48) ^ ((uint64_t)thread << 32) ^ op));
    double u = (double)(h >> 11) / (double)(1ull << 53);
    uint32_t lo = 0, hi = o.keys - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (zipf_cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return rank_key[lo];
}

typedef struct worker_arg {
    int proc, thread;
    worker_stats *st;
} worker_arg;

static void note_error(worker_stats *st, const char *what)
{
    if (!st->error[0])
        snprintf(st->error, sizeof st->error, "%s", what);
}

static void *worker_main(void *arg)
{
    worker_arg *w = arg;
    worker_stats *st = w->st;
    char err[256] = "";
    pr_conn *c = o.ad->connect(o.addr, err, sizeof err);
    uint8_t *out = o.mode == PR_MODE_BYTES ? malloc(o.payload ? o.payload : 1) : NULL;
    if (!c || (o.mode == PR_MODE_BYTES && !out)) {
        st->errors++;
        note_error(st, c ? "out of memory" : err);
        if (c)
            o.ad->close(c);
        free(out);
        return NULL;
    }
    while (now_ns() < t_start_ns)
        sleep_ns(1000000);
    for (uint64_t op = 0;; op++) {
        uint64_t t0 = now_ns();
        if (t0 >= t_end_ns)
            break;
        uint32_t k = op_key(w->proc, w->thread, op);
        char key[32];
        size_t klen, len = 0;
        key_name(k, key, sizeof key, &klen);
        int source = PR_SRC_UNKNOWN;
        int r = o.ad->get(c, key, klen, o.mode, out, o.payload, &len, &source, err, sizeof err);
        uint64_t t1 = now_ns();
        if (t0 < t_window_ns || t1 > t_end_ns)
            continue; /* warmup, or completed after the window */
        st->gets++;
        if (r < 0) {
            st->errors++;
            note_error(st, err);
        } else if (r == 0) {
            st->misses++;
        } else if (len != o.payload || (out && !stamped(out, len, k))) {
            st->corrupt++;
            st->errors++;
            note_error(st, "a value came back with the wrong length or stamp");
        } else {
            int s = source == PR_SRC_SSD      ? PR_SRC_SSD
                    : source == PR_SRC_MEMORY ? PR_SRC_MEMORY
                                              : PR_SRC_UNKNOWN;
            st->hits++;
            st->src[s]++;
            hist_add(&st->lat, t1 - t0);
            hist_add(&st->lat_src[s], t1 - t0);
            st->ns_src[s] += t1 - t0;
        }
        if (r == 0) {
            hist_add(&st->lat, t1 - t0);
            st->ns_miss += t1 - t0;
        }
    }
    o.ad->close(c);
    free(out);
    return NULL;
}

static int worker_process(int proc)
{
    pthread_t th[MAX_WORKERS];
    worker_arg args[MAX_WORKERS];
    for (int t = 0; t < o.threads; t++) {
        args[t] = (worker_arg){.proc = proc, .thread = t, .st = &shared[proc * o.threads + t]};
        if (pthread_create(&th[t], NULL, worker_main, &args[t]) != 0)
            return 1;
    }
    for (int t = 0; t < o.threads; t++)
        pthread_join(th[t], NULL);
    return 0;
}

/* ---- server resources ---------------------------------------------------------- */

/* Peak resident memory: VmHWM, plus the huge pages mapped (HugetlbPages),
 * which RSS does not count: a Fluxon owner's segment lives on them when they
 * are reserved, and leaving it out would flatter Fluxon. */
static double proc_peak_rss_mib(long pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    double kib = -1, huge = 0, v;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmHWM: %lf kB", &v) == 1)
            kib = v;
        else if (sscanf(line, "HugetlbPages: %lf kB", &v) == 1)
            huge = v;
    }
    fclose(f);
    return kib < 0 ? -1 : (kib + huge) / 1024.0;
}

/* Sums over --server-pids; -1 when a pid cannot be read. */
static void server_resources(double *cpu_s, double *rss_mib)
{
    *cpu_s = 0;
    *rss_mib = 0;
    if (!o.server_pids || !*o.server_pids)
        return;
    char *list = strdup(o.server_pids), *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        long pid = strtol(t, NULL, 10);
        double c = proc_cpu_seconds(pid), r = proc_peak_rss_mib(pid);
        if (c < 0 || r < 0) {
            *cpu_s = *rss_mib = -1;
            break;
        }
        *cpu_s += c;
        *rss_mib += r;
    }
    free(list);
}

/* ---- run ---------------------------------------------------------------------- */

/* Latency of hits by the source each operation reported, and the share of
 * the workers' operation time each kind took (memory hits, SSD hits,
 * misses). null where the system reports no source per operation. */
static void format_by_source(const worker_stats *sum, char *buf, size_t cap)
{
    uint64_t total = sum->ns_src[PR_SRC_MEMORY] + sum->ns_src[PR_SRC_SSD] +
                     sum->ns_src[PR_SRC_UNKNOWN] + sum->ns_miss;
    if (sum->src[PR_SRC_MEMORY] + sum->src[PR_SRC_SSD] == 0 || total == 0) {
        snprintf(buf, cap,
                 "\"mem_hit_p50_ms\": null, \"mem_hit_p99_ms\": null, \"ssd_hit_p50_ms\": null, "
                 "\"ssd_hit_p99_ms\": null, \"mem_hit_time_share\": null, "
                 "\"ssd_hit_time_share\": null, \"miss_time_share\": null");
        return;
    }
    const hist *m = &sum->lat_src[PR_SRC_MEMORY], *d = &sum->lat_src[PR_SRC_SSD];
    snprintf(buf, cap,
             "\"mem_hit_p50_ms\": %.3f, \"mem_hit_p99_ms\": %.3f, \"ssd_hit_p50_ms\": %.3f, "
             "\"ssd_hit_p99_ms\": %.3f, \"mem_hit_time_share\": %.4f, "
             "\"ssd_hit_time_share\": %.4f, \"miss_time_share\": %.4f",
             hist_quantile(m, 0.50) / 1e6, hist_quantile(m, 0.99) / 1e6,
             hist_quantile(d, 0.50) / 1e6, hist_quantile(d, 0.99) / 1e6,
             (double)sum->ns_src[PR_SRC_MEMORY] / (double)total,
             (double)sum->ns_src[PR_SRC_SSD] / (double)total, (double)sum->ns_miss / (double)total);
}

/* The Zipf probability mass of the keys the system holds before the window
 * (memory or SSD), asked key by key without reading values. With SSD off no
 * key enters during a get-only window, so this is the hit rate every window
 * converges to; the window's own hit rate samples it with as many operations
 * as the system completed, and systems that complete few samples it coarsely.
 * -1 with err on failure. */
static double resident_mass(uint32_t *resident_keys, char *err, size_t errlen)
{
    pr_conn *c = o.ad->connect(o.addr, err, errlen);
    if (!c)
        return -1;
    double mass = 0;
    *resident_keys = 0;
    for (uint32_t r = 0; r < o.keys; r++) {
        char key[32];
        size_t klen;
        key_name(rank_key[r], key, sizeof key, &klen);
        int in = o.ad->resident(c, key, klen, err, errlen);
        if (in < 0) {
            o.ad->close(c);
            return -1;
        }
        if (in) {
            mass += zipf_cdf[r] - (r ? zipf_cdf[r - 1] : 0.0);
            (*resident_keys)++;
        }
    }
    o.ad->close(c);
    return mass;
}

static int run_case(void)
{
    int workers = o.threads * o.procs;
    if (workers > MAX_WORKERS || o.threads > MAX_WORKERS) {
        fprintf(stderr, "fx_bench_pressure: at most %d workers\n", MAX_WORKERS);
        return 2;
    }
    if (build_zipf() < 0)
        return 1;
    char resident_err[256] = "";
    uint32_t resident_keys = 0;
    double resident = resident_mass(&resident_keys, resident_err, sizeof resident_err);
    shared = mmap(NULL, workers * sizeof *shared, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        return 1;
    memset(shared, 0, workers * sizeof *shared);
    t_start_ns = now_ns() + 500000000ull; /* time for every worker to connect */
    t_window_ns = t_start_ns + (uint64_t)(o.warmup_s * 1e9);
    t_end_ns = t_window_ns + (uint64_t)(o.window_s * 1e9);
    pid_t kids[MAX_WORKERS];
    for (int p = 0; p < o.procs; p++) {
        kids[p] = fork();
        if (kids[p] == 0)
            _exit(worker_process(p));
        if (kids[p] < 0)
            return 1;
    }
    char err[256] = "";
    uint64_t ssd0 = 0, ssd1 = 0;
    bool counter_ok = true;
    double cpu0, cpu1, rss;
    server_resources(&cpu0, &rss);
    while (now_ns() < t_window_ns)
        sleep_ns(1000000);
    if (o.ad->window_ssd_hits && o.ad->window_ssd_hits(o.addr, &ssd0, err, sizeof err) < 0)
        counter_ok = false;
    while (now_ns() < t_end_ns)
        sleep_ns(1000000);
    if (o.ad->window_ssd_hits && counter_ok &&
        o.ad->window_ssd_hits(o.addr, &ssd1, err, sizeof err) < 0)
        counter_ok = false;
    int bad_exit = 0;
    for (int p = 0; p < o.procs; p++) {
        int status;
        if (waitpid(kids[p], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
            bad_exit++;
    }
    server_resources(&cpu1, &rss);

    worker_stats sum;
    memset(&sum, 0, sizeof sum);
    for (int i = 0; i < workers; i++) {
        worker_stats *s = &shared[i];
        sum.gets += s->gets;
        sum.hits += s->hits;
        sum.misses += s->misses;
        sum.errors += s->errors;
        sum.corrupt += s->corrupt;
        for (int k = 0; k < 3; k++)
            sum.src[k] += s->src[k];
        hist_merge(&sum.lat, &s->lat);
        for (int k = 0; k < 3; k++) {
            hist_merge(&sum.lat_src[k], &s->lat_src[k]);
            sum.ns_src[k] += s->ns_src[k];
        }
        sum.ns_miss += s->ns_miss;
        if (!sum.error[0] && s->error[0])
            memcpy(sum.error, s->error, sizeof sum.error);
    }
    /* Sources: per operation, or from the server's window counter. */
    uint64_t hits_mem = sum.src[PR_SRC_MEMORY], hits_ssd = sum.src[PR_SRC_SSD];
    uint64_t unknown = sum.src[PR_SRC_UNKNOWN];
    char why[320] = "";
    if (unknown && o.ad->window_ssd_hits) {
        if (!counter_ok)
            snprintf(why, sizeof why, "server SSD counter unreadable: %s", err);
        else if (ssd1 < ssd0 || ssd1 - ssd0 > unknown)
            snprintf(why, sizeof why,
                     "server SSD counter inconsistent (%llu -> %llu for %llu hits)",
                     (unsigned long long)ssd0, (unsigned long long)ssd1,
                     (unsigned long long)unknown);
        else {
            hits_ssd = ssd1 - ssd0;
            hits_mem = unknown - hits_ssd;
            unknown = 0;
        }
    } else if (unknown && !o.ad->window_ssd_hits && !o.ssd) {
        hits_mem += unknown; /* a DRAM-only system */
        unknown = 0;
    }
    if (!why[0] && resident < 0)
        snprintf(why, sizeof why, "resident-key probe failed: %s", resident_err);
    if (!why[0] && bad_exit)
        snprintf(why, sizeof why, "%d worker process(es) failed", bad_exit);
    if (!why[0] && sum.errors)
        snprintf(why, sizeof why, "%llu errors (%llu corrupt); first: %s",
                 (unsigned long long)sum.errors, (unsigned long long)sum.corrupt, sum.error);
    if (!why[0] && unknown)
        snprintf(why, sizeof why, "%llu hits without a source", (unsigned long long)unknown);
    if (!why[0] && sum.gets == 0)
        snprintf(why, sizeof why, "no operation completed in the window");
    bool ok = !why[0];
    double gib = (double)(1ull << 30);
    char cpu_name[128];
    cpu_model(cpu_name, sizeof cpu_name);
    char by_source[320];
    format_by_source(&sum, by_source, sizeof by_source);
    char row[2560];
    snprintf(row, sizeof row,
             "{\"system\": \"%s\", \"ssd\": %s, \"mode\": \"%s\", \"payload_bytes\": %llu, "
             "\"payload_mib\": %llu, \"keys\": %u, \"layout\": \"c%d\", \"threads\": %d, "
             "\"procs\": %d, \"warmup_s\": %g, \"window_s\": %g, \"zipf\": %g, \"seed\": %llu, "
             "\"status\": \"%s\", \"error\": \"%s\", \"gets\": %llu, \"hits\": %llu, "
             "\"misses\": %llu, \"errors\": %llu, \"hits_memory\": %llu, \"hits_ssd\": %llu, "
             "\"hits_unknown\": %llu, \"hit_rate\": %.5f, \"resident_mass\": %.5f, "
             "\"resident_keys\": %u, \"ops_per_s\": %.1f, "
             "\"dram_gib_s\": %.4f, \"ssd_gib_s\": %.4f, \"p50_ms\": %.3f, \"p95_ms\": %.3f, "
             "\"p99_ms\": %.3f, \"server_rss_peak_mib\": %.1f, \"server_cpu_s\": %.2f, "
             "\"server_cpu_window_s\": %.2f, %s, \"machine\": \"%ld vCPU %s\"}",
             o.ad->name, o.ssd ? "true" : "false", o.mode_name, (unsigned long long)o.payload,
             (unsigned long long)((o.payload + (1u << 20) - 1) >> 20), o.keys, workers, o.threads,
             o.procs, o.warmup_s, o.window_s, o.theta, (unsigned long long)o.seed,
             ok ? "SUCCESS" : "FAILED", why, (unsigned long long)sum.gets,
             (unsigned long long)sum.hits, (unsigned long long)sum.misses,
             (unsigned long long)sum.errors, (unsigned long long)hits_mem,
             (unsigned long long)hits_ssd, (unsigned long long)unknown,
             sum.gets ? (double)sum.hits / (double)sum.gets : 0.0, resident, resident_keys,
             sum.gets / o.window_s,
             (double)hits_mem * (double)o.payload / o.window_s / gib,
             (double)hits_ssd * (double)o.payload / o.window_s / gib,
             hist_quantile(&sum.lat, 0.50) / 1e6, hist_quantile(&sum.lat, 0.95) / 1e6,
             hist_quantile(&sum.lat, 0.99) / 1e6, rss, cpu1, cpu1 >= 0 && cpu0 >= 0 ? cpu1 - cpu0 : -1,
             by_source, sysconf(_SC_NPROCESSORS_ONLN), cpu_name);
    for (char *q = row; *q; q++) /* the error text is ours, but keep the JSON valid */
        if (*q == '\n' || *q == '\t')
            *q = ' ';
    printf("%s\n", row);
    if (o.json) {
        FILE *f = fopen(o.json, "a");
        if (!f || fprintf(f, "%s\n", row) < 0 || fclose(f) != 0) {
            fprintf(stderr, "fx_bench_pressure: cannot append to %s: %s\n", o.json, strerror(errno));
            return 1;
        }
    }
    munmap(shared, workers * sizeof *shared);
    free(zipf_cdf);
    free(rank_key);
    return ok ? 0 : 3;
}

/* ---- bootstrap ------------------------------------------------------------------ */

static int bootstrap(void)
{
    char err[256] = "";
    pr_conn *c = o.ad->connect(o.addr, err, sizeof err);
    uint8_t *v = malloc(o.payload ? o.payload : 1);
    if (!c || !v) {
        fprintf(stderr, "fx_bench_pressure: %s\n", c ? "out of memory" : err);
        return 1;
    }
    for (uint64_t i = 0; i < o.payload; i++)
        v[i] = (uint8_t)(i * 131u + 7u);
    uint64_t t0 = now_ns();
    for (uint32_t k = 0; k < o.keys; k++) {
        char key[32];
        size_t klen;
        key_name(k, key, sizeof key, &klen);
        stamp(v, o.payload, k);
        if (o.ad->put(c, key, klen, v, o.payload, err, sizeof err) < 0) {
            fprintf(stderr, "fx_bench_pressure: bootstrap put %s: %s\n", key, err);
            o.ad->close(c);
            free(v);
            return 1;
        }
        if (o.pace_ms > 0)
            sleep_ns((uint64_t)(o.pace_ms * 1e6));
    }
    fprintf(stderr, "bootstrap: %u keys of %llu bytes in %.1f s\n", o.keys,
            (unsigned long long)o.payload, (double)(now_ns() - t0) / 1e9);
    o.ad->close(c);
    free(v);
    return 0;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: fx_bench_pressure bootstrap|run --system fluxon|memcached|redis --addr A\n"
            "         --payload BYTES --keys N [--pace-ms MS] [--threads T --procs P]\n"
            "         [--mode holder|bytes] [--warmup S] [--window S] [--zipf THETA]\n"
            "         [--seed X] [--ssd 0|1] [--server-pids P1,P2] [--json FILE]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    o.cmd = argv[1];
    o.mode_name = "holder";
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *f = argv[i], *v = argv[i + 1];
        if (!strcmp(f, "--system"))
            o.system = v;
        else if (!strcmp(f, "--addr"))
            o.addr = v;
        else if (!strcmp(f, "--payload"))
            o.payload = strtoull(v, NULL, 10);
        else if (!strcmp(f, "--keys"))
            o.keys = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(f, "--threads"))
            o.threads = atoi(v);
        else if (!strcmp(f, "--procs"))
            o.procs = atoi(v);
        else if (!strcmp(f, "--mode"))
            o.mode_name = v;
        else if (!strcmp(f, "--warmup"))
            o.warmup_s = atof(v);
        else if (!strcmp(f, "--window"))
            o.window_s = atof(v);
        else if (!strcmp(f, "--zipf"))
            o.theta = atof(v);
        else if (!strcmp(f, "--seed"))
            o.seed = strtoull(v, NULL, 10);
        else if (!strcmp(f, "--ssd"))
            o.ssd = atoi(v);
        else if (!strcmp(f, "--pace-ms"))
            o.pace_ms = atof(v);
        else if (!strcmp(f, "--server-pids"))
            o.server_pids = v;
        else if (!strcmp(f, "--json"))
            o.json = v;
        else
            return usage();
    }
    if (!o.system || !o.addr || !o.keys || o.threads < 1 || o.procs < 1 || o.window_s <= 0 ||
        o.warmup_s < 0)
        return usage();
    if (!strcmp(o.system, "fluxon"))
        o.ad = &pr_adapter_fluxon;
    else if (!strcmp(o.system, "memcached"))
        o.ad = &pr_adapter_memcached;
    else if (!strcmp(o.system, "redis"))
        o.ad = &pr_adapter_redis;
    else
        return usage();
    if (!strcmp(o.mode_name, "holder"))
        o.mode = PR_MODE_HOLDER;
    else if (!strcmp(o.mode_name, "bytes"))
        o.mode = PR_MODE_BYTES;
    else
        return usage();
    if (!strcmp(o.cmd, "bootstrap"))
        return bootstrap();
    if (!strcmp(o.cmd, "run"))
        return run_case();
    return usage();
}
