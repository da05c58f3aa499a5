/*
 * batch_bench.c - fx_bench_batch: what pipelining many keys per round trip
 * buys over one call per key, in one run on a one-owner cluster.
 *
 * KEYS values of VALUE_BYTES each. Per round, alternating so that both see
 * the same machine state:
 *   - get x1:     fx_get + fx_holder_release of every key, one after another
 *                 (each an owner round trip: the holders are released and the near
 *                 cache is off, so the client holds nothing; the owner's cache serves);
 *   - batch-get:  fx_batch_get of BATCH keys at a time, then release;
 *   - get-into:   fx_batch_get_into of IO_BATCH keys at a time into the
 *                 caller's buffers (one ExternalBatchGet, a copy per key, the
 *                 holders released in one ack), the inference engines' shape;
 *   - put x1:     fx_put of every key;
 *   - batch-put:  fx_batch_put of BATCH keys at a time.
 * The gets after get x1 find the owner's cache warm (the puts of the round
 * before replaced every value, so get x1 pays the master once per key).
 * Every batch result is checked (a failed key fails the run). Prints keys/s
 * per row as the median of ROUNDS rounds and the batch / single ratio.
 */
#include <stdio.h>
#include <string.h>

#include "../tests/util/cluster.h"
#include "benchutil.h"
#include "rows.h"
#include "fluxon/fluxon.h"

#define KEYS 1024
#define VALUE_BYTES 4096
#define BATCH 64
#define IO_BATCH 128
#define ROUNDS 7

static char keybuf[KEYS][24];
static const char *keys[KEYS];
static size_t klens[KEYS], lens[KEYS];
static const void *vals[KEYS];

static int fail(const char *what, int r)
{
    fprintf(stderr, "fx_bench_batch: %s: %s (%s)\n", what, fx_strerror(r), fx_last_error_detail());
    return -1;
}

static int get_single(fx_client *c)
{
    for (int i = 0; i < KEYS; i++) {
        fx_holder *h;
        int r = fx_get(c, keys[i], klens[i], &h);
        if (r)
            return fail("get", r);
        fx_holder_release(h);
    }
    return 0;
}

static int get_batch(fx_client *c)
{
    fx_holder *out[BATCH];
    int res[BATCH];
    for (int i = 0; i < KEYS; i += BATCH) {
        int r = fx_batch_get(c, BATCH, keys + i, klens + i, out, res);
        if (r)
            return fail("batch get", r);
        for (int j = 0; j < BATCH; j++) {
            if (res[j])
                return fail("batch get key", res[j]);
            fx_holder_release(out[j]);
        }
    }
    return 0;
}

static int put_single(fx_client *c)
{
    for (int i = 0; i < KEYS; i++) {
        int r = fx_put(c, keys[i], klens[i], vals[i], lens[i]);
        if (r)
            return fail("put", r);
    }
    return 0;
}

static int put_batch(fx_client *c)
{
    int res[BATCH];
    for (int i = 0; i < KEYS; i += BATCH) {
        int r = fx_batch_put(c, BATCH, keys + i, klens + i, vals + i, lens + i, res);
        if (r)
            return fail("batch put", r);
        for (int j = 0; j < BATCH; j++)
            if (res[j])
                return fail("batch put key", res[j]);
    }
    return 0;
}

static int get_into_batch(fx_client *c)
{
    static uint8_t bufs[IO_BATCH][VALUE_BYTES];
    void *bp[IO_BATCH];
    size_t caps[IO_BATCH], got[IO_BATCH];
    int res[IO_BATCH];
    for (int j = 0; j < IO_BATCH; j++) {
        bp[j] = bufs[j];
        caps[j] = VALUE_BYTES;
    }
    for (int i = 0; i < KEYS; i += IO_BATCH) {
        int r = fx_batch_get_into(c, IO_BATCH, keys + i, klens + i, bp, caps, got, res);
        if (r)
            return fail("batch get into", r);
        for (int j = 0; j < IO_BATCH; j++)
            if (res[j] || got[j] != VALUE_BYTES)
                return fail("batch get into key", res[j]);
    }
    return 0;
}

int main(void)
{
    static uint8_t value[VALUE_BYTES];
    memset(value, 0x5a, sizeof value);
    for (int i = 0; i < KEYS; i++) {
        snprintf(keybuf[i], sizeof keybuf[i], "bb-%d", i);
        keys[i] = keybuf[i];
        klens[i] = strlen(keybuf[i]);
        lens[i] = VALUE_BYTES;
        vals[i] = value;
    }
    test_cluster tc;
    if (cluster_start(&tc, 256ull << 20) < 0)
        return 1;
    int err, rc = 1;
    fx_client *c = fx_connect(tc.socket, &err);
    /* Every row calls the owner: the near cache would answer the gets after
     * get x1 in the client (see fx_bench_small and fx_bench_cpu for it). */
    if (c)
        fx_set_near_cache(c, 0);
    if (!c || put_single(c) < 0 || get_single(c) < 0) /* warm: values and owner cache */
        goto out;
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    printf("fx_bench_batch: %d keys of %d bytes, batches of %d (get-into %d), median of %d "
           "rounds; %s\n", KEYS,
           VALUE_BYTES, BATCH, IO_BATCH, ROUNDS, cpu);
    bench_row rows[5] = {{"get x1", get_single, 0},
                         {"batch-get", get_batch, 0},
                         {"get-into", get_into_batch, 0},
                         {"put x1", put_single, 0},
                         {"batch-put", put_batch, 0}};
    if (bench_rows_run(c, rows, 5, ROUNDS, KEYS) < 0)
        goto out;
    printf("  batch-get / get x1 = %.2fx, batch-put / put x1 = %.2fx\n",
           rows[1].median / rows[0].median, rows[4].median / rows[3].median);
    rc = 0;
out:
    fx_close(c);
    if (cluster_stop(&tc) < 0)
        rc = 1;
    return rc;
}
