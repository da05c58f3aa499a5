/*
 * test_ssd_cluster.c - the SSD tier in a real cluster (master + owners with
 * large_file_paths), end to end.
 *
 *   1. One owner, 64 MiB of DRAM and 1 GiB of SSD: 300 MiB of 1-16 MiB values
 *      put (the master evicts memory replicas that have an SSD copy to make
 *      room, waiting for persists when it must), then every value read back
 *      byte-for-byte: some come from SSD (the holder says so), and the next
 *      get of a refilled key is a memory hit (the refill was promoted).
 *   2. Two owners: a key whose only copy is on the other owner's SSD is
 *      refilled remotely (the SSD owner reads it into staging and pushes it
 *      into the requester's target) and verified.
 *   3. Every owner's stat shows SSD capacity and used bytes, and hits by
 *      source.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "raw_member.h"
#include "testlib.h"
#include "values.h"

#define MIB (1ull << 20)

static unsigned long long value_seed(const char *key)
{
    return XXH3_64bits(key, strlen(key)) | 1;
}

static bool same(fx_holder *h, const char *key, size_t len)
{
    return value_holder_is(h, value_seed(key), len);
}

static size_t value_len(int i)
{
    /* 1..16 MiB, odd sizes too */
    return (size_t)(1 + (i * 7) % 16) * MIB - (i % 3) * 1000;
}

static void one_owner_refill(void)
{
    test_cluster tc;
    REQUIRE(cluster_start_ssd(&tc, 1, 64 * MIB, 1024 * MIB, NULL) == 0, "cluster start");
    int err = 0;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect");
    char key[64];
    uint64_t total = 0;
    int n = 0;
    while (total < 300 * MIB) {
        snprintf(key, sizeof key, "ssd-%d", n);
        size_t len = value_len(n);
        uint8_t *v = value_make(value_seed(key), len);
        int r = fx_put(c, key, strlen(key), v, len);
        free(v);
        REQUIRE(r == 0, "put %s (%zu bytes) into 64 MiB of DRAM: %s (%s)", key, len,
                fx_strerror(r), fx_last_error_detail());
        total += len;
        n++;
    }
    printf("put %d values, %llu MiB\n", n, (unsigned long long)(total / MIB));
    int from_ssd = 0, bad = 0, promoted = 0;
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "ssd-%d", i);
        size_t len = value_len(i);
        fx_holder *h = NULL;
        int r = fx_get(c, key, strlen(key), &h);
        if (r != 0 || !same(h, key, len)) {
            bad++;
            CHECK(false, "get %s: %s (%s)", key, fx_strerror(r), fx_last_error_detail());
            if (h)
                fx_holder_release(h);
            continue;
        }
        bool ssd = fx_holder_source(h) == FX_SRC_SSD;
        fx_holder_release(h);
        if (!ssd)
            continue;
        from_ssd++;
        /* The refill became the memory replica: the next get is a memory hit. */
        r = fx_get(c, key, strlen(key), &h);
        if (r == 0) {
            if (fx_holder_source(h) == FX_SRC_MEMORY && same(h, key, len))
                promoted++;
            fx_holder_release(h);
        }
    }
    printf("read back %d values: %d from SSD, %d of those a memory hit next time, %d bad\n", n,
           from_ssd, promoted, bad);
    CHECK(bad == 0, "every value read back byte-for-byte (%d bad)", bad);
    CHECK(from_ssd > 0, "some values came from SSD (%d)", from_ssd);
    CHECK(promoted == from_ssd, "each refilled key was a memory hit next (%d of %d)", promoted,
          from_ssd);
    fx_owner_stat st[2];
    size_t ns = 0;
    REQUIRE(fx_stat(c, st, 2, &ns) == 0 && ns == 1, "stat");
    CHECK(st[0].ssd_capacity > 0 && st[0].ssd_used > 0, "stat shows SSD capacity %llu, used %llu",
          (unsigned long long)st[0].ssd_capacity, (unsigned long long)st[0].ssd_used);
    CHECK(st[0].hits_ssd > 0 && st[0].hits_memory > 0, "hits by source: memory %llu, ssd %llu",
          (unsigned long long)st[0].hits_memory, (unsigned long long)st[0].hits_ssd);
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
}

/* The route of key as seen by a member: bitmask of nodes with memory / ssd
 * (both 0 when RouteInfo fails). */
static void route_of(raw_member *rm, const char *key, uint64_t *mem, uint64_t *ssd)
{
    raw_route rt;
    raw_member_route(rm, key, &rt);
    *mem = rt.mem;
    *ssd = rt.ssd;
}

static void two_owners_remote_refill(void)
{
    test_cluster tc;
    const char *args[] = {"--placement", "local", "--heartbeat-timeout", "600s", NULL};
    REQUIRE(cluster_start_ssd(&tc, 2, 64 * MIB, 512 * MIB, args) == 0, "cluster start");
    int err = 0;
    fx_client *c0 = fx_connect(tc.sockets[0], &err);
    fx_client *c1 = fx_connect(tc.sockets[1], &err);
    REQUIRE(c0 && c1, "connect");
    raw_member obs;
    REQUIRE(raw_member_register(&obs, tc.master_addr, "test", "observer", 1) == 0, "observer");
    /* Put the probe key on owner0, then push it out of owner0's DRAM with
     * more values, so its only copy is owner0's SSD. */
    const char *probe = "remote-probe";
    size_t plen = 9 * MIB + 123;
    uint8_t *v = value_make(value_seed(probe), plen);
    REQUIRE(fx_put(c0, probe, strlen(probe), v, plen) == 0, "put probe");
    free(v);
    char key[64];
    uint64_t mem = 0, ssd = 0;
    for (int i = 0; i < 40; i++) {
        route_of(&obs, probe, &mem, &ssd);
        if (!mem && ssd)
            break;
        snprintf(key, sizeof key, "filler-%d", i);
        v = value_make(value_seed(key), 8 * MIB);
        REQUIRE(fx_put(c0, key, strlen(key), v, 8 * MIB) == 0, "put %s: %s", key,
                fx_last_error_detail());
        free(v);
    }
    route_of(&obs, probe, &mem, &ssd);
    REQUIRE(!mem && ssd != 0, "the probe lives only on an SSD now (mem %llx ssd %llx)",
            (unsigned long long)mem, (unsigned long long)ssd);
    fx_holder *h = NULL;
    int r = fx_get(c1, probe, strlen(probe), &h);
    CHECK(r == 0 && same(h, probe, plen), "owner1 refills it from owner0's SSD (%s: %s)",
          fx_strerror(r), fx_last_error_detail());
    CHECK(r == 0 && fx_holder_source(h) == FX_SRC_SSD, "and reports source=ssd");
    if (h)
        fx_holder_release(h);
    uint64_t mem2 = 0, ssd2 = 0;
    route_of(&obs, probe, &mem2, &ssd2);
    CHECK(mem2 != 0, "the remote refill was promoted to a memory replica on owner1 (%llx)",
          (unsigned long long)mem2);
    r = fx_get(c1, probe, strlen(probe), &h);
    CHECK(r == 0 && same(h, probe, plen) && fx_holder_source(h) == FX_SRC_MEMORY,
          "the next get on owner1 is a memory hit");
    if (h)
        fx_holder_release(h);
    raw_member_close(&obs);
    fx_close(c0);
    fx_close(c1);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
}

int main(void)
{
    one_owner_refill();
    two_owners_remote_refill();
    return test_finish();
}
