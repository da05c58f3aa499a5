/*
 * test_cluster_faults.c - owners and externals that die in the middle.
 *
 *   1. kill -9 of one owner (owner0) during a mixed put / get load from the
 *      other owners' externals (placement local, so each owner's keys live
 *      there; gets cross owners and pull):
 *        - 0 corrupt values, ever;
 *        - every operation on a key with a live replica succeeds, during and
 *          after the kill;
 *        - keys whose only replica was on owner0 give FX_ENOTFOUND within 3
 *          heartbeat intervals of the kill;
 *        - once the load stops and holders are released, each live owner's
 *          used bytes are exactly what the routes' replicas hold;
 *        - owner0's own external gets a clear error, not a hang; owner0
 *          restarted is a new incarnation that serves none of the old keys.
 *   2. A frozen owner (SIGSTOP: its connections stay open, it just stops
 *      answering) misses its heartbeats and is tombed: its keys miss within
 *      about 3 heartbeat intervals, and a get that was pulling from it fails
 *      over instead of waiting for the transfer timeout.
 *   3. kill -9 of an external between ExternalPutStart and
 *      ExternalPutTransferEnd of a put placed on another owner: the staging
 *      and target ranges are freed and the key can be put again.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "accounting.h"
#include "cluster.h"
#include "fluxon/fluxon.h"
#include "net/msg.h"
#include "raw_external.h"
#include "testlib.h"

#define HEARTBEAT_MS 200
#define KEYS 40
#define LOADERS 4
#define MAGIC 0xFA17FA17FA17FA17ULL

static test_cluster tc;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- self-verifying values --------------------------------------------------- */

typedef struct value_hdr {
    uint64_t magic;
    uint64_t key_hash;
    uint64_t version;
    uint64_t len;
    uint64_t checksum; /* of the bytes after the header */
} value_hdr;

static size_t make_value(uint8_t *buf, const char *key, uint64_t version, size_t len)
{
    if (len < sizeof(value_hdr))
        len = sizeof(value_hdr);
    unsigned long long s = version * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = sizeof(value_hdr); i < len; i++)
        buf[i] = (uint8_t)(test_rand(&s) >> 56);
    value_hdr h = {MAGIC, XXH3_64bits(key, strlen(key)), version, len,
                   XXH3_64bits(buf + sizeof h, len - sizeof h)};
    memcpy(buf, &h, sizeof h);
    return len;
}

static bool value_ok(const void *data, size_t len, const char *key)
{
    value_hdr h;
    if (len < sizeof h)
        return false;
    memcpy(&h, data, sizeof h);
    return h.magic == MAGIC && h.key_hash == XXH3_64bits(key, strlen(key)) && h.len == len &&
           h.checksum == XXH3_64bits((const uint8_t *)data + sizeof h, len - sizeof h);
}

/* ---- part 1: an owner dies under load ------------------------------------------ */

static fx_client *live_client[4]; /* two on owner1, two on owner2 */
static atomic_bool stop_load;
static atomic_long corrupt, live_ok, live_fail, dead_reads, dead_ok;
static atomic_uint_fast64_t next_version = 100;
static char last_live_error[256];

static size_t value_len(int k)
{
    return k % 4 == 0 ? (1u << 20) + 17 : 4096u * (unsigned)(k % 7 + 1);
}

static void *loader(void *arg)
{
    int id = (int)(intptr_t)arg;
    fx_client *c = live_client[id];
    int home = 1 + id / 2; /* the owner this client's puts land on */
    uint8_t *buf = malloc(2u << 20);
    unsigned long long rng = 0x1234567ULL * (unsigned)(id + 1);
    char key[64];
    while (!atomic_load(&stop_load)) {
        unsigned op = (unsigned)(test_rand(&rng) % 10);
        int k = (int)(test_rand(&rng) % KEYS);
        if (op < 3) { /* overwrite a key of this client's own owner */
            snprintf(key, sizeof key, "live%d-%d", home, k);
            size_t len = make_value(buf, key, atomic_fetch_add(&next_version, 1), value_len(k));
            int r = fx_put(c, key, strlen(key), buf, len);
            if (r == 0)
                atomic_fetch_add(&live_ok, 1);
            else {
                atomic_fetch_add(&live_fail, 1);
                snprintf(last_live_error, sizeof last_live_error, "put %s: %s (%s)", key,
                         fx_strerror(r), fx_last_error_detail());
            }
            continue;
        }
        bool dead = op == 9;
        if (dead)
            snprintf(key, sizeof key, "dead-read-%d", k);
        else
            snprintf(key, sizeof key, "live%d-%d", 1 + (int)(test_rand(&rng) % 2), k);
        fx_holder *h = NULL;
        int r = fx_get(c, key, strlen(key), &h);
        if (r == 0) {
            if (!value_ok(fx_holder_data(h), fx_holder_len(h), key))
                atomic_fetch_add(&corrupt, 1);
            else if (dead)
                atomic_fetch_add(&dead_ok, 1);
            else
                atomic_fetch_add(&live_ok, 1);
            fx_holder_release(h);
        } else if (dead) {
            atomic_fetch_add(&dead_reads, 1); /* a miss or an error: both fine */
        } else {
            atomic_fetch_add(&live_fail, 1);
            snprintf(last_live_error, sizeof last_live_error, "get %s: %s (%s)", key,
                     fx_strerror(r), fx_last_error_detail());
        }
    }
    free(buf);
    return NULL;
}

static void put_or_die(fx_client *c, const char *key, size_t len, uint8_t *buf)
{
    len = make_value(buf, key, 1, len);
    int r = fx_put(c, key, strlen(key), buf, len);
    REQUIRE(r == 0, "put %s: %s (%s)", key, fx_strerror(r), fx_last_error_detail());
}

static void owner_dies_under_load(void)
{
    const char *args[] = {"--placement", "local", "--heartbeat-interval", "200ms", NULL};
    REQUIRE(cluster_start_n(&tc, 3, 256ull << 20, args) == 0, "cluster start");
    int err = 0;
    fx_client *c0 = fx_connect(tc.sockets[0], &err);
    REQUIRE(c0, "connect to owner0");
    for (int i = 0; i < 4; i++) {
        live_client[i] = fx_connect(tc.sockets[1 + i / 2], &err);
        REQUIRE(live_client[i], "connect to owner%d", 1 + i / 2);
    }
    uint8_t *buf = malloc(2u << 20);
    char key[64];
    for (int k = 0; k < KEYS; k++) {
        snprintf(key, sizeof key, "dead-only-%d", k); /* never read before the kill */
        put_or_die(c0, key, value_len(k), buf);
        snprintf(key, sizeof key, "dead-read-%d", k); /* read (and pulled) under load */
        put_or_die(c0, key, value_len(k), buf);
        for (int o = 1; o <= 2; o++) {
            snprintf(key, sizeof key, "live%d-%d", o, k);
            put_or_die(live_client[(o - 1) * 2], key, value_len(k), buf);
        }
    }

    pthread_t th[LOADERS];
    for (int i = 0; i < LOADERS; i++)
        pthread_create(&th[i], NULL, loader, (void *)(intptr_t)i);
    usleep(1000 * 1000);
    long ok_before = atomic_load(&live_ok);
    REQUIRE(cluster_kill_owner(&tc, 0) == 0, "kill -9 owner0");
    double t_kill = now_ms();

    /* Keys only on owner0 miss within 3 heartbeat intervals. */
    fx_client *probe = live_client[3];
    double all_missing_at = -1;
    while (now_ms() - t_kill < 10 * HEARTBEAT_MS) {
        int missing = 0;
        for (int k = 0; k < KEYS; k++) {
            snprintf(key, sizeof key, "dead-only-%d", k);
            fx_holder *h = NULL;
            int r = fx_get(probe, key, strlen(key), &h);
            if (r == FX_ENOTFOUND)
                missing++;
            else if (r == 0) {
                if (!value_ok(fx_holder_data(h), fx_holder_len(h), key))
                    atomic_fetch_add(&corrupt, 1);
                fx_holder_release(h);
            }
        }
        if (missing == KEYS) {
            all_missing_at = now_ms() - t_kill;
            break;
        }
        usleep(20000);
    }
    CHECK(all_missing_at >= 0 && all_missing_at <= 3 * HEARTBEAT_MS,
          "every key only on the dead owner misses within 3 heartbeats (%.0f ms)", all_missing_at);

    usleep(1500 * 1000);
    atomic_store(&stop_load, true);
    for (int i = 0; i < LOADERS; i++)
        pthread_join(th[i], NULL);
    printf("load: %ld live ops ok (%ld before the kill), %ld failed; dead-read: %ld ok, %ld "
           "missed; %ld corrupt\n",
           atomic_load(&live_ok), ok_before, atomic_load(&live_fail), atomic_load(&dead_ok),
           atomic_load(&dead_reads), atomic_load(&corrupt));
    CHECK(atomic_load(&corrupt) == 0, "0 corrupt values (%ld)", atomic_load(&corrupt));
    CHECK(atomic_load(&live_fail) == 0, "every op on a live key succeeded (%ld failed; last: %s)",
          atomic_load(&live_fail), last_live_error);
    CHECK(atomic_load(&live_ok) > ok_before, "the load went on after the kill");

    /* Live keys are all still there and intact. */
    for (int o = 1; o <= 2; o++)
        for (int k = 0; k < KEYS; k++) {
            snprintf(key, sizeof key, "live%d-%d", o, k);
            fx_holder *h = NULL;
            int r = fx_get(live_client[0], key, strlen(key), &h);
            CHECK(r == 0 && value_ok(fx_holder_data(h), fx_holder_len(h), key),
                  "%s readable after the kill", key);
            if (h)
                fx_holder_release(h);
        }
    accounting_check(live_client[0], 3000, "after the kill");

    /* owner0's external: a clear error, quickly. */
    double t0 = now_ms();
    fx_holder *h = NULL;
    int r = fx_get(c0, "live1-1", 7, &h);
    CHECK(r != 0 && now_ms() - t0 < 5000, "the dead owner's external gets an error (%s) in %.0f ms",
          fx_strerror(r), now_ms() - t0);
    if (r == 0)
        fx_holder_release(h);
    fx_close(c0);

    /* A restarted owner0 is a new incarnation: none of the old keys. */
    REQUIRE(cluster_restart_owner(&tc, 0) == 0, "restart owner0");
    c0 = fx_connect(tc.sockets[0], &err);
    REQUIRE(c0, "connect to the restarted owner0");
    for (int k = 0; k < KEYS; k++) {
        snprintf(key, sizeof key, "dead-only-%d", k);
        CHECK(fx_get(c0, key, strlen(key), &h) == FX_ENOTFOUND, "%s is gone after the restart", key);
    }
    put_or_die(c0, "after-restart", 70000, buf);
    r = fx_get(live_client[2], "after-restart", 13, &h);
    CHECK(r == 0 && value_ok(fx_holder_data(h), fx_holder_len(h), "after-restart"),
          "the restarted owner serves new puts to other owners (%s)", fx_last_error_detail());
    if (r == 0)
        fx_holder_release(h);

    fx_close(c0);
    for (int i = 0; i < 4; i++)
        fx_close(live_client[i]);
    free(buf);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
}

/* ---- part 2: a frozen owner ------------------------------------------------------ */

static void frozen_owner(void)
{
    const char *args[] = {"--placement", "local", "--heartbeat-interval", "200ms", NULL};
    REQUIRE(cluster_start_n(&tc, 2, 64ull << 20, args) == 0, "cluster start");
    int err = 0;
    fx_client *c0 = fx_connect(tc.sockets[0], &err);
    fx_client *c1 = fx_connect(tc.sockets[1], &err);
    REQUIRE(c0 && c1, "connect");
    uint8_t *buf = malloc(1u << 20);
    char key[64];
    for (int k = 0; k < 8; k++) {
        snprintf(key, sizeof key, "frozen-%d", k);
        put_or_die(c1, key, 300000, buf);
    }
    fx_holder *h = NULL;
    REQUIRE(fx_get(c0, "frozen-0", 8, &h) == 0, "a pull from owner1 works before the freeze");
    fx_holder_release(h);
    pid_t pid = tc.owner_pids[1];
    REQUIRE(kill(pid, SIGSTOP) == 0, "SIGSTOP owner1");
    double t0 = now_ms();
    /* The first get starts a pull from the frozen owner at once. */
    int r = fx_get(c0, "frozen-1", 8, &h);
    double first = now_ms() - t0;
    CHECK(r == FX_ENOTFOUND, "a get pulling from the frozen owner ends in KeyNotFound (%s: %s)",
          fx_strerror(r), fx_last_error_detail());
    if (r == 0)
        fx_holder_release(h);
    CHECK(first <= 4 * HEARTBEAT_MS, "... once the owner is tombed (%.0f ms, heartbeat %d ms)",
          first, HEARTBEAT_MS);
    for (int k = 2; k < 8; k++) {
        snprintf(key, sizeof key, "frozen-%d", k);
        CHECK(fx_get(c0, key, strlen(key), &h) == FX_ENOTFOUND, "%s misses", key);
    }
    r = fx_get(c0, "frozen-0", 8, &h);
    CHECK(r == 0 && value_ok(fx_holder_data(h), fx_holder_len(h), "frozen-0"),
          "the copy owner0 pulled before the freeze is still served");
    if (r == 0)
        fx_holder_release(h);
    kill(pid, SIGCONT); /* it finds its master link closed and reconnects; killed below */
    cluster_kill_owner(&tc, 1);
    fx_close(c0);
    fx_close(c1);
    free(buf);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
}

/* ---- part 3: an external dies mid-put ------------------------------------------- */

/* The child: a raw external that starts a put, reports, and waits to be killed. */
static void child_starts_put(const char *socket_path, int ready_fd)
{
    int fd = raw_external_open(socket_path);
    if (fd < 0)
        _exit(2);
    Fx__PutId pid;
    char ok = raw_external_put_start(fd, "orphan", 3u << 20, &pid) == 0 ? 'y' : 'n';
    if (write(ready_fd, &ok, 1) != 1)
        _exit(4);
    for (;;)
        pause();
}

static uint64_t total_used(fx_client *c)
{
    fx_owner_stat st[8];
    size_t n = 0;
    if (fx_stat(c, st, 8, &n) != 0)
        return UINT64_MAX;
    uint64_t u = 0;
    for (size_t i = 0; i < n && i < 8; i++)
        u += st[i].memory_used;
    return u;
}

static void external_dies_mid_put(void)
{
    const char *args[] = {"--placement", "remote", NULL};
    REQUIRE(cluster_start_n(&tc, 2, 64ull << 20, args) == 0, "cluster start");
    int err = 0;
    fx_client *c = fx_connect(tc.sockets[0], &err);
    REQUIRE(c, "connect");
    REQUIRE(total_used(c) == 0, "empty at start");
    int pipefd[2];
    REQUIRE(pipe(pipefd) == 0, "pipe");
    pid_t pid = fork();
    REQUIRE(pid >= 0, "fork");
    if (pid == 0) {
        close(pipefd[0]);
        child_starts_put(tc.sockets[0], pipefd[1]);
    }
    close(pipefd[1]);
    char ok = 0;
    CHECK(read(pipefd[0], &ok, 1) == 1 && ok == 'y', "the child started its put");
    close(pipefd[0]);
    CHECK(total_used(c) >= 2 * (3ull << 20), "a remote put holds a staging and a target range");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    uint64_t u = total_used(c);
    for (int t = 0; t < 300 && u != 0; t++) {
        usleep(10000);
        u = total_used(c);
    }
    CHECK(u == 0, "both ranges freed after the external died (%llu bytes still used)",
          (unsigned long long)u);
    uint8_t *buf = malloc(3u << 20);
    size_t len = make_value(buf, "orphan", 9, 3u << 20);
    int r = fx_put(c, "orphan", 6, buf, len);
    CHECK(r == 0, "the key can be put again (%s)", fx_last_error_detail());
    fx_holder *h = NULL;
    r = fx_get(c, "orphan", 6, &h);
    CHECK(r == 0 && value_ok(fx_holder_data(h), fx_holder_len(h), "orphan"), "and read back");
    if (h)
        fx_holder_release(h);
    free(buf);
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
}

int main(void)
{
    owner_dies_under_load();
    frozen_owner();
    external_dies_mid_put();
    return test_finish();
}
