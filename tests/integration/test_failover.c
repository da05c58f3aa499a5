/*
 * test_failover.c - a standby master takes over when the leader dies or
 * freezes, under load, and the cache neither lies nor loses.
 *
 *   1. failover: etcd, two masters (--etcd, lease TTL 2 s), three owners
 *      that find the leader through etcd (master_wait 3s). Four client
 *      threads (one fx_client each, spread over the owners) run a mixed load
 *      on 200 keys (50% get, 35% put, 15% delete, values of 1-64 KiB that
 *      name their key, writer and sequence, with a checksum: history.h), and
 *      a prober puts one key every 20 ms. The leader is killed with kill -9
 *      three times, 7 s apart; after each takeover the killed master starts
 *      again as a standby, so there are always two. At the end the history
 *      checker finds 0 torn or foreign values and 0 violations (per client
 *      read-your-writes; across clients no version older than an
 *      acknowledged write or delete allows, beyond the 100 ms invalidation
 *      window), each failover (kill to the first successful put invoked
 *      after it) takes at most 5 s, nothing was evicted, and at least 99% of
 *      the keys that must be readable (an acknowledged put that no write
 *      could have replaced) read back, through fresh clients, a version the
 *      rules allow. Then the leader is frozen (SIGSTOP) past its lease: the
 *      standby takes over and serves a put, and the old leader, resumed
 *      (SIGCONT), exits with status 1 ("lost leadership") within 2 s without
 *      sending the owners anything (none logs a refusal), while every value
 *      still reads back.
 *   2. stale_leader: the same cluster with the test hook
 *      FLUXON_TEST_STALE_LEADER_MS=5000 on the masters (a leader that lost
 *      its lease acts on it 5 s late). The leader is frozen, the standby
 *      takes over (the owners log that the old term was replaced), keys are
 *      overwritten and deleted, and the old leader is resumed: it declares its members left and broadcasts a member table,
 *      which the owners refuse ("refused ... from a master of an older
 *      term") within 8 s; every value reads its latest version before and
 *      after the stale master exits (status 1).
 *
 * The takeover and failover times are printed. Run one scenario alone with
 * its name as the only argument. Skips (77) without /usr/bin/etcd.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "etcd_proc.h"
#include "fluxon/fluxon.h"
#include "ha_cluster.h"
#include "history.h"
#include "testlib.h"

#define KIB (1ull << 10)
#define MIB (1ull << 20)
#define NS_PER_MS 1000000ull

#define N_MASTERS 2
#define N_OWNERS 3
#define SEGMENT (64 * MIB) /* per owner: far more than the load's live bytes, no eviction */
#define OWNER_YAML "master_wait: 3s\n"
#define LEASE_TTL_MS 2000
static const char *const master_args[] = {"--etcd-lease-ttl", "2s", NULL};

/* The load. */
#define N_LOADERS 4
#define N_KEYS 200
#define PROBE_KEY N_KEYS /* the prober's key */
#define PROBER (N_LOADERS)
#define FINAL_READER (N_LOADERS + 1)
#define N_CLIENTS (N_LOADERS + 2)
#define MAX_VALUE (64 * KIB)
#define MIN_VALUE (1 * KIB)
#define OPS_PER_CLIENT 400000
#define PROBE_EVERY_MS 20
#define WINDOW_NS (100 * NS_PER_MS) /* the invalidation window of fx_put / fx_delete */

/* The schedule: kills at FIRST_KILL_MS + k * KILL_EVERY_MS, the load ends
 * KILL_EVERY_MS after the last. */
#define N_KILLS 3
#define FIRST_KILL_MS 3000
#define KILL_EVERY_MS 7000
#define FAILOVER_MAX_MS 5000 /* the bound: kill to the first successful put */
#define TAKEOVER_WAIT_MS 10000
#define READABLE_MIN_PCT 99.0

static uint64_t now_ms(void)
{
    return hist_now_ns() / NS_PER_MS;
}

static void sleep_until_ms(uint64_t t)
{
    uint64_t n = now_ms();
    if (t > n)
        test_sleep_ms((int)(t - n));
}

static void key_name(uint32_t key, char *buf, size_t cap)
{
    if (key == PROBE_KEY)
        snprintf(buf, cap, "fo-probe");
    else
        snprintf(buf, cap, "fo-%03u", key);
}

/* ---- one client's operations, recorded ------------------------------------------ */

typedef struct client_ctx {
    int id; /* history client */
    fx_client *c;
    history *h;
    uint8_t *buf; /* MAX_VALUE bytes */
    unsigned long long rng;
    atomic_bool *stop;
    int codes[16]; /* failures by -code (FX_E*) */
    int told;      /* failures described so far */
    uint64_t t0_ns; /* the load's start, for the descriptions */
} client_ctx;

/* Counts a failed call; says what failed when it is not the expected
 * MasterUnavailable of a failover (a few per client). */
static void count_code(client_ctx *cx, const char *call, uint32_t key, int code)
{
    int i = -code;
    cx->codes[i > 0 && i < 16 ? i : 0]++;
    if (code != FX_EMASTER && cx->told++ < 5)
        printf("client %d: %s of key %u failed at %.3f s: %s (%s)\n", cx->id, call, key,
               (double)(hist_now_ns() - cx->t0_ns) / 1e9, fx_strerror(code),
               fx_last_error_detail());
}

static int do_put(client_ctx *cx, uint32_t key, size_t len)
{
    char name[32];
    key_name(key, name, sizeof name);
    hist_op op = {.key = key, .kind = HIST_PUT, .seq = hist_next_seq(cx->h, cx->id)};
    hist_value_make(cx->buf, len, key, (uint32_t)cx->id, op.seq);
    op.inv_ns = hist_now_ns();
    int r = fx_put(cx->c, name, strlen(name), cx->buf, len);
    op.resp_ns = hist_now_ns();
    op.outcome = r == 0 ? HIST_OK : HIST_FAILED;
    op.code = (int16_t)r;
    if (r)
        count_code(cx, "put", key, r);
    hist_add(cx->h, cx->id, &op);
    return r;
}

static int do_delete(client_ctx *cx, uint32_t key)
{
    char name[32];
    key_name(key, name, sizeof name);
    hist_op op = {.key = key, .kind = HIST_DEL, .seq = hist_next_seq(cx->h, cx->id)};
    op.inv_ns = hist_now_ns();
    int r = fx_delete(cx->c, name, strlen(name));
    op.resp_ns = hist_now_ns();
    op.outcome = r == 0 ? HIST_OK : r == FX_ENOTFOUND ? HIST_NOTFOUND : HIST_FAILED;
    op.code = (int16_t)r;
    if (r && r != FX_ENOTFOUND)
        count_code(cx, "delete", key, r);
    hist_add(cx->h, cx->id, &op);
    return r;
}

/* A get, recorded; the op is copied to *out (may be NULL). */
static int do_get(client_ctx *cx, uint32_t key, hist_op *out)
{
    char name[32];
    key_name(key, name, sizeof name);
    hist_op op = {.key = key, .kind = HIST_GET};
    fx_holder *hd = NULL;
    op.inv_ns = hist_now_ns();
    int r = fx_get(cx->c, name, strlen(name), &hd);
    op.resp_ns = hist_now_ns();
    if (r == 0) {
        int v = hist_value_parse(fx_holder_data(hd), fx_holder_len(hd), key, &op.writer, &op.seq);
        op.outcome = v == HIST_VALUE_OK ? HIST_OK : HIST_CORRUPT;
        op.code = (int16_t)v;
        fx_holder_release(hd);
    } else {
        op.outcome = r == FX_ENOTFOUND ? HIST_NOTFOUND : HIST_FAILED;
        op.code = (int16_t)r;
        if (r != FX_ENOTFOUND)
            count_code(cx, "get", key, r);
    }
    hist_add(cx->h, cx->id, &op);
    if (out)
        *out = op;
    return r;
}

static void *loader_main(void *arg)
{
    client_ctx *cx = arg;
    while (!atomic_load(cx->stop)) {
        uint32_t key = (uint32_t)(test_rand(&cx->rng) % N_KEYS);
        unsigned dice = (unsigned)(test_rand(&cx->rng) % 100);
        if (dice < 50)
            do_get(cx, key, NULL);
        else if (dice < 85)
            do_put(cx, key, MIN_VALUE + test_rand(&cx->rng) % (MAX_VALUE - MIN_VALUE + 1));
        else
            do_delete(cx, key);
    }
    return NULL;
}

static void *prober_main(void *arg)
{
    client_ctx *cx = arg;
    while (!atomic_load(cx->stop)) {
        do_put(cx, PROBE_KEY, 4 * KIB);
        test_sleep_ms(PROBE_EVERY_MS);
    }
    return NULL;
}

static void print_codes(const client_ctx *cx, int n)
{
    int total[16] = {0};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 16; k++)
            total[k] += cx[i].codes[k];
    printf("failed calls by code:");
    bool any = false;
    for (int k = 1; k < 16; k++)
        if (total[k]) {
            printf(" %s %d", fx_strerror(-k), total[k]);
            any = true;
        }
    printf("%s\n", any ? "" : " none");
}

/* ---- the cluster ------------------------------------------------------------------ */

static void start_ha(ha_cluster *h, const char *env)
{
    ha_conf conf = {.n_masters = N_MASTERS, .n_owners = N_OWNERS, .memory_size = SEGMENT,
                    .owner_yaml = OWNER_YAML, .master_args = master_args, .master_env = env};
    REQUIRE(ha_start(h, &conf) == 0, "etcd, %d masters and %d owners start (%s)", N_MASTERS,
            N_OWNERS, env ? env : "no test hook");
}

static fx_client *connect_owner(ha_cluster *h, int o)
{
    int err = 0;
    fx_client *c = fx_connect(h->owners.sockets[o], &err);
    REQUIRE(c, "connect to owner%d: %s", o, fx_strerror(err));
    return c;
}

/* Puts until it succeeds (MasterUnavailable while no master serves), up to
 * timeout_ms. Returns the last result. */
static int put_retrying(fx_client *c, const char *key, const void *val, size_t len,
                        int timeout_ms)
{
    uint64_t until = now_ms() + (uint64_t)timeout_ms;
    int r;
    while ((r = fx_put(c, key, strlen(key), val, len)) != 0 && now_ms() < until)
        test_sleep_ms(20);
    return r;
}

/* The first successful put invoked at or after t_ns, by any client: its
 * response time, or 0. */
static uint64_t first_put_after(const history *h, uint64_t t_ns)
{
    uint64_t best = 0;
    for (int c = 0; c < N_CLIENTS; c++) {
        size_t n;
        const hist_op *ops = hist_ops(h, c, &n);
        for (size_t i = 0; i < n; i++)
            if (ops[i].kind == HIST_PUT && ops[i].outcome == HIST_OK && ops[i].inv_ns >= t_ns &&
                (!best || ops[i].resp_ns < best))
                best = ops[i].resp_ns;
    }
    return best;
}

/* Every owner's eviction count is 0 (the key space fits: a missing key is
 * a loss, not an eviction). */
static void check_no_evictions(fx_client *c)
{
    fx_owner_stat st[N_OWNERS * 2];
    size_t n = 0;
    int r = fx_stat(c, st, N_OWNERS * 2, &n);
    CHECK(r == 0, "stat: %s (%s)", fx_strerror(r), fx_last_error_detail());
    for (size_t i = 0; r == 0 && i < n && i < N_OWNERS * 2; i++)
        CHECK(st[i].evictions == 0, "%s evicted %llu replicas (the segment should hold the load)",
              st[i].name, (unsigned long long)st[i].evictions);
}

/* ---- 1. three kills under load, then a frozen leader ------------------------------- */

typedef struct final_read {
    hist_op op;
    bool done;
} final_read;

/* Reads every key through fresh clients (key k through owner k % 3) as
 * the history's FINAL_READER, retrying a failed get for up to 5 s; the
 * last answered get of each key goes to reads. */
static void read_all(ha_cluster *h, history *hist, uint64_t t0_ns, final_read *reads)
{
    client_ctx cx = {.id = FINAL_READER, .h = hist, .t0_ns = t0_ns};
    fx_client *c[N_OWNERS];
    for (int o = 0; o < N_OWNERS; o++)
        c[o] = connect_owner(h, o);
    for (uint32_t k = 0; k <= PROBE_KEY; k++) {
        cx.c = c[k % N_OWNERS];
        uint64_t until = now_ms() + 5000;
        reads[k].done = false;
        for (;;) {
            int r = do_get(&cx, k, &reads[k].op);
            if (r == 0 || r == FX_ENOTFOUND) {
                reads[k].done = true;
                break;
            }
            if (now_ms() >= until)
                break;
            test_sleep_ms(20);
        }
    }
    for (int o = 0; o < N_OWNERS; o++)
        fx_close(c[o]);
}

/* Of the keys that must be readable at their final read, how many read a
 * version the rules allow. */
static void check_readable(const history *hist, const final_read *reads, const char *when)
{
    int must = 0, readable = 0, unanswered = 0;
    for (uint32_t k = 0; k <= PROBE_KEY; k++) {
        if (!reads[k].done) {
            unanswered++;
            continue;
        }
        const hist_op *op = &reads[k].op;
        if (hist_absent_allowed(hist, FINAL_READER, k, op->inv_ns, op->resp_ns, WINDOW_NS))
            continue; /* deleted, or a failed write may have removed it */
        must++;
        if (hist_read_ok(hist, FINAL_READER, op, WINDOW_NS))
            readable++;
        else
            printf("  %s: key %u must be readable; its get answered %s\n", when, k,
                   op->outcome == HIST_NOTFOUND ? "KeyNotFound" : "a wrong or corrupt value");
    }
    double pct = must ? 100.0 * readable / must : 0.0;
    printf("%s: %d of %d keys that must be readable read back (%.2f%%); %d gets unanswered\n",
           when, readable, must, pct, unanswered);
    CHECK(unanswered == 0, "%s: every final get answered (%d did not within 5 s)", when,
          unanswered);
    CHECK(must >= N_KEYS / 4, "%s: enough keys must be readable to judge (%d)", when, must);
    CHECK(pct >= READABLE_MIN_PCT, "%s: %.2f%% of the keys that must be readable read back "
                                   "(at least %.0f%%)",
          when, pct, READABLE_MIN_PCT);
}

/* The leader frozen past its lease: the standby takes over, the old one
 * stops serving and exits once resumed; the cache keeps serving. */
static void frozen_leader(ha_cluster *h, history *hist, uint64_t t0_ns, final_read *reads)
{
    int64_t term = 0;
    int old = ha_leader(h, &term);
    REQUIRE(old >= 0, "a master leads before the freeze");
    uint64_t stopped_at = now_ms();
    REQUIRE(ha_signal_master(h, old, SIGSTOP) == 0, "SIGSTOP master%d", old);
    int64_t new_term = 0;
    int leader = ha_wait_leader(h, term, TAKEOVER_WAIT_MS, &new_term);
    REQUIRE(leader >= 0 && leader != old, "the standby takes over from the frozen master%d", old);
    uint64_t took_over = now_ms();
    fx_client *c0 = connect_owner(h, 0), *c1 = connect_owner(h, 1);
    static uint8_t val[8 * KIB];
    hist_value_make(val, sizeof val, 7777, 99, 1);
    int r = put_retrying(c0, "fo-frozen", val, sizeof val, TAKEOVER_WAIT_MS);
    REQUIRE(r == 0, "a put succeeds under the new leader: %s (%s)", fx_strerror(r),
            fx_last_error_detail());
    printf("frozen leader: master%d (term %lld) stopped; master%d leads (term %lld) after %llu ms, "
           "first put after %llu ms\n",
           old, (long long)term, leader, (long long)new_term,
           (unsigned long long)(took_over - stopped_at),
           (unsigned long long)(now_ms() - stopped_at));
    sleep_until_ms(stopped_at + LEASE_TTL_MS + 2000);
    uint64_t resumed_at = now_ms();
    REQUIRE(ha_signal_master(h, old, SIGCONT) == 0, "SIGCONT master%d", old);
    int status = -1;
    int w = ha_wait_master_exit(h, old, 2000, &status);
    CHECK(w == 0, "the resumed master%d exits within 2 s", old);
    if (w == 0) {
        printf("frozen leader: master%d exited with status %d %llu ms after SIGCONT\n", old,
               status, (unsigned long long)(now_ms() - resumed_at));
        CHECK(status == 1, "the resumed master%d exits with status 1 (got %d)", old, status);
        char log[512], needle[64];
        ha_master_log(h, old, -1, log, sizeof log);
        snprintf(needle, sizeof needle, "lost leadership at term %lld", (long long)term);
        CHECK(cluster_log_contains(log, needle), "master%d's log says '%s'", old, needle);
    }
    /* It checked its deadline before sending anything: the owners had
     * nothing of it to refuse. */
    char line[1024];
    int refused_by = ha_owner_log_find(h, "from a master of an older term", NULL, line, sizeof line);
    CHECK(refused_by < 0, "the resumed master%d sent nothing the owners had to refuse (owner%d: %s)",
          old, refused_by, refused_by >= 0 ? line : "");
    CHECK(ha_leader(h, NULL) == leader, "master%d still leads", leader);
    fx_holder *hd = NULL;
    uint32_t wr = 0;
    uint64_t seq = 0;
    r = fx_get(c1, "fo-frozen", 9, &hd);
    CHECK(r == 0 && hist_value_parse(fx_holder_data(hd), fx_holder_len(hd), 7777, &wr, &seq) ==
                        HIST_VALUE_OK && wr == 99 && seq == 1,
          "the put under the new leader reads back through owner1: %s", fx_strerror(r));
    fx_holder_release(hd);
    fx_close(c0);
    fx_close(c1);
    /* The load's values too: no write happened since the final reads. */
    read_all(h, hist, t0_ns, reads);
    check_readable(hist, reads, "after the frozen leader");
    REQUIRE(ha_start_master(h, old) == 0, "master%d starts again as a standby", old);
}

static void failover(void)
{
    ha_cluster h;
    start_ha(&h, NULL);
    history *hist = hist_new(N_CLIENTS, OPS_PER_CLIENT, N_KEYS + 1);
    REQUIRE(hist, "a history");
    atomic_bool stop = false;
    client_ctx cx[N_LOADERS + 1];
    pthread_t th[N_LOADERS + 1];
    for (int i = 0; i <= N_LOADERS; i++) {
        cx[i] = (client_ctx){.id = i, .h = hist, .stop = &stop,
                             .rng = 0x5EED0000ull + (unsigned long long)i * 7919};
        cx[i].c = connect_owner(&h, i % N_OWNERS);
        cx[i].buf = malloc(MAX_VALUE);
        REQUIRE(cx[i].buf, "a value buffer");
    }
    uint64_t t0_ns = hist_now_ns(), t0 = t0_ns / NS_PER_MS;
    for (int i = 0; i <= N_LOADERS; i++)
        cx[i].t0_ns = t0_ns;
    for (int i = 0; i <= N_LOADERS; i++)
        REQUIRE(pthread_create(&th[i], NULL, i == PROBER ? prober_main : loader_main, &cx[i]) == 0,
                "start client thread %d", i);

    uint64_t kill_ns[N_KILLS] = {0}, takeover_ms[N_KILLS] = {0};
    int killed[N_KILLS], leader_after[N_KILLS];
    for (int k = 0; k < N_KILLS; k++) {
        sleep_until_ms(t0 + FIRST_KILL_MS + (uint64_t)k * KILL_EVERY_MS);
        int64_t term = 0;
        killed[k] = ha_leader(&h, &term);
        REQUIRE(killed[k] >= 0, "kill %d: a master leads (etcd names it)", k + 1);
        kill_ns[k] = hist_now_ns();
        REQUIRE(ha_kill_master(&h, killed[k]) == 0, "kill -9 master%d", killed[k]);
        leader_after[k] = ha_wait_leader(&h, term, TAKEOVER_WAIT_MS, NULL);
        takeover_ms[k] = now_ms() - kill_ns[k] / NS_PER_MS;
        REQUIRE(leader_after[k] >= 0 && leader_after[k] != killed[k],
                "kill %d: the standby takes over within %d ms", k + 1, TAKEOVER_WAIT_MS);
        REQUIRE(ha_start_master(&h, killed[k]) == 0, "kill %d: master%d starts again as a standby",
                k + 1, killed[k]);
    }
    sleep_until_ms(t0 + FIRST_KILL_MS + (uint64_t)N_KILLS * KILL_EVERY_MS);
    atomic_store(&stop, true);
    for (int i = 0; i <= N_LOADERS; i++) {
        pthread_join(th[i], NULL);
        free(cx[i].buf);
    }
    printf("load ran %.1f s\n", (double)(now_ms() - t0) / 1000.0);
    print_codes(cx, N_LOADERS + 1);

    /* Past the invalidation window, every key through fresh clients. */
    test_sleep_ms(3 * (int)(WINDOW_NS / NS_PER_MS));
    static final_read reads[N_KEYS + 1];
    read_all(&h, hist, t0_ns, reads);
    check_no_evictions(cx[0].c);

    hist_report rep;
    hist_check(hist, WINDOW_NS, t0_ns, 20, stdout, &rep);
    printf("history: %llu ops (%llu dropped): puts %llu ok / %llu failed, deletes %llu ok / %llu "
           "failed, gets %llu values / %llu KeyNotFound / %llu failed\n",
           (unsigned long long)rep.ops, (unsigned long long)rep.dropped,
           (unsigned long long)rep.puts_ok, (unsigned long long)rep.puts_failed,
           (unsigned long long)rep.dels_ok, (unsigned long long)rep.dels_failed,
           (unsigned long long)rep.gets_value, (unsigned long long)rep.gets_absent,
           (unsigned long long)rep.gets_failed);
    printf("history: corrupt %llu torn / %llu foreign; violations %llu (stale values %llu, "
           "stale KeyNotFound %llu, phantom %llu, from the future %llu)\n",
           (unsigned long long)rep.corrupt_torn, (unsigned long long)rep.corrupt_foreign,
           (unsigned long long)rep.violations, (unsigned long long)rep.stale_value,
           (unsigned long long)rep.stale_absent, (unsigned long long)rep.phantom,
           (unsigned long long)rep.future);
    CHECK(rep.dropped == 0, "the history kept every operation (%llu dropped)",
          (unsigned long long)rep.dropped);
    CHECK(rep.puts_ok >= 200 && rep.gets_value >= 200 && rep.dels_ok >= 20,
          "the load did work (puts %llu, gets with a value %llu, deletes %llu)",
          (unsigned long long)rep.puts_ok, (unsigned long long)rep.gets_value,
          (unsigned long long)rep.dels_ok);
    CHECK(rep.corrupt_torn + rep.corrupt_foreign == 0, "0 corrupt values (%llu torn, %llu foreign)",
          (unsigned long long)rep.corrupt_torn, (unsigned long long)rep.corrupt_foreign);
    CHECK(rep.violations == 0, "0 history violations (%llu)", (unsigned long long)rep.violations);

    for (int k = 0; k < N_KILLS; k++) {
        uint64_t put = first_put_after(hist, kill_ns[k]);
        uint64_t ms = put ? (put - kill_ns[k]) / NS_PER_MS : 0;
        printf("failover %d: master%d killed at %.3f s; master%d leads after %llu ms; first "
               "successful put after %llu ms\n",
               k + 1, killed[k], (double)(kill_ns[k] - t0_ns) / 1e9, leader_after[k],
               (unsigned long long)takeover_ms[k], (unsigned long long)ms);
        CHECK(put != 0, "failover %d: a put succeeded after the kill", k + 1);
        CHECK(put == 0 || ms <= FAILOVER_MAX_MS,
              "failover %d: kill to the first successful put %llu ms (at most %d)", k + 1,
              (unsigned long long)ms, FAILOVER_MAX_MS);
    }
    check_readable(hist, reads, "after the load");

    frozen_leader(&h, hist, t0_ns, reads);
    for (int i = 0; i <= N_LOADERS; i++)
        fx_close(cx[i].c);
    hist_free(hist);
    CHECK(ha_stop(&h) == 0, "etcd, the masters and the owners stop cleanly");
}

/* ---- 2. a stale leader's requests are refused ------------------------------------- */

#define STALE_HOOK_MS 5000
#define STALE_KEYS 30
#define REFUSED_WITHIN_MS 8000

/* Key i's expected version: 0 deleted, else the seq of its latest put. */
static void check_stale_keys(fx_client *const *c, const uint64_t *version, const char *when)
{
    int wrong = 0;
    for (int via = 0; via < N_OWNERS; via++)
        for (uint32_t i = 0; i < STALE_KEYS; i++) {
            char name[32];
            key_name(i, name, sizeof name);
            fx_holder *hd = NULL;
            int r = fx_get(c[via], name, strlen(name), &hd);
            uint32_t wr = 0;
            uint64_t seq = 0;
            bool ok;
            if (version[i] == 0) {
                ok = r == FX_ENOTFOUND;
            } else {
                ok = r == 0 && hist_value_parse(fx_holder_data(hd), fx_holder_len(hd), i, &wr,
                                                &seq) == HIST_VALUE_OK &&
                     wr == 0 && seq == version[i];
            }
            if (!ok && wrong++ < 5)
                CHECK(false, "%s: %s through owner%d: %s, seq %llu (want %s %llu)", when, name, via,
                      fx_strerror(r), (unsigned long long)seq,
                      version[i] ? "seq" : "deleted", (unsigned long long)version[i]);
            fx_holder_release(hd);
        }
    printf("%s: %d of %d gets wrong\n", when, wrong, N_OWNERS * STALE_KEYS);
    CHECK(wrong == 0, "%s: every key reads its latest version through every owner", when);
}

static void stale_leader(void)
{
    char env[64];
    snprintf(env, sizeof env, "FLUXON_TEST_STALE_LEADER_MS=%d", STALE_HOOK_MS);
    ha_cluster h;
    start_ha(&h, env);
    fx_client *c[N_OWNERS];
    for (int o = 0; o < N_OWNERS; o++)
        c[o] = connect_owner(&h, o);
    static uint8_t buf[16 * KIB];
    uint64_t version[STALE_KEYS], seq = 0;
    for (uint32_t i = 0; i < STALE_KEYS; i++) {
        char name[32];
        key_name(i, name, sizeof name);
        version[i] = ++seq;
        hist_value_make(buf, sizeof buf - i * 97, i, 0, version[i]);
        int r = fx_put(c[i % N_OWNERS], name, strlen(name), buf, sizeof buf - i * 97);
        REQUIRE(r == 0, "put %s: %s (%s)", name, fx_strerror(r), fx_last_error_detail());
    }

    int64_t term = 0;
    int old = ha_leader(&h, &term);
    REQUIRE(old >= 0, "a master leads");
    uint64_t stopped_at = now_ms();
    REQUIRE(ha_signal_master(&h, old, SIGSTOP) == 0, "SIGSTOP master%d", old);
    int64_t new_term = 0;
    int leader = ha_wait_leader(&h, term, TAKEOVER_WAIT_MS, &new_term);
    REQUIRE(leader >= 0 && leader != old, "the standby takes over from the frozen master%d", old);
    printf("stale leader: master%d (term %lld) frozen; master%d leads (term %lld) after %llu ms\n",
           old, (long long)term, leader, (long long)new_term,
           (unsigned long long)(now_ms() - stopped_at));
    /* Under the new leader: overwrite keys 0..9, delete 10..14. */
    for (uint32_t i = 0; i < 15; i++) {
        char name[32];
        key_name(i, name, sizeof name);
        int r;
        if (i < 10) {
            uint64_t v = ++seq;
            hist_value_make(buf, 3 * KIB + i, i, 0, v);
            r = put_retrying(c[(i + 1) % N_OWNERS], name, buf, 3 * KIB + i, TAKEOVER_WAIT_MS);
            if (r == 0)
                version[i] = v;
        } else {
            r = fx_delete(c[(i + 1) % N_OWNERS], name, strlen(name));
            if (r == 0)
                version[i] = 0;
        }
        REQUIRE(r == 0, "%s %s under the new leader: %s (%s)", i < 10 ? "overwrite" : "delete",
                name, fx_strerror(r), fx_last_error_detail());
    }
    char fenced[96], line[1024] = "";
    snprintf(fenced, sizeof fenced, "the master of term %lld was replaced (term %lld leads)",
             (long long)term, (long long)new_term);
    CHECK(ha_owner_log_find(&h, fenced, NULL, line, sizeof line) >= 0,
          "an owner fenced the frozen master: '%s'", fenced);
    sleep_until_ms(stopped_at + LEASE_TTL_MS + 2500); /* past the master's heartbeat timeout (3 s) */
    uint64_t resumed_at = now_ms();
    REQUIRE(ha_signal_master(&h, old, SIGCONT) == 0, "SIGCONT master%d", old);

    int refused_by = -1;
    while (refused_by < 0 && now_ms() < resumed_at + REFUSED_WITHIN_MS) {
        refused_by = ha_owner_log_find(&h, "refused ", "from a master of an older term", line,
                                       sizeof line);
        if (refused_by < 0)
            test_sleep_ms(50);
    }
    CHECK(refused_by >= 0, "within %d ms of SIGCONT an owner refuses a request of the stale "
                           "master%d",
          REFUSED_WITHIN_MS, old);
    if (refused_by >= 0)
        printf("stale leader: %llu ms after SIGCONT owner%d logged: %s\n",
               (unsigned long long)(now_ms() - resumed_at), refused_by, line);
    char log[512];
    ha_master_log(&h, old, -1, log, sizeof log);
    CHECK(cluster_log_contains(log, "test hook: acting as a stale leader"),
          "master%d acted as a stale leader (the hook took effect)", old);
    check_stale_keys(c, version, "while the stale master runs");

    int status = -1;
    int w = ha_wait_master_exit(&h, old, STALE_HOOK_MS + 3000, &status);
    CHECK(w == 0 && status == 1, "the stale master%d exits with status 1 (%s %d)", old,
          w == 0 ? "status" : "still running", status);
    if (w == 0)
        printf("stale leader: master%d exited with status %d %llu ms after SIGCONT\n", old, status,
               (unsigned long long)(now_ms() - resumed_at));
    CHECK(cluster_log_contains(log, "lost leadership"), "master%d's log says 'lost leadership'",
          old);
    CHECK(ha_leader(&h, NULL) == leader, "master%d still leads", leader);
    check_stale_keys(c, version, "after the stale master exited");
    for (int o = 0; o < N_OWNERS; o++)
        fx_close(c[o]);
    CHECK(ha_stop(&h) == 0, "etcd, the masters and the owners stop cleanly");
}

int main(int argc, char **argv)
{
    static const test_scenario scenarios[] = {{"failover", failover}, {"stale_leader", stale_leader}};
    if (!etcd_proc_available()) {
        printf("skip: no %s (Debian etcd-server)\n", ETCD_PROC_BIN);
        return 77;
    }
    return test_run_scenarios(argc, argv, scenarios, sizeof scenarios / sizeof scenarios[0]);
}
