/*
 * hitrate_bench.c - fx_bench_hitrate: the object hit rate of the master's
 * replica eviction policy (src/master/replica_cache.c) against LRU and
 * Belady's MIN on the same seeded traces, offline and on a real cluster.
 *
 * Three traces (trace.h: Zipf 0.9, Zipf 0.99, Zipf 0.9 with scans) over one
 * key set of 1..16 MiB values totalling 1.25 x the budget. Every row runs the
 * same model (sim.h): the bootstrap puts every key once, then each get of the
 * trace is a hit when the key is resident, else a miss and a put of the key.
 * Rows per trace:
 *   - LRU, MIN, S3-FIFO-sim: the simulators of sim.c, with capacity = the
 *     budget (default 80% of --memory-mib: the master's default replica
 *     budget for an owner's segment);
 *   - cluster: a real fluxon-master and one fluxon-owner with a
 *     --memory-mib segment (a fresh cluster per trace); fx_put of every key,
 *     then the trace as fx_get (FX_OK: a hit, whose first and last 64 bytes
 *     are checked against the key's pattern; FX_ENOTFOUND: a miss, then
 *     fx_put of the value). Any other result is an error and fails the row;
 *     so does a value that does not check out. A master that does not evict
 *     memory replicas to stay within its budget fails puts beyond the
 *     segment with NoSpace: the row then says so (and stops after
 *     MAX_CLUSTER_ERRORS errors).
 * Then the targets: the policy (simulated and on the cluster) >= LRU on every
 * trace, and MIN - policy <= 5 points on Zipf 0.99.
 * `--json FILE` writes one JSON object per row and per check. The exit status
 * is 0 when no row failed and every measured check passed, else 1 (2: usage).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/util/cluster.h"
#include "../benchutil.h"
#include "fluxon/fluxon.h"
#include "sim.h"
#include "trace.h"

#define MIB (1024ull * 1024ull)
#define MEMORY_MIB 1024
#define BUDGET_PERCENT 80 /* the master's default replica budget */
#define DEFAULT_OPS 20000
#define DEFAULT_SEED 42
#define CHECK_BYTES 64
#define MAX_CLUSTER_ERRORS 20 /* a replay stops after this many */
#define MIN_GAP_POINTS 5.0

enum { P_LRU, P_MIN, P_POLICY, P_CLUSTER, POLICIES };
static const char *const policy_name[POLICIES] = {"LRU", "MIN", "S3-FIFO-sim", "cluster"};
static const char *const prog = "hitrate-bench";

typedef struct row {
    bool measured;
    sim_result r;
    uint64_t errors, corrupt; /* cluster: failed calls, values that did not check out */
    double secs;
    char detail[256]; /* the first error */
} row;

typedef struct bench {
    key_set ks;
    FILE *json;
    row rows[TRACE_KINDS][POLICIES];
    const char *trace_name[TRACE_KINDS];
    uint8_t *value; /* max_size bytes: the source of every put */
} bench;

static double rate(uint64_t num, uint64_t den)
{
    return den ? 100.0 * (double)num / (double)den : 0;
}

/* ---- values ------------------------------------------------------------------ */

/* Byte j of key k's check pattern (j < 2 * CHECK_BYTES: head, then tail). */
static uint8_t pattern(uint32_t k, unsigned j)
{
    uint64_t z = ((uint64_t)k << 8 | j) * 0x9e3779b97f4a7c15ull;
    return (uint8_t)((z ^ (z >> 29)) >> 24);
}

/* Writes key k's pattern into its first and last CHECK_BYTES of b->value. */
static void fill_value(bench *b, uint32_t k)
{
    uint64_t size = b->ks.size[k];
    for (unsigned j = 0; j < CHECK_BYTES; j++) {
        b->value[j] = pattern(k, j);
        b->value[size - CHECK_BYTES + j] = pattern(k, CHECK_BYTES + j);
    }
}

static bool value_ok(const bench *b, uint32_t k, const uint8_t *got, size_t len)
{
    uint64_t size = b->ks.size[k];
    if (len != size)
        return false;
    for (unsigned j = 0; j < CHECK_BYTES; j++)
        if (got[j] != pattern(k, j) || got[size - CHECK_BYTES + j] != pattern(k, CHECK_BYTES + j))
            return false;
    return true;
}

/* ---- cluster replay ------------------------------------------------------------ */

static void note_error(row *w, const char *key, const char *call, int err)
{
    if (!w->errors++)
        snprintf(w->detail, sizeof w->detail, "%s %s: %s (%s)", call, key, fx_strerror(err),
                 fx_last_error_detail());
}

static int put_key(bench *b, fx_client *c, uint32_t k, row *w)
{
    char key[16];
    trace_key_name(k, key, sizeof key);
    fill_value(b, k);
    int e = fx_put(c, key, strlen(key), b->value, b->ks.size[k]);
    if (e)
        note_error(w, key, "fx_put", e);
    return e;
}

/* Bootstrap and replay of t on c; fills w. */
static void replay(bench *b, fx_client *c, const trace *t, row *w)
{
    for (uint32_t k = 0; k < b->ks.n && w->errors < MAX_CLUSTER_ERRORS; k++)
        put_key(b, c, k, w);
    for (uint32_t i = 0; i < t->n_ops && w->errors < MAX_CLUSTER_ERRORS; i++) {
        uint32_t k = t->op[i];
        char key[16];
        trace_key_name(k, key, sizeof key);
        fx_holder *h;
        int e = fx_get(c, key, strlen(key), &h);
        if (e == FX_OK) {
            w->r.gets++;
            w->r.hits++;
            w->r.bytes += b->ks.size[k];
            w->r.hit_bytes += b->ks.size[k];
            if (!value_ok(b, k, fx_holder_data(h), fx_holder_len(h)) && !w->corrupt++)
                snprintf(w->detail, sizeof w->detail, "fx_get %s: %zu bytes that are not its value",
                         key, fx_holder_len(h));
            fx_holder_release(h);
        } else if (e == FX_ENOTFOUND) {
            w->r.gets++;
            w->r.bytes += b->ks.size[k];
            put_key(b, c, k, w);
        } else {
            note_error(w, key, "fx_get", e);
        }
    }
}

/* A fresh cluster with one owner of memory bytes, the replay of t, and the
 * cluster stopped again. Fills w (errors > 0 when anything failed). */
static void bench_cluster(bench *b, const trace *t, uint64_t memory, row *w)
{
    test_cluster tc;
    w->measured = true;
    if (cluster_start(&tc, memory) != 0) {
        w->errors++;
        snprintf(w->detail, sizeof w->detail, "the cluster did not start");
        return;
    }
    int err = 0;
    fx_client *c = fx_connect(tc.socket, &err);
    if (!c) {
        w->errors++;
        snprintf(w->detail, sizeof w->detail, "fx_connect: %s (%s)", fx_strerror(err),
                 fx_last_error_detail());
    } else {
        uint64_t t0 = now_ns();
        replay(b, c, t, w);
        w->secs = (double)(now_ns() - t0) / 1e9;
        fx_close(c);
    }
    if (cluster_stop(&tc) != 0 && !w->errors++)
        snprintf(w->detail, sizeof w->detail, "a process of the cluster did not exit cleanly");
}

/* ---- report -------------------------------------------------------------------- */

static void print_row(const bench *b, int tr, int p)
{
    const row *w = &b->rows[tr][p];
    if (!w->measured)
        return;
    printf("%-10s %-12s %7llu %7llu ", b->trace_name[tr], policy_name[p],
           (unsigned long long)w->r.gets, (unsigned long long)w->r.hits);
    if (w->errors || w->corrupt)
        printf("FAILED: %llu error(s), %llu corrupt value(s), first: %s\n",
               (unsigned long long)w->errors, (unsigned long long)w->corrupt, w->detail);
    else if (p == P_CLUSTER)
        printf("%7.2f %9.2f   (%.1f s)\n", rate(w->r.hits, w->r.gets),
               rate(w->r.hit_bytes, w->r.bytes), w->secs);
    else
        printf("%7.2f %9.2f\n", rate(w->r.hits, w->r.gets), rate(w->r.hit_bytes, w->r.bytes));
    fflush(stdout);
    if (b->json)
        fprintf(b->json,
                "{\"kind\":\"row\",\"trace\":\"%s\",\"policy\":\"%s\",\"gets\":%llu,\"hits\":%llu,"
                "\"hit_rate\":%.4f,\"byte_hit_rate\":%.4f,\"errors\":%llu,\"corrupt\":%llu,"
                "\"failed\":%s}\n",
                b->trace_name[tr], policy_name[p], (unsigned long long)w->r.gets,
                (unsigned long long)w->r.hits, rate(w->r.hits, w->r.gets) / 100,
                rate(w->r.hit_bytes, w->r.bytes) / 100, (unsigned long long)w->errors,
                (unsigned long long)w->corrupt, w->errors || w->corrupt ? "true" : "false");
}

static bool row_ok(const row *w)
{
    return w->measured && !w->errors && !w->corrupt && w->r.gets;
}

/* One check: policy row a is at most max_gap points of hit rate below row
 * base (max_gap 0: a >= base). Returns false only when measured and missed. */
static bool check(bench *b, const char *name, const row *a, const row *base, double max_gap)
{
    if (!row_ok(a) || !row_ok(base)) {
        printf("  %-34s %s\n", name, a->measured && base->measured ? "row failed" : "not measured");
        return true;
    }
    double va = rate(a->r.hits, a->r.gets), vb = rate(base->r.hits, base->r.gets);
    double gap = vb - va; /* points the policy is below the base */
    bool pass = gap <= max_gap;
    if (max_gap == 0)
        printf("  %-34s %6.2f - %6.2f = %+5.2f points (target >= 0)  %s\n", name, va, vb, -gap,
               pass ? "PASS" : "MISS");
    else
        printf("  %-34s %6.2f - %6.2f = %+5.2f points (target <= %.0f)  %s\n", name, vb, va, gap,
               max_gap, pass ? "PASS" : "MISS");
    if (b->json) {
        char key[64];
        snprintf(key, sizeof key, "%s", name);
        for (char *c = key; *c; c++)
            if (*c == ' ')
                *c = '_';
        fprintf(b->json,
                "{\"kind\":\"check\",\"name\":\"%s\",\"value\":%.4f,\"baseline\":%.4f,"
                "\"gap_points\":%.4f,\"max_gap_points\":%.1f,\"pass\":%s}\n",
                key, va, vb, gap, max_gap, pass ? "true" : "false");
    }
    return pass;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fx_bench_hitrate [--sim-only] [--ops N] [--seed S] [--memory-mib M]\n"
            "                        [--budget-mib B] [--json FILE]\n"
            "  --sim-only      only the simulators (no cluster)\n"
            "  --ops N         gets per trace after the bootstrap (default %d)\n"
            "  --seed S        seed of the key sizes and the traces (default %d)\n"
            "  --memory-mib M  the owner's segment in the cluster (default %d)\n"
            "  --budget-mib B  the simulators' capacity (default %d%% of M, the master's\n"
            "                  default replica budget); the key set is 1.25 x B\n"
            "  --json FILE     one JSON object per row and per check\n",
            DEFAULT_OPS, DEFAULT_SEED, MEMORY_MIB, BUDGET_PERCENT);
}

/* Parses a number in [lo, hi]; false when it is not one. */
static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

int main(int argc, char **argv)
{
    bool sim_only = false;
    const char *json_path = NULL;
    uint64_t ops = DEFAULT_OPS, seed = DEFAULT_SEED, memory_mib = MEMORY_MIB, budget_mib = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (!strcmp(a, "--sim-only"))
            sim_only = true;
        else if (!strcmp(a, "--ops") && v)
            ok = parse_u64(argv[++i], 1, UINT32_MAX, &ops);
        else if (!strcmp(a, "--seed") && v)
            ok = parse_u64(argv[++i], 0, UINT64_MAX, &seed);
        else if (!strcmp(a, "--memory-mib") && v)
            ok = parse_u64(argv[++i], 64, 1 << 20, &memory_mib);
        else if (!strcmp(a, "--budget-mib") && v)
            ok = parse_u64(argv[++i], 16, 1 << 20, &budget_mib);
        else if (!strcmp(a, "--json") && v)
            json_path = argv[++i];
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else
            ok = false;
        if (!ok) {
            fprintf(stderr, "%s: bad argument %s%s%s\n", prog, a, v ? " " : "", v ? v : "");
            usage(stderr);
            return 2;
        }
    }
    uint64_t memory = memory_mib * MIB;
    uint64_t budget = budget_mib ? budget_mib * MIB : memory / 100 * BUDGET_PERCENT;

    static bench b;
    if (json_path && !(b.json = fopen(json_path, "w"))) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, json_path, strerror(errno));
        return 2;
    }
    if (key_set_make(&b.ks, budget, seed) < 0 || !(b.value = malloc(b.ks.max_size))) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    for (uint64_t i = 0; i < b.ks.max_size; i++)
        b.value[i] = (uint8_t)(i * 131 + 7);

    printf("fx_bench_hitrate: %u keys of 1..16 MiB, %.0f MiB in all; budget %.0f MiB%s; "
           "%llu gets per trace after putting every key once; seed %llu\n",
           b.ks.n, (double)b.ks.total / MIB, (double)budget / MIB,
           sim_only ? "" : " (the simulators' capacity)", (unsigned long long)ops,
           (unsigned long long)seed);
    if (!sim_only)
        printf("cluster: one owner with a %llu MiB segment, a fresh cluster per trace\n",
               (unsigned long long)memory_mib);
    if (b.json)
        fprintf(b.json,
                "{\"kind\":\"setup\",\"keys\":%u,\"dataset_bytes\":%llu,\"budget_bytes\":%llu,"
                "\"memory_bytes\":%llu,\"ops\":%llu,\"seed\":%llu,\"sim_only\":%s}\n",
                b.ks.n, (unsigned long long)b.ks.total, (unsigned long long)budget,
                (unsigned long long)memory, (unsigned long long)ops, (unsigned long long)seed,
                sim_only ? "true" : "false");
    printf("\n%-10s %-12s %7s %7s %7s %9s\n", "trace", "policy", "gets", "hits", "hit%",
           "byte-hit%");
    printf("%-10s %-12s %7s %7s %7s %9s\n", "----------", "------------", "-------", "-------",
           "-------", "---------");

    int failed = 0;
    for (int tr = 0; tr < TRACE_KINDS; tr++) {
        trace t;
        if (trace_make(&t, (trace_kind)tr, &b.ks, (uint32_t)ops, seed) < 0) {
            fprintf(stderr, "%s: out of memory\n", prog);
            return 1;
        }
        b.trace_name[tr] = t.name;
        int (*const sims[])(const key_set *, const trace *, uint64_t, sim_result *) = {
            [P_LRU] = sim_lru, [P_MIN] = sim_min, [P_POLICY] = sim_policy};
        for (int p = P_LRU; p <= P_POLICY; p++) {
            row *w = &b.rows[tr][p];
            uint64_t t0 = now_ns();
            if (sims[p](&b.ks, &t, budget, &w->r) < 0) {
                fprintf(stderr, "%s: out of memory\n", prog);
                return 1;
            }
            w->secs = (double)(now_ns() - t0) / 1e9;
            w->measured = true;
            print_row(&b, tr, p);
        }
        if (!sim_only) {
            row *w = &b.rows[tr][P_CLUSTER];
            bench_cluster(&b, &t, memory, w);
            print_row(&b, tr, P_CLUSTER);
            failed |= !row_ok(w);
        }
        if (t.scan_ops)
            printf("%-10s (%u of the gets, %.1f%%, are scans)\n", t.name, t.scan_ops,
                   rate(t.scan_ops, t.n_ops));
        trace_free(&t);
    }

    printf("\ntargets: the policy >= LRU on every trace; MIN - policy <= %.0f points on "
           "zipf-0.99\n", MIN_GAP_POINTS);
    int last = sim_only ? P_POLICY : P_CLUSTER;
    for (int tr = 0; tr < TRACE_KINDS; tr++) {
        for (int p = P_POLICY; p <= last; p++) {
            char name[64];
            snprintf(name, sizeof name, "%s %s >= LRU", b.trace_name[tr], policy_name[p]);
            failed |= !check(&b, name, &b.rows[tr][p], &b.rows[tr][P_LRU], 0);
        }
    }
    for (int p = P_POLICY; p <= last; p++) {
        char name[64];
        snprintf(name, sizeof name, "%s MIN - %s <= %.0f", b.trace_name[TRACE_ZIPF_099],
                 policy_name[p], MIN_GAP_POINTS);
        failed |= !check(&b, name, &b.rows[TRACE_ZIPF_099][p], &b.rows[TRACE_ZIPF_099][P_MIN],
                         MIN_GAP_POINTS);
    }
    for (int tr = 0; tr < TRACE_KINDS && !sim_only; tr++)
        if (strstr(b.rows[tr][P_CLUSTER].detail, "NoSpace")) {
            printf("\nthe cluster ran out of memory (NoSpace): the master did not evict memory "
                   "replicas to stay within its budget\n");
            break;
        }
    if (b.json)
        fclose(b.json);
    free(b.value);
    key_set_free(&b.ks);
    return failed ? 1 : 0;
}
