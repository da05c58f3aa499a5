/*
 * test_client_calls.c - the batch and zero-copy calls of libfluxon (issue 7):
 *
 *   batch    fx_batch_put / fx_batch_get with hits, misses and invalid keys
 *            mixed, per-key results; the values are right; one put that does
 *            not fit fails alone; a batch get across two owners (pulls);
 *   into     fx_get_into with an exact, a bigger and a too-small buffer (the
 *            too-small one is left untouched);
 *   begin    fx_put_begin / commit writes the value straight into the shared
 *            segment; abort stores nothing and leaks nothing; a begun put of
 *            a client that closes is revoked;
 *   large    values over the client's wake-up tail (2 MiB: the owner is
 *            pinged one-way before the last bytes are copied, see
 *            put_copy.c), alone and in a batch where the ping falls inside
 *            a value, are stored intact and the connection stays in step;
 *   null     NULL clients, out pointers and holders are FX_EINVAL (or NULL /
 *            0), never a crash;
 *   master   fx_stat_master names the master: address, term 0, pid, host.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accounting.h"
#include "cluster.h"
#include "fluxon/fluxon.h"
#include "testlib.h"
#include "values.h"

#define MIB (1024ull * 1024ull)
#define N 300

static void test_batch(test_cluster *tc)
{
    int err;
    fx_client *c = fx_connect(tc->sockets[0], &err);
    fx_client *far = fx_connect(tc->sockets[1], &err);
    REQUIRE(c && far, "connect");
    static char keybuf[N][32];
    const char *keys[N];
    size_t klens[N], lens[N];
    const void *vals[N];
    int results[N];
    for (int i = 0; i < N; i++) {
        snprintf(keybuf[i], sizeof keybuf[i], "batch-%d", i);
        keys[i] = keybuf[i];
        klens[i] = strlen(keybuf[i]);
        lens[i] = (size_t)(i % 7) * 1000 + (size_t)i; /* 0.. ~6 KB, some empty */
        vals[i] = value_make(100u + (unsigned)i, lens[i]);
    }
    /* One key too big for any segment: it fails alone. */
    lens[N - 1] = 64 * MIB;
    void *big = calloc(1, lens[N - 1]);
    REQUIRE(big, "calloc");
    free((void *)vals[N - 1]);
    vals[N - 1] = big;
    int r = fx_batch_put(c, N, keys, klens, vals, lens, results);
    CHECK(r == 0, "batch put: %s (%s)", fx_strerror(r), fx_last_error_detail());
    int ok = 0;
    for (int i = 0; i < N - 1; i++)
        ok += results[i] == 0;
    CHECK(ok == N - 1, "%d of %d keys stored", ok, N - 1);
    CHECK(results[N - 1] == FX_ENOSPC, "the oversized key alone fails: %s",
          fx_strerror(results[N - 1]));

    /* Batch get: hits, misses (odd keys deleted, and unknown ones), an
     * invalid key; from the writer's owner and from the other one. */
    for (int i = 1; i < N; i += 2)
        REQUIRE(fx_delete(c, keys[i], klens[i]) == 0 || i == N - 1, "delete %s", keys[i]);
    const char *gkeys[N + 2];
    size_t gklens[N + 2];
    for (int i = 0; i < N; i++) {
        gkeys[i] = keys[i];
        gklens[i] = klens[i];
    }
    gkeys[N] = "never-put";
    gklens[N] = 9;
    gkeys[N + 1] = "";
    gklens[N + 1] = 0;
    fx_client *who[2] = {c, far};
    for (int w = 0; w < 2; w++) {
        fx_holder *out[N + 2];
        int res[N + 2];
        r = fx_batch_get(who[w], N + 2, gkeys, gklens, out, res);
        CHECK(r == 0, "batch get: %s (%s)", fx_strerror(r), fx_last_error_detail());
        int hits = 0, misses = 0, good = 0;
        for (int i = 0; i < N; i++) {
            if (i % 2 == 0 && i != N - 1) {
                hits += res[i] == 0 && out[i];
                good += res[i] == 0 && out[i] && value_holder_is(out[i], 100u + (unsigned)i, lens[i]);
            } else {
                misses += res[i] == FX_ENOTFOUND && !out[i];
            }
        }
        CHECK(hits == N / 2 && good == hits, "owner %d: %d hits, %d intact (want %d)", w, hits,
              good, N / 2);
        CHECK(misses == N / 2, "owner %d: %d misses (want %d)", w, misses, N / 2);
        CHECK(res[N] == FX_ENOTFOUND && !out[N], "an unknown key misses");
        CHECK(res[N + 1] == FX_EINVAL && !out[N + 1], "an empty key is invalid, alone");
        for (int i = 0; i < N + 2; i++)
            fx_holder_release(out[i]);
    }
    CHECK(fx_batch_get(c, 0, gkeys, gklens, NULL, results) == FX_EINVAL, "an empty batch");
    CHECK(fx_batch_put(c, FX_BATCH_MAX + 1, keys, klens, vals, lens, results) == FX_EINVAL,
          "a batch over FX_BATCH_MAX");
    for (int i = 0; i < N; i++)
        free((void *)vals[i]);
    for (int i = 0; i < N - 1; i += 2)
        fx_delete(c, keys[i], klens[i]);
    accounting_check(c, 5000, "after the batches");
    fx_close(far);
    fx_close(c);
}

static void test_get_into(test_cluster *tc)
{
    int err;
    fx_client *c = fx_connect(tc->sockets[0], &err);
    REQUIRE(c, "connect");
    REQUIRE(value_put(c, "into", 7, 5000) == 0, "put");
    uint8_t *want = value_make(7, 5000);
    uint8_t buf[6000];
    size_t len = 0;
    memset(buf, 0xAB, sizeof buf);
    CHECK(fx_get_into(c, "into", 4, buf, 5000, &len) == 0 && len == 5000 &&
              memcmp(buf, want, 5000) == 0,
          "exact-size buffer");
    memset(buf, 0xAB, sizeof buf);
    CHECK(fx_get_into(c, "into", 4, buf, sizeof buf, &len) == 0 && len == 5000 &&
              memcmp(buf, want, 5000) == 0 && buf[5000] == 0xAB,
          "bigger buffer: the value, nothing past it");
    memset(buf, 0xAB, sizeof buf);
    len = 0;
    int r = fx_get_into(c, "into", 4, buf, 4999, &len);
    int untouched = 1;
    for (size_t i = 0; i < sizeof buf; i++)
        untouched &= buf[i] == 0xAB;
    CHECK(r == FX_EINVAL && len == 5000 && untouched,
          "too-small buffer: InvalidArgument, the length, nothing written (%s)",
          fx_last_error_detail());
    CHECK(strstr(fx_last_error_detail(), "too small") != NULL, "the detail says why: %s",
          fx_last_error_detail());
    CHECK(fx_get_into(c, "nope", 4, buf, sizeof buf, &len) == FX_ENOTFOUND, "a miss");
    free(want);
    fx_delete(c, "into", 4);
    fx_close(c);
}

static void test_put_begin(test_cluster *tc)
{
    int err;
    fx_client *c = fx_connect(tc->sockets[0], &err);
    REQUIRE(c, "connect");
    fx_put_handle *p = NULL;
    REQUIRE(fx_put_begin(c, "zc", 2, MIB, NULL, &p) == 0 && p, "begin: %s",
            fx_last_error_detail());
    CHECK(fx_put_handle_len(p) == MIB, "handle length");
    uint8_t *want = value_make(9, MIB);
    memcpy(fx_put_handle_data(p), want, MIB); /* the producer writes its bytes once */
    CHECK(fx_exists(c, "zc", 2) == 0, "not readable before commit");
    CHECK(fx_put_commit(p) == 0, "commit: %s", fx_last_error_detail());
    fx_holder *h = NULL;
    CHECK(fx_get(c, "zc", 2, &h) == 0 && value_holder_is(h, 9, MIB), "committed value readable");
    fx_holder_release(h);

    REQUIRE(fx_put_begin(c, "zc-abort", 8, MIB, NULL, &p) == 0, "begin 2");
    memset(fx_put_handle_data(p), 1, MIB);
    fx_put_abort(p);
    CHECK(fx_exists(c, "zc-abort", 8) == 0, "an aborted put stores nothing");
    fx_put_options ex = {.reject_if_exists = 1};
    CHECK(fx_put_begin(c, "zc", 2, 10, &ex, &p) == FX_EEXIST, "options apply to begin");

    /* A begun put of a client that goes away is revoked by the owner. */
    fx_client *gone = fx_connect(tc->sockets[0], &err);
    REQUIRE(gone, "connect 2");
    REQUIRE(fx_put_begin(gone, "zc-gone", 7, MIB, NULL, &p) == 0, "begin 3");
    fx_close(gone); /* p is never ended */
    CHECK(fx_exists(c, "zc-gone", 7) == 0, "nothing stored for the closed client");
    fx_delete(c, "zc", 2);
    accounting_check(c, 5000, "after the zero-copy puts");
    free(want);
    fx_close(c);
}

static void test_large(test_cluster *tc)
{
    int err;
    fx_client *c = fx_connect(tc->sockets[0], &err);
    REQUIRE(c, "connect");
    enum { NB = 6 };
    static const size_t sizes[NB] = {3 * MIB + 5, 1, MIB + 3, 0, 2 * MIB, 513 * 1024};
    const char *keys[NB] = {"large-0", "large-1", "large-2", "large-3", "large-4", "large-5"};
    size_t klens[NB], lens[NB];
    const void *vals[NB];
    int results[NB];
    for (int i = 0; i < NB; i++) {
        klens[i] = strlen(keys[i]);
        lens[i] = sizes[i];
        vals[i] = value_make(700u + (unsigned)i, lens[i]);
        REQUIRE(vals[i], "value");
    }
    /* Alone: 3 MiB + 5 (pinged after 1 MiB + 5), then exactly the tail (no ping). */
    for (int i = 0; i < NB; i += 4) {
        int r = fx_put(c, keys[i], klens[i], vals[i], lens[i]);
        CHECK(r == 0, "put of %zu bytes: %s (%s)", lens[i], fx_strerror(r), fx_last_error_detail());
        fx_holder *h = NULL;
        r = fx_get(c, keys[i], klens[i], &h);
        CHECK(r == 0 && value_holder_is(h, 700u + (unsigned)i, lens[i]),
              "the %zu-byte value reads back intact: %s", lens[i], fx_strerror(r));
        fx_holder_release(h);
    }
    /* A batch of 6.5 MiB: the ping goes out 513 KiB into the fifth value
     * (test_put_copy checks where exactly). */
    for (int round = 0; round < 2; round++) {
        int r = fx_batch_put(c, NB, keys, klens, vals, lens, results);
        CHECK(r == 0, "batch put: %s (%s)", fx_strerror(r), fx_last_error_detail());
        fx_holder *out[NB];
        int res[NB];
        r = fx_batch_get(c, NB, keys, klens, out, res);
        CHECK(r == 0, "batch get: %s (%s)", fx_strerror(r), fx_last_error_detail());
        for (int i = 0; i < NB; i++) {
            CHECK(results[i] == 0 && res[i] == 0 &&
                      value_holder_is(out[i], 700u + (unsigned)i, lens[i]),
                  "round %d: the batch's %zu-byte value: put %s, get %s, intact %d", round,
                  lens[i], fx_strerror(results[i]), fx_strerror(res[i]),
                  res[i] == 0 && value_holder_is(out[i], 700u + (unsigned)i, lens[i]));
            fx_holder_release(out[i]);
        }
    }
    /* An empty value may come as NULL (no bytes are read from it). */
    CHECK(fx_put(c, "large-null", 10, NULL, 0) == 0, "put of NULL, 0: %s", fx_last_error_detail());
    fx_holder *eh = NULL;
    CHECK(fx_get(c, "large-null", 10, &eh) == 0 && fx_holder_len(eh) == 0,
          "the empty value reads back");
    fx_holder_release(eh);
    CHECK(fx_delete(c, "large-null", 10) == 0, "delete large-null");
    /* The connections are in step afterwards: small calls still pair up. */
    CHECK(fx_ping(c) == 0, "ping after the large puts: %s", fx_last_error_detail());
    for (int i = 0; i < NB; i++) {
        CHECK(fx_delete(c, keys[i], klens[i]) == 0, "delete %s", keys[i]);
        free((void *)vals[i]);
    }
    accounting_check(c, 5000, "after the large puts");
    fx_close(c);
}

/* NULL where a client, an out pointer or a holder belongs: FX_EINVAL (or
 * NULL / 0 from the holder accessors), never a crash, and the connection
 * stays usable. */
static void test_null_args(test_cluster *tc)
{
    int err = 0;
    fx_client *c = fx_connect(tc->sockets[0], &err);
    REQUIRE(c, "connect: %d", err);
    REQUIRE(fx_put(c, "nul", 3, "abc", 3) == 0, "put");
    CHECK(fx_get(c, "nul", 3, NULL) == FX_EINVAL, "fx_get with out NULL on a stored key");
    CHECK(strstr(fx_last_error_detail(), "out is NULL") != NULL, "the detail names out (%s)",
          fx_last_error_detail());
    fx_holder *h = (fx_holder *)1;
    CHECK(fx_get(NULL, "nul", 3, &h) == FX_EINVAL && h == (fx_holder *)1, "fx_get on NULL");
    CHECK(fx_delete(NULL, "nul", 3) == FX_EINVAL, "fx_delete on NULL");
    CHECK(fx_put(NULL, "nul", 3, "abc", 3) == FX_EINVAL, "fx_put on NULL");
    CHECK(fx_ping(NULL) == FX_EINVAL, "fx_ping on NULL");
    size_t n = 0;
    fx_owner_stat st[1];
    CHECK(fx_stat(NULL, st, 1, &n) == FX_EINVAL && fx_stat(c, st, 1, NULL) == FX_EINVAL &&
              fx_stat(c, NULL, 1, &n) == FX_EINVAL,
          "fx_stat with a NULL client, n or out");
    CHECK(fx_stat(c, NULL, 0, &n) == 0 && n == 2, "fx_stat counting only (%zu owners)", n);
    fx_master_stat ms = {.term = 7};
    CHECK(fx_stat_master(NULL, &ms) == FX_EINVAL && fx_stat_master(c, NULL) == FX_EINVAL &&
              ms.term == 7,
          "fx_stat_master with a NULL client or out leaves out alone");
    CHECK(fx_get_size(c, "nul", 3, NULL) == FX_EINVAL &&
              strstr(fx_last_error_detail(), "size is NULL") != NULL,
          "fx_get_size with size NULL (%s)", fx_last_error_detail());
    CHECK(fx_count_prefix(c, "n", 1, NULL) == FX_EINVAL &&
              strstr(fx_last_error_detail(), "count is NULL") != NULL,
          "fx_count_prefix with count NULL (%s)", fx_last_error_detail());
    setenv("FLUXON_SOCKET", tc->sockets[0], 1);
    CHECK(fx_connect("", &err) == NULL && err == FX_EINVAL &&
              strstr(fx_last_error_detail(), "empty") != NULL,
          "fx_connect(\"\") is an empty path even with FLUXON_SOCKET set (%s)",
          fx_last_error_detail());
    unsetenv("FLUXON_SOCKET");
    CHECK(fx_holder_data(NULL) == NULL && fx_holder_len(NULL) == 0 &&
              fx_holder_source(NULL) == FX_EINVAL,
          "holder accessors on NULL");
    fx_holder_release(NULL);
    h = NULL;
    CHECK(fx_get(c, "nul", 3, &h) == 0 && h && fx_holder_len(h) == 3 &&
              memcmp(fx_holder_data(h), "abc", 3) == 0,
          "the client still works after the refusals");
    fx_holder_release(h);
    CHECK(fx_delete(c, "nul", 3) == 0, "delete");
    fx_close(c);
    fx_close(NULL);
}

/* fx_stat_master names the master that answers: its port file's address,
 * term 0 (no etcd), its pid and this host. */
static void test_stat_master(test_cluster *tc)
{
    int err;
    fx_client *c = fx_connect(tc->sockets[1], &err);
    REQUIRE(c, "connect: %d", err);
    fx_master_stat ms;
    memset(&ms, 0xff, sizeof ms);
    char here[256] = "";
    gethostname(here, sizeof here - 1);
    CHECK(fx_stat_master(c, &ms) == 0, "fx_stat_master: %s", fx_last_error_detail());
    CHECK(strcmp(ms.addr, tc->master_addr) == 0, "the master's address (%.300s, want %s)",
          ms.addr, tc->master_addr);
    CHECK(ms.term == 0, "term 0 without etcd (%llu)", (unsigned long long)ms.term);
    CHECK(ms.pid == tc->master_pid, "the master's pid (%lld, want %d)", (long long)ms.pid,
          (int)tc->master_pid);
    CHECK(strcmp(ms.host, here) == 0, "this host (%.256s, want %s)", ms.host, here);
    fx_close(c);
}

int main(void)
{
    test_cluster tc;
    const char *const args[] = {"--placement", "local", NULL};
    REQUIRE(cluster_start_n(&tc, 2, 32 * MIB, args) == 0, "cluster start");
    test_batch(&tc);
    test_get_into(&tc);
    test_put_begin(&tc);
    test_large(&tc);
    test_null_args(&tc);
    test_stat_master(&tc);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
    return test_finish();
}
