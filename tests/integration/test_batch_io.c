/*
 * test_batch_io.c - the copying batch calls of issue 21 on a two-owner
 * cluster (placement local: a value put through owner 1 lives there, and a
 * get through owner 0 pulls it):
 *
 *   mixed      fx_batch_get_into with hits (stored through either owner),
 *              misses and invalid keys in one batch; buffers larger than
 *              the value; a too-small buffer is FX_EINVAL with lens = the
 *              length needed and its sentinel bytes untouched; fx_batch_get
 *              (now one ExternalBatchGet) agrees;
 *   iov        put_iov -> get_into and put_from -> get_iov round trips, byte
 *              for byte, across odd-sized and zero-length iovecs, values
 *              ending inside an iovec; a too-small scatter is FX_EINVAL;
 *   exists     reject_if_exists: EEXIST for the existing key only; two
 *              threads racing on the same fresh keys: one success per key,
 *              and the stored bytes are the winner's;
 *   delete     fx_batch_delete (one ExternalBatchDelete, one BatchDelete at
 *              the master) of present and absent keys, and with an invalid
 *              key in the same batch; the weak index no longer serves a
 *              deleted key;
 *   limits     n = 0 does nothing; n = FX_BATCH_MAX + 1 is refused;
 *              FX_BATCH_MAX keys of the longest length fit one frame;
 *   closed     a connection closed with a batch get in flight (raw socket):
 *              the owner keeps serving, and stops clean (leaks under ASan);
 *   history    threads doing batch puts, get_into and deletes on
 *              overlapping keys, racing threads doing the same with the
 *              single calls (fx_put, fx_get_into, fx_delete); every read
 *              checked by history.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "history.h"
#include "raw_external.h"
#include "testlib.h"
#include "values.h"

#define MIB (1024ull * 1024ull)

static test_cluster tc;

static fx_client *connect_owner(int i)
{
    int err;
    fx_client *c = fx_connect(tc.sockets[i], &err);
    REQUIRE(c, "connect to owner %d: %s", i, fx_strerror(err));
    return c;
}

/* ---- mixed ---------------------------------------------------------------- */

#define MIXED_N 8

static void test_mixed(void)
{
    fx_client *c = connect_owner(0), *far = connect_owner(1);
    const char *keys[MIXED_N] = {"mx-near", "mx-far", "mx-miss", "", "mx-small", "mx-far2",
                                 "mx-empty", NULL};
    static char longkey[4097];
    memset(longkey, 'k', sizeof longkey);
    keys[7] = longkey;
    size_t klens[MIXED_N];
    for (int i = 0; i < 7; i++)
        klens[i] = strlen(keys[i]);
    klens[7] = 4097;
    size_t vlen[MIXED_N] = {1000, 5000, 0, 0, 3000, 77, 0, 0};
    uint8_t *val[MIXED_N] = {0};
    for (int i = 0; i < MIXED_N; i++)
        val[i] = value_make(500u + (unsigned)i, vlen[i] ? vlen[i] : 1);
    CHECK(fx_put(c, keys[0], klens[0], val[0], vlen[0]) == 0, "put near");
    CHECK(fx_put(far, keys[1], klens[1], val[1], vlen[1]) == 0, "put far");
    CHECK(fx_put(c, keys[4], klens[4], val[4], vlen[4]) == 0, "put small");
    CHECK(fx_put(far, keys[5], klens[5], val[5], vlen[5]) == 0, "put far2");
    CHECK(fx_put(c, keys[6], klens[6], "", 0) == 0, "put empty");

    static uint8_t bufs[MIXED_N][8192];
    memset(bufs, 0xA5, sizeof bufs);
    void *bp[MIXED_N];
    size_t caps[MIXED_N], lens[MIXED_N];
    int results[MIXED_N];
    for (int i = 0; i < MIXED_N; i++) {
        bp[i] = bufs[i];
        caps[i] = sizeof bufs[i]; /* larger than every value */
    }
    caps[4] = 2999; /* one byte short */
    int r = fx_batch_get_into(c, MIXED_N, keys, klens, bp, caps, lens, results);
    CHECK(r == 0, "batch_get_into: %s (%s)", fx_strerror(r), fx_last_error_detail());
    CHECK(results[0] == 0 && lens[0] == 1000 && !memcmp(bufs[0], val[0], 1000), "near hit");
    CHECK(bufs[0][1000] == 0xA5, "nothing written past the value");
    CHECK(results[1] == 0 && lens[1] == 5000 && !memcmp(bufs[1], val[1], 5000),
          "far hit (pulled): %d", results[1]);
    CHECK(results[2] == FX_ENOTFOUND && lens[2] == 0, "miss: %d", results[2]);
    CHECK(results[3] == FX_EINVAL && results[7] == FX_EINVAL, "invalid keys: %d %d", results[3],
          results[7]);
    CHECK(results[4] == FX_EINVAL && lens[4] == 3000, "too small: %d, lens %zu", results[4],
          lens[4]);
    bool untouched = true;
    for (size_t k = 0; k < sizeof bufs[4]; k++)
        untouched &= bufs[4][k] == 0xA5;
    CHECK(untouched, "a too-small buffer is left untouched");
    CHECK(results[5] == 0 && lens[5] == 77 && !memcmp(bufs[5], val[5], 77), "far2 hit");
    CHECK(results[6] == 0 && lens[6] == 0, "empty value: %d", results[6]);

    /* The same batch again: the far values are now replicas here. */
    caps[4] = 3000;
    r = fx_batch_get_into(c, MIXED_N, keys, klens, bp, caps, lens, results);
    CHECK(r == 0 && results[1] == 0 && results[4] == 0 && !memcmp(bufs[4], val[4], 3000),
          "second pass: exact-size buffer");

    /* fx_batch_get (one ExternalBatchGet) agrees. */
    fx_holder *out[MIXED_N];
    r = fx_batch_get(c, MIXED_N, keys, klens, out, results);
    CHECK(r == 0, "batch_get: %s", fx_strerror(r));
    CHECK(results[0] == 0 && fx_holder_len(out[0]) == 1000 &&
              !memcmp(fx_holder_data(out[0]), val[0], 1000), "batch_get near");
    CHECK(results[1] == 0 && fx_holder_len(out[1]) == 5000, "batch_get far");
    CHECK(results[2] == FX_ENOTFOUND && !out[2], "batch_get miss");
    CHECK(results[3] == FX_EINVAL && results[7] == FX_EINVAL, "batch_get invalid");
    /* With holders alive, get_into reads from the weak index. */
    r = fx_batch_get_into(c, 2, keys, klens, bp, caps, lens, results);
    CHECK(r == 0 && results[0] == 0 && results[1] == 0 && !memcmp(bufs[1], val[1], 5000),
          "get_into from the weak index");
    for (int i = 0; i < MIXED_N; i++)
        fx_holder_release(out[i]);
    for (int i = 0; i < MIXED_N; i++)
        free(val[i]);
    fx_close(c);
    fx_close(far);
}

/* ---- iov ------------------------------------------------------------------- */

static void test_iov(void)
{
    fx_client *c = connect_owner(0), *far = connect_owner(1);
    enum { K = 4 };
    const char *keys[K] = {"iov-a", "iov-b", "iov-c", "iov-d"};
    size_t klens[K] = {5, 5, 5, 5};
    /* Gather pieces: odd sizes, zero-length ones, a value of only empty pieces. */
    static const size_t pieces[K][5] = {
        {1, 0, 4095, 3, 0}, {7777, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {13, 4096, 1, 0, 900}};
    struct iovec giov[K][5];
    const struct iovec *gp[K];
    size_t gcnt[K], total[K];
    uint8_t *whole[K];
    for (int i = 0; i < K; i++) {
        total[i] = 0;
        for (int k = 0; k < 5; k++)
            total[i] += pieces[i][k];
        whole[i] = value_make(900u + (unsigned)i, total[i] ? total[i] : 1);
        size_t off = 0;
        for (int k = 0; k < 5; k++) {
            giov[i][k] = (struct iovec){.iov_base = whole[i] + off, .iov_len = pieces[i][k]};
            off += pieces[i][k];
        }
        gp[i] = giov[i];
        gcnt[i] = 5;
    }
    int results[K];
    int r = fx_batch_put_iov(far, K, keys, klens, gp, gcnt, NULL, results);
    CHECK(r == 0 && !results[0] && !results[1] && !results[2] && !results[3],
          "put_iov: %s %d %d %d %d", fx_strerror(r), results[0], results[1], results[2],
          results[3]);
    static uint8_t bufs[K][12000];
    void *bp[K];
    size_t caps[K], lens[K];
    for (int i = 0; i < K; i++) {
        bp[i] = bufs[i];
        caps[i] = sizeof bufs[i];
    }
    r = fx_batch_get_into(c, K, keys, klens, bp, caps, lens, results);
    for (int i = 0; i < K; i++)
        CHECK(r == 0 && results[i] == 0 && lens[i] == total[i] &&
                  !memcmp(bufs[i], whole[i], total[i]),
              "put_iov -> get_into, key %d: %d, %zu of %zu", i, results[i], lens[i], total[i]);

    /* put_from -> get_iov: scatter into odd pieces, ending inside one. */
    const void *vals[K];
    for (int i = 0; i < K; i++)
        vals[i] = whole[i];
    r = fx_batch_put_from(c, K, keys, klens, vals, total, NULL, results);
    CHECK(r == 0 && !results[0] && !results[1] && !results[3], "put_from");
    static uint8_t sbuf[K][13000];
    memset(sbuf, 0x5A, sizeof sbuf);
    static const size_t spieces[K][4] = {
        {2, 0, 3000, 5000}, {7776, 0, 1, 100}, {0, 0, 0, 0}, {5000, 0, 3, 7000}};
    struct iovec siov[K][4];
    const struct iovec *sp[K];
    size_t scnt[K];
    for (int i = 0; i < K; i++) {
        size_t off = 0;
        for (int k = 0; k < 4; k++) {
            siov[i][k] = (struct iovec){.iov_base = sbuf[i] + off + k, .iov_len = spieces[i][k]};
            off += spieces[i][k];
        }
        sp[i] = siov[i];
        scnt[i] = 4;
    }
    r = fx_batch_get_iov(far, K, keys, klens, sp, scnt, lens, results);
    CHECK(r == 0, "get_iov: %s", fx_strerror(r));
    for (int i = 0; i < K; i++) {
        uint8_t joined[13000];
        size_t got = 0;
        for (int k = 0; k < 4 && got < total[i]; k++) {
            size_t take = spieces[i][k] < total[i] - got ? spieces[i][k] : total[i] - got;
            memcpy(joined + got, siov[i][k].iov_base, take);
            got += take;
        }
        CHECK(results[i] == 0 && lens[i] == total[i] && got == total[i] &&
                  !memcmp(joined, whole[i], total[i]),
              "put_from -> get_iov, key %d: %d", i, results[i]);
    }
    /* Key 3's value ends inside its last piece: the rest stays as it was. */
    uint8_t *end3 = (uint8_t *)siov[3][3].iov_base + (total[3] - 5003);
    CHECK(end3[0] == 0x5A && end3[1] == 0x5A, "nothing written after the value's end");
    /* Key 1 (7777 bytes) into 7776 + 1 + 100: exactly across a 1-byte piece. */
    CHECK(((uint8_t *)siov[1][2].iov_base)[0] == whole[1][7776], "value across a 1-byte iovec");
    /* Too small in all: FX_EINVAL, lens = needed, nothing written. */
    memset(sbuf[1], 0x5A, sizeof sbuf[1]);
    struct iovec small[2] = {{sbuf[1], 4000}, {sbuf[1] + 5000, 3000}};
    const struct iovec *smp[1] = {small};
    size_t smc[1] = {2};
    r = fx_batch_get_iov(c, 1, &keys[1], &klens[1], smp, smc, lens, results);
    bool untouched = true;
    for (size_t k = 0; k < sizeof sbuf[1]; k++)
        untouched &= sbuf[1][k] == 0x5A;
    CHECK(r == 0 && results[0] == FX_EINVAL && lens[0] == 7777 && untouched,
          "too-small scatter: %d, lens %zu, untouched %d", results[0], lens[0], untouched);

    /* A gathered value larger than FX_PUT_INLINE_MAX next to a small one:
     * the batch goes by staging ranges (two round trips), not inline. */
    size_t big_len = FX_PUT_INLINE_MAX + 4097;
    uint8_t *big = value_make(950u, big_len);
    struct iovec bigv[3] = {{big, 100000}, {big + 100000, 0}, {big + 100000, big_len - 100000}};
    const struct iovec *bgp[2] = {bigv, giov[0]};
    size_t bgc[2] = {3, 5};
    const char *bkeys[2] = {"iov-big", "iov-a"};
    size_t bklens[2] = {7, 5};
    r = fx_batch_put_iov(c, 2, bkeys, bklens, bgp, bgc, NULL, results);
    CHECK(r == 0 && !results[0] && !results[1], "put_iov of a %zu-byte value: %d %d", big_len,
          results[0], results[1]);
    fx_holder *bh = NULL;
    CHECK(fx_get(far, "iov-big", 7, &bh) == 0 && fx_holder_len(bh) == big_len &&
              !memcmp(fx_holder_data(bh), big, big_len),
          "the large gathered value reads back whole");
    if (bh)
        fx_holder_release(bh);
    free(big);
    for (int i = 0; i < K; i++)
        free(whole[i]);
    fx_close(c);
    fx_close(far);
}

/* ---- exists ---------------------------------------------------------------- */

#define RACE_KEYS 24

typedef struct racer {
    fx_client *c;
    int id;
    int results[RACE_KEYS];
    int rc;
    pthread_barrier_t *go;
} racer;

static void race_key(char *buf, size_t cap, int k)
{
    snprintf(buf, cap, "race-%d", k);
}

static void *race_run(void *arg)
{
    racer *rc = arg;
    static char kb[RACE_KEYS][32];
    const char *keys[RACE_KEYS];
    size_t klens[RACE_KEYS], lens[RACE_KEYS];
    const void *vals[RACE_KEYS];
    uint8_t *own[RACE_KEYS];
    for (int k = 0; k < RACE_KEYS; k++) {
        race_key(kb[k], sizeof kb[k], k);
        keys[k] = kb[k];
        klens[k] = strlen(kb[k]);
        lens[k] = 2000 + (size_t)k;
        own[k] = value_make((unsigned long long)rc->id * 1000u + (unsigned)k, lens[k]);
        vals[k] = own[k];
    }
    fx_put_options opts = {.reject_if_exists = 1};
    pthread_barrier_wait(rc->go);
    rc->rc = fx_batch_put_from(rc->c, RACE_KEYS, keys, klens, vals, lens, &opts, rc->results);
    for (int k = 0; k < RACE_KEYS; k++)
        free(own[k]);
    return NULL;
}

static void test_exists(void)
{
    fx_client *c = connect_owner(0), *far = connect_owner(1);
    const char *keys[2] = {"ex-old", "ex-new"};
    size_t klens[2] = {6, 6}, lens[2] = {100, 200};
    uint8_t *old = value_make(1, 100), *nv0 = value_make(2, 100), *nv1 = value_make(3, 200);
    CHECK(fx_put(c, keys[0], klens[0], old, 100) == 0, "put old");
    const void *vals[2] = {nv0, nv1};
    fx_put_options opts = {.reject_if_exists = 1};
    int results[2];
    int r = fx_batch_put_from(c, 2, keys, klens, vals, lens, &opts, results);
    CHECK(r == 0 && results[0] == FX_EEXIST && results[1] == 0, "reject_if_exists: %d %d",
          results[0], results[1]);
    uint8_t buf[300];
    void *bp[2] = {buf, buf + 100};
    size_t caps[2] = {100, 200}, got[2];
    r = fx_batch_get_into(far, 2, keys, klens, bp, caps, got, results);
    CHECK(r == 0 && !results[0] && !results[1] && !memcmp(buf, old, 100) &&
              !memcmp(buf + 100, nv1, 200), "the existing key kept its value");
    /* Without the option, the overwrite goes through. */
    r = fx_batch_put_from(c, 2, keys, klens, vals, lens, NULL, results);
    CHECK(r == 0 && !results[0] && !results[1], "plain overwrite");
    free(old);
    free(nv0);
    free(nv1);

    /* Two threads, one through each owner, on the same fresh keys. */
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    racer rs[2] = {{.c = c, .id = 1, .go = &go}, {.c = far, .id = 2, .go = &go}};
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, race_run, &rs[t]);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&go);
    CHECK(rs[0].rc == 0 && rs[1].rc == 0, "racing batches: %d %d", rs[0].rc, rs[1].rc);
    int bad = 0;
    for (int k = 0; k < RACE_KEYS; k++) {
        int a = rs[0].results[k], b = rs[1].results[k];
        bool one = (a == 0 && b == FX_EEXIST) || (a == FX_EEXIST && b == 0);
        if (!one) {
            bad++;
            fprintf(stderr, "race key %d: results %d %d\n", k, a, b);
            continue;
        }
        char kb[32];
        race_key(kb, sizeof kb, k);
        const char *key = kb;
        size_t klen = strlen(kb), len = 2000 + (size_t)k, cap = sizeof buf, n;
        uint8_t rb[4096];
        void *rbp = rb;
        cap = sizeof rb;
        int res;
        r = fx_batch_get_into(c, 1, &key, &klen, &rbp, &cap, &n, &res);
        uint8_t *want = value_make((unsigned long long)(a == 0 ? 1 : 2) * 1000u + (unsigned)k, len);
        if (r || res || n != len || memcmp(rb, want, len)) {
            bad++;
            fprintf(stderr, "race key %d: stored bytes are not the winner's (%d)\n", k, res);
        }
        free(want);
    }
    CHECK(bad == 0, "race: exactly one success per key, the winner's bytes (%d bad)", bad);
    fx_close(c);
    fx_close(far);
}

/* ---- delete ---------------------------------------------------------------- */

static void test_delete(void)
{
    fx_client *c = connect_owner(0), *far = connect_owner(1);
    const char *keys[4] = {"del-a", "del-absent", "del-b", ""};
    size_t klens[4] = {5, 10, 5, 0};
    CHECK(value_put(c, keys[0], 11, 500) == 0 && value_put(far, keys[2], 12, 600) == 0, "puts");
    fx_holder *h = NULL;
    CHECK(fx_get(c, keys[0], klens[0], &h) == 0, "get before delete (weak index)");
    int results[4];
    int r = fx_batch_delete(c, 4, keys, klens, results);
    CHECK(r == 0 && results[0] == 0 && results[1] == FX_ENOTFOUND && results[2] == 0 &&
              results[3] == FX_EINVAL, "batch_delete: %d %d %d %d", results[0], results[1],
          results[2], results[3]);
    uint8_t buf[1000];
    void *bp[3] = {buf, buf, buf};
    size_t caps[3] = {1000, 1000, 1000}, lens[3];
    r = fx_batch_get_into(c, 3, keys, klens, bp, caps, lens, results);
    CHECK(r == 0 && results[0] == FX_ENOTFOUND && results[1] == FX_ENOTFOUND &&
              results[2] == FX_ENOTFOUND, "deleted keys are gone (weak index too): %d %d %d",
          results[0], results[1], results[2]);
    fx_holder_release(h);
    r = fx_batch_delete(c, 2, keys, klens, results);
    CHECK(r == 0 && results[0] == FX_ENOTFOUND && results[1] == FX_ENOTFOUND, "delete again");

    /* One frame with a present key, an invalid (empty) key and an absent
     * one: each key its own result, the present one deleted through both
     * owners' eyes. */
    const char *mixed[3] = {"del-mixed-a", "", "del-mixed-absent"};
    size_t mlens[3] = {strlen(mixed[0]), 0, strlen(mixed[2])};
    CHECK(fx_put(c, mixed[0], mlens[0], "x", 1) == 0, "put %s", mixed[0]);
    int mres[3] = {1, 1, 1};
    r = fx_batch_delete(c, 3, mixed, mlens, mres);
    CHECK(r == 0 && mres[0] == 0 && mres[1] == FX_EINVAL && mres[2] == FX_ENOTFOUND,
          "mixed batch delete: %s -> %d %d %d", fx_strerror(r), mres[0], mres[1], mres[2]);
    CHECK(fx_exists(far, mixed[0], mlens[0]) == 0, "%s is gone through the other owner",
          mixed[0]);
    fx_close(c);
    fx_close(far);
}

/* ---- limits ---------------------------------------------------------------- */

static void test_limits(void)
{
    fx_client *c = connect_owner(0);
    int results[FX_BATCH_MAX + 1];
    size_t klens[FX_BATCH_MAX + 1], lens[FX_BATCH_MAX + 1], caps[FX_BATCH_MAX + 1];
    size_t vlens[FX_BATCH_MAX + 1];
    const char **keys = calloc(FX_BATCH_MAX + 1, sizeof *keys);
    void **bp = calloc(FX_BATCH_MAX + 1, sizeof *bp);
    const void **vals = calloc(FX_BATCH_MAX + 1, sizeof *vals);
    char *keymem = malloc((size_t)(FX_BATCH_MAX + 1) * 4096);
    static uint8_t buf[64];
    REQUIRE(keys && bp && vals && keymem, "calloc");
    for (int i = 0; i <= FX_BATCH_MAX; i++) {
        memset(keymem + (size_t)i * 4096, 'a' + i % 26, 4096);
        snprintf(keymem + (size_t)i * 4096, 16, "lim%05d", i);
        keymem[(size_t)i * 4096 + 8] = '-';
        keys[i] = keymem + (size_t)i * 4096;
        klens[i] = 4096;
        bp[i] = buf;
        caps[i] = sizeof buf;
        vals[i] = buf;
        vlens[i] = 8;
        results[i] = 12345;
    }
    CHECK(fx_batch_get_into(c, 0, NULL, NULL, NULL, NULL, NULL, NULL) == 0, "get_into n = 0");
    CHECK(fx_batch_get_iov(c, 0, NULL, NULL, NULL, NULL, NULL, NULL) == 0, "get_iov n = 0");
    CHECK(fx_batch_put_from(c, 0, NULL, NULL, NULL, NULL, NULL, NULL) == 0, "put_from n = 0");
    CHECK(fx_batch_put_iov(c, 0, NULL, NULL, NULL, NULL, NULL, NULL) == 0, "put_iov n = 0");
    CHECK(fx_batch_delete(c, 0, NULL, NULL, NULL) == 0, "delete n = 0");
    size_t n = FX_BATCH_MAX + 1;
    CHECK(fx_batch_get_into(c, n, keys, klens, bp, caps, lens, results) == FX_EINVAL,
          "get_into of FX_BATCH_MAX + 1");
    CHECK(fx_batch_put_from(c, n, keys, klens, vals, vlens, NULL, results) == FX_EINVAL,
          "put_from of FX_BATCH_MAX + 1");
    CHECK(fx_batch_delete(c, n, keys, klens, results) == FX_EINVAL, "delete of FX_BATCH_MAX + 1");
    CHECK(results[0] == 12345, "a refused batch leaves results alone");
    /* The largest batch: FX_BATCH_MAX keys of 4096 bytes in one frame. */
    int r = fx_batch_get_into(c, FX_BATCH_MAX, keys, klens, bp, caps, lens, results);
    int misses = 0;
    for (int i = 0; i < FX_BATCH_MAX; i++)
        misses += results[i] == FX_ENOTFOUND;
    CHECK(r == 0 && misses == FX_BATCH_MAX, "largest batch: %s (%s), %d misses", fx_strerror(r),
          fx_last_error_detail(), misses);
    r = fx_batch_put_from(c, FX_BATCH_MAX, keys, klens, vals, vlens, NULL, results);
    int stored = 0;
    for (int i = 0; i < FX_BATCH_MAX; i++)
        stored += results[i] == 0;
    CHECK(r == 0 && stored == FX_BATCH_MAX, "largest put: %d stored", stored);
    r = fx_batch_get_into(c, FX_BATCH_MAX, keys, klens, bp, caps, lens, results);
    int hits = 0;
    for (int i = 0; i < FX_BATCH_MAX; i++)
        hits += results[i] == 0 && lens[i] == 8;
    CHECK(r == 0 && hits == FX_BATCH_MAX, "largest batch, all hits: %d", hits);
    r = fx_batch_delete(c, FX_BATCH_MAX, keys, klens, results);
    CHECK(r == 0 && results[0] == 0 && results[FX_BATCH_MAX - 1] == 0, "largest delete");
    free(keys);
    free(bp);
    free(vals);
    free(keymem);
    fx_close(c);
}

/* ---- closed ---------------------------------------------------------------- */

/* Sends an ExternalBatchGet of keys stored on the other owner (each a pull)
 * and absent keys (a master round trip) and closes before the answer. */
static void send_batch_and_close(const char *socket, int n_keys)
{
    int fd = raw_external_open(socket);
    REQUIRE(fd >= 0, "raw connection");
    char *packed = malloc((size_t)n_keys * 16);
    uint32_t *kl = malloc((size_t)n_keys * sizeof *kl);
    size_t pos = 0;
    for (int i = 0; i < n_keys; i++) {
        int w = snprintf(packed + pos, 16, "cl-%d", i);
        kl[i] = (uint32_t)w;
        pos += (size_t)w;
    }
    Fx__ExternalBatchGetReq req = FX__EXTERNAL_BATCH_GET_REQ__INIT;
    req.keys = (ProtobufCBinaryData){.len = pos, .data = (uint8_t *)packed};
    req.n_klens = (size_t)n_keys;
    req.klens = kl;
    size_t len;
    uint8_t *frame = msg_encode(MSG_EXT_BATCH_GET, 0, 7, &req.base, &len);
    REQUIRE(frame && write(fd, frame, len) == (ssize_t)len, "send the batch");
    close(fd);
    free(frame);
    free(packed);
    free(kl);
}

static void test_closed(void)
{
    fx_client *c = connect_owner(0), *far = connect_owner(1);
    enum { K = 200 };
    for (int i = 0; i < K; i += 2) {
        char key[16];
        snprintf(key, sizeof key, "cl-%d", i);
        CHECK(value_put(far, key, (unsigned)i, 20000) == 0, "put %s", key);
    }
    for (int round = 0; round < 5; round++)
        send_batch_and_close(tc.sockets[0], K);
    /* A bad shape fails the message, with the connection still usable. */
    int fd = raw_external_open(tc.sockets[0]);
    REQUIRE(fd >= 0, "raw connection");
    uint32_t kl[2] = {3, 3};
    Fx__ExternalBatchGetReq bad = FX__EXTERNAL_BATCH_GET_REQ__INIT;
    bad.keys = (ProtobufCBinaryData){.len = 5, .data = (uint8_t *)"abcde"};
    bad.n_klens = 2;
    bad.klens = kl;
    ProtobufCMessage *m = raw_external_call(fd, MSG_EXT_BATCH_GET, &bad.base);
    CHECK(m && msg_status(m) == FX_EINVAL && strstr(msg_detail(m), "add up"),
          "klens not adding up: %s", m ? msg_detail(m) : "(no answer)");
    msg_free(m);
    kl[0] = 0xFFFFFFFFu; /* would overflow a careless sum */
    m = raw_external_call(fd, MSG_EXT_BATCH_GET, &bad.base);
    CHECK(m && msg_status(m) == FX_EINVAL, "an enormous klen");
    msg_free(m);
    close(fd);
    /* The owner still serves batches. */
    test_sleep_ms(300);
    const char *keys[2] = {"cl-0", "cl-1"};
    size_t klens[2] = {4, 4}, caps[2] = {20000, 20000}, lens[2];
    static uint8_t b0[20000], b1[20000];
    void *bp[2] = {b0, b1};
    int results[2];
    int r = fx_batch_get_into(c, 2, keys, klens, bp, caps, lens, results);
    CHECK(r == 0 && results[0] == 0 && results[1] == FX_ENOTFOUND && lens[0] == 20000,
          "after closed batches: %s %d %d", fx_strerror(r), results[0], results[1]);
    CHECK(fx_ping(c) == 0, "owner alive");
    fx_close(c);
    fx_close(far);
}

/* ---- history --------------------------------------------------------------- */

#define H_CLIENTS 4
#define H_KEYS 16
#define H_BATCHES 150
#define H_BATCH 6
#define H_WINDOW_NS (200ull * 1000 * 1000)

typedef struct hctx {
    history *h;
    int id;
    fx_client *c;
    unsigned long long rng;
} hctx;

static void hkey(char *buf, uint32_t k)
{
    snprintf(buf, 16, "hk-%u", k);
}

static void *hist_run(void *arg)
{
    hctx *cx = arg;
    static __thread uint8_t vals[H_BATCH][4096];
    char kb[H_BATCH][16];
    const char *keys[H_BATCH];
    size_t klens[H_BATCH], lens[H_BATCH], caps[H_BATCH];
    const void *vp[H_BATCH];
    void *bp[H_BATCH];
    uint32_t ks[H_BATCH];
    uint64_t seqs[H_BATCH];
    int results[H_BATCH];
    for (int b = 0; b < H_BATCHES; b++) {
        for (int j = 0; j < H_BATCH; j++) {
            ks[j] = (uint32_t)(test_rand(&cx->rng) % H_KEYS);
            hkey(kb[j], ks[j]);
            keys[j] = kb[j];
            klens[j] = strlen(kb[j]);
        }
        int kind = (int)(test_rand(&cx->rng) % 10);
        uint8_t hk = kind < 4 ? HIST_PUT : kind < 9 ? HIST_GET : HIST_DEL;
        for (int j = 0; j < H_BATCH; j++) {
            if (hk != HIST_GET)
                seqs[j] = hist_next_seq(cx->h, cx->id);
            if (hk == HIST_PUT) {
                lens[j] = HIST_VALUE_HEADER + (size_t)(test_rand(&cx->rng) % 3000);
                hist_value_make(vals[j], lens[j], ks[j], (uint32_t)cx->id, seqs[j]);
                vp[j] = vals[j];
            }
            bp[j] = vals[j];
            caps[j] = sizeof vals[j];
        }
        /* One key twice in a batch is two writes at once: keep puts to distinct keys. */
        if (hk == HIST_PUT)
            for (int j = 0; j < H_BATCH; j++)
                for (int i = 0; i < j; i++)
                    if (ks[i] == ks[j])
                        klens[j] = 0; /* this slot fails as FX_EINVAL, not recorded */
        uint64_t inv[H_BATCH], resp[H_BATCH];
        int r = 0;
        if (cx->id % 2 == 0) {
            /* Even clients: one batch call for the H_BATCH keys. */
            inv[0] = hist_now_ns();
            if (hk == HIST_PUT)
                r = fx_batch_put_from(cx->c, H_BATCH, keys, klens, vp, lens, NULL, results);
            else if (hk == HIST_GET)
                r = fx_batch_get_into(cx->c, H_BATCH, keys, klens, bp, caps, lens, results);
            else
                r = fx_batch_delete(cx->c, H_BATCH, keys, klens, results);
            resp[0] = hist_now_ns();
            for (int j = 1; j < H_BATCH; j++) {
                inv[j] = inv[0];
                resp[j] = resp[0];
            }
        } else {
            /* Odd clients: the single calls, one key after another, racing the
             * even clients' batches on the same keys. */
            for (int j = 0; j < H_BATCH; j++) {
                inv[j] = hist_now_ns();
                if (!klens[j])
                    results[j] = FX_EINVAL;
                else if (hk == HIST_PUT)
                    results[j] = fx_put(cx->c, keys[j], klens[j], vp[j], lens[j]);
                else if (hk == HIST_GET)
                    results[j] = fx_get_into(cx->c, keys[j], klens[j], bp[j], caps[j], &lens[j]);
                else
                    results[j] = fx_delete(cx->c, keys[j], klens[j]);
                resp[j] = hist_now_ns();
            }
        }
        for (int j = 0; j < H_BATCH; j++) {
            if (!klens[j])
                continue;
            hist_op op = {.inv_ns = inv[j], .resp_ns = resp[j], .key = ks[j], .kind = hk};
            int res = r ? r : results[j];
            if (hk == HIST_GET) {
                if (res == 0) {
                    int v = hist_value_parse(vals[j], lens[j], ks[j], &op.writer, &op.seq);
                    op.outcome = v == HIST_VALUE_OK ? HIST_OK : HIST_CORRUPT;
                    op.code = (int16_t)v;
                } else {
                    op.outcome = res == FX_ENOTFOUND ? HIST_NOTFOUND : HIST_FAILED;
                    op.code = (int16_t)res;
                }
            } else {
                op.seq = seqs[j];
                op.outcome = res == 0 ? HIST_OK
                             : res == FX_ENOTFOUND && hk == HIST_DEL ? HIST_NOTFOUND
                                                                       : HIST_FAILED;
                op.code = (int16_t)res;
            }
            hist_add(cx->h, cx->id, &op);
        }
    }
    return NULL;
}

static void test_history(void)
{
    history *h = hist_new(H_CLIENTS, (size_t)H_BATCHES * H_BATCH, H_KEYS);
    REQUIRE(h, "hist_new");
    hctx cx[H_CLIENTS];
    pthread_t th[H_CLIENTS];
    uint64_t t0 = hist_now_ns();
    for (int i = 0; i < H_CLIENTS; i++) {
        cx[i] = (hctx){.h = h, .id = i, .c = connect_owner(i % 2), .rng = 0x9E37u + (unsigned)i};
        pthread_create(&th[i], NULL, hist_run, &cx[i]);
    }
    for (int i = 0; i < H_CLIENTS; i++)
        pthread_join(th[i], NULL);
    hist_report rep;
    uint64_t bad = hist_check(h, H_WINDOW_NS, t0, 20, stdout, &rep);
    printf("history: %llu ops, %llu puts ok, %llu reads with a value, %llu absent, %llu failed\n",
           (unsigned long long)rep.ops, (unsigned long long)rep.puts_ok,
           (unsigned long long)rep.gets_value, (unsigned long long)rep.gets_absent,
           (unsigned long long)rep.gets_failed);
    CHECK(bad == 0, "history: %llu violations or corrupt reads", (unsigned long long)bad);
    CHECK(rep.gets_value > 50 && rep.puts_ok > 50 && rep.dels_ok > 0, "the history has content");
    CHECK(rep.gets_failed == 0 && rep.puts_failed == 0, "no failed calls");
    for (int i = 0; i < H_CLIENTS; i++)
        fx_close(cx[i].c);
    hist_free(h);
}

int main(int argc, char **argv)
{
    const char *const args[] = {"--placement", "local", NULL};
    REQUIRE(cluster_start_n(&tc, 2, 64 * MIB, args) == 0, "cluster start");
    static const test_scenario scenarios[] = {
        {"mixed", test_mixed},   {"iov", test_iov},       {"exists", test_exists},
        {"delete", test_delete}, {"limits", test_limits}, {"closed", test_closed},
        {"history", test_history},
    };
    int rc = test_run_scenarios(argc, argv, scenarios, sizeof scenarios / sizeof scenarios[0]);
    if (cluster_stop(&tc) != 0) {
        fprintf(stderr, "cluster did not stop clean\n");
        rc = 1;
    }
    return rc;
}
