/*
 * recovery_bench.c - fx_bench_recovery: how long a master restarted after
 * kill -9 takes to learn back a cluster of N keys from its owners.
 *
 * One master (--placement local, no etcd) and two owners. For each N of the
 * list (argv[1], e.g. "10k,100k,1M", the default), a fresh cluster: N
 * values of VALUE_BYTES (each value names its key) are put with
 * fx_batch_put, half through each owner (local placement: a key lives on
 * the owner it was put through), from two threads. Then ROUNDS times
 * (FX_BENCH_RECOVERY_ROUNDS, default 3): a fresh client on owner0, kill -9
 * of the master, the master started again on the same address
 * (cluster_restart_master), and measured from that start:
 *   - port file: the new master listens;
 *   - first remote get: the first successful fx_get through owner0 of a key
 *     that lives on owner1 (the owners reconnect and report their indexes,
 *     the master rebuilds its routes, then GetStart and a pull from owner1);
 *   - the master's own "recovery ended (...) after X ms: K keys" line.
 * Then SAMPLE keys are read through both owners and checked byte for byte.
 * The master's VmRSS is read before and after the fill and after the last
 * restart: its memory per key, as filled and as rebuilt from the reports.
 * Prints a table per N and the medians; it asserts no time. Segments hold
 * the N values with room to spare (ALLOC_ALIGN is 512 bytes: a 256-byte
 * value takes 512, and replicas stay within the cache budget's 80%).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/util/cluster.h"
#include "../tests/util/sock_probe.h"
#include "benchutil.h"
#include "fluxon/fluxon.h"

#define VALUE_BYTES 256
#define SLOT_BYTES 512 /* what the master allocates for one value (ALLOC_ALIGN) */
#define MAX_NS 8
#define ROUNDS_DEFAULT 3
#define ROUNDS_MAX 20
#define SAMPLE 2000
#define GET_WAIT_MS 60000 /* for the first remote get before the round is called failed */
#define LOG_WAIT_MS 10000 /* for the recovery line */
#define MIB (1ull << 20)

static const char *const prog = "fx_bench_recovery";
static const char *const master_args[] = {"--placement", "local", "--log-level", "info", NULL};

static void key_name(uint64_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "rec-%08" PRIu64, i);
}

static void value_of(uint64_t i, uint8_t *v)
{
    memcpy(v, &i, sizeof i);
    for (size_t b = sizeof i; b < VALUE_BYTES; b++)
        v[b] = (uint8_t)(i * 131 + b);
}

static bool holder_is(const fx_holder *h, uint64_t i)
{
    uint8_t want[VALUE_BYTES];
    value_of(i, want);
    return fx_holder_len(h) == VALUE_BYTES && memcmp(fx_holder_data(h), want, VALUE_BYTES) == 0;
}

/* ---- the fill ------------------------------------------------------------------ */

typedef struct filler {
    fx_client *c;
    uint64_t n;   /* keys i with i % 2 == parity, i < n */
    int parity;
    int failed;   /* an FX_E* code, 0 when every key was stored */
} filler;

static void *fill_main(void *arg)
{
    filler *f = arg;
    char (*names)[32] = malloc(FX_BATCH_MAX * sizeof *names);
    uint8_t (*vals)[VALUE_BYTES] = malloc(FX_BATCH_MAX * sizeof *vals);
    if (!names || !vals) {
        f->failed = FX_ENOMEM;
        goto out;
    }
    const char *keys[FX_BATCH_MAX];
    const void *vp[FX_BATCH_MAX];
    size_t klens[FX_BATCH_MAX], lens[FX_BATCH_MAX];
    int res[FX_BATCH_MAX];
    uint64_t i = (uint64_t)f->parity;
    while (i < f->n && !f->failed) {
        size_t n = 0;
        for (; n < FX_BATCH_MAX && i < f->n; n++, i += 2) {
            key_name(i, names[n], sizeof names[n]);
            value_of(i, vals[n]);
            keys[n] = names[n];
            klens[n] = strlen(names[n]);
            vp[n] = vals[n];
            lens[n] = VALUE_BYTES;
        }
        int r = fx_batch_put(f->c, n, keys, klens, vp, lens, res);
        for (size_t k = 0; !r && k < n; k++)
            r = res[k];
        if (r) {
            f->failed = r;
            fprintf(stderr, "%s: batch put: %s (%s)\n", prog, fx_strerror(r),
                    fx_last_error_detail());
        }
    }
out:
    free(names);
    free(vals);
    return NULL;
}

static int fill(fx_client *const *c, uint64_t n, double *secs)
{
    filler f[2] = {{.c = c[0], .n = n, .parity = 0}, {.c = c[1], .n = n, .parity = 1}};
    pthread_t th[2];
    uint64_t t0 = now_ns();
    for (int k = 0; k < 2; k++)
        if (pthread_create(&th[k], NULL, fill_main, &f[k]) != 0)
            return -1;
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);
    *secs = (double)(now_ns() - t0) / 1e9;
    return f[0].failed || f[1].failed ? -1 : 0;
}

/* ---- one restart --------------------------------------------------------------- */

/* From the master's log: the last "recovery ended" line's ms and keys. */
static int recovery_line(const char *log, long *ms, long *keys, char *why, size_t cap)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return -1;
    char line[1024];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "recovery ended (");
        if (!p)
            continue;
        const char *close = strstr(p, ") after ");
        if (!close)
            continue;
        int wl = (int)(close - (p + 16));
        snprintf(why, cap, "%.*s", wl < 0 ? 0 : wl, p + 16);
        char *end;
        *ms = strtol(close + 8, &end, 10);
        const char *k = strstr(end, "ms: ");
        *keys = k ? strtol(k + 4, NULL, 10) : -1;
        found = 0;
    }
    fclose(f);
    return found;
}

typedef struct round_result {
    double port_ms, get_ms;
    long recovery_ms, keys;
    char why[64];
} round_result;

static int one_round(test_cluster *tc, uint64_t probe, round_result *out)
{
    int err = 0;
    fx_client *c = fx_connect(tc->sockets[0], &err); /* fresh: nothing of owner1's cached */
    if (!c) {
        fprintf(stderr, "%s: connect to owner0: %s\n", prog, fx_strerror(err));
        return -1;
    }
    int rc = -1;
    char name[32], log[512];
    key_name(probe, name, sizeof name);
    snprintf(log, sizeof log, "%s/master.log", tc->dir);
    if (cluster_kill_master(tc) < 0)
        goto out;
    uint64_t t0 = now_ns();
    if (cluster_restart_master(tc) < 0)
        goto out;
    out->port_ms = (double)(now_ns() - t0) / 1e6;
    uint64_t until = t0 + GET_WAIT_MS * 1000000ull;
    fx_holder *h = NULL;
    int r;
    while ((r = fx_get(c, name, strlen(name), &h)) != 0 && now_ns() < until)
        sleep_ns(1000000);
    if (r) {
        fprintf(stderr, "%s: no get of %s through owner0 within %d ms: %s (%s)\n", prog, name,
                GET_WAIT_MS, fx_strerror(r), fx_last_error_detail());
        goto out;
    }
    out->get_ms = (double)(now_ns() - t0) / 1e6;
    bool good = holder_is(h, probe);
    fx_holder_release(h);
    if (!good) {
        fprintf(stderr, "%s: %s read back wrong bytes after the restart\n", prog, name);
        goto out;
    }
    out->recovery_ms = out->keys = -1;
    out->why[0] = 0;
    for (int w = 0; w < LOG_WAIT_MS / 20; w++) {
        if (recovery_line(log, &out->recovery_ms, &out->keys, out->why, sizeof out->why) == 0)
            break;
        sleep_ns(20 * 1000000ull);
    }
    rc = 0;
out:
    fx_close(c);
    return rc;
}

/* SAMPLE keys spread over [0, n) through both owners (local and remote
 * reads). Returns how many of the 2 x SAMPLE reads gave the key's bytes. */
static int verify_sample(test_cluster *tc, uint64_t n)
{
    int ok = 0, err = 0;
    unsigned long long s = 0x9E3779B97F4A7C15ull;
    for (int o = 0; o < 2; o++) {
        fx_client *c = fx_connect(tc->sockets[o], &err);
        if (!c)
            continue;
        for (int k = 0; k < SAMPLE; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            uint64_t i = s % n;
            char name[32];
            key_name(i, name, sizeof name);
            fx_holder *h = NULL;
            if (fx_get(c, name, strlen(name), &h) == 0) {
                ok += holder_is(h, i);
                fx_holder_release(h);
            }
        }
        fx_close(c);
    }
    return ok;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int run_n(uint64_t n, int rounds)
{
    /* Each owner holds n / 2 slots, within 75% of its segment. */
    uint64_t seg = ((n / 2 + 1) * SLOT_BYTES * 4 / 3 + MIB - 1) / MIB * MIB;
    if (seg < 64 * MIB)
        seg = 64 * MIB;
    test_cluster tc;
    if (cluster_start_n(&tc, 2, seg, master_args) < 0) {
        fprintf(stderr, "%s: the cluster did not start\n", prog);
        return -1;
    }
    int rc = -1, err = 0;
    fx_client *c[2] = {fx_connect(tc.sockets[0], &err), fx_connect(tc.sockets[1], &err)};
    double fill_s = 0;
    long rss_empty = probe_rss_kib(tc.master_pid);
    if (!c[0] || !c[1] || fill(c, n, &fill_s) < 0)
        goto out;
    long rss_filled = probe_rss_kib(tc.master_pid);
    printf("\nN = %" PRIu64 " values of %d bytes, 2 owners of %llu MiB; filled in %.1f s "
           "(%.0f puts/s)\n",
           n, VALUE_BYTES, (unsigned long long)(seg / MIB), fill_s, (double)n / fill_s);
    printf("master VmRSS: %ld KiB empty, %ld KiB filled: %.0f bytes per key\n", rss_empty,
           rss_filled, (double)(rss_filled - rss_empty) * 1024 / (double)n);
    printf("%6s %12s %20s %26s %10s  %s\n", "round", "port file", "first remote get",
           "recovery ended (log)", "keys", "ended because");
    double port[ROUNDS_MAX], get[ROUNDS_MAX], rec[ROUNDS_MAX];
    for (int r = 0; r < rounds; r++) {
        round_result res;
        if (one_round(&tc, 2 * (uint64_t)r + 1 < n ? 2 * (uint64_t)r + 1 : 1, &res) < 0)
            goto out;
        port[r] = res.port_ms;
        get[r] = res.get_ms;
        rec[r] = (double)res.recovery_ms;
        printf("%6d %9.0f ms %17.0f ms %23ld ms %10ld  %s\n", r + 1, res.port_ms, res.get_ms,
               res.recovery_ms, res.keys, res.why);
    }
    printf("%6s %9.0f ms %17.0f ms %23.0f ms\n", "median", median(port, rounds),
           median(get, rounds), median(rec, rounds));
    long rss_rebuilt = probe_rss_kib(tc.master_pid);
    printf("master VmRSS after the last recovery: %ld KiB: %.0f bytes per key over the empty "
           "master\n", rss_rebuilt, (double)(rss_rebuilt - rss_empty) * 1024 / (double)n);
    int ok = verify_sample(&tc, n);
    printf("sample: %d of %d reads (%d keys through each owner) gave the key's bytes\n", ok,
           2 * SAMPLE, SAMPLE);
    rc = ok == 2 * SAMPLE ? 0 : -1;
    if (rc)
        cluster_dump_logs(&tc); /* values lost: what the master and owners said */
out:
    fx_close(c[0]);
    fx_close(c[1]);
    if (cluster_stop(&tc) < 0)
        rc = -1;
    return rc;
}

/* "10k,100k,1M" -> ns. Returns the count, or -1. */
static int parse_ns(const char *arg, uint64_t *ns)
{
    int n = 0;
    const char *p = arg;
    while (*p) {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || n == MAX_NS)
            return -1;
        if (*end == 'k' || *end == 'K')
            v *= 1000, end++;
        else if (*end == 'M' || *end == 'm')
            v *= 1000000, end++;
        if (v < 2 || v > 100000000 || (*end && *end != ','))
            return -1;
        ns[n++] = v;
        p = *end ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    uint64_t ns[MAX_NS];
    int n_ns = parse_ns(argc > 1 ? argv[1] : "10k,100k,1M", ns);
    double rounds_d = ROUNDS_DEFAULT;
    if (n_ns <= 0 || argc > 2 ||
        env_number(prog, "FX_BENCH_RECOVERY_ROUNDS", ROUNDS_MAX, false, &rounds_d) < 0) {
        fprintf(stderr, "usage: %s [N[,N...]] (e.g. 10k,100k,1M, the default; rounds: "
                        "FX_BENCH_RECOVERY_ROUNDS, 1..%d, default %d)\n",
                prog, ROUNDS_MAX, ROUNDS_DEFAULT);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    printf("%s: kill -9 of the master, restart on the same address, %d rounds per N; "
           "times from the restart; %s\n",
           prog, (int)rounds_d, cpu);
    int rc = 0;
    for (int k = 0; k < n_ns; k++)
        if (run_n(ns[k], (int)rounds_d) < 0)
            rc = 1;
    return rc;
}
