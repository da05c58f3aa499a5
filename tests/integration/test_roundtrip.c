/*
 * test_roundtrip.c - values of every interesting size survive put and get
 * byte for byte through the C API against real master and owner processes;
 * overwrite, delete and miss behave as the contract says, and the segment is
 * empty again once everything is deleted and released.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "testlib.h"

static const size_t sizes[] = {0, 1, 511, 512, 4096, (1u << 20) + 3, 16u << 20};
#define N_SIZES (sizeof sizes / sizeof sizes[0])
#define N_KEYS 1000

static void fill(uint8_t *buf, size_t len, uint64_t seed)
{
    unsigned long long s = seed * 0x9E3779B97F4A7C15ULL + 1;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = test_rand(&s);
        memcpy(buf + i, &v, 8);
    }
    for (; i < len; i++)
        buf[i] = (uint8_t)test_rand(&s);
}

static uint64_t used_bytes(fx_client *c)
{
    fx_owner_stat st[4];
    size_t n = 0;
    if (fx_stat(c, st, 4, &n) != 0 || n < 1)
        return UINT64_MAX;
    return st[0].memory_used;
}

static void test_sizes(fx_client *c)
{
    uint8_t *buf = malloc(16u << 20);
    REQUIRE(buf, "malloc");
    char key[64];
    for (int k = 0; k < N_KEYS; k++) {
        size_t len = sizes[k % N_SIZES];
        fill(buf, len, (uint64_t)k);
        int klen = snprintf(key, sizeof key, "size-key-%d", k);
        int r = fx_put(c, key, (size_t)klen, buf, len);
        CHECK(r == 0, "put %s (%zu bytes): %s %s", key, len, fx_strerror(r), fx_last_error_detail());
    }
    int bad = 0;
    for (int k = 0; k < N_KEYS; k++) {
        size_t len = sizes[k % N_SIZES];
        fill(buf, len, (uint64_t)k);
        int klen = snprintf(key, sizeof key, "size-key-%d", k);
        fx_holder *h = NULL;
        int r = fx_get(c, key, (size_t)klen, &h);
        CHECK(r == 0, "get %s: %s", key, fx_strerror(r));
        if (r)
            continue;
        if (fx_holder_len(h) != len || (len && memcmp(fx_holder_data(h), buf, len) != 0))
            bad++;
        CHECK(fx_holder_source(h) == FX_SRC_MEMORY, "source of %s", key);
        fx_holder_release(h);
    }
    CHECK(bad == 0, "%d of %d values came back different", bad, N_KEYS);
    for (int k = 0; k < N_KEYS; k++) {
        int klen = snprintf(key, sizeof key, "size-key-%d", k);
        CHECK(fx_delete(c, key, (size_t)klen) == 0, "delete %s", key);
    }
    free(buf);
}

static void test_overwrite_keeps_old_holder(fx_client *c)
{
    const char *k = "overwrite-key";
    char v1[1000], v2[3000];
    memset(v1, 'a', sizeof v1);
    memset(v2, 'b', sizeof v2);
    REQUIRE(fx_put(c, k, strlen(k), v1, sizeof v1) == 0, "put v1");
    fx_holder *old = NULL;
    REQUIRE(fx_get(c, k, strlen(k), &old) == 0, "get v1");
    REQUIRE(fx_put(c, k, strlen(k), v2, sizeof v2) == 0, "put v2: %s", fx_last_error_detail());
    fx_holder *cur = NULL;
    REQUIRE(fx_get(c, k, strlen(k), &cur) == 0, "get v2");
    CHECK(fx_holder_len(cur) == sizeof v2 && memcmp(fx_holder_data(cur), v2, sizeof v2) == 0,
          "get after overwrite returns the new bytes");
    CHECK(fx_holder_len(old) == sizeof v1 && memcmp(fx_holder_data(old), v1, sizeof v1) == 0,
          "a holder taken before the overwrite still reads the old bytes");
    /* Fill the segment's free space with other values: the old holder's range
     * must not be handed out while it is held. */
    char fillv[4096];
    memset(fillv, 'z', sizeof fillv);
    for (int i = 0; i < 200; i++) {
        char key[32];
        int kl = snprintf(key, sizeof key, "filler-%d", i);
        fx_put(c, key, (size_t)kl, fillv, sizeof fillv);
    }
    CHECK(memcmp(fx_holder_data(old), v1, sizeof v1) == 0, "old holder unchanged by later puts");
    fx_holder_release(old);
    fx_holder_release(cur);
    REQUIRE(fx_delete(c, k, strlen(k)) == 0, "delete");
    fx_holder *h = NULL;
    int r = fx_get(c, k, strlen(k), &h);
    CHECK(r == FX_ENOTFOUND, "get after delete: %s", fx_strerror(r));
    r = fx_delete(c, k, strlen(k));
    CHECK(r == FX_ENOTFOUND, "delete of a missing key: %s", fx_strerror(r));
    r = fx_get(c, "never-put", 9, &h);
    CHECK(r == FX_ENOTFOUND, "get of a never-put key: %s", fx_strerror(r));
    CHECK(strcmp(fx_strerror(FX_ENOTFOUND), "KeyNotFound") == 0, "error name");
    for (int i = 0; i < 200; i++) {
        char key[32];
        int kl = snprintf(key, sizeof key, "filler-%d", i);
        fx_delete(c, key, (size_t)kl);
    }
}

static void test_weak_index(fx_client *c, fx_client *other)
{
    const char *k = "weak-key";
    char v[100];
    memset(v, 'w', sizeof v);
    REQUIRE(fx_put(c, k, strlen(k), v, sizeof v) == 0, "put");
    fx_holder *h1, *h2;
    REQUIRE(fx_get(c, k, strlen(k), &h1) == 0, "get 1");
    REQUIRE(fx_get(c, k, strlen(k), &h2) == 0, "get 2");
    CHECK(h1 == h2, "a second get of a held key is served by the weak index");
    fx_holder_release(h1);
    fx_holder_release(h2);
    /* Another client overwrites: this client stops reading the old version
     * within 100 ms (the invalidation push). */
    REQUIRE(fx_get(c, k, strlen(k), &h1) == 0, "get 3");
    char v2[100];
    memset(v2, 'x', sizeof v2);
    REQUIRE(fx_put(other, k, strlen(k), v2, sizeof v2) == 0, "put from the other client");
    usleep(100 * 1000);
    REQUIRE(fx_get(c, k, strlen(k), &h2) == 0, "get 4");
    CHECK(memcmp(fx_holder_data(h2), v2, sizeof v2) == 0,
          "another client's overwrite is visible within 100 ms");
    CHECK(memcmp(fx_holder_data(h1), v, sizeof v) == 0, "old holder unchanged");
    fx_holder_release(h1);
    fx_holder_release(h2);
    REQUIRE(fx_delete(c, k, strlen(k)) == 0, "delete");
}

static void test_nospace(fx_client *c, uint64_t seg)
{
    size_t big = (size_t)seg + 4096;
    char *v = calloc(1, big);
    REQUIRE(v, "calloc");
    int r = fx_put(c, "too-big", 7, v, big);
    CHECK(r == FX_ENOSPC, "put larger than the segment: %s", fx_strerror(r));
    /* Larger than the free space though smaller than the segment. */
    REQUIRE(fx_put(c, "half", 4, v, (size_t)(seg / 2 + 4096)) == 0, "put half: %s",
            fx_last_error_detail());
    /* A holder pins "half": evicting its replica cannot make room. */
    fx_holder *pin = NULL;
    REQUIRE(fx_get(c, "half", 4, &pin) == 0, "get half");
    r = fx_put(c, "half2", 5, v, (size_t)(seg / 2 + 4096));
    CHECK(r == FX_ENOSPC, "put larger than the free space: %s", fx_strerror(r));
    CHECK(strstr(fx_last_error_detail(), "free") != NULL, "NoSpace detail names free bytes: %s",
          fx_last_error_detail());
    fx_holder_release(pin);
    fx_delete(c, "half", 4); /* evicted by the attempt, or still there */
    free(v);
}

int main(void)
{
    uint64_t seg = 2560ull << 20;
    test_cluster tc;
    /* The whole segment is cache budget: test_sizes stores ~2.4 GiB in it. */
    const char *const args[] = {"--cache-budget", "100", NULL};
    REQUIRE(cluster_start_args(&tc, seg, args) == 0, "cluster start");
    int err;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect: %s %s", fx_strerror(err), fx_last_error_detail());
    fx_client *other = fx_connect(tc.socket, &err);
    REQUIRE(other, "connect 2");
    test_sizes(c);
    test_overwrite_keeps_old_holder(c);
    test_weak_index(c, other);
    test_nospace(c, seg);
    /* Everything deleted and released: the segment is empty (acks are
     * batched, so allow them a moment to arrive). */
    uint64_t used = UINT64_MAX;
    for (int i = 0; i < 200 && used != 0; i++) {
        used = used_bytes(c);
        if (used)
            usleep(10000);
    }
    CHECK(used == 0, "segment used after deleting everything: %llu", (unsigned long long)used);
    fx_close(other);
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
    return test_finish();
}
