/*
 * test_cluster.c - three owners, two externals on each: the cluster paths of
 * the spec end to end.
 *
 *   1. Puts from every external (random placement spreads them over the
 *      owners), gets of every key from every external, byte-for-byte.
 *   2. Durable promotion: a get from an owner without a replica pulls it and
 *      the route then lists that owner too (RouteInfo, asked as a member).
 *   3. Durable slots: while two gets of a key hold both durable slots (two
 *      test-side members that ran GetStart and never GetDone), a third get
 *      from a real owner is Temporary: it returns the right bytes and leaves
 *      the route's replica set unchanged; once the slots are free, a get
 *      promotes again.
 *   4. Invalidation contract: after an overwriting put or a delete returns,
 *      the same client never reads the old version, and 100 ms later no
 *      other client does, even those still holding a holder of it.
 *   5. Accounting: with every holder released, each owner's used bytes are
 *      exactly what the routes' replicas hold.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "accounting.h"
#include "cluster.h"
#include "fluxon/fluxon.h"
#include "raw_member.h"
#include "testlib.h"
#include "values.h"

#define OWNERS 3
#define PER_OWNER 2
#define CLIENTS (OWNERS * PER_OWNER)
#define KEYS_PER_CLIENT 40

static test_cluster tc;
static fx_client *cl[CLIENTS]; /* client i is on owner i / PER_OWNER */

static const size_t sizes[] = {1, 511, 512, 4096, 65536 + 7, (1u << 20) + 3, 3u << 20};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* A value that names its key and version: bytes derived from both (and its
 * length), so a read of the wrong key or version cannot verify. */
static unsigned long long value_seed(const char *key, uint32_t version, size_t len)
{
    return XXH3_64bits(key, strlen(key)) ^ ((unsigned long long)version << 32) ^ len;
}

static bool holder_is(fx_holder *h, const char *key, uint32_t version, size_t len)
{
    return value_holder_is(h, value_seed(key, version, len), len);
}

static int put_value(fx_client *c, const char *key, uint32_t version, size_t len)
{
    return value_put(c, key, value_seed(key, version, len), len);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- RouteInfo ------------------------------------------------------------ */

static raw_member observer; /* a member with no room: never a placement target */

/* The nodes holding a memory replica of key (bitmask of node ids); *slots
 * gets the durable slots in use, and is left alone when RouteInfo fails. */
static uint64_t replica_nodes(const char *key, uint32_t *slots)
{
    raw_route rt;
    int r = raw_member_route(&observer, key, &rt);
    if (r != 0) {
        fprintf(stderr, "RouteInfo %s: %s\n", key, fx_strerror(r));
        return 0;
    }
    if (slots)
        *slots = rt.durable_slots;
    return rt.mem;
}

static int popcount64(uint64_t x)
{
    return __builtin_popcountll(x);
}

/* node id of each owner index, learned from fx_stat names ("owner<i>"). */
static uint32_t node_of[OWNERS];

static void learn_node_ids(void)
{
    REQUIRE(cluster_node_ids(cl[0], node_of, OWNERS) == 0, "every owner has a node id");
}

static int owner_of_node(uint32_t node)
{
    for (int o = 0; o < OWNERS; o++)
        if (node_of[o] == node)
            return o;
    return -1;
}

/* ---- 1. puts and gets from every external ------------------------------- */

static void all_puts_all_gets(void)
{
    char key[64];
    for (int c = 0; c < CLIENTS; c++)
        for (int k = 0; k < KEYS_PER_CLIENT; k++) {
            snprintf(key, sizeof key, "c%d-k%d", c, k);
            int r = put_value(cl[c], key, 1, sizes[k % NSIZES]);
            CHECK(r == 0, "put %s from client %d: %s (%s)", key, c, fx_strerror(r),
                  fx_last_error_detail());
        }
    uint64_t owners_used = 0;
    long bad = 0, ok = 0;
    for (int g = 0; g < CLIENTS; g++)
        for (int c = 0; c < CLIENTS; c++)
            for (int k = 0; k < KEYS_PER_CLIENT; k++) {
                snprintf(key, sizeof key, "c%d-k%d", c, k);
                fx_holder *h = NULL;
                int r = fx_get(cl[g], key, strlen(key), &h);
                if (r != 0) {
                    CHECK(false, "get %s from client %d: %s (%s)", key, g, fx_strerror(r),
                          fx_last_error_detail());
                    bad++;
                    continue;
                }
                if (holder_is(h, key, 1, sizes[k % NSIZES]))
                    ok++;
                else {
                    CHECK(false, "get %s from client %d returned wrong bytes", key, g);
                    bad++;
                }
                fx_holder_release(h);
            }
    CHECK(bad == 0, "%ld of %ld cross-owner gets failed or were corrupt", bad, bad + ok);
    for (int c = 0; c < CLIENTS; c++)
        for (int k = 0; k < KEYS_PER_CLIENT; k++) {
            snprintf(key, sizeof key, "c%d-k%d", c, k);
            owners_used |= replica_nodes(key, NULL);
        }
    CHECK(popcount64(owners_used) == OWNERS, "replicas live on all %d owners (mask %llx)", OWNERS,
          (unsigned long long)owners_used);
}

/* ---- 2. durable promotion -------------------------------------------------- */

/* Puts key and returns the owner index holding its only replica. */
static int put_single(const char *key, size_t len, uint32_t version)
{
    REQUIRE(put_value(cl[0], key, version, len) == 0, "put %s: %s", key, fx_last_error_detail());
    uint64_t mask = replica_nodes(key, NULL);
    REQUIRE(popcount64(mask) == 1, "a fresh put has one replica (mask %llx)",
            (unsigned long long)mask);
    return owner_of_node((uint32_t)__builtin_ctzll(mask));
}

static void durable_promotion(void)
{
    const char *key = "promote-me";
    size_t len = (2u << 20) + 5;
    int home = put_single(key, len, 7);
    REQUIRE(home >= 0, "replica on a known owner");
    int other = (home + 1) % OWNERS;
    fx_holder *h = NULL;
    int r = fx_get(cl[other * PER_OWNER], key, strlen(key), &h);
    CHECK(r == 0 && holder_is(h, key, 7, len), "remote get returns the value (%s)",
          fx_last_error_detail());
    if (h)
        fx_holder_release(h);
    uint64_t mask = replica_nodes(key, NULL);
    CHECK(popcount64(mask) == 2 && (mask & (1ull << node_of[home])) &&
              (mask & (1ull << node_of[other])),
          "after a get from owner%d the route lists owner%d and owner%d (mask %llx)", other, home,
          other, (unsigned long long)mask);
    /* The second external on that owner now reads the local replica. */
    r = fx_get(cl[other * PER_OWNER + 1], key, strlen(key), &h);
    CHECK(r == 0 && holder_is(h, key, 7, len), "second get on the promoted owner");
    if (h)
        fx_holder_release(h);
    CHECK(replica_nodes(key, NULL) == mask, "a local get does not change the route");
}

/* ---- 3. durable slots -------------------------------------------------------- */

static void durable_slots(void)
{
    const char *key = "slots";
    size_t len = 1u << 20;
    int home = put_single(key, len, 3);
    REQUIRE(home >= 0, "replica on a known owner");
    int third = (home + 1) % OWNERS;
    /* Two members with room run GetStart and never finish: both slots taken. */
    raw_member holders[2];
    uint64_t get_ids[2];
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "slot-holder%d", i);
        REQUIRE(raw_member_register(&holders[i], tc.master_addr, "test", name, 64ull << 20) == 0,
                "register %s", name);
        Fx__GetStartReq gs = FX__GET_START_REQ__INIT;
        gs.key = (ProtobufCBinaryData){.len = strlen(key), .data = (uint8_t *)key};
        ProtobufCMessage *m = raw_member_call(&holders[i], MSG_GET_START, &gs.base, 5000);
        REQUIRE(m && msg_status(m) == 0, "GetStart from %s: %s", name, m ? msg_detail(m) : "none");
        Fx__GetStartResp *gr = (Fx__GetStartResp *)m;
        CHECK(gr->mode == FX__GET_MODE__DURABLE_REPLICA, "get %d takes a durable slot (mode %d)", i,
              gr->mode);
        get_ids[i] = gr->get_id;
        msg_free(m);
    }
    uint32_t slots = 0;
    uint64_t before = replica_nodes(key, &slots);
    CHECK(slots == 2, "both durable slots in use (%u)", slots);
    fx_holder *h = NULL;
    int r = fx_get(cl[third * PER_OWNER], key, strlen(key), &h);
    CHECK(r == 0 && holder_is(h, key, 3, len), "a third concurrent get still reads the value (%s)",
          fx_last_error_detail());
    uint64_t after = replica_nodes(key, &slots);
    CHECK(after == before, "the Temporary get left the route unchanged (%llx -> %llx)",
          (unsigned long long)before, (unsigned long long)after);
    CHECK(!(after & (1ull << node_of[third])), "owner%d did not become a replica", third);
    if (h)
        fx_holder_release(h);
    /* Release the slots (GetRevoke) and the members; a get promotes again. */
    for (int i = 0; i < 2; i++) {
        Fx__GetRevokeReq rv = FX__GET_REVOKE_REQ__INIT;
        rv.get_id = get_ids[i];
        ProtobufCMessage *m = raw_member_call(&holders[i], MSG_GET_REVOKE, &rv.base, 5000);
        CHECK(m && msg_status(m) == 0, "GetRevoke");
        msg_free(m);
        raw_member_close(&holders[i]);
    }
    replica_nodes(key, &slots);
    CHECK(slots == 0, "slots free after GetRevoke (%u)", slots);
    /* The temporary was not cached by the owner: this get goes to the master
     * again, now durable. */
    r = fx_get(cl[third * PER_OWNER + 1], key, strlen(key), &h);
    CHECK(r == 0 && holder_is(h, key, 3, len), "get after the slots freed");
    if (h)
        fx_holder_release(h);
    after = replica_nodes(key, NULL);
    CHECK(after & (1ull << node_of[third]), "with a free slot the get promoted owner%d (%llx)",
          third, (unsigned long long)after);
}

/* ---- 4. invalidation contract -------------------------------------------- */

/* Every client reads key and keeps the holder (weak index stays warm). */
static void read_all_and_hold(const char *key, uint32_t version, size_t len, fx_holder **held)
{
    for (int c = 0; c < CLIENTS; c++) {
        held[c] = NULL;
        int r = fx_get(cl[c], key, strlen(key), &held[c]);
        CHECK(r == 0 && holder_is(held[c], key, version, len), "client %d reads v%u of %s", c,
              version, key);
    }
}

static void release_all(fx_holder **held)
{
    for (int c = 0; c < CLIENTS; c++)
        if (held[c])
            fx_holder_release(held[c]);
}

static void invalidation(void)
{
    const char *key = "inval";
    size_t len = 100000;
    fx_holder *held[CLIENTS];
    REQUIRE(put_value(cl[0], key, 1, len) == 0, "put v1");
    read_all_and_hold(key, 1, len, held);
    /* Overwrite from client 3 (owner 1). */
    int writer = 3;
    REQUIRE(put_value(cl[writer], key, 2, len) == 0, "overwrite with v2");
    double t0 = now_ms();
    fx_holder *h = NULL;
    int r = fx_get(cl[writer], key, strlen(key), &h);
    CHECK(r == 0 && holder_is(h, key, 2, len), "the writer reads v2 at once");
    if (h)
        fx_holder_release(h);
    CHECK(holder_is(held[0], key, 1, len), "a holder of v1 still reads v1 after the overwrite");
    while (now_ms() - t0 < 100)
        usleep(2000);
    for (int c = 0; c < CLIENTS; c++) {
        r = fx_get(cl[c], key, strlen(key), &h);
        CHECK(r == 0 && holder_is(h, key, 2, len), "client %d reads v2 100 ms after the overwrite",
              c);
        if (h)
            fx_holder_release(h);
    }
    release_all(held);

    /* Delete from client 5 (owner 2) while everyone holds v2. */
    read_all_and_hold(key, 2, len, held);
    int deleter = 5;
    REQUIRE(fx_delete(cl[deleter], key, strlen(key)) == 0, "delete");
    t0 = now_ms();
    CHECK(fx_get(cl[deleter], key, strlen(key), &h) == FX_ENOTFOUND, "the deleter misses at once");
    while (now_ms() - t0 < 100)
        usleep(2000);
    for (int c = 0; c < CLIENTS; c++) {
        r = fx_get(cl[c], key, strlen(key), &h);
        CHECK(r == FX_ENOTFOUND, "client %d misses 100 ms after the delete (%s)", c,
              fx_strerror(r));
        if (r == 0)
            fx_holder_release(h);
    }
    CHECK(holder_is(held[1], key, 2, len), "holders taken before the delete still read v2");
    release_all(held);
}

/* ---- 5. accounting --------------------------------------------------------- */

/* Once quiet, every owner's used bytes are exactly what its replicas hold. */
static void accounting(void)
{
    accounting_check(cl[0], 2000, "accounting");
}

int main(void)
{
    /* The test-side members answer no heartbeats while the test works. */
    const char *args[] = {"--heartbeat-timeout", "600s", NULL};
    REQUIRE(cluster_start_n(&tc, OWNERS, 256ull << 20, args) == 0, "cluster start");
    for (int c = 0; c < CLIENTS; c++) {
        int err = 0;
        cl[c] = fx_connect(tc.sockets[c / PER_OWNER], &err);
        REQUIRE(cl[c], "connect client %d: %s", c, fx_strerror(err));
    }
    learn_node_ids();
    REQUIRE(raw_member_register(&observer, tc.master_addr, "test", "observer", 1) == 0,
            "observer registers");

    all_puts_all_gets();
    durable_promotion();
    durable_slots();
    invalidation();
    accounting();

    raw_member_close(&observer);
    for (int c = 0; c < CLIENTS; c++)
        fx_close(cl[c]);
    if (cluster_stop(&tc) != 0)
        CHECK(false, "cluster stopped cleanly");
    return test_finish();
}
