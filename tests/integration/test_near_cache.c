/*
 * test_near_cache.c - the client's near cache (src/client/holder.c): a
 * released holder of a small value stays in the client, so the next get of
 * the key costs no call, and it is as stale as a held holder may be, no more.
 *
 * One master and one owner (64 MiB segment); client `near` (1 s timeout) and
 * client `other` on the same owner. What tells a near hit from a call: the
 * owner is stopped (SIGSTOP) and the get still returns at once, while a get
 * that needs the owner times out.
 *   hit        a value got and released is read again with the owner stopped;
 *   others     an overwrite by `other` reaches `near` through the master's
 *              invalidation (polled, within the invalidation window); a
 *              delete by `other` too; `near`'s own overwrite is read at once;
 *   budget     fx_set_near_cache(2 values): the oldest third value is dropped
 *              (its get needs the owner), values over 256 KiB are never kept,
 *              and 0 turns the cache off;
 *   pins       near-cached holders of deleted keys do not pin the owner's
 *              memory: after `other` deletes them, memory_used falls back to
 *              what it was before they were put;
 *   report     near hits reach the owner's hit count (ExternalAccessReport,
 *              for the master's eviction policy), 64 at a time;
 *   master     after kill -9 and a restart of the master, whose recovery does
 *              not know who cached what, the owner tells its clients to drop
 *              every key: a value near-cached before is read from the owner
 *              again, and an overwrite made after the restart is seen;
 *   close      fx_close with near-cached holders (leaks are the sanitizers').
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "testlib.h"

#define SEG (64ull << 20)
#define SMALL 4096
#define LARGE (512u << 10)
#define WINDOW_MS 2000 /* invalidations arrive well within this on one machine */

static test_cluster tc;

/* fx_get of key into buf (cap bytes): its status; *len the value's length. */
static int get(fx_client *c, const char *key, void *buf, size_t cap, size_t *len)
{
    fx_holder *h = NULL;
    int r = fx_get(c, key, strlen(key), &h);
    if (r)
        return r;
    *len = fx_holder_len(h);
    memcpy(buf, fx_holder_data(h), *len < cap ? *len : cap);
    fx_holder_release(h);
    return 0;
}

static bool reads(fx_client *c, const char *key, char fill, size_t want_len)
{
    static char buf[LARGE];
    size_t len = 0;
    if (get(c, key, buf, sizeof buf, &len) != 0 || len != want_len)
        return false;
    for (size_t i = 0; i < len; i++)
        if (buf[i] != fill)
            return false;
    return true;
}

static int put_fill(fx_client *c, const char *key, char fill, size_t len)
{
    static char buf[LARGE];
    memset(buf, fill, len);
    return fx_put(c, key, strlen(key), buf, len);
}

static bool absent(fx_client *c, const char *key)
{
    fx_holder *h = NULL;
    int r = fx_get(c, key, strlen(key), &h);
    fx_holder_release(h);
    return r == FX_ENOTFOUND;
}

/* Polls until key reads as fill (or is absent, fill 0) through c. */
static bool becomes(fx_client *c, const char *key, char fill, size_t len)
{
    for (int i = 0; i < WINDOW_MS / 10; i++) {
        if (fill ? reads(c, key, fill, len) : absent(c, key))
            return true;
        usleep(10 * 1000);
    }
    return false;
}

static void stop_owner(void)
{
    REQUIRE(test_stop_process(tc.owner_pid) == 0, "SIGSTOP the owner (every thread)");
}

static void cont_owner(void)
{
    REQUIRE(kill(tc.owner_pid, SIGCONT) == 0, "SIGCONT the owner");
}

/* Whether key is answered without the owner (stopped meanwhile). */
static bool near_hit(fx_client *near, const char *key, char fill, size_t len)
{
    stop_owner();
    uint64_t t0 = test_now_ms();
    bool ok = reads(near, key, fill, len);
    uint64_t took = test_now_ms() - t0;
    cont_owner();
    return ok && took < 500;
}

/* A client whose calls time out after 1 s (so a get that needs the stopped
 * owner fails quickly). */
static fx_client *connect_quick(void)
{
    setenv("FLUXON_TIMEOUT_MS", "1000", 1);
    fx_client *c = fx_connect(tc.socket, NULL);
    unsetenv("FLUXON_TIMEOUT_MS");
    REQUIRE(c, "connect");
    return c;
}

static void test_hit_and_staleness(fx_client *near, fx_client *other)
{
    REQUIRE(put_fill(other, "near/a", 'A', SMALL) == 0, "put near/a");
    REQUIRE(put_fill(other, "near/cold", 'C', SMALL) == 0, "put near/cold");
    CHECK(reads(near, "near/a", 'A', SMALL), "near reads near/a");
    CHECK(near_hit(near, "near/a", 'A', SMALL),
          "a released value is read again while the owner is stopped (no call)");
    stop_owner();
    fx_holder *h = NULL;
    int r = fx_get(near, "near/cold", 9, &h);
    cont_owner();
    fx_holder_release(h);
    CHECK(r == FX_ETIMEDOUT, "a key never read needs the owner: it times out while the owner "
                             "is stopped (%s)", fx_strerror(r));

    CHECK(put_fill(other, "near/a", 'B', SMALL) == 0, "other overwrites near/a");
    CHECK(becomes(near, "near/a", 'B', SMALL),
          "near reads the overwrite within %d ms (the master's invalidation dropped its copy)",
          WINDOW_MS);
    CHECK(reads(near, "near/a", 'B', SMALL) && reads(near, "near/a", 'B', SMALL),
          "and never the old value again");
    CHECK(near_hit(near, "near/a", 'B', SMALL), "the new value is near-cached in turn");

    CHECK(put_fill(near, "near/a", 'N', SMALL) == 0, "near overwrites near/a itself");
    CHECK(reads(near, "near/a", 'N', SMALL), "and reads its own write at once");

    CHECK(fx_delete(other, "near/a", 6) == 0, "other deletes near/a");
    CHECK(becomes(near, "near/a", 0, 0), "near sees the delete within %d ms", WINDOW_MS);
}

static void test_budget(fx_client *near, fx_client *other)
{
    const char *keys[] = {"near/k0", "near/k1", "near/k2"};
    for (int i = 0; i < 3; i++)
        REQUIRE(put_fill(other, keys[i], '0' + i, SMALL) == 0, "put %s", keys[i]);
    CHECK(fx_set_near_cache(near, 2 * SMALL) == 0, "a budget of two values");
    for (int i = 0; i < 3; i++)
        CHECK(reads(near, keys[i], '0' + i, SMALL), "read %s", keys[i]);
    CHECK(near_hit(near, "near/k2", '2', SMALL) && near_hit(near, "near/k1", '1', SMALL),
          "the two newest are near-cached");
    CHECK(!near_hit(near, "near/k0", '0', SMALL), "the oldest was dropped past the budget");

    CHECK(fx_set_near_cache(near, 8u << 20) == 0, "a budget of 8 MiB");
    REQUIRE(put_fill(other, "near/large", 'L', LARGE) == 0, "put a 512 KiB value");
    CHECK(reads(near, "near/large", 'L', LARGE), "read it");
    CHECK(!near_hit(near, "near/large", 'L', LARGE), "values over 256 KiB are not kept");

    CHECK(fx_set_near_cache(near, 0) == 0, "near cache off");
    CHECK(reads(near, "near/k1", '1', SMALL), "read near/k1");
    CHECK(!near_hit(near, "near/k1", '1', SMALL), "with the cache off every get calls the owner");
    CHECK(fx_set_near_cache(NULL, 0) == FX_EINVAL, "a NULL client is FX_EINVAL");
    CHECK(fx_set_near_cache(near, 8u << 20) == 0, "on again");
}

static uint64_t memory_used(fx_client *c)
{
    fx_owner_stat st;
    size_t n = 0;
    if (fx_stat(c, &st, 1, &n) != 0 || n < 1)
        return UINT64_MAX;
    return st.memory_used;
}

static void test_pins(fx_client *near, fx_client *other)
{
    char key[32];
    uint64_t before = memory_used(other); /* the keys of the other parts */
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "pin/%d", i);
        REQUIRE(put_fill(other, key, 'p', SMALL) == 0, "put %s", key);
        CHECK(reads(near, key, 'p', SMALL), "near reads %s", key);
    }
    CHECK(near_hit(near, "pin/19", 'p', SMALL), "they are near-cached");
    CHECK(memory_used(other) >= before + 20 * SMALL, "their bytes are in use");
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "pin/%d", i);
        CHECK(fx_delete(other, key, strlen(key)) == 0, "other deletes %s", key);
    }
    uint64_t used = UINT64_MAX;
    for (int i = 0; i < WINDOW_MS / 10 && (used = memory_used(other)) != before; i++)
        usleep(10 * 1000);
    CHECK(used == before, "the deleted keys' near-cached holders were released: memory_used "
          "%llu, %llu before they were put", (unsigned long long)used,
          (unsigned long long)before);
}

static uint64_t memory_hits(fx_client *c)
{
    fx_owner_stat st;
    size_t n = 0;
    return fx_stat(c, &st, 1, &n) == 0 && n >= 1 ? st.hits_memory : 0;
}

static void test_report(fx_client *near, fx_client *other)
{
    REQUIRE(put_fill(other, "near/hot", 'h', SMALL) == 0, "put near/hot");
    CHECK(reads(near, "near/hot", 'h', SMALL), "near reads near/hot");
    CHECK(near_hit(near, "near/hot", 'h', SMALL), "near/hot is near-cached");
    uint64_t before = memory_hits(other);
    for (int i = 0; i < 128; i++)
        reads(near, "near/hot", 'h', SMALL);
    uint64_t after = before;
    for (int i = 0; i < WINDOW_MS / 10 && (after = memory_hits(other)) < before + 128; i++)
        usleep(10 * 1000);
    CHECK(after >= before + 128, "128 near hits reach the owner's memory hits (%llu -> %llu)",
          (unsigned long long)before, (unsigned long long)after);
}

static void test_master_restart(fx_client *near, fx_client *other)
{
    REQUIRE(put_fill(other, "near/m", 'm', SMALL) == 0, "put near/m");
    CHECK(reads(near, "near/m", 'm', SMALL), "near reads near/m");
    CHECK(near_hit(near, "near/m", 'm', SMALL), "near/m is near-cached");
    REQUIRE(cluster_kill_master(&tc) == 0, "kill -9 the master");
    REQUIRE(cluster_restart_master(&tc) == 0, "restart the master");
    int r = -1;
    for (int i = 0; i < 500 && (r = put_fill(other, "near/after", 'a', SMALL)) != 0; i++)
        usleep(20 * 1000);
    REQUIRE(r == 0, "puts work again after the restart (%s)", fx_strerror(r));
    bool dropped = false;
    for (int i = 0; i < WINDOW_MS / 10 && !dropped; i++) {
        dropped = !near_hit(near, "near/m", 'm', SMALL);
        if (!dropped)
            usleep(10 * 1000);
    }
    CHECK(dropped, "the near cache was emptied when the owner's master came back");
    CHECK(put_fill(other, "near/m", 'M', SMALL) == 0, "other overwrites near/m");
    CHECK(becomes(near, "near/m", 'M', SMALL), "near reads the overwrite within %d ms",
          WINDOW_MS);
}

int main(void)
{
    REQUIRE(cluster_start(&tc, SEG) == 0, "cluster starts");
    fx_client *near = connect_quick();
    fx_client *other = fx_connect(tc.socket, NULL);
    REQUIRE(other, "connect other");
    test_hit_and_staleness(near, other);
    test_budget(near, other);
    test_pins(near, other);
    test_report(near, other);
    test_master_restart(near, other);
    CHECK(put_fill(other, "near/last", 'z', SMALL) == 0 && reads(near, "near/last", 'z', SMALL),
          "a value near-cached at close");
    fx_close(near);
    fx_close(other);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
    return test_finish();
}
