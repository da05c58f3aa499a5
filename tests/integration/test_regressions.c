/*
 * test_regressions.c - fixed bugs, each in a function named after what broke.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "testlib.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The owner crashed on SIGTERM when its get cache held 256 or more entries:
 * the last holder acks were flushed to an already freed master link. */
static void owner_shutdown_with_full_get_cache(void)
{
    test_cluster tc;
    REQUIRE(cluster_start(&tc, 64ull << 20) == 0, "cluster start");
    int err;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect");
    char key[32], val[64] = "value";
    for (int i = 0; i < 300; i++) {
        int kl = snprintf(key, sizeof key, "cached-%d", i);
        CHECK(fx_put(c, key, (size_t)kl, val, sizeof val) == 0, "put");
        fx_holder *h;
        if (fx_get(c, key, (size_t)kl, &h) == 0)
            fx_holder_release(h);
    }
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "owner with 300 cached entries stops cleanly on SIGTERM");
}

/* Client timeouts were never enforced: the sockets were blocking, so a stuck
 * owner hung every call forever. And a connect that got no hello back was
 * reported as ConnectionError, not Timeout. */
static void client_call_times_out_when_owner_is_stuck(void)
{
    test_cluster tc;
    REQUIRE(cluster_start(&tc, 16ull << 20) == 0, "cluster start");
    setenv("FLUXON_TIMEOUT_MS", "500", 1);
    int err;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect");
    CHECK(fx_ping(c) == 0, "ping while the owner runs");
    kill(tc.owner_pid, SIGSTOP);
    double t0 = now_s();
    int r = fx_ping(c);
    double dt = now_s() - t0;
    CHECK(r == FX_ETIMEDOUT, "ping of a stopped owner: %s", fx_strerror(r));
    CHECK(dt < 3.0, "the call gave up after %.2f s (timeout 0.5 s)", dt);
    fx_holder *h;
    t0 = now_s();
    r = fx_get(c, "k", 1, &h);
    CHECK(r == FX_ETIMEDOUT && now_s() - t0 < 3.0, "get of a stopped owner times out: %s",
          fx_strerror(r));
    /* Connecting to a socket that accepts (the kernel's backlog) but never
     * answers was reported as a connection error. */
    t0 = now_s();
    err = 0;
    fx_client *late = fx_connect(tc.socket, &err);
    CHECK(!late && err == FX_ETIMEDOUT && now_s() - t0 < 3.0,
          "connect to a stopped owner times out: %s (%s)", fx_strerror(err),
          fx_last_error_detail());
    kill(tc.owner_pid, SIGCONT);
    CHECK(fx_ping(c) == 0, "a fresh connection works once the owner runs again: %s",
          fx_last_error_detail());
    unsetenv("FLUXON_TIMEOUT_MS");
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
}

/* Starts two owners of 16 MiB under a master with --heartbeat-interval
 * interval and connects a client to owner 0. */
static fx_client *start_two_owners(test_cluster *tc, const char *interval)
{
    const char *const args[] = {"--heartbeat-interval", interval, NULL};
    REQUIRE(cluster_start_n(tc, 2, 16ull << 20, args) == 0, "cluster start");
    int err;
    fx_client *c = fx_connect(tc->sockets[0], &err);
    REQUIRE(c, "connect: %s", fx_strerror(err));
    return c;
}

/* A master stopped for longer than the heartbeat timeout tombed every owner
 * when it resumed (and they exited): its sweep ran before it read the
 * heartbeats waiting in its sockets. */
static void master_pause_does_not_tomb_the_owners(void)
{
    test_cluster tc;
    fx_client *c = start_two_owners(&tc, "100ms"); /* timeout 300 ms */
    CHECK(fx_put(c, "before", 6, "value", 5) == 0, "put before the pause");
    kill(tc.master_pid, SIGSTOP);
    usleep(1500 * 1000); /* five heartbeat timeouts */
    kill(tc.master_pid, SIGCONT);
    usleep(500 * 1000); /* a few sweeps after the resume */
    for (int i = 0; i < 2; i++) /* (kill(pid, 0) would also succeed on a zombie) */
        CHECK(tc.owner_pids[i] > 0 && waitpid(tc.owner_pids[i], NULL, WNOHANG) == 0,
              "owner %d still runs after the master's pause", i);
    fx_holder *h = NULL;
    int r = fx_get(c, "before", 6, &h);
    CHECK(r == 0 && h && fx_holder_len(h) == 5, "the value put before the pause is there: %s",
          fx_strerror(r));
    if (h)
        fx_holder_release(h);
    CHECK(fx_put(c, "after", 5, "value", 5) == 0, "a put after the pause works: %s",
          fx_last_error_detail());
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
}

/* With the stall check, a heartbeat timeout of 200 ms or less made every
 * sweep look like a stall (the sweep's own 100 ms period counted as lateness),
 * so no member ever expired. */
static void short_heartbeat_timeout_still_drops_a_stopped_owner(void)
{
    test_cluster tc;
    fx_client *c = start_two_owners(&tc, "50ms"); /* timeout 150 ms */
    kill(tc.owner_pids[1], SIGSTOP);
    size_t n = 2;
    fx_owner_stat st[4];
    for (int i = 0; i < 100 && n != 1; i++) {
        usleep(50 * 1000);
        if (fx_stat(c, st, 4, &n) != 0)
            n = 2;
    }
    CHECK(n == 1, "a stopped owner is dropped within 5 s with a 150 ms timeout (%zu owners)", n);
    CHECK(cluster_kill_owner(&tc, 1) == 0, "kill the stopped owner");
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
}

int main(void)
{
    owner_shutdown_with_full_get_cache();
    client_call_times_out_when_owner_is_stuck();
    master_pause_does_not_tomb_the_owners();
    short_heartbeat_timeout_still_drops_a_stopped_owner();
    return test_finish();
}
