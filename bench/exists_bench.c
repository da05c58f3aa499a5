/*
 * exists_bench.c - fx_bench_exists: how many keys per second the cluster can
 * say are there, one key per call against one batch per call, on a
 * one-owner cluster.
 *
 * KEYS keys are stored (tiny values). Per round, the rows alternate so that
 * each sees the same machine state:
 *   - exists x1:    fx_exists of KEYS keys, one call each (half of them
 *                   stored, half never);
 *   - batch-exists: fx_batch_exists of the same KEYS keys, BATCH per call
 *                   (each batch half present, alternating);
 *   - prefix-hits:  fx_prefix_hits of BATCH stored keys per call, over all
 *                   KEYS stored keys (every key hits: the master walks the
 *                   whole batch).
 * Every answer is checked (a wrong one fails the run). Prints keys/s per row
 * as the median of ROUNDS rounds, with the range.
 */
#include <stdio.h>
#include <string.h>

#include "../tests/util/cluster.h"
#include "benchutil.h"
#include "rows.h"
#include "fluxon/fluxon.h"

#define KEYS 4096
#define BATCH 512
#define ROUNDS 7

static char stored_buf[KEYS][24], asked_buf[KEYS][24];
static const char *stored[KEYS], *asked[KEYS];
static size_t stored_lens[KEYS], asked_lens[KEYS];

static int fail(const char *what, int r)
{
    fprintf(stderr, "fx_bench_exists: %s: %s (%s)\n", what, fx_strerror(r),
            fx_last_error_detail());
    return -1;
}

/* asked[i] is stored when i is even. */
static int exists_single(fx_client *c)
{
    for (int i = 0; i < KEYS; i++) {
        int r = fx_exists(c, asked[i], asked_lens[i]);
        if (r != (i % 2 == 0))
            return fail("exists", r < 0 ? r : FX_EPROTO);
    }
    return 0;
}

static int exists_batch(fx_client *c)
{
    int res[BATCH];
    for (int i = 0; i < KEYS; i += BATCH) {
        int r = fx_batch_exists(c, BATCH, asked + i, asked_lens + i, res);
        if (r)
            return fail("batch exists", r);
        for (int j = 0; j < BATCH; j++)
            if (res[j] != ((i + j) % 2 == 0))
                return fail("batch exists key", res[j] < 0 ? res[j] : FX_EPROTO);
    }
    return 0;
}

static int prefix_hits(fx_client *c)
{
    for (int i = 0; i < KEYS; i += BATCH) {
        size_t hits = 0;
        int r = fx_prefix_hits(c, BATCH, stored + i, stored_lens + i, &hits);
        if (r)
            return fail("prefix hits", r);
        if (hits != BATCH)
            return fail("prefix hits count", FX_EPROTO);
    }
    return 0;
}

int main(void)
{
    for (int i = 0; i < KEYS; i++) {
        snprintf(stored_buf[i], sizeof stored_buf[i], "ex-%d", i);
        stored[i] = stored_buf[i];
        stored_lens[i] = strlen(stored_buf[i]);
        if (i % 2 == 0)
            snprintf(asked_buf[i], sizeof asked_buf[i], "ex-%d", i);
        else
            snprintf(asked_buf[i], sizeof asked_buf[i], "nx-%d", i);
        asked[i] = asked_buf[i];
        asked_lens[i] = strlen(asked_buf[i]);
    }
    test_cluster tc;
    if (cluster_start(&tc, 64ull << 20) < 0)
        return 1;
    int err, rc = 1;
    fx_client *c = fx_connect(tc.socket, &err);
    if (!c) {
        fail("connect", err);
        goto out;
    }
    for (int i = 0; i < KEYS; i++) {
        int r = fx_put(c, stored[i], stored_lens[i], "v", 1);
        if (r) {
            fail("put", r);
            goto out;
        }
    }
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    printf("fx_bench_exists: %d keys stored, batches of %d, median of %d rounds; %s\n", KEYS,
           BATCH, ROUNDS, cpu);
    bench_row rows[3] = {{"exists x1", exists_single, 0},
                         {"batch-exists", exists_batch, 0},
                         {"prefix-hits", prefix_hits, 0}};
    if (bench_rows_run(c, rows, 3, ROUNDS, KEYS) < 0)
        goto out;
    printf("  batch-exists / exists x1 = %.1fx\n", rows[1].median / rows[0].median);
    rc = 0;
out:
    fx_close(c);
    if (cluster_stop(&tc) < 0)
        rc = 1;
    return rc;
}
