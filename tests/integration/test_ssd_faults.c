/*
 * test_ssd_faults.c - the SSD tier's failure paths in a real cluster (master
 * + owners with large_file_paths): what happens when the route and the SSD
 * disagree.
 *
 *   1. An overwrite while the old version's persist is still in flight (the
 *      owner's test-only FLUXON_TEST_PERSIST_DELAY_MS holds every
 *      SsdReplicaCommit back): the late commit of v1 is ignored (the route
 *      keeps v2's put_id and shows an SSD copy only once v2's own commit
 *      came), and only v2 is ever read, from memory and, once DRAM pushed it
 *      out, from SSD.
 *   2. Ring eviction: 64 MiB of SSD under 32 MiB of DRAM and four times that
 *      much put: once the persists settled (and the 10 ms eviction batches
 *      went), the routes list no more SSD bytes than the SSD holds, every
 *      listed SSD copy is readable, and the keys whose copies all went are
 *      KeyNotFound.
 *   3. Shard files overwritten behind the master's back: the checksum catches
 *      it on the local refill and on the remote one (SsdStageRead), the get
 *      ends in KeyNotFound, the route forgets that SSD copy, and no corrupt
 *      byte is ever returned.
 *   4. An owner restarted on the same paths serves nothing of its previous
 *      run, and its SSD usage is back to zero.
 *   5. More remote refills at once than SSD_TIER_MAX_STAGES (4) producers
 *      may run: with every producer held on its worker for a while
 *      (test-only FLUXON_TEST_STAGE_DELAY_MS), 8 concurrent gets all return
 *      the right bytes from SSD and take at least two delays (the second
 *      four waited their turn); then 8 more are started and the cluster is
 *      stopped while four of them still wait for a producer: every process
 *      exits 0 and no get hangs or returns wrong bytes.
 */
/* O_DIRECT needs _GNU_SOURCE, which the build defines. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "raw_member.h"
#include "testlib.h"
#include "values.h"

#define MIB (1ull << 20)
#define PERSIST_DELAY_MS 500

static const char *const master_args[] = {"--placement", "local", "--heartbeat-timeout", "600s",
                                          NULL};

/* The bytes of version `ver` of key: distinct per key and per version. */
static unsigned long long value_seed(const char *key, int ver)
{
    return (XXH3_64bits(key, strlen(key)) + (unsigned long long)ver * 0x9e37) | 1;
}

static bool same(const fx_holder *h, const char *key, int ver, size_t len)
{
    return value_holder_is(h, value_seed(key, ver), len);
}

static int put(fx_client *c, const char *key, int ver, size_t len)
{
    return value_put(c, key, value_seed(key, ver), len);
}

/* What the master's route of a key says (found false when RouteInfo fails). */
static raw_route route_of(raw_member *rm, const char *key)
{
    raw_route v;
    raw_member_route(rm, key, &v);
    return v;
}

/* Stops the cluster, with its logs first when a check of this scenario
 * failed (failed_before: test_checks_failed when it started). */
static void stop(test_cluster *tc, int failed_before)
{
    if (test_checks_failed > failed_before)
        cluster_dump_logs(tc);
    CHECK(cluster_stop(tc) == 0, "cluster stopped cleanly");
}

static bool same_pid(raw_route a, raw_route b)
{
    return a.pid_time == b.pid_time && a.pid_version == b.pid_version;
}

/* Polls until key's route lists an SSD copy (true) or timeout_ms passed. */
static bool wait_ssd(raw_member *rm, const char *key, unsigned timeout_ms)
{
    uint64_t end = test_now_ms() + timeout_ms;
    do {
        if (route_of(rm, key).ssd)
            return true;
        test_sleep_ms(5);
    } while (test_now_ms() < end);
    return false;
}

/* Puts 'filler' values through c until every key in keys lives only on SSD
 * (the master evicted their memory replicas to make room). Returns the
 * number of fillers put, or -1. */
static int push_out_of_dram(fx_client *c, raw_member *rm, const char *const *keys, int n_keys,
                            size_t filler_len, int max_fillers)
{
    char key[64];
    for (int i = 0; i <= max_fillers; i++) {
        bool all = true;
        for (int k = 0; k < n_keys; k++) {
            raw_route v = route_of(rm, keys[k]);
            if (v.mem || !v.ssd)
                all = false;
        }
        if (all)
            return i;
        if (i == max_fillers)
            break;
        snprintf(key, sizeof key, "filler-%d", i);
        int r = put(c, key, 0, filler_len);
        if (r != 0) {
            CHECK(false, "put %s: %s (%s)", key, fx_strerror(r), fx_last_error_detail());
            return -1;
        }
    }
    return -1;
}

/* Lines of a file that contain needle. */
static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle))
            n++;
    fclose(f);
    return n;
}

/* Sets a test-only delay of the owners started next (they inherit the
 * environment: cluster.c forks and execs). */
static void set_delay_env(const char *name, int ms)
{
    char v[16];
    snprintf(v, sizeof v, "%d", ms);
    setenv(name, v, 1);
}

/* A client on each of the two owners of tc, and an observer member that
 * reads routes. */
static void connect_two(test_cluster *tc, fx_client **c0, fx_client **c1, raw_member *obs)
{
    int err = 0;
    *c0 = fx_connect(tc->sockets[0], &err);
    *c1 = fx_connect(tc->sockets[1], &err);
    REQUIRE(*c0 && *c1, "connect");
    REQUIRE(raw_member_register(obs, tc->master_addr, "test", "observer", 1) == 0, "observer");
}

/* ---- 1. overwrite while v1's persist is in flight ----------------------- */

static void overwrite_during_persist(void)
{
    test_cluster tc;
    int failed_before = test_checks_failed;
    set_delay_env("FLUXON_TEST_PERSIST_DELAY_MS", PERSIST_DELAY_MS);
    char *old_log = getenv("FLUXON_LOG") ? strdup(getenv("FLUXON_LOG")) : NULL;
    setenv("FLUXON_LOG", "info", 1); /* the owner logs ignored commits at INFO */
    int rc = cluster_start_ssd(&tc, 1, 64 * MIB, 256 * MIB, master_args);
    unsetenv("FLUXON_TEST_PERSIST_DELAY_MS");
    if (old_log)
        setenv("FLUXON_LOG", old_log, 1);
    else
        unsetenv("FLUXON_LOG");
    free(old_log);
    REQUIRE(rc == 0, "cluster start");
    int err = 0;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect");
    raw_member obs;
    REQUIRE(raw_member_register(&obs, tc.master_addr, "test", "observer", 1) == 0, "observer");

    /* Different lengths too: a published v1 commit would also be the wrong
     * size for the route. */
    const size_t len1 = 3 * MIB + 11, len2 = 5 * MIB + 7;
    const char *ka = "ow-immediate", *kb = "ow-halfway";

    /* The values are made up front: back to back means back to back, even
     * in a slow (sanitizer) build. */
    uint8_t *va1 = value_make(value_seed(ka, 1), len1), *va2 = value_make(value_seed(ka, 2), len2);
    uint8_t *vb1 = value_make(value_seed(kb, 1), len1), *vb2 = value_make(value_seed(kb, 2), len2);
    REQUIRE(va1 && va2 && vb1 && vb2, "oom");

    /* ka: v2 right behind v1. */
    REQUIRE(fx_put(c, ka, strlen(ka), va1, len1) == 0, "put %s v1", ka);
    REQUIRE(fx_put(c, ka, strlen(ka), va2, len2) == 0, "put %s v2", ka);
    raw_route a2 = route_of(&obs, ka);
    CHECK(a2.found && a2.len == len2 && !a2.ssd,
          "%s: the route is v2's, without an SSD copy while the commits are held back", ka);

    /* kb: v2 half way through v1's delay, so that v1's late commit lands
     * well before v2's: the route must not show an SSD copy in between. */
    REQUIRE(fx_put(c, kb, strlen(kb), vb1, len1) == 0, "put %s v1", kb);
    raw_route b1 = route_of(&obs, kb);
    test_sleep_ms(PERSIST_DELAY_MS / 2);
    raw_route b1_late = route_of(&obs, kb);
    CHECK(same_pid(b1, b1_late) && !b1_late.ssd, "%s: v1's commit is still held back", kb);
    REQUIRE(fx_put(c, kb, strlen(kb), vb2, len2) == 0, "put %s v2", kb);
    uint64_t t2 = test_now_ms();
    raw_route b2 = route_of(&obs, kb);
    CHECK(b1.found && b2.found && !same_pid(b1, b2) && b2.len == len2,
          "%s: the overwrite has its own put_id", kb);
    int polls = 0, early_ssd = 0, wrong_pid = 0;
    while (test_now_ms() < t2 + PERSIST_DELAY_MS * 4 / 5) {
        raw_route v = route_of(&obs, kb);
        polls++;
        if (v.ssd)
            early_ssd++;
        if (!same_pid(v, b2) || v.len != len2)
            wrong_pid++;
        test_sleep_ms(2);
    }
    CHECK(early_ssd == 0 && wrong_pid == 0,
          "%s: across v1's late commit (%d polls) the route kept v2's put_id (%d wrong) and "
          "showed no SSD copy (%d did)",
          kb, polls, wrong_pid, early_ssd);
    CHECK(wait_ssd(&obs, kb, 5000), "%s: v2's own commit publishes its SSD copy", kb);
    uint64_t t_ssd = test_now_ms();
    CHECK(t_ssd >= t2 + PERSIST_DELAY_MS * 4 / 5,
          "%s: the SSD copy came with v2's commit (%llu ms after v2's put)", kb,
          (unsigned long long)(t_ssd - t2));
    CHECK(wait_ssd(&obs, ka, 5000), "%s: v2's own commit publishes its SSD copy", ka);
    raw_route a3 = route_of(&obs, ka), b3 = route_of(&obs, kb);
    CHECK(same_pid(a3, a2) && same_pid(b3, b2) && a3.len == len2 && b3.len == len2,
          "the published SSD copies are v2's");
    free(va1);
    free(va2);
    free(vb1);
    free(vb2);
    /* Both v1 commits reached the master and were ignored. */
    char log[512];
    snprintf(log, sizeof log, "%s/owner0.log", tc.dir);
    int ignored = 0;
    for (uint64_t end = test_now_ms() + 3000; test_now_ms() < end; test_sleep_ms(20))
        if ((ignored = count_lines(log, "not published")) >= 2)
            break;
    CHECK(ignored >= 2, "the owner saw both v1 commits ignored (%d)", ignored);

    /* Push both out of DRAM (not read before: a replica in the owner's get
     * cache is evicted last), so that the next get refills from SSD. */
    const char *keys[] = {ka, kb};
    int fillers = push_out_of_dram(c, &obs, keys, 2, 8 * MIB, 40);
    CHECK(fillers > 0, "the overwritten keys live only on SSD after %d fillers", fillers);
    for (int i = 0; i < 2 && fillers > 0; i++) {
        fx_holder *h = NULL;
        int r = fx_get(c, keys[i], strlen(keys[i]), &h);
        CHECK(r == 0 && fx_holder_source(h) == FX_SRC_SSD, "%s comes from SSD (%s: %s)", keys[i],
              fx_strerror(r), fx_last_error_detail());
        CHECK(r == 0 && same(h, keys[i], 2, len2), "%s: the SSD copy is v2's bytes", keys[i]);
        if (h)
            fx_holder_release(h);
    }
    /* And the refill, now in memory, is v2 too. */
    for (int i = 0; i < 2; i++) {
        fx_holder *h = NULL;
        int r = fx_get(c, keys[i], strlen(keys[i]), &h);
        CHECK(r == 0 && same(h, keys[i], 2, len2), "%s reads v2 again (%s, source %d)", keys[i],
              fx_strerror(r), r == 0 ? fx_holder_source(h) : -1);
        if (h)
            fx_holder_release(h);
    }
    raw_member_close(&obs);
    fx_close(c);
    stop(&tc, failed_before);
}

/* ---- 2. ring eviction --------------------------------------------------- */

#define RING_SSD (64 * MIB)

static size_t ring_len(int i)
{
    return (size_t)(1 + i % 3) * MIB - (size_t)(i * 131 % 4096);
}

static void ring_eviction(void)
{
    test_cluster tc;
    int failed_before = test_checks_failed;
    REQUIRE(cluster_start_ssd(&tc, 1, 32 * MIB, RING_SSD, master_args) == 0, "cluster start");
    int err = 0;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect");
    raw_member obs;
    REQUIRE(raw_member_register(&obs, tc.master_addr, "test", "observer", 1) == 0, "observer");
    char key[64];
    uint64_t total = 0;
    int n = 0;
    while (total < 4 * RING_SSD) {
        snprintf(key, sizeof key, "ring-%d", n);
        int r = put(c, key, 0, ring_len(n));
        REQUIRE(r == 0, "put %s: %s (%s)", key, fx_strerror(r), fx_last_error_detail());
        total += ring_len(n);
        n++;
    }
    /* The last persists settle, then the evictions they caused are at most
     * one 10 ms batch away: give them the 100 ms. */
    for (int i = n - 4; i < n; i++) {
        snprintf(key, sizeof key, "ring-%d", i);
        CHECK(wait_ssd(&obs, key, 5000), "%s was persisted", key);
    }
    test_sleep_ms(100);
    enum { MEM, SSD_ONLY, NONE };
    int *kind = calloc((size_t)n, sizeof *kind);
    REQUIRE(kind, "oom");
    int n_mem = 0, n_ssd = 0, n_none = 0;
    uint64_t ssd_bytes = 0;
    int empty = 0; /* routes with neither a memory replica nor an SSD copy */
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "ring-%d", i);
        raw_route v = route_of(&obs, key);
        if (v.ssd)
            ssd_bytes += v.len;
        if (v.found && !v.mem && !v.ssd)
            empty++;
        kind[i] = v.mem ? MEM : v.ssd ? SSD_ONLY : NONE;
        n_mem += kind[i] == MEM;
        n_ssd += kind[i] == SSD_ONLY;
        n_none += kind[i] == NONE;
    }
    printf("ring: %d keys, %llu MiB put: %d in memory, %d only on SSD, %d gone; routes list %llu "
           "MiB on SSD\n",
           n, (unsigned long long)(total / MIB), n_mem, n_ssd, n_none,
           (unsigned long long)(ssd_bytes / MIB));
    CHECK(empty == 0, "no route is left with neither memory nor SSD (%d)", empty);
    CHECK(n_none > 0, "the ring wrapped and some keys are gone (%d)", n_none);
    CHECK(n_ssd > 0, "some keys live only on SSD (%d)", n_ssd);
    CHECK(ssd_bytes <= RING_SSD,
          "the routes list no more SSD bytes (%llu) than the SSD holds: evicted copies were "
          "cleared",
          (unsigned long long)ssd_bytes);
    int bad = 0, stale = 0, not_ssd = 0, notfound = 0, notfound_bad = 0;
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "ring-%d", i);
        fx_holder *h = NULL;
        int r = fx_get(c, key, strlen(key), &h);
        if (kind[i] == NONE) {
            if (r == FX_ENOTFOUND)
                notfound++;
            else if (notfound_bad++ < 3)
                printf("%s has no route: get gives %s\n", key, fx_strerror(r));
        } else if (r != 0) {
            /* Listed, but not there: an eviction the master missed. */
            if (stale++ < 3)
                printf("%s is listed (%s) but get gives %s (%s)\n", key,
                       kind[i] == MEM ? "memory" : "ssd", fx_strerror(r), fx_last_error_detail());
        } else {
            if (!same(h, key, 0, ring_len(i)))
                bad++;
            if (kind[i] == SSD_ONLY && fx_holder_source(h) != FX_SRC_SSD)
                not_ssd++;
        }
        if (h)
            fx_holder_release(h);
    }
    CHECK(bad == 0, "no wrong bytes (%d)", bad);
    CHECK(stale == 0, "every listed copy was readable (%d stale)", stale);
    CHECK(not_ssd == 0, "keys only on SSD came from SSD (%d did not)", not_ssd);
    CHECK(notfound == n_none && notfound_bad == 0, "every evicted key is KeyNotFound (%d of %d)",
          notfound, n_none);
    free(kind);
    raw_member_close(&obs);
    fx_close(c);
    stop(&tc, failed_before);
}

/* ---- 3. corrupted shard files ------------------------------------------- */

/* Overwrites every shard file under dir with garbage, bypassing the page
 * cache like the owner's reads (O_DIRECT; else write, fdatasync and drop the
 * cached pages). Returns the number of files, or -1. */
static int corrupt_shards(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "opendir %s: %s\n", dir, strerror(errno));
        return -1;
    }
    const size_t chunk = MIB;
    uint8_t *buf = NULL;
    if (posix_memalign((void **)&buf, 4096, chunk) != 0) {
        closedir(d);
        return -1;
    }
    unsigned long long s = 0x5eed;
    for (size_t i = 0; i < chunk; i++)
        buf[i] = (uint8_t)(test_rand(&s) >> 56);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "shard-", 6) != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        bool direct = true;
        int fd = open(path, O_WRONLY | O_DIRECT);
        if (fd < 0 && errno == EINVAL) {
            direct = false;
            fd = open(path, O_WRONLY);
        }
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            fprintf(stderr, "%s: %s\n", path, strerror(errno));
            if (fd >= 0)
                close(fd);
            files = -1;
            break;
        }
        for (off_t off = 0; off < st.st_size; off += (off_t)chunk) {
            size_t n = (size_t)(st.st_size - off) < chunk ? (size_t)(st.st_size - off) : chunk;
            if (pwrite(fd, buf, n, off) != (ssize_t)n) {
                fprintf(stderr, "pwrite %s: %s\n", path, strerror(errno));
                files = -1;
                break;
            }
        }
        if (!direct) {
            fdatasync(fd);
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        }
        close(fd);
        if (files < 0)
            break;
        files++;
    }
    closedir(d);
    free(buf);
    return files;
}

static void corrupted_shards(void)
{
    test_cluster tc;
    int failed_before = test_checks_failed;
    REQUIRE(cluster_start_ssd(&tc, 2, 32 * MIB, 128 * MIB, master_args) == 0, "cluster start");
    fx_client *c0, *c1;
    raw_member obs;
    connect_two(&tc, &c0, &c1, &obs);
    /* Both probes land on owner0 (placement local) and leave its DRAM: their
     * only copies are on owner0's SSD. */
    const char *local = "corrupt-local", *remote = "corrupt-remote";
    const size_t plen = 5 * MIB + 3;
    REQUIRE(put(c0, local, 0, plen) == 0 && put(c0, remote, 0, plen) == 0, "put the probes");
    const char *probes[] = {local, remote};
    int fillers = push_out_of_dram(c0, &obs, probes, 2, 4 * MIB, 40);
    REQUIRE(fillers > 0, "the probes live only on owner0's SSD");
    char key[64];
    /* A few more, so that some fillers too live only on SSD. */
    for (int i = fillers; i < fillers + 4; i++) {
        snprintf(key, sizeof key, "filler-%d", i);
        int r = put(c0, key, 0, 4 * MIB);
        REQUIRE(r == 0, "put %s: %s", key, fx_strerror(r));
    }
    fillers += 4;
    for (int i = fillers - 2; i < fillers; i++) {
        snprintf(key, sizeof key, "filler-%d", i);
        CHECK(wait_ssd(&obs, key, 5000), "%s was persisted (quiet SSD before corrupting)", key);
    }
    char dir[512];
    snprintf(dir, sizeof dir, "%s/ssd0/test_cluster_kv_ssd_storage/owner0", tc.dir);
    int files = corrupt_shards(dir);
    REQUIRE(files > 0, "overwrote owner0's shard files (%d)", files);

    /* Local refill on owner0. */
    fx_holder *h = NULL;
    int r = fx_get(c0, local, strlen(local), &h);
    CHECK(r == FX_ENOTFOUND, "local refill of a corrupted entry: KeyNotFound (got %s: %s)",
          fx_strerror(r), fx_last_error_detail());
    CHECK(r != 0 || same(h, local, 0, plen), "no corrupt bytes from the local refill");
    if (h)
        fx_holder_release(h);
    raw_route v = route_of(&obs, local);
    CHECK(!v.ssd && !v.mem, "the route forgot the corrupted SSD copy (found %d ssd %llx)", v.found,
          (unsigned long long)v.ssd);
    /* Remote refill: owner1 asks, owner0 stages from its SSD. */
    h = NULL;
    r = fx_get(c1, remote, strlen(remote), &h);
    CHECK(r == FX_ENOTFOUND, "remote refill of a corrupted entry: KeyNotFound (got %s: %s)",
          fx_strerror(r), fx_last_error_detail());
    CHECK(r != 0 || same(h, remote, 0, plen), "no corrupt bytes from the remote refill");
    if (h)
        fx_holder_release(h);
    v = route_of(&obs, remote);
    CHECK(!v.ssd && !v.mem, "the route forgot the corrupted remote SSD copy (found %d ssd %llx)",
          v.found, (unsigned long long)v.ssd);
    r = fx_get(c0, remote, strlen(remote), &h);
    CHECK(r == FX_ENOTFOUND, "and a later get is KeyNotFound too (%s)", fx_strerror(r));
    if (r == 0)
        fx_holder_release(h);

    /* Every filler: the right bytes (still in DRAM) or KeyNotFound, never
     * corrupt bytes, and the SSD-only ones are all caught. */
    int good = 0, gone = 0, corrupt = 0, other = 0;
    for (int i = 0; i < fillers; i++) {
        snprintf(key, sizeof key, "filler-%d", i);
        h = NULL;
        r = fx_get(c0, key, strlen(key), &h);
        if (r == 0 && same(h, key, 0, 4 * MIB))
            good++;
        else if (r == 0)
            corrupt++;
        else if (r == FX_ENOTFOUND)
            gone++;
        else
            other++;
        if (h)
            fx_holder_release(h);
    }
    printf("corrupt shards: %d files; %d fillers: %d read back, %d KeyNotFound\n", files, fillers,
           good, gone);
    CHECK(corrupt == 0, "0 corrupt values returned (%d)", corrupt);
    CHECK(other == 0, "no get failed with anything but KeyNotFound (%d)", other);
    CHECK(gone > 0 && good > 0, "fillers only on SSD were caught, those in DRAM read back");
    /* The engine only counts; the owner reports the failures with its next
     * heartbeat, one line for all of them. */
    char log[600];
    snprintf(log, sizeof log, "%s/owner0.log", tc.dir);
    bool reported = false;
    for (int i = 0; i < 300 && !reported; i++) { /* 15 s: slow under the sanitizers */
        reported = cluster_log_contains(log, "value(s) with a bad checksum since the last report") &&
                   !cluster_log_contains(log, " 0 value(s) with a bad checksum");
        if (!reported)
            test_sleep_ms(50);
    }
    CHECK(reported, "owner0 logs the checksum failures (one WARN line per heartbeat)");
    /* ... and counts them in its heartbeat, which stat shows. */
    fx_owner_stat st[4];
    size_t n = 0;
    uint64_t errors = 0;
    /* Each probe's failure reaches the master with the heartbeat after it:
     * the two may be counted one heartbeat apart, so wait for both. */
    for (int i = 0; i < 300 && errors < 2; i++) {
        if (fx_stat(c0, st, 4, &n) == 0)
            for (size_t j = 0; j < n && j < 4; j++)
                if (strcmp(st[j].name, "owner0") == 0)
                    errors = st[j].ssd_errors;
        if (errors < 2)
            test_sleep_ms(50);
    }
    CHECK(errors >= 2, "stat shows owner0's SSD errors (%llu; two probes failed their checksum)",
          (unsigned long long)errors);
    for (size_t j = 0; j < n && j < 4; j++)
        if (strcmp(st[j].name, "owner1") == 0)
            CHECK(st[j].ssd_errors == 0, "owner1 had none (%llu)",
                  (unsigned long long)st[j].ssd_errors);
    raw_member_close(&obs);
    fx_close(c0);
    fx_close(c1);
    stop(&tc, failed_before);
}

/* ---- 4. restart on the same paths --------------------------------------- */

static bool live_stat(fx_client *c, const char *name, fx_owner_stat *out)
{
    fx_owner_stat st[8];
    size_t n = 0;
    if (fx_stat(c, st, 8, &n) != 0)
        return false;
    for (size_t i = 0; i < n && i < 8; i++)
        if (st[i].live && strcmp(st[i].name, name) == 0) {
            *out = st[i];
            return true;
        }
    return false;
}

static void restart_same_paths(void)
{
    test_cluster tc;
    int failed_before = test_checks_failed;
    REQUIRE(cluster_start_ssd(&tc, 1, 32 * MIB, 128 * MIB, master_args) == 0, "cluster start");
    int err = 0;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect");
    raw_member obs;
    REQUIRE(raw_member_register(&obs, tc.master_addr, "test", "observer", 1) == 0, "observer");
    const int n = 20;
    char key[64];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "before-%d", i);
        int r = put(c, key, 0, 4 * MIB);
        REQUIRE(r == 0, "put %s: %s", key, fx_strerror(r));
    }
    int ssd_only = 0;
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "before-%d", i);
        CHECK(wait_ssd(&obs, key, 5000), "%s was persisted", key);
        ssd_only += !route_of(&obs, key).mem;
    }
    CHECK(ssd_only > 0, "some keys lived only on SSD before the restart (%d)", ssd_only);
    fx_owner_stat st;
    uint64_t used_before = 0;
    for (uint64_t end = test_now_ms() + 5000; test_now_ms() < end; test_sleep_ms(50))
        if (live_stat(c, "owner0", &st) && (used_before = st.ssd_used) >= (uint64_t)n * 4 * MIB)
            break;
    CHECK(used_before >= (uint64_t)n * 4 * MIB, "stat shows the SSD in use before (%llu)",
          (unsigned long long)used_before);
    fx_close(c);

    REQUIRE(cluster_restart_owner(&tc, 0) == 0, "restart owner0 on the same paths");
    c = fx_connect(tc.socket, &err);
    REQUIRE(c, "reconnect");
    int served = 0;
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "before-%d", i);
        fx_holder *h = NULL;
        int r = fx_get(c, key, strlen(key), &h);
        if (r != FX_ENOTFOUND) {
            served++;
            CHECK(false, "%s after the restart: %s (expected KeyNotFound)", key, fx_strerror(r));
        }
        if (h)
            fx_holder_release(h);
    }
    CHECK(served == 0, "nothing of the previous run is served (%d)", served);
    uint64_t used_after = UINT64_MAX, cap_after = 0;
    for (uint64_t end = test_now_ms() + 5000; test_now_ms() < end; test_sleep_ms(50))
        if (live_stat(c, "owner0", &st) && st.ssd_capacity &&
            (used_after = st.ssd_used, cap_after = st.ssd_capacity, used_after < MIB))
            break;
    CHECK(cap_after > 0 && used_after < MIB,
          "stat: the restarted owner's SSD is empty (used %llu of %llu)",
          (unsigned long long)used_after, (unsigned long long)cap_after);
    /* The new run's tier works. */
    CHECK(put(c, "after", 0, 3 * MIB) == 0, "put after the restart");
    CHECK(wait_ssd(&obs, "after", 5000), "and it is persisted on the new run's SSD");
    fx_holder *h = NULL;
    int r = fx_get(c, "after", 5, &h);
    CHECK(r == 0 && same(h, "after", 0, 3 * MIB), "and reads back");
    if (h)
        fx_holder_release(h);
    raw_member_close(&obs);
    fx_close(c);
    stop(&tc, failed_before);
}

/* ---- 5. more remote refills than producers -------------------------------- */

#define STAGE_DELAY_MS 400
#define STAGE_GETS 8 /* twice SSD_TIER_MAX_STAGES */

typedef struct stage_get {
    fx_client *c;
    char key[32];
    size_t len;
    int rc, source;
    bool intact;
    char detail[160]; /* the error's detail (the calling thread's) */
} stage_get;

static void *stage_get_main(void *arg)
{
    stage_get *g = arg;
    fx_holder *h = NULL;
    g->rc = fx_get(g->c, g->key, strlen(g->key), &h);
    snprintf(g->detail, sizeof g->detail, "%s", g->rc ? fx_last_error_detail() : "");
    if (g->rc == 0) {
        g->source = fx_holder_source(h);
        g->intact = same(h, g->key, 1, g->len);
        fx_holder_release(h);
    }
    return NULL;
}

/* Puts STAGE_GETS keys named prefix-<i> through c0 and pushes them out of
 * owner0's DRAM, so that their only copies are on owner0's SSD. */
static bool stage_keys_on_ssd(fx_client *c0, raw_member *obs, const char *prefix, stage_get *g,
                              fx_client *reader)
{
    const char *keys[STAGE_GETS];
    for (int i = 0; i < STAGE_GETS; i++) {
        snprintf(g[i].key, sizeof g[i].key, "%s-%d", prefix, i);
        g[i].c = reader;
        g[i].len = MIB + (size_t)i * 4096 + 13;
        g[i].rc = -100;
        g[i].intact = false;
        keys[i] = g[i].key;
        int r = put(c0, g[i].key, 1, g[i].len);
        if (r != 0) {
            CHECK(false, "put %s: %s (%s)", g[i].key, fx_strerror(r), fx_last_error_detail());
            return false;
        }
    }
    for (int i = 0; i < STAGE_GETS; i++)
        if (!wait_ssd(obs, keys[i], 10000)) {
            CHECK(false, "%s was persisted", keys[i]);
            return false;
        }
    int fillers = push_out_of_dram(c0, obs, keys, STAGE_GETS, 8 * MIB, 60);
    CHECK(fillers > 0, "%s-*: only on owner0's SSD after %d fillers", prefix, fillers);
    return fillers > 0;
}

static void start_gets(stage_get *g, pthread_t *th)
{
    for (int i = 0; i < STAGE_GETS; i++)
        REQUIRE(pthread_create(&th[i], NULL, stage_get_main, &g[i]) == 0, "thread");
}

static void stages_beyond_the_limit(void)
{
    test_cluster tc;
    int failed_before = test_checks_failed;
    set_delay_env("FLUXON_TEST_STAGE_DELAY_MS", STAGE_DELAY_MS);
    int rc = cluster_start_ssd(&tc, 2, 64 * MIB, 512 * MIB, master_args);
    unsetenv("FLUXON_TEST_STAGE_DELAY_MS");
    REQUIRE(rc == 0, "cluster start");
    fx_client *c0, *c1;
    raw_member obs;
    connect_two(&tc, &c0, &c1, &obs);

    /* Round 1: 8 remote refills at once, 4 producers at a time. */
    stage_get g[STAGE_GETS];
    pthread_t th[STAGE_GETS];
    if (stage_keys_on_ssd(c0, &obs, "stage-a", g, c1)) {
        uint64_t t0 = test_now_ms();
        start_gets(g, th);
        for (int i = 0; i < STAGE_GETS; i++)
            pthread_join(th[i], NULL);
        uint64_t took = test_now_ms() - t0;
        int good = 0;
        for (int i = 0; i < STAGE_GETS; i++) {
            CHECK(g[i].rc == 0 && g[i].intact && g[i].source == FX_SRC_SSD,
                  "%s: %s, intact %d, source %d (%s)", g[i].key, fx_strerror(g[i].rc),
                  g[i].intact, g[i].source, g[i].detail);
            good += g[i].rc == 0 && g[i].intact;
        }
        CHECK(took >= 2 * STAGE_DELAY_MS,
              "%d concurrent remote refills took %llu ms: at most 4 producers ran at once, each "
              "held %d ms, so the second four waited (want >= %d ms)",
              STAGE_GETS, (unsigned long long)took, STAGE_DELAY_MS, 2 * STAGE_DELAY_MS);
        printf("%d concurrent remote refills (%d intact): %llu ms\n", STAGE_GETS, good,
               (unsigned long long)took);
    }

    /* Round 2: 8 more, and the cluster stops while four still wait. */
    stage_get g2[STAGE_GETS];
    bool ready = stage_keys_on_ssd(c0, &obs, "stage-b", g2, c1);
    if (ready) {
        start_gets(g2, th);
        test_sleep_ms(STAGE_DELAY_MS / 2); /* all 8 reached owner0: 4 held, 4 waiting */
    }
    raw_member_close(&obs);
    if (test_checks_failed > failed_before)
        cluster_dump_logs(&tc);
    CHECK(cluster_stop(&tc) == 0,
          "every process exited cleanly, the SSD owner with stages still waiting");
    if (ready) {
        for (int i = 0; i < STAGE_GETS; i++)
            pthread_join(th[i], NULL);
        int ok = 0, failed = 0, wrong = 0;
        for (int i = 0; i < STAGE_GETS; i++) {
            if (g2[i].rc == 0 && !g2[i].intact)
                wrong++;
            else if (g2[i].rc == 0)
                ok++;
            else
                failed++;
        }
        CHECK(wrong == 0, "no get across the stop returned wrong bytes (%d did)", wrong);
        printf("gets across the stop: %d ok, %d failed with an error, %d wrong\n", ok, failed,
               wrong);
    }
    fx_close(c0);
    fx_close(c1);
}

int main(void)
{
    uint64_t t0 = test_now_ms();
    overwrite_during_persist();
    printf("overwrite during persist: %llu ms\n", (unsigned long long)(test_now_ms() - t0));
    t0 = test_now_ms();
    ring_eviction();
    printf("ring eviction: %llu ms\n", (unsigned long long)(test_now_ms() - t0));
    t0 = test_now_ms();
    corrupted_shards();
    printf("corrupted shards: %llu ms\n", (unsigned long long)(test_now_ms() - t0));
    t0 = test_now_ms();
    restart_same_paths();
    printf("restart: %llu ms\n", (unsigned long long)(test_now_ms() - t0));
    t0 = test_now_ms();
    stages_beyond_the_limit();
    printf("stages beyond the limit: %llu ms\n", (unsigned long long)(test_now_ms() - t0));
    return test_finish();
}
