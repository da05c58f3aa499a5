/*
 * test_put_pool.c - small puts start from the owner's put pool (grants the
 * master gave in advance) and still behave as puts that started at the
 * master.
 *
 * One master (placement local, HTTP, a 2 s in-flight TTL) and one owner:
 * - small fx_put calls are installed from the pool (fluxon_puts_total
 *   {start="pool"} grows) and read back;
 * - order: a put from a grant the master gave earlier, done after a put that
 *   started at the master, replaces it (the put_id is given at PutDone, not
 *   at the grant), and the other way round;
 * - a put with an option (reject_if_exists) still goes to the master;
 * - ranges held by grants do not count as used: stat shows memory_used 0
 *   after every key is deleted, with grants still held;
 * - an idle pool gives its grants back before their TTL (the master logs no
 *   expired grant, fluxon_put_pool_bytes falls to 0);
 * - fx_put_nowait returns before the master answered (it returns while the
 *   master is stopped by SIGSTOP), and the next get through the same owner
 *   reads what it put (50 overwrites in a row);
 * - after the master is killed and restarted, puts work and the pool refills
 *   from the new master.
 * Then a cluster of two owners with placement random: the master refuses
 * grants (a pool put would bypass the policy), puts work through PutStart.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "sock_probe.h"
#include "testlib.h"

#define SEG (64ull << 20)
#define SMALL 4096
#define BIG (1u << 20)

/* The value of the /metrics sample named `sample` (the whole name with its
 * labels), or -1 when the page has no such line. */
static long long metric(const char *http, const char *sample)
{
    char *page = NULL;
    if (probe_http_get(http, "/metrics", 2000, &page) != 200) {
        free(page);
        return -1;
    }
    long long v = -1;
    size_t n = strlen(sample);
    for (char *line = strtok(page, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, sample, n) == 0 && line[n] == ' ')
            v = atoll(line + n + 1);
    free(page);
    return v;
}

/* metric() once the page (rebuilt every 100 ms) shows at least min. */
static long long metric_at_least(const char *http, const char *sample, long long min)
{
    long long v = -1;
    for (int i = 0; i < 50 && (v = metric(http, sample)) < min; i++)
        usleep(100 * 1000);
    return v;
}

static bool reads(fx_client *c, const char *key, const char *val, size_t len)
{
    fx_holder *h = NULL;
    bool ok = fx_get(c, key, strlen(key), &h) == 0 && fx_holder_len(h) == len &&
              memcmp(fx_holder_data(h), val, len) == 0;
    if (h)
        fx_holder_release(h);
    return ok;
}

/* "127.0.0.1:PORT" with a free port, for the master's --http. */
static void free_http_addr(char *http, size_t cap)
{
    int port = probe_free_port();
    REQUIRE(port > 0, "a free port for HTTP");
    snprintf(http, cap, "127.0.0.1:%d", port);
}

static const char *POOL = "fluxon_puts_total{owner=\"owner0\",start=\"pool\"}";

static void local_pool(void)
{
    static test_cluster tc;
    char http[64];
    free_http_addr(http, sizeof http);
    const char *margs[] = {"--placement", "local", "--http", http, "--inflight-ttl", "2s",
                           NULL};
    REQUIRE(cluster_start_args(&tc, SEG, margs) == 0, "cluster starts");
    fx_client *c = fx_connect(tc.socket, NULL);
    REQUIRE(c, "client");

    static char small[SMALL], big[BIG];
    char key[64];
    for (int i = 0; i < 100; i++) {
        memset(small, 'a' + i % 26, sizeof small);
        snprintf(key, sizeof key, "small/%d", i);
        CHECK(fx_put(c, key, strlen(key), small, sizeof small) == 0, "put %s", key);
    }
    int good = 0;
    for (int i = 0; i < 100; i++) {
        memset(small, 'a' + i % 26, sizeof small);
        snprintf(key, sizeof key, "small/%d", i);
        good += reads(c, key, small, sizeof small);
    }
    CHECK(good == 100, "every small put reads back (%d of 100)", good);
    long long pooled = metric_at_least(http, POOL, 50);
    CHECK(pooled >= 50, "most small puts came from the pool (%lld of 100)", pooled);

    /* Order: the grants in stock were given before these puts. */
    memset(big, 'B', sizeof big);
    memset(small, 's', sizeof small);
    for (int round = 0; round < 5; round++) {
        CHECK(fx_put(c, "order", 5, big, sizeof big) == 0, "round %d: a 1 MiB put (PutStart)",
              round);
        CHECK(fx_put(c, "order", 5, small, sizeof small) == 0, "round %d: then a pool put",
              round);
        CHECK(reads(c, "order", small, sizeof small), "round %d: the later pool put stands",
              round);
        CHECK(fx_put(c, "order", 5, big, sizeof big) == 0, "round %d: a 1 MiB put again", round);
        CHECK(reads(c, "order", big, sizeof big), "round %d: the later PutStart put stands",
              round);
    }
    long long after = metric_at_least(http, POOL, pooled + 5);
    CHECK(after >= pooled + 5, "the order rounds' small puts came from the pool (%lld -> %lld)",
          pooled, after);

    /* An option needs the master at the start of the put. */
    fx_put_options rx = {.reject_if_exists = 1};
    CHECK(fx_put_opts(c, "small/0", 7, small, sizeof small, &rx) == FX_EEXIST,
          "reject_if_exists on an existing key: AlreadyExists");
    CHECK(fx_put_opts(c, "fresh", 5, small, sizeof small, &rx) == 0,
          "reject_if_exists on a new key: stored");

    /* Grants held are room, not use. */
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof key, "small/%d", i);
        CHECK(fx_delete(c, key, strlen(key)) == 0, "delete %s", key);
    }
    CHECK(fx_delete(c, "order", 5) == 0 && fx_delete(c, "fresh", 5) == 0, "delete the rest");
    long long held = metric(http, "fluxon_put_pool_bytes{owner=\"owner0\"}");
    CHECK(held > 0, "the pool still holds grants (%lld bytes)", held);
    fx_owner_stat st[2];
    size_t n = 0;
    uint64_t used = 1;
    for (int i = 0; i < 50 && used != 0; i++) { /* deletes finish in the background */
        if (fx_stat(c, st, 2, &n) == 0 && n >= 1)
            used = st[0].memory_used;
        if (used)
            usleep(100 * 1000);
    }
    CHECK(used == 0, "stat: memory_used 0 with every key deleted (%llu)",
          (unsigned long long)used);

    /* Idle: a grant is used within a quarter of the TTL (500 ms) and goes
     * back on the next heartbeat after that. */
    for (int i = 0; i < 40 && held > 0; i++) {
        usleep(100 * 1000);
        held = metric(http, "fluxon_put_pool_bytes{owner=\"owner0\"}");
    }
    CHECK(held == 0, "an idle pool gives its grants back (%lld bytes held)", held);
    usleep(2500 * 1000); /* past the TTL of every grant ever given */
    char mlog[400];
    snprintf(mlog, sizeof mlog, "%s/master.log", tc.dir);
    CHECK(!cluster_log_contains(mlog, "unused put grant"),
          "no grant was left to expire at the master");
    CHECK(fx_put(c, "after-idle", 10, small, sizeof small) == 0 &&
              reads(c, "after-idle", small, sizeof small),
          "a put after the idle time");

    /* fx_put_nowait: answered once the commit is on the master link, so a
     * get through the same owner that follows it reads the new value. */
    int seen = 0;
    for (int i = 0; i < 50; i++) {
        memset(small, 'A' + i % 26, sizeof small);
        snprintf(key, sizeof key, "nowait/%d", i % 10); /* each key overwritten 5 times */
        CHECK(fx_put_nowait(c, key, strlen(key), small, sizeof small) == 0, "nowait put %d", i);
        seen += reads(c, key, small, sizeof small);
    }
    CHECK(seen == 50, "every nowait put is read back by the next get (%d of 50)", seen);
    /* ... and it does not wait for the master: with the master stopped, a
     * nowait put (a grant in stock, taken just after a put used one) returns,
     * and its value is there once the master runs again. */
    memset(small, 'Z', sizeof small);
    CHECK(fx_put(c, "nowait/stopped", 14, "x", 1) == 0, "a put just before");
    REQUIRE(kill(tc.master_pid, SIGSTOP) == 0, "SIGSTOP the master");
    uint64_t t0 = test_now_ms();
    int r = fx_put_nowait(c, "nowait/stopped", 14, small, sizeof small);
    uint64_t waited = test_now_ms() - t0;
    REQUIRE(kill(tc.master_pid, SIGCONT) == 0, "SIGCONT the master");
    CHECK(r == 0 && waited < 2000, "fx_put_nowait returns while the master is stopped "
          "(%s after %llu ms)", fx_strerror(r), (unsigned long long)waited);
    CHECK(reads(c, "nowait/stopped", small, sizeof small),
          "and the master applied it once it ran again");
    memset(big, 'N', sizeof big);
    CHECK(fx_put_nowait(c, "nowait-big", 10, big, sizeof big) == 0 &&
              reads(c, "nowait-big", big, sizeof big),
          "a nowait put past FX_PUT_INLINE_MAX waits as fx_put does");

    /* A new master knows none of the old grants. */
    REQUIRE(cluster_kill_master(&tc) == 0, "kill -9 the master");
    REQUIRE(cluster_restart_master(&tc) == 0, "restart the master");
    int ok = 0;
    for (int i = 0; i < 300 && ok < 40; i++) {
        snprintf(key, sizeof key, "again/%d", ok);
        if (fx_put(c, key, strlen(key), small, sizeof small) == 0)
            ok++;
        else
            usleep(50 * 1000); /* the owner is still reconnecting */
    }
    CHECK(ok == 40, "puts go through after the master's restart (%d of 40)", ok);
    good = 0;
    for (int i = 0; i < ok; i++) {
        snprintf(key, sizeof key, "again/%d", i);
        good += reads(c, key, small, sizeof small);
    }
    CHECK(good == ok, "and read back (%d of %d)", good, ok);
    long long fresh = metric_at_least(http, POOL, 1);
    CHECK(fresh >= 1 && fresh <= ok, "the new master grants too (%lld pool puts of %d)", fresh,
          ok);
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "cluster stops cleanly");
}

static void random_placement(void)
{
    static test_cluster tc;
    char http[64];
    free_http_addr(http, sizeof http);
    const char *margs[] = {"--placement", "random", "--http", http, NULL};
    REQUIRE(cluster_start_n(&tc, 2, SEG, margs) == 0, "two owners start");
    fx_client *c = fx_connect(tc.socket, NULL);
    REQUIRE(c, "client");
    static char small[SMALL];
    memset(small, 'r', sizeof small);
    char key[64];
    int good = 0;
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof key, "r/%d", i);
        good += fx_put(c, key, strlen(key), small, sizeof small) == 0 &&
                reads(c, key, small, sizeof small);
    }
    CHECK(good == 40, "puts with placement random (%d of 40)", good);
    long long started = metric_at_least(
        http, "fluxon_puts_total{owner=\"owner0\",start=\"master\"}", 40);
    CHECK(started == 40, "all of them started at the master (%lld)", started);
    CHECK(metric(http, POOL) == 0, "none from a pool");
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "cluster stops cleanly");
}

int main(void)
{
    local_pool();
    random_placement();
    return test_finish();
}
