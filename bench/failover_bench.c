/*
 * failover_bench.c - fx_bench_failover: how long a cluster goes without a
 * master when the leader dies, kill after kill.
 *
 * etcd, two masters campaigning on it (--etcd, lease TTL 2 s) and three
 * owners that follow the leader key (tests/util/ha_cluster.h), with a small
 * data set (KEYS values of VALUE_BYTES). A prober thread puts one key every
 * PROBE_MS through owner0. KILLS times (argv[1], default 10): the leader,
 * as etcd names it, is killed with SIGKILL, and the program measures
 *   - kill -> leading: until etcd's leader key names the other master
 *     (polled every POLL_MS; the standby's lease keepalive and campaign
 *     poll, and etcd's expiry of the dead leader's lease, are in it);
 *   - kill -> first put: until the first prober put invoked after the kill
 *     succeeds (the owners found the new leader and reported, the new
 *     master answered);
 *   - the new leader's own "recovery ended (...) after X ms" log line.
 * The killed master then starts again as the standby, and the next kill
 * waits SETTLE_MS. Prints each kill, then the median and max of both
 * times, and checks that the data set still reads back. It asserts no time.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/util/ha_cluster.h"
#include "benchutil.h"
#include "fluxon/fluxon.h"

#define KILLS_DEFAULT 10
#define KILLS_MAX 100
#define KEYS 300
#define VALUE_BYTES 4096
#define PROBE_MS 5
#define POLL_MS 5
#define SETTLE_MS 1000
#define WAIT_MS 15000 /* for a takeover or a put before the kill is called failed */
#define SEGMENT (64ull << 20)

static const char *const prog = "fx_bench_failover";
static const char *const master_args[] = {"--etcd-lease-ttl", "2s", NULL};

typedef struct prober {
    fx_client *c;
    atomic_bool stop;
    _Atomic uint64_t kill_ns;  /* the current kill (0: none yet) */
    _Atomic uint64_t first_ns; /* first success of a put invoked after kill_ns (0: none yet) */
} prober;

static void *prober_main(void *arg)
{
    prober *p = arg;
    static uint8_t val[VALUE_BYTES];
    memset(val, 0x5a, sizeof val);
    while (!atomic_load(&p->stop)) {
        uint64_t kill = atomic_load(&p->kill_ns);
        uint64_t inv = now_ns();
        int r = fx_put(p->c, "failover-probe", 14, val, sizeof val);
        uint64_t resp = now_ns();
        if (r == 0 && kill && inv >= kill && !atomic_load(&p->first_ns))
            atomic_store(&p->first_ns, resp);
        sleep_ns(PROBE_MS * 1000000ull);
    }
    return NULL;
}

static void key_name(int i, char *buf, size_t cap)
{
    snprintf(buf, cap, "failover-%04d", i);
}

static uint8_t byte_of(int key, size_t at)
{
    return (uint8_t)(key * 31 + at * 7);
}

static int put_data_set(fx_client *c)
{
    static uint8_t val[VALUE_BYTES];
    for (int i = 0; i < KEYS; i++) {
        char name[32];
        key_name(i, name, sizeof name);
        for (size_t b = 0; b < sizeof val; b++)
            val[b] = byte_of(i, b);
        int r = fx_put(c, name, strlen(name), val, sizeof val);
        if (r) {
            fprintf(stderr, "%s: put %s: %s (%s)\n", prog, name, fx_strerror(r),
                    fx_last_error_detail());
            return -1;
        }
    }
    return 0;
}

/* How many keys of the data set read back their bytes through c. */
static int read_data_set(fx_client *c)
{
    int ok = 0;
    for (int i = 0; i < KEYS; i++) {
        char name[32];
        key_name(i, name, sizeof name);
        fx_holder *h = NULL;
        if (fx_get(c, name, strlen(name), &h) != 0)
            continue;
        const uint8_t *d = fx_holder_data(h);
        bool good = fx_holder_len(h) == VALUE_BYTES;
        for (size_t b = 0; good && b < VALUE_BYTES; b++)
            good = d[b] == byte_of(i, b);
        ok += good;
        fx_holder_release(h);
    }
    return ok;
}

/* The "after X ms" of the last "recovery ended" line in the log, or -1. */
static long recovery_ms(const char *log)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return -1;
    char line[1024];
    long ms = -1;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "recovery ended");
        if (p && (p = strstr(p, ") after ")))
            ms = strtol(p + 8, NULL, 10);
    }
    fclose(f);
    return ms;
}

static void median_max(double *v, int n, double *med, double *max)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    *max = v[n - 1];
}

int main(int argc, char **argv)
{
    int kills = KILLS_DEFAULT;
    if (argc > 1) {
        kills = atoi(argv[1]);
        if (kills < 1 || kills > KILLS_MAX) {
            fprintf(stderr, "usage: %s [KILLS (1..%d, default %d)]\n", prog, KILLS_MAX,
                    KILLS_DEFAULT);
            return 2;
        }
    }
    if (!etcd_proc_available()) {
        fprintf(stderr, "%s: needs %s (Debian etcd-server)\n", prog, ETCD_PROC_BIN);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    static ha_cluster h;
    ha_conf conf = {.n_masters = 2, .n_owners = 3, .memory_size = SEGMENT,
                    .owner_yaml = "master_wait: 3s\n", .master_args = master_args};
    if (ha_start(&h, &conf) < 0) {
        fprintf(stderr, "%s: the cluster did not start\n", prog);
        return 1;
    }
    int rc = 1, err = 0;
    static prober p;
    pthread_t th;
    bool started = false;
    fx_client *c1 = fx_connect(h.owners.sockets[1], &err);
    p.c = fx_connect(h.owners.sockets[0], &err);
    if (!c1 || !p.c || put_data_set(c1) < 0)
        goto out;
    if (pthread_create(&th, NULL, prober_main, &p) != 0)
        goto out;
    started = true;
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    printf("%s: etcd + 2 masters (lease TTL 2 s) + 3 owners (master_wait 3s), %d keys of %d "
           "bytes, a put every %d ms, %d kills; %s\n",
           prog, KEYS, VALUE_BYTES, PROBE_MS, kills, cpu);
    printf("%5s %8s %8s %6s %15s %17s %12s\n", "kill", "killed", "leader", "term",
           "kill->leading", "kill->first put", "recovery");
    double lead_ms[KILLS_MAX], put_ms[KILLS_MAX];
    for (int k = 0; k < kills; k++) {
        sleep_ns(SETTLE_MS * 1000000ull);
        int64_t term = 0, new_term = 0;
        int old = ha_leader(&h, &term);
        if (old < 0) {
            fprintf(stderr, "%s: kill %d: no master leads\n", prog, k + 1);
            goto out;
        }
        atomic_store(&p.first_ns, 0);
        uint64_t kill_ns = now_ns();
        atomic_store(&p.kill_ns, kill_ns);
        if (ha_kill_master(&h, old) < 0)
            goto out;
        int leader = -1;
        uint64_t led_ns = 0, until = now_ns() + WAIT_MS * 1000000ull;
        while ((leader < 0 || !atomic_load(&p.first_ns)) && now_ns() < until) {
            if (leader < 0) {
                leader = ha_leader(&h, &new_term);
                if (leader >= 0 && new_term > term)
                    led_ns = now_ns();
                else
                    leader = -1;
            }
            sleep_ns(POLL_MS * 1000000ull);
        }
        uint64_t first = atomic_load(&p.first_ns);
        if (leader < 0 || !first) {
            fprintf(stderr, "%s: kill %d: %s within %d ms\n", prog, k + 1,
                    leader < 0 ? "no new leader" : "no put succeeded", WAIT_MS);
            goto out;
        }
        lead_ms[k] = (double)(led_ns - kill_ns) / 1e6;
        put_ms[k] = (double)(first - kill_ns) / 1e6;
        char log[512];
        ha_master_log(&h, leader, -1, log, sizeof log);
        long rec = -1;
        for (int w = 0; w < 100 && (rec = recovery_ms(log)) < 0; w++)
            sleep_ns(50 * 1000000ull);
        printf("%5d %8d %8d %6lld %12.0f ms %14.0f ms %9ld ms\n", k + 1, old, leader,
               (long long)new_term, lead_ms[k], put_ms[k], rec);
        if (ha_start_master(&h, old) < 0)
            goto out;
    }
    double lm, lx, pm, px;
    median_max(lead_ms, kills, &lm, &lx);
    median_max(put_ms, kills, &pm, &px);
    printf("kill->leading:   median %.0f ms, min %.0f, max %.0f\n", lm, lead_ms[0], lx);
    printf("kill->first put: median %.0f ms, min %.0f, max %.0f\n", pm, put_ms[0], px);
    int ok = read_data_set(c1);
    printf("data set: %d of %d keys read back after %d failovers\n", ok, KEYS, kills);
    rc = ok == KEYS ? 0 : 1;
out:
    if (started) {
        atomic_store(&p.stop, true);
        pthread_join(th, NULL);
    }
    fx_close(p.c);
    fx_close(c1);
    if (ha_stop(&h) < 0)
        rc = 1;
    return rc;
}
