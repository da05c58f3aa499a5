/*
 * test_ipv6_cluster.c - a cluster addressed by name and over IPv6: the master
 * listens on "[::]:0" (both families) with --advertise "[::1]:0", so its
 * port file says [::1]:PORT; owner0 dials that and serves its data plane on
 * "[::1]:0"; owner1 dials the master as `master: localhost:PORT` and serves
 * on "[::]:0" with `data_advertise: localhost:0` (the bound port, reached by
 * name).
 *
 *   1. The port file holds [::1] with the bound port; the member table
 *      announces owner0 as "[::1]:PORT" and owner1 as "localhost:PORT".
 *   2. With local placement a put through one owner stays there, so a get
 *      through the other is a remote pull: owner1 pulls from owner0 over
 *      [::1], owner0 pulls from owner1 by name (an asynchronous lookup);
 *      every value arrives byte for byte.
 *
 * Exits 77 when the machine cannot bind the IPv6 loopback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "raw_member.h"
#include "testlib.h"
#include "values.h"

#define OWNERS 2

static test_cluster tc;
static fx_client *cl[OWNERS];
static uint32_t node_of[OWNERS];

static void learn_node_ids(void)
{
    REQUIRE(cluster_node_ids(cl[0], node_of, OWNERS) == 0, "every owner has a node id");
}

static void announced_addresses(void)
{
    raw_member observer;
    REQUIRE(raw_member_register_secret(&observer, tc.master_addr, "test", "observer", 1, tc.secret_file) == 0,
            "an observer registers at %s", tc.master_addr);
    const char *a0 = raw_member_data_addr(&observer, node_of[0]);
    const char *a1 = raw_member_data_addr(&observer, node_of[1]);
    CHECK(strncmp(a0, "[::1]:", 6) == 0 && atoi(a0 + 6) > 0,
          "owner0 (data_listen [::1]:0) is announced as [::1]:PORT: '%s'", a0);
    CHECK(strncmp(a1, "localhost:", 10) == 0 && atoi(a1 + 10) > 0,
          "owner1 (data_advertise localhost:0) is announced as localhost:PORT: '%s'", a1);
    raw_member_close(&observer);
}

/* Puts through owner `from`, gets through the other owner, byte for byte. */
static void remote_pulls(int from, const char *prefix)
{
    static const size_t sizes[] = {1, 4096, (1u << 20) + 3, 3u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s-%zu", prefix, i);
        unsigned long long seed = 0x1234567ull * (i + 1) + (unsigned)from;
        REQUIRE(value_put(cl[from], key, seed, sizes[i]) == 0, "put %s through owner%d", key,
                from);
        fx_holder *h = NULL;
        int r = fx_get(cl[1 - from], key, strlen(key), &h);
        CHECK(r == 0, "get %s through owner%d: %s", key, 1 - from, fx_strerror(r));
        if (r == 0) {
            CHECK(value_holder_is(h, seed, sizes[i]), "%s (%zu bytes) arrived byte for byte",
                  key, sizes[i]);
            fx_holder_release(h);
        }
    }
}

int main(void)
{
    /* Wildcard listeners reach beyond loopback: only with the cluster secret. */
    setenv("FX_CLUSTER_SECRET", "1", 1);
    if (!test_ipv6_loopback()) {
        printf("skipped: this machine cannot bind [::1]\n");
        return 77;
    }
    cluster_addrs addrs = {.master_listen = "[::]:0",
                           .master_host = {NULL, "localhost"},
                           .data_listen = {"[::1]:0", "[::]:0"},
                           .data_advertise = {NULL, "localhost:0"}};
    const char *args[] = {"--advertise", "[::1]:0", "--placement", "local", NULL};
    REQUIRE(cluster_start_addrs(&tc, OWNERS, 64ull << 20, &addrs, args) == 0, "cluster start");
    CHECK(strncmp(tc.master_addr, "[::1]:", 6) == 0 && atoi(tc.master_addr + 6) > 0,
          "the port file holds --advertise [::1] with the bound port: '%s'", tc.master_addr);
    CHECK(strncmp(tc.owner_master[1], "localhost:", 10) == 0, "owner1 dials '%s'",
          tc.owner_master[1]);
    for (int o = 0; o < OWNERS; o++) {
        int err = 0;
        cl[o] = fx_connect(tc.sockets[o], &err);
        REQUIRE(cl[o], "connect to owner%d: %s", o, fx_strerror(err));
    }
    learn_node_ids();
    announced_addresses();
    remote_pulls(0, "v6-from-owner0");
    remote_pulls(1, "name-from-owner1");
    for (int o = 0; o < OWNERS; o++)
        fx_close(cl[o]);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
    return test_finish();
}
