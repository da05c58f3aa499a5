/*
 * test_capacity.c - the capacity contract of a one-owner cluster (issue 6):
 *
 *   storm    a put storm of 3x the segment with concurrent gets (one owner,
 *            then two: the reader on the other owner pulls): every put
 *            succeeds (eviction makes room), the evictable replicas plus the
 *            reservations never exceed the budget, every get returns the right
 *            bytes or KeyNotFound, and the accounting adds up afterwards;
 *   pinned   with every byte pinned by live holders a put gets NoSpace (with
 *            total and free bytes) within 5.5 s, and works again once the
 *            holders are released;
 *   lease    leased keys survive eviction pressure while kept alive, and
 *            vanish after their TTL (not before it); an expired lease refuses
 *            keepalives and puts;
 *   options  reject_if_exists (at start and at commit) and
 *            reject_if_inflight_same_key;
 *   queries  fx_exists, fx_get_size and fx_count_prefix;
 *   big      a value over the budget is kept; one over the segment evicts
 *            nothing;
 *   getbig   a get into an owner whose whole segment is smaller than the
 *            value: NoSpace at once, and that owner's replicas stay;
 *   dead     an external killed while it holds 1000 holders: the owner
 *            releases them all and the used bytes come back to what the
 *            routes hold.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "accounting.h"
#include "cluster.h"
#include "fluxon/fluxon.h"
#include "net/msg.h"
#include "raw_external.h"
#include "testlib.h"
#include "values.h"

#define MIB (1024ull * 1024ull)

static fx_owner_stat stat0(fx_client *c)
{
    fx_owner_stat st[2];
    size_t n = 0;
    memset(st, 0, sizeof st);
    REQUIRE(fx_stat(c, st, 2, &n) == 0 && n == 1, "fx_stat: %s", fx_last_error_detail());
    return st[0];
}

/* ---- storm ------------------------------------------------------------------ */

#define STORM_SEGMENT (96 * MIB)
#define STORM_KEYS 280 /* over 3x the segment at 1.1 MiB on average */

static size_t storm_len(int i)
{
    return (size_t)(256 * 1024) + (size_t)((i * 7919) % 8) * 256 * 1024; /* 256 KiB..2 MiB */
}

typedef struct storm {
    const char *socket;        /* the reader's and the monitor's owner */
    int n_owners;
    atomic_int written; /* keys 0..written-1 were put */
    atomic_bool done;
    atomic_long hits, misses, corrupt, errors;
    atomic_long samples, over_budget;
} storm;

static void *storm_reader(void *arg)
{
    storm *s = arg;
    int err;
    fx_client *c = fx_connect(s->socket, &err);
    if (!c) {
        s->errors++;
        return NULL;
    }
    unsigned long long rng = 0x5eed;
    while (!s->done) {
        int n = s->written;
        if (n == 0) {
            usleep(1000);
            continue;
        }
        int i = (int)(test_rand(&rng) % (unsigned long long)n);
        char key[32];
        snprintf(key, sizeof key, "storm-%d", i);
        fx_holder *h = NULL;
        int r = fx_get(c, key, strlen(key), &h);
        if (r == 0) {
            s->hits++;
            if (!value_holder_is(h, 1000u + (unsigned)i, storm_len(i)))
                s->corrupt++;
            fx_holder_release(h);
        } else if (r == FX_ENOTFOUND) {
            s->misses++;
        } else {
            s->errors++;
            fprintf(stderr, "storm get %s: %s (%s)\n", key, fx_strerror(r), fx_last_error_detail());
        }
    }
    fx_close(c);
    return NULL;
}

static void *storm_monitor(void *arg)
{
    storm *s = arg;
    int err;
    fx_client *c = fx_connect(s->socket, &err);
    if (!c) {
        s->errors++;
        return NULL;
    }
    while (!s->done) {
        fx_owner_stat st[4];
        size_t n = 0;
        if (fx_stat(c, st, 4, &n) == 0 && (int)n == s->n_owners) {
            s->samples++;
            /* Replicas within budget + reservations; the evictable ones
             * within what the reservations leave of the budget. */
            for (size_t i = 0; i < n; i++) {
                if (st[i].replica_bytes <= st[i].cache_budget + st[i].cache_reserved &&
                    (st[i].cache_weight + st[i].cache_reserved <= st[i].cache_budget ||
                     st[i].cache_weight == 0) &&
                    st[i].memory_used <= st[i].memory_capacity)
                    continue;
                s->over_budget++;
                fprintf(stderr,
                        "over budget on %s: replicas %llu weight %llu reserved %llu budget %llu\n",
                        st[i].name, (unsigned long long)st[i].replica_bytes,
                        (unsigned long long)st[i].cache_weight,
                        (unsigned long long)st[i].cache_reserved,
                        (unsigned long long)st[i].cache_budget);
            }
        }
        usleep(2000);
    }
    fx_close(c);
    return NULL;
}

/* With two owners the writer is on owner0 and the reader on owner1: its gets
 * pull, and durable targets (reserved until GetDone) become replicas there. */
static void test_storm(int n_owners)
{
    test_cluster tc;
    const char *const args[] = {"--placement", "local", NULL};
    REQUIRE(cluster_start_n(&tc, n_owners, STORM_SEGMENT, args) == 0, "cluster start");
    int err;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect: %s", fx_strerror(err));
    fx_owner_stat all[4];
    size_t n_st = 0;
    REQUIRE(fx_stat(c, all, 4, &n_st) == 0 && (int)n_st == n_owners, "stat");
    fx_owner_stat st = all[0];
    CHECK(st.cache_budget == STORM_SEGMENT * 80 / 100, "default budget is 80%% of the segment: %llu",
          (unsigned long long)st.cache_budget);

    storm s = {.socket = tc.sockets[n_owners - 1], .n_owners = n_owners};
    pthread_t reader, monitor;
    REQUIRE(pthread_create(&reader, NULL, storm_reader, &s) == 0, "reader thread");
    REQUIRE(pthread_create(&monitor, NULL, storm_monitor, &s) == 0, "monitor thread");
    /* Two owners: every new key is also pulled once into owner1 (a durable
     * replica there), so owner1 too takes 3x its segment. */
    fx_client *far = n_owners > 1 ? fx_connect(tc.sockets[1], &err) : NULL;
    REQUIRE(n_owners == 1 || far, "connect to owner1");
    int put_failures = 0, far_bad = 0;
    uint64_t total = 0;
    for (int i = 0; i < STORM_KEYS; i++) {
        char key[32];
        snprintf(key, sizeof key, "storm-%d", i);
        int r = value_put(c, key, 1000u + (unsigned)i, storm_len(i));
        if (r) {
            put_failures++;
            fprintf(stderr, "storm put %s: %s (%s)\n", key, fx_strerror(r), fx_last_error_detail());
        }
        fx_holder *fh = NULL;
        if (far && (fx_get(far, key, strlen(key), &fh) != 0 ||
                    !value_holder_is(fh, 1000u + (unsigned)i, storm_len(i))))
            far_bad++;
        fx_holder_release(fh);
        total += storm_len(i);
        s.written = i + 1;
    }
    /* Enough reads to fill the reader's owner with pulled replicas too. */
    for (int t = 0; t < 600 && s.hits + s.misses < 2 * STORM_KEYS; t++)
        usleep(100 * 1000);
    s.done = true;
    pthread_join(reader, NULL);
    pthread_join(monitor, NULL);
    CHECK(total >= 3 * STORM_SEGMENT, "the storm wrote %llu bytes, 3x the segment",
          (unsigned long long)total);
    CHECK(put_failures == 0, "%d puts failed during the storm", put_failures);
    CHECK(far_bad == 0, "%d pulls of a key just put failed or were wrong", far_bad);
    fx_close(far);
    CHECK(s.corrupt == 0, "%ld corrupt values read", (long)s.corrupt);
    CHECK(s.errors == 0, "%ld gets failed with an error other than KeyNotFound", (long)s.errors);
    CHECK(s.hits > 0 && s.misses > 0, "gets saw both hits (%ld) and evicted keys (%ld)",
          (long)s.hits, (long)s.misses);
    CHECK(s.samples > 10 && s.over_budget == 0, "%ld of %ld samples over the budget",
          (long)s.over_budget, (long)s.samples);
    REQUIRE(fx_stat(c, all, 4, &n_st) == 0 && (int)n_st == n_owners, "stat");
    for (int i = 0; i < n_owners; i++) {
        CHECK(all[i].evictions > 0, "replicas were evicted on %s (%llu)", all[i].name,
              (unsigned long long)all[i].evictions);
        CHECK(all[i].cache_weight <= all[i].cache_budget, "cache weight %llu within budget %llu",
              (unsigned long long)all[i].cache_weight, (unsigned long long)all[i].cache_budget);
    }
    /* The newest key was just put: it is readable. */
    char last[32];
    snprintf(last, sizeof last, "storm-%d", STORM_KEYS - 1);
    fx_holder *h = NULL;
    CHECK(fx_get(c, last, strlen(last), &h) == 0 &&
              value_holder_is(h, 1000u + STORM_KEYS - 1, storm_len(STORM_KEYS - 1)),
          "the last key put is readable");
    fx_holder_release(h);
    accounting_check(c, 5000, "after the storm");
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
}

/* ---- pinned ------------------------------------------------------------------ */

#define PIN_SEGMENT (64 * MIB)
#define PIN_LEN (4 * MIB)
#define PIN_MAX 64

static void test_pinned(void)
{
    test_cluster tc;
    REQUIRE(cluster_start(&tc, PIN_SEGMENT) == 0, "cluster start");
    int err;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect: %s", fx_strerror(err));
    fx_holder *held[PIN_MAX] = {0};
    int n_held = 0, r = 0;
    uint64_t failed_after_ms = 0;
    for (int i = 0; i < PIN_MAX; i++) {
        char key[32];
        snprintf(key, sizeof key, "pin-%d", i);
        uint64_t t0 = test_now_ms();
        r = value_put(c, key, 2000u + (unsigned)i, PIN_LEN);
        if (r) {
            failed_after_ms = test_now_ms() - t0;
            break;
        }
        REQUIRE(fx_get(c, key, strlen(key), &held[n_held]) == 0, "get %s", key);
        n_held++;
    }
    CHECK(r == FX_ENOSPC, "with every byte pinned a put fails with NoSpace, got %s (%s)",
          fx_strerror(r), fx_last_error_detail());
    CHECK(strstr(fx_last_error_detail(), "total") && strstr(fx_last_error_detail(), "free"),
          "NoSpace names total and free bytes: %s", fx_last_error_detail());
    CHECK(failed_after_ms <= 5500, "NoSpace came after %llu ms (<= 5.5 s)",
          (unsigned long long)failed_after_ms);
    CHECK(n_held >= (int)(PIN_SEGMENT / PIN_LEN) - 1 && n_held < PIN_MAX,
          "%d values of 4 MiB were pinned in a 64 MiB segment before NoSpace", n_held);
    /* Every pinned value is intact although most of them were evicted. */
    int intact = 0;
    for (int i = 0; i < n_held; i++)
        intact += value_holder_is(held[i], 2000u + (unsigned)i, PIN_LEN);
    CHECK(intact == n_held, "%d of %d pinned holders intact", intact, n_held);
    for (int i = 0; i < n_held; i++)
        fx_holder_release(held[i]);
    r = value_put(c, "pin-after", 77, PIN_LEN);
    CHECK(r == 0, "a put works again once the holders are released: %s (%s)", fx_strerror(r),
          fx_last_error_detail());
    accounting_check(c, 5000, "after releasing the pinned holders");
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
}

/* ---- lease ---------------------------------------------------------------------- */

#define LEASE_SEGMENT (64 * MIB)
#define LEASE_TTL_MS 1500
#define LEASED_KEYS 4

static bool key_exists(fx_client *c, const char *key)
{
    return fx_exists(c, key, strlen(key)) == 1;
}

static void test_lease(void)
{
    test_cluster tc;
    REQUIRE(cluster_start(&tc, LEASE_SEGMENT) == 0, "cluster start");
    int err;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect: %s", fx_strerror(err));
    uint64_t lease = 0;
    REQUIRE(fx_lease_allocate(c, LEASE_TTL_MS, &lease) == 0 && lease != 0, "lease allocate: %s",
            fx_last_error_detail());
    CHECK(fx_lease_allocate(c, 0, &lease) == FX_EINVAL, "a zero TTL is refused");
    fx_put_options lo = {.lease_id = lease};
    for (int i = 0; i < LEASED_KEYS; i++) {
        char key[32];
        snprintf(key, sizeof key, "leased-%d", i);
        uint8_t *v = value_make(3000u + (unsigned)i, MIB);
        CHECK(fx_put_opts(c, key, strlen(key), v, MIB, &lo) == 0, "leased put: %s",
              fx_last_error_detail());
        free(v);
    }
    fx_owner_stat st = stat0(c);
    CHECK(st.cache_reserved >= LEASED_KEYS * MIB, "leased replicas are reserved (%llu bytes)",
          (unsigned long long)st.cache_reserved);
    /* Pressure: 3x the segment of unleased values, keeping the lease alive. */
    uint64_t last_keepalive = test_now_ms();
    for (int i = 0; i < 96; i++) {
        char key[32];
        snprintf(key, sizeof key, "filler-%d", i);
        CHECK(value_put(c, key, 4000u + (unsigned)i, 2 * MIB) == 0, "filler put %d: %s", i,
              fx_last_error_detail());
        if (test_now_ms() - last_keepalive > LEASE_TTL_MS / 4) {
            CHECK(fx_lease_keepalive(c, lease) == 0, "keepalive: %s", fx_last_error_detail());
            last_keepalive = test_now_ms();
        }
    }
    REQUIRE(fx_lease_keepalive(c, lease) == 0, "keepalive: %s", fx_last_error_detail());
    last_keepalive = test_now_ms();
    st = stat0(c);
    CHECK(st.evictions > 0, "the fillers forced evictions (%llu)", (unsigned long long)st.evictions);
    CHECK(!key_exists(c, "filler-0"), "the oldest filler was evicted");
    for (int i = 0; i < LEASED_KEYS; i++) {
        char key[32];
        snprintf(key, sizeof key, "leased-%d", i);
        fx_holder *h = NULL;
        CHECK(fx_get(c, key, strlen(key), &h) == 0 && value_holder_is(h, 3000u + (unsigned)i, MIB),
              "leased key %s survived the pressure", key);
        CHECK(h && fx_holder_source(h) == FX_SRC_MEMORY, "from memory");
        fx_holder_release(h);
    }
    /* No more keepalives: the keys go after the TTL, not before. */
    uint64_t gone_at = 0;
    while (test_now_ms() - last_keepalive < LEASE_TTL_MS + 5000) {
        bool any = false;
        for (int i = 0; i < LEASED_KEYS; i++) {
            char key[32];
            snprintf(key, sizeof key, "leased-%d", i);
            any |= key_exists(c, key);
        }
        if (!any) {
            gone_at = test_now_ms();
            break;
        }
        usleep(20 * 1000);
    }
    CHECK(gone_at != 0, "the leased keys vanished after the TTL");
    CHECK(gone_at - last_keepalive >= LEASE_TTL_MS, "not before the TTL (after %llu ms)",
          (unsigned long long)(gone_at - last_keepalive));
    CHECK(fx_lease_keepalive(c, lease) == FX_ESTALE, "an expired lease cannot be kept alive");
    CHECK(fx_put_opts(c, "late", 4, "x", 1, &lo) == FX_ESTALE, "nor take puts");
    CHECK(!key_exists(c, "late"), "the refused put wrote nothing");
    /* A key rebound by a put without the lease outlives the lease. */
    uint64_t l2 = 0;
    REQUIRE(fx_lease_allocate(c, 300, &l2) == 0, "lease 2");
    fx_put_options o2 = {.lease_id = l2};
    CHECK(fx_put_opts(c, "rebound", 7, "a", 1, &o2) == 0, "put under lease 2");
    CHECK(fx_put(c, "rebound", 7, "b", 1) == 0, "put again without a lease");
    usleep(800 * 1000);
    CHECK(key_exists(c, "rebound"), "the unleased version outlives lease 2");
    accounting_check(c, 5000, "after the leases");
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
}

/* ---- options and queries ------------------------------------------------------- */

static void test_options_and_queries(void)
{
    test_cluster tc;
    REQUIRE(cluster_start(&tc, 64 * MIB) == 0, "cluster start");
    int err;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect: %s", fx_strerror(err));

    /* reject_if_exists */
    fx_put_options ex = {.reject_if_exists = 1};
    CHECK(fx_put_opts(c, "opt", 3, "one", 3, &ex) == 0, "absent key: the put goes through");
    CHECK(fx_put_opts(c, "opt", 3, "two", 3, &ex) == FX_EEXIST, "existing key: AlreadyExists");
    fx_holder *h = NULL;
    CHECK(fx_get(c, "opt", 3, &h) == 0 && fx_holder_len(h) == 3 &&
              memcmp(fx_holder_data(h), "one", 3) == 0,
          "the refused put changed nothing");
    fx_holder_release(h);
    CHECK(fx_put(c, "opt", 3, "six", 3) == 0, "a plain put still overwrites");

    /* reject_if_exists re-checked at commit: a put that completed meanwhile wins. */
    int fd = raw_external_open(tc.socket);
    REQUIRE(fd >= 0, "raw external");
    Fx__ExternalPutStartReq ps = FX__EXTERNAL_PUT_START_REQ__INIT;
    Fx__PutOptions wopt = FX__PUT_OPTIONS__INIT;
    wopt.reject_if_exists = true;
    ps.key = (ProtobufCBinaryData){.len = 4, .data = (uint8_t *)"race"};
    ps.len = 5;
    ps.options = &wopt;
    Fx__ExternalPutStartResp *psr =
        (Fx__ExternalPutStartResp *)raw_external_call(fd, MSG_EXT_PUT_START, &ps.base);
    REQUIRE(psr && psr->status == 0 && psr->put_id, "raw put start");
    CHECK(fx_put(c, "race", 4, "first", 5) == 0, "another put of the key completes first");
    Fx__ExternalPutTransferEndReq pe = FX__EXTERNAL_PUT_TRANSFER_END_REQ__INIT;
    pe.key = ps.key;
    pe.put_id = psr->put_id;
    ProtobufCMessage *per = raw_external_call(fd, MSG_EXT_PUT_TRANSFER_END, &pe.base);
    CHECK(per && msg_status(per) == FX_EEXIST, "the put-if-absent is refused at commit (%d)",
          per ? msg_status(per) : -999);
    msg_free(per);
    msg_free(&psr->base);
    CHECK(fx_get(c, "race", 4, &h) == 0 && fx_holder_len(h) == 5 &&
              memcmp(fx_holder_data(h), "first", 5) == 0,
          "the completed put's value stands");
    fx_holder_release(h);

    /* reject_if_inflight_same_key */
    Fx__PutId pid = FX__PUT_ID__INIT;
    REQUIRE(raw_external_put_start(fd, "busy", 16, &pid) == 0, "a put of 'busy' left in flight");
    fx_put_options bz = {.reject_if_inflight_same_key = 1};
    CHECK(fx_put_opts(c, "busy", 4, "x", 1, &bz) == FX_EBUSY, "Busy while another put is in flight");
    CHECK(fx_put(c, "busy", 4, "y", 1) == 0, "without the option the put goes through");
    close(fd); /* the owner revokes the started put */
    int r = FX_EBUSY;
    for (int i = 0; i < 200 && r == FX_EBUSY; i++) {
        r = fx_put_opts(c, "busy", 4, "z", 1, &bz);
        if (r == FX_EBUSY)
            usleep(10 * 1000);
    }
    CHECK(r == 0, "once the other put is revoked the option lets it through: %s", fx_strerror(r));

    /* exists, get_size, count_prefix (binary keys included) */
    const char bin[] = {'p', '/', 0, 1};
    const char *keys[] = {"p/a/1", "p/a/2", "p/ab", "p/b/1", "q/1"};
    for (size_t i = 0; i < 5; i++)
        REQUIRE(fx_put(c, keys[i], strlen(keys[i]), keys[i], strlen(keys[i])) == 0, "put %s",
                keys[i]);
    REQUIRE(fx_put(c, bin, sizeof bin, "bin", 3) == 0, "put a binary key");
    CHECK(fx_exists(c, "p/a/1", 5) == 1, "exists");
    CHECK(fx_exists(c, "p/a/3", 5) == 0, "does not exist");
    CHECK(fx_exists(c, "", 0) == FX_EINVAL, "an empty key is invalid");
    uint64_t size = 0;
    CHECK(fx_get_size(c, "p/b/1", 5, &size) == 0 && size == 5, "get_size %llu",
          (unsigned long long)size);
    CHECK(fx_get_size(c, "nope", 4, &size) == FX_ENOTFOUND, "get_size of a missing key");
    uint64_t n = 0;
    CHECK(fx_count_prefix(c, "p/a/", 4, &n) == 0 && n == 2, "p/a/ -> %llu", (unsigned long long)n);
    CHECK(fx_count_prefix(c, "p/a", 3, &n) == 0 && n == 3, "p/a -> %llu", (unsigned long long)n);
    CHECK(fx_count_prefix(c, "p/", 2, &n) == 0 && n == 5, "p/ -> %llu", (unsigned long long)n);
    CHECK(fx_count_prefix(c, bin, 3, &n) == 0 && n == 1, "binary prefix -> %llu",
          (unsigned long long)n);
    CHECK(fx_count_prefix(c, "x", 1, &n) == 0 && n == 0, "x -> %llu", (unsigned long long)n);
    uint64_t all = 0;
    CHECK(fx_count_prefix(c, NULL, 0, &all) == 0 && all == 9, "every key -> %llu",
          (unsigned long long)all);
    REQUIRE(fx_delete(c, "p/a/1", 5) == 0, "delete");
    CHECK(fx_count_prefix(c, "p/a", 3, &n) == 0 && n == 2, "after a delete p/a -> %llu",
          (unsigned long long)n);
    CHECK(fx_exists(c, "p/a/1", 5) == 0, "deleted key does not exist");
    REQUIRE(fx_put(c, "p/a/2", 5, "again", 5) == 0, "overwrite");
    CHECK(fx_count_prefix(c, "p/a", 3, &n) == 0 && n == 2, "an overwrite counts once -> %llu",
          (unsigned long long)n);
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
}

/* ---- values near the limits ------------------------------------------------- */

/* A value larger than the budget (but not the segment) is stored and
 * readable: making room happens before it enters the cache, so it is not its
 * own victim. A value larger than the segment is refused (by the owner,
 * before the master) and evicts nothing. */
static void test_big_values(void)
{
    test_cluster tc;
    REQUIRE(cluster_start(&tc, 64 * MIB) == 0, "cluster start");
    int err;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect: %s", fx_strerror(err));
    REQUIRE(value_put(c, "small", 1, MIB) == 0, "put small");
    fx_holder *h = NULL;
    int r = value_put(c, "huge", 2, 100 * MIB);
    CHECK(r == FX_ENOSPC, "a value larger than the segment: NoSpace (%s)", fx_strerror(r));
    fx_owner_stat st = stat0(c);
    CHECK(st.evictions == 0, "it evicted nothing (%llu)", (unsigned long long)st.evictions);
    CHECK(fx_get(c, "small", 5, &h) == 0 && value_holder_is(h, 1, MIB), "small still there");
    fx_holder_release(h);
    size_t over = (size_t)(st.cache_budget + 4 * MIB); /* > budget, < segment */
    r = value_put(c, "over-budget", 3, over);
    CHECK(r == 0, "a value larger than the budget is stored: %s (%s)", fx_strerror(r),
          fx_last_error_detail());
    h = NULL;
    CHECK(fx_get(c, "over-budget", 11, &h) == 0 && value_holder_is(h, 3, over),
          "and readable right after its put returned");
    fx_holder_release(h);
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
}

/* A get whose value is larger than the requester's whole segment (it lives
 * on a bigger owner) is refused with NoSpace at once, and the small owner's
 * replicas are not evicted for it: emptying the segment could never make the
 * value fit. */
static void test_get_larger_than_segment(void)
{
    static const char *const args[] = {"--placement", "local", NULL};
    test_cluster tc;
    REQUIRE(cluster_start_n(&tc, 2, 256 * MIB, args) == 0, "cluster start");
    /* Owner 1 comes back with a 64 MiB segment. */
    tc.memory_size = 64 * MIB;
    REQUIRE(cluster_kill_owner(&tc, 1) == 0 && cluster_restart_owner(&tc, 1) == 0,
            "restart owner 1 with 64 MiB");
    int err;
    fx_client *big = fx_connect(tc.sockets[0], &err);
    REQUIRE(big, "connect owner 0: %s", fx_strerror(err));
    fx_client *small = fx_connect(tc.sockets[1], &err);
    REQUIRE(small, "connect owner 1: %s", fx_strerror(err));
    REQUIRE(value_put(big, "huge", 1, 100 * MIB) == 0, "put 100 MiB on owner 0: %s",
            fx_last_error_detail());
    for (int i = 0; i < 8; i++) {
        char k[16];
        snprintf(k, sizeof k, "small-%d", i);
        REQUIRE(value_put(small, k, 2, MIB) == 0, "put %s on owner 1", k);
    }
    fx_holder *h = NULL;
    int r = fx_get(small, "huge", 4, &h);
    CHECK(r == FX_ENOSPC && h == NULL, "get of 100 MiB into a 64 MiB segment: %s (%s)",
          fx_strerror(r), fx_last_error_detail());
    fx_owner_stat st[2];
    size_t n = 0;
    memset(st, 0, sizeof st);
    REQUIRE(fx_stat(small, st, 2, &n) == 0 && n == 2, "fx_stat: %s", fx_last_error_detail());
    const fx_owner_stat *s1 = st[0].memory_capacity == 64 * MIB ? &st[0] : &st[1];
    CHECK(s1->memory_capacity == 64 * MIB && s1->evictions == 0,
          "owner 1 (%llu bytes) evicted %llu replicas for a get that can never fit",
          (unsigned long long)s1->memory_capacity, (unsigned long long)s1->evictions);
    for (int i = 0; i < 8; i++) {
        char k[16];
        snprintf(k, sizeof k, "small-%d", i);
        h = NULL;
        CHECK(fx_get(small, k, strlen(k), &h) == 0 && value_holder_is(h, 2, MIB) &&
                  fx_holder_source(h) == FX_SRC_MEMORY,
              "%s is still served from owner 1's memory", k);
        fx_holder_release(h);
    }
    h = NULL;
    CHECK(fx_get(big, "huge", 4, &h) == 0 && value_holder_is(h, 1, 100 * MIB),
          "the big value is still readable on owner 0");
    fx_holder_release(h);
    fx_close(small);
    fx_close(big);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
}

/* ---- dead external ------------------------------------------------------------ */

#define DEAD_KEYS 1000
#define DEAD_LEN 4096

static void test_dead_external(void)
{
    test_cluster tc;
    REQUIRE(cluster_start(&tc, 64 * MIB) == 0, "cluster start");
    int err;
    fx_client *c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect: %s", fx_strerror(err));
    for (int i = 0; i < DEAD_KEYS; i++) {
        char key[32];
        snprintf(key, sizeof key, "dead-%d", i);
        REQUIRE(value_put(c, key, 5000u + (unsigned)i, DEAD_LEN) == 0, "put %s", key);
    }
    int ready[2];
    REQUIRE(pipe(ready) == 0, "pipe");
    pid_t child = fork();
    REQUIRE(child >= 0, "fork");
    if (child == 0) {
        close(ready[0]);
        fx_client *cc = fx_connect(tc.socket, &err);
        int got = 0;
        for (int i = 0; cc && i < DEAD_KEYS; i++) {
            char key[32];
            snprintf(key, sizeof key, "dead-%d", i);
            fx_holder *h; /* kept: the process dies holding it */
            got += fx_get(cc, key, strlen(key), &h) == 0;
        }
        char b = got == DEAD_KEYS ? 'y' : 'n';
        if (write(ready[1], &b, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(ready[1]);
    char b = 0;
    CHECK(read(ready[0], &b, 1) == 1 && b == 'y', "the child holds %d holders", DEAD_KEYS);
    close(ready[0]);
    /* Delete every key: only the child's holders keep the bytes now. */
    for (int i = 0; i < DEAD_KEYS; i++) {
        char key[32];
        snprintf(key, sizeof key, "dead-%d", i);
        CHECK(fx_delete(c, key, strlen(key)) == 0, "delete %s", key);
    }
    usleep(200 * 1000);
    fx_owner_stat st = stat0(c);
    CHECK(st.replica_bytes == 0 && st.memory_used >= (uint64_t)DEAD_KEYS * DEAD_LEN,
          "the dead keys' bytes are pinned by the holders: used %llu, replicas %llu",
          (unsigned long long)st.memory_used, (unsigned long long)st.replica_bytes);
    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    accounting_check(c, 5000, "after the holding external was killed");
    st = stat0(c);
    CHECK(st.memory_used == 0 && st.holding_bytes == 0,
          "every holder reclaimed: used %llu, holding %llu", (unsigned long long)st.memory_used,
          (unsigned long long)st.holding_bytes);
    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "clean stop");
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || !strcmp(only, "options"))
        test_options_and_queries();
    if (!only || !strcmp(only, "dead"))
        test_dead_external();
    if (!only || !strcmp(only, "big"))
        test_big_values();
    if (!only || !strcmp(only, "getbig"))
        test_get_larger_than_segment();
    if (!only || !strcmp(only, "pinned"))
        test_pinned();
    if (!only || !strcmp(only, "lease"))
        test_lease();
    if (!only || !strcmp(only, "storm"))
        test_storm(1);
    if (!only || !strcmp(only, "storm2"))
        test_storm(2);
    return test_finish();
}
