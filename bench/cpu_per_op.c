/*
 * cpu_per_op.c - fx_bench_cpu: the CPU time the owner and the master spend
 * per small call, the figure that says what bounds the small-call rates of
 * fx_bench_small on a given machine.
 *
 * One master and one owner (`--placement local`, a 256 MiB segment), one
 * client thread. Per mode, ROUNDS runs of OPS calls over 1000 keys of 4 KiB
 * (written first): get (fx_get + fx_holder_release with the near cache off,
 * answered by the owner's cache), near (the same with the client's default
 * near cache: answered in the client once every key is in it), put (fx_put), nowait (fx_put_nowait), and batch (fx_batch_put_from
 * of 64 keys; OPS counts keys). For each run: the calls per second, the wall
 * time per call, and the owner's and the master's CPU time per call (user +
 * system, from /proc/PID/stat before and after the run). Where the CPU per
 * call of the processes a call wakes adds up to the machine's cores, the
 * rate is bound by the hand-offs, not by the code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/util/cluster.h"
#include "benchutil.h"
#include "fluxon/fluxon.h"

#define SEGMENT (256ull << 20)
#define KEYS 1000
#define VALUE 4096
#define BATCH 64
#define ROUNDS 2

static const char *const prog = "fx_bench_cpu";

static void key_of(int i, char *key, size_t cap, size_t *klen)
{
    *klen = (size_t)snprintf(key, cap, "cpu/%d", i % KEYS);
}

/* ops calls of mode; 0 or -1 (with the error printed). */
static int run(fx_client *c, const char *mode, long ops, const char *value)
{
    char key[32];
    size_t klen;
    static char bkeys[BATCH][32];
    const char *keys[BATCH];
    size_t klens[BATCH], lens[BATCH];
    const void *vals[BATCH];
    int results[BATCH];
    for (long i = 0; i < ops; i++) {
        int r = 0;
        if (!strcmp(mode, "batch")) {
            for (int k = 0; k < BATCH; k++) {
                key_of((int)(i + k), bkeys[k], sizeof bkeys[k], &klens[k]);
                keys[k] = bkeys[k];
                vals[k] = value;
                lens[k] = VALUE;
            }
            r = fx_batch_put_from(c, BATCH, keys, klens, vals, lens, NULL, results);
            i += BATCH - 1;
        } else {
            key_of((int)i, key, sizeof key, &klen);
            fx_holder *h = NULL;
            r = !strcmp(mode, "get") || !strcmp(mode, "near") ? fx_get(c, key, klen, &h)
                : !strcmp(mode, "put") ? fx_put(c, key, klen, value, VALUE)
                                       : fx_put_nowait(c, key, klen, value, VALUE);
            if (h)
                fx_holder_release(h);
        }
        if (r) {
            fprintf(stderr, "%s: %s: %s (%s)\n", prog, mode, fx_strerror(r),
                    fx_last_error_detail());
            return -1;
        }
    }
    return 0;
}

int main(void)
{
    long ops = getenv("FX_BENCH_CPU_OPS") ? atol(getenv("FX_BENCH_CPU_OPS")) : 20000;
    static test_cluster tc;
    const char *args[] = {"--placement", "local", NULL};
    if (cluster_start_args(&tc, SEGMENT, args) != 0)
        return 1;
    int rc = 1;
    fx_client *c = fx_connect(tc.socket, NULL);
    static char value[VALUE];
    memset(value, 'c', sizeof value);
    if (!c || run(c, "put", KEYS, value) < 0)
        goto out;
    printf("%s: %ld calls a run, %d runs a mode, 4 KiB values, %ld CPUs online\n", prog, ops,
           ROUNDS, sysconf(_SC_NPROCESSORS_ONLN));
    const char *modes[] = {"get", "near", "put", "nowait", "batch"};
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
            fx_set_near_cache(c, !strcmp(modes[m], "get") ? 0 : SEGMENT / 64);
            double o0 = proc_cpu_seconds(tc.owner_pid), m0 = proc_cpu_seconds(tc.master_pid), t0 = (double)now_ns() / 1e9;
            if (run(c, modes[m], ops, value) < 0)
                goto out;
            double t1 = (double)now_ns() / 1e9, o1 = proc_cpu_seconds(tc.owner_pid), m1 = proc_cpu_seconds(tc.master_pid);
            printf("  %-7s %8.0f calls/s  wall %6.1f us/call  owner CPU %5.1f us/call  master "
                   "CPU %5.1f us/call\n",
                   modes[m], (double)ops / (t1 - t0), (t1 - t0) / (double)ops * 1e6,
                   (o1 - o0) / (double)ops * 1e6, (m1 - m0) / (double)ops * 1e6);
        }
    }
    rc = 0;
out:
    fx_close(c);
    if (cluster_stop(&tc) != 0)
        rc = 1;
    return rc;
}
