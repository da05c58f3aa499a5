/*
 * test_master_restart.c - the cache survives a master restart: kill -9 of
 * the master leaves the owners, their values and the externals' holders in
 * place, and a master started again on the same address learns the cluster
 * back from the owners.
 *
 *   1. master_restart: one master (placement local), two owners with SSD
 *      tiers and master_wait 2s, 300 values of 4 KiB to 1 MiB put through
 *      one client per owner (some overwritten, some deleted; the bytes derive
 *      from key and version, so an old version cannot pass for the latest),
 *      and holders taken before some of their keys changed. kill -9 of the
 *      master, then during the outage: the owners keep running with the same
 *      pids, the holders read their bytes, a get the owner's cache serves
 *      still works, and a put fails with MasterUnavailable within
 *      master_wait. The master started again on the same address: within
 *      5 s of the restart every live value reads back its latest bytes
 *      through either owner (from memory or SSD), every deleted key is
 *      KeyNotFound, no overwritten key returns old bytes, the put refused
 *      during the outage left nothing, new puts (a fresh key, an overwrite)
 *      get put_ids above every put_id of before the kill, and the holders
 *      still read their bytes after a burst of new puts of their sizes
 *      (which would reuse their ranges had the master forgotten them).
 *   2. owner_restarted_too: the master is killed, owner1 is killed while
 *      it is down, the master starts again and then owner1 (a new
 *      incarnation): owner0's values read back through both owners, deleted
 *      keys stay deleted, owner1's old keys give KeyNotFound or their latest
 *      bytes (never older ones), and a new put through owner1 reads back
 *      through owner0.
 *   3. overwrite_at_crash: a key put through owner1, a master started with
 *      the test hook FLUXON_TEST_KILL_AT_PUT_DONE_ANSWER, then an overwrite
 *      through owner0: the master dies (SIGKILL, its own) after owner1
 *      acknowledged the drop of version 1, before owner0 hears the answer.
 *      The put fails MasterUnavailable; the master started again: the key
 *      reads version 2 through both owners (neither lost nor version 1).
 *   4. puts_out_of_order: two puts of one key through owner0 (fx_put_begin),
 *      the second started committed first: the key reads the version of the
 *      higher put_id (the rule a recovering master applies), and after new
 *      puts reused the freed ranges and a kill -9 and restart of the master,
 *      the same version, through both owners.
 *
 * The recovery time (restart to the first get that needs the new master) is
 * printed. Run one scenario alone with its name as the only argument.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "raw_member.h"
#include "testlib.h"
#include "values.h"

/* MasterUnavailable: a call that waited master_wait for a master. */
#ifndef FX_EMASTER
#define FX_EMASTER (-14)
#endif

#define KIB (1ull << 10)
#define MIB (1ull << 20)

#define N_OWNERS 2
#define N_KEYS 300
/* Per owner: half of the segment for replicas (cache_budget 50), less than
 * the owner's values, so that some live on SSD only; the other half is the
 * room for staging, get targets and the holders kept across the restart. */
#define SEGMENT (16 * MIB)
#define SSD_TIER (64 * MIB) /* per owner: room for every version ever written, no ring eviction */
#define OWNER_YAML "master_wait: 2s\n"
#define MASTER_WAIT_MS 2000
#define PUT_FAIL_MIN_MS 1500 /* a put refused during the outage waited about master_wait */
#define PUT_FAIL_MAX_MS 4000
#define RECOVERY_MS 5000 /* from the restart to every live value readable */
#define POLL_MS 50
#define NOTICE_MS 300 /* an owner that stops on losing its master does so well within this */
#define BURST_ROUNDS 8 /* new puts of each held value's size after the restart */

static const char *const master_args[] = {"--placement", "local", "--cache-budget", "50", NULL};

/* ---- the keys and their versions ------------------------------------------- */

enum size_class { SIZE_4K, SIZE_64K, SIZE_1M };
enum change { UNCHANGED, OVERWRITTEN, DELETED };

typedef struct key_state {
    char name[32];
    int owner;        /* whose client put it: with placement local, where it lives */
    uint32_t version; /* the latest version put (1: the first) */
    bool deleted;
} key_state;

/* 24 keys of 1 MiB (12 per owner), 68 of 64 KiB, the rest 4 KiB: about
 * 15 MiB per owner, more than its segment's cache budget. */
static enum size_class size_class_of(int i)
{
    int m = i % 50;
    if (m == 8 || m == 9 || m == 12 || m == 17)
        return SIZE_1M;
    if (i % 8 == 3 || i % 8 == 4)
        return SIZE_64K;
    return SIZE_4K;
}

/* Odd lengths, and each version of a key a different one. */
static size_t key_len(int i, uint32_t version)
{
    static const size_t base[] = {[SIZE_4K] = 4 * KIB, [SIZE_64K] = 64 * KIB, [SIZE_1M] = MIB};
    return base[size_class_of(i)] - (size_t)(i % 7) * 13 + (size_t)(version - 1) * 517;
}

static unsigned long long version_seed(const char *name, uint32_t version)
{
    return (XXH3_64bits(name, strlen(name)) ^ (version * 0x9E3779B97F4A7C15ULL)) | 1;
}

/* What happens to key i after its first put. */
static bool overwritten_key(int i)
{
    return i % 5 == 2;
}
static bool deleted_key(int i)
{
    return i % 7 == 3;
}
static enum change change_of(int i)
{
    return deleted_key(i) ? DELETED : overwritten_key(i) ? OVERWRITTEN : UNCHANGED;
}

/* ---- one run: the cluster, a client per owner, the keys -------------------- */

typedef struct held_value {
    fx_holder *h;
    int key;          /* index into keys */
    uint32_t version; /* the version it holds */
    int segment;      /* the owner whose segment holds the bytes (its client's) */
    const char *what; /* why this one is held (a string literal) */
} held_value;

#define MAX_HELD 8

typedef struct restart_run {
    test_cluster tc;
    fx_client *c[N_OWNERS]; /* one per owner; they live across the outage */
    pid_t owner_pid[N_OWNERS];
    key_state keys[N_KEYS];
    held_value held[MAX_HELD];
    int n_held;
    uint64_t max_pid_time; /* the largest put_id of the live keys before the kill */
    uint32_t max_pid_version;
} restart_run;

static int put_version(restart_run *run, int i, uint32_t version)
{
    key_state *k = &run->keys[i];
    int r = value_put(run->c[k->owner], k->name, version_seed(k->name, version), key_len(i, version));
    if (r == 0) {
        k->version = version;
        k->deleted = false;
    }
    return r;
}

static void start_run(restart_run *run)
{
    memset(run, 0, sizeof *run);
    int rc = cluster_start_ssd_yaml(&run->tc, N_OWNERS, SEGMENT, SSD_TIER, master_args, OWNER_YAML);
    REQUIRE(rc == 0, "cluster start: a master and %d owners with SSD tiers and '%.*s' (an owner "
                     "without master_wait refuses the key: see its log above)",
            N_OWNERS, (int)strlen(OWNER_YAML) - 1, OWNER_YAML);
    for (int o = 0; o < N_OWNERS; o++) {
        int err = 0;
        run->c[o] = fx_connect(run->tc.sockets[o], &err);
        REQUIRE(run->c[o], "connect to owner%d: %s", o, fx_strerror(err));
        run->owner_pid[o] = run->tc.owner_pids[o];
    }
    for (int i = 0; i < N_KEYS; i++) {
        snprintf(run->keys[i].name, sizeof run->keys[i].name, "restart-%03d", i);
        run->keys[i].owner = i % N_OWNERS;
    }
}

/* Every key's first version, through its owner's client. */
static void put_first_versions(restart_run *run)
{
    for (int i = 0; i < N_KEYS; i++) {
        int r = put_version(run, i, 1);
        REQUIRE(r == 0, "put %s (%zu bytes): %s (%s)", run->keys[i].name, key_len(i, 1),
                fx_strerror(r), fx_last_error_detail());
    }
}

/* Overwrites (twice for some) and deletes; returns how many of each. */
static void change_keys(restart_run *run, int *n_over, int *n_del)
{
    *n_over = *n_del = 0;
    for (int i = 0; i < N_KEYS; i++) {
        if (!overwritten_key(i))
            continue;
        uint32_t last = i % 25 == 2 ? 3 : 2;
        for (uint32_t v = 2; v <= last; v++) {
            int r = put_version(run, i, v);
            REQUIRE(r == 0, "overwrite %s with version %u: %s (%s)", run->keys[i].name, v,
                    fx_strerror(r), fx_last_error_detail());
        }
        (*n_over)++;
    }
    for (int i = 0; i < N_KEYS; i++) {
        if (!deleted_key(i))
            continue;
        key_state *k = &run->keys[i];
        int r = fx_delete(run->c[k->owner], k->name, strlen(k->name));
        REQUIRE(r == 0, "delete %s: %s (%s)", k->name, fx_strerror(r), fx_last_error_detail());
        k->deleted = true;
        (*n_del)++;
    }
}

/* The first key of owner o (scanning up, or down) with this size and change;
 * -1 when there is none. */
static int find_key(int o, enum size_class size, enum change change, bool from_end)
{
    for (int n = 0; n < N_KEYS; n++) {
        int i = from_end ? N_KEYS - 1 - n : n;
        if (i % N_OWNERS == o && size_class_of(i) == size && change_of(i) == change)
            return i;
    }
    return -1;
}

/* ---- reading values back --------------------------------------------------- */

enum read_result { READ_LATEST, READ_WRONG, READ_FAILED };

/* Gets key i through c and compares with its latest version (or absence).
 * detail says what came back when it is not what should be there; *rc (may
 * be NULL) is fx_get's result. */
static enum read_result read_key(fx_client *c, const restart_run *run, int i, int *source,
                                 int *rc, char *detail, size_t cap)
{
    const key_state *k = &run->keys[i];
    fx_holder *h = NULL;
    int r = fx_get(c, k->name, strlen(k->name), &h);
    detail[0] = 0;
    if (rc)
        *rc = r;
    if (r != 0) {
        snprintf(detail, cap, "%s (%s)", fx_strerror(r), fx_last_error_detail());
        if (k->deleted && r == FX_ENOTFOUND)
            return READ_LATEST;
        return READ_FAILED;
    }
    enum read_result res = READ_WRONG;
    if (k->deleted) {
        snprintf(detail, cap, "%zu bytes of a deleted key", fx_holder_len(h));
    } else if (value_holder_is(h, version_seed(k->name, k->version), key_len(i, k->version))) {
        res = READ_LATEST;
        if (source)
            *source = fx_holder_source(h);
    } else {
        snprintf(detail, cap, "%zu bytes that are not version %u", fx_holder_len(h), k->version);
    }
    /* Name an old version when it is one: that is the bug to see. */
    for (uint32_t v = 1; res == READ_WRONG && v <= 3; v++)
        if ((k->deleted || v != k->version) &&
            value_holder_is(h, version_seed(k->name, v), key_len(i, v)))
            snprintf(detail, cap, "the bytes of old version %u (latest %u%s)", v, k->version,
                     k->deleted ? ", deleted" : "");
    fx_holder_release(h);
    return res;
}

/* Reads every key through each of clients (one per owner) until it gives
 * its latest bytes (or KeyNotFound when deleted). A failed read is retried
 * every POLL_MS until deadline_ms; wrong bytes fail at once. Keys of owners
 * listed in dead_owner may also be KeyNotFound. Returns the number of keys
 * that did not read back; counts the sources of the reads. */
static int verify_all(const restart_run *run, fx_client *const *clients, uint64_t deadline_ms,
                      const bool *dead_owner, int *from_memory, int *from_ssd, int *gone)
{
    int bad = 0;
    for (int i = 0; i < N_KEYS; i++) {
        const key_state *k = &run->keys[i];
        for (int via = 0; via < N_OWNERS; via++) {
            char detail[256];
            int source = 0, rc = 0;
            bool dead = dead_owner && dead_owner[k->owner];
            enum read_result res;
            for (;;) {
                res = read_key(clients[via], run, i, &source, &rc, detail, sizeof detail);
                if (res != READ_FAILED || (dead && rc == FX_ENOTFOUND) || test_now_ms() >= deadline_ms)
                    break;
                test_sleep_ms(POLL_MS);
            }
            if (res == READ_FAILED && dead && rc == FX_ENOTFOUND) {
                (*gone)++;
                continue;
            }
            if (res == READ_LATEST) {
                if (!k->deleted && source == FX_SRC_SSD)
                    (*from_ssd)++;
                else if (!k->deleted)
                    (*from_memory)++;
                continue;
            }
            bad++;
            CHECK(false, "%s (owner%d's, version %u%s) through owner%d: %s", k->name, k->owner,
                  k->version, k->deleted ? ", deleted" : "", via, detail);
        }
    }
    return bad;
}

/* A client per owner, new (no index of its own), for reads after the restart. */
static void connect_fresh(const restart_run *run, fx_client **out)
{
    for (int o = 0; o < N_OWNERS; o++) {
        int err = 0;
        out[o] = fx_connect(run->tc.sockets[o], &err);
        REQUIRE(out[o], "connect a new client to owner%d: %s", o, fx_strerror(err));
    }
}

static void close_all(fx_client **c)
{
    for (int o = 0; o < N_OWNERS; o++) {
        fx_close(c[o]);
        c[o] = NULL;
    }
}

/* ---- owners, holders, put ids ------------------------------------------------ */

/* The owners still run, as the processes they were at the start. */
static void require_owners_unchanged(const restart_run *run, const char *when)
{
    for (int o = 0; o < N_OWNERS; o++) {
        char why[160];
        bool running = cluster_owner_running(&run->tc, o, why, sizeof why);
        REQUIRE(running, "%s: owner%d keeps running after the master died: %s", when, o, why);
        REQUIRE(run->tc.owner_pids[o] == run->owner_pid[o],
                "%s: owner%d is the same process (pid %d, now %d)", when, o,
                (int)run->owner_pid[o], (int)run->tc.owner_pids[o]);
    }
}

static void hold(restart_run *run, int i, int via, const char *what)
{
    REQUIRE(i >= 0 && run->n_held < MAX_HELD, "a key to hold: %s", what);
    held_value *hv = &run->held[run->n_held++];
    const key_state *k = &run->keys[i];
    int r = fx_get(run->c[via], k->name, strlen(k->name), &hv->h);
    REQUIRE(r == 0, "get %s to hold it: %s (%s)", k->name, fx_strerror(r), fx_last_error_detail());
    hv->key = i;
    hv->version = k->version;
    hv->segment = via;
    hv->what = what;
}

/* Holders on values that stay, and on values overwritten or deleted after
 * they were taken: then only the holder keeps the old bytes. */
static void take_holders(restart_run *run)
{
    for (int o = 0; o < N_OWNERS; o++) {
        hold(run, find_key(o, SIZE_1M, UNCHANGED, false), o, "a 1 MiB value left alone");
        hold(run, find_key(o, SIZE_64K, OVERWRITTEN, false), o, "a 64 KiB value overwritten later");
        hold(run, find_key(o, o == 0 ? SIZE_1M : SIZE_4K, DELETED, false), o,
             "a value deleted later");
    }
    hold(run, find_key(1, SIZE_64K, UNCHANGED, false), 0,
         "owner1's 64 KiB value, copied into owner0 by the get");
}

static int check_holders(const restart_run *run, const char *when)
{
    int bad = 0;
    for (int n = 0; n < run->n_held; n++) {
        const held_value *hv = &run->held[n];
        const key_state *k = &run->keys[hv->key];
        bool ok = value_holder_is(hv->h, version_seed(k->name, hv->version),
                                  key_len(hv->key, hv->version));
        bad += !ok;
        CHECK(ok, "%s: the holder of %s (%s in owner%d's segment) still reads version %u", when,
              hv->what, k->name, hv->segment, hv->version);
    }
    return bad;
}

static void release_holders(restart_run *run)
{
    for (int n = 0; n < run->n_held; n++)
        fx_holder_release(run->held[n].h);
    run->n_held = 0;
}

static int put_id_cmp(uint64_t ta, uint32_t va, uint64_t tb, uint32_t vb)
{
    if (ta != tb)
        return ta < tb ? -1 : 1;
    return va < vb ? -1 : va > vb;
}

static int register_observer(const restart_run *run, raw_member *obs)
{
    return raw_member_register_secret(obs, run->tc.master_addr, "test", "restart-observer", 1,
                                      run->tc.secret_file);
}

/* Before the kill: the largest put_id of the live keys, and where their
 * replicas are (printed: values reach SSD asynchronously). A short-lived
 * member of its own (1-byte segment, placement local: never a target). */
static void record_put_ids(restart_run *run)
{
    raw_member obs;
    REQUIRE(register_observer(run, &obs) == 0, "an observer registers with the master");
    int mem_only = 0, ssd_only = 0, both = 0;
    for (int i = 0; i < N_KEYS; i++) {
        const key_state *k = &run->keys[i];
        if (k->deleted)
            continue;
        raw_route rt;
        int r = raw_member_route(&obs, k->name, &rt);
        CHECK(r == 0 && rt.found && (rt.pid_time || rt.pid_version),
              "the master routes %s with a put_id (%s)", k->name, fx_strerror(r));
        if (put_id_cmp(rt.pid_time, rt.pid_version, run->max_pid_time, run->max_pid_version) > 0) {
            run->max_pid_time = rt.pid_time;
            run->max_pid_version = rt.pid_version;
        }
        mem_only += rt.mem && !rt.ssd;
        ssd_only += !rt.mem && rt.ssd;
        both += rt.mem && rt.ssd;
    }
    raw_member_close(&obs);
    printf("before the kill: %d live values in memory only, %d on SSD only, %d in both; "
           "largest put_id (%llu, %u)\n",
           mem_only, ssd_only, both, (unsigned long long)run->max_pid_time, run->max_pid_version);
    CHECK(ssd_only + both > 0, "some values reached the SSD tiers before the kill");
}

/* The route's put_id of key is above every put_id recorded before the kill. */
static void check_new_put_id(raw_member *obs, const restart_run *run, const char *key,
                             const char *what)
{
    raw_route rt;
    int r = raw_member_route(obs, key, &rt);
    CHECK(r == 0 && rt.found, "the restarted master routes %s (%s): %s", key, what, fx_strerror(r));
    CHECK(put_id_cmp(rt.pid_time, rt.pid_version, run->max_pid_time, run->max_pid_version) > 0,
          "%s: put_id (%llu, %u) is above every put_id before the kill, up to (%llu, %u)", what,
          (unsigned long long)rt.pid_time, rt.pid_version, (unsigned long long)run->max_pid_time,
          run->max_pid_version);
}

/* ---- 1. master restart --------------------------------------------------------- */

/* The owner-cache key is read twice through owner0's client (the first get
 * leaves owner0's cache holding the replica); returns its index. */
static int warm_owner_cache(restart_run *run)
{
    int i = find_key(0, SIZE_4K, UNCHANGED, true);
    REQUIRE(i >= 0, "a 4 KiB key of owner0 for its cache");
    char detail[256];
    for (int n = 0; n < 2; n++)
        REQUIRE(read_key(run->c[0], run, i, NULL, NULL, detail, sizeof detail) == READ_LATEST,
                "get %s through owner0 (%d): %s", run->keys[i].name, n + 1, detail);
    return i;
}

static void outage_checks(restart_run *run, int cached_key, const char *refused_key)
{
    test_sleep_ms(NOTICE_MS);
    require_owners_unchanged(run, "right after the kill");
    check_holders(run, "during the outage");

    /* A client of its own, so that its index does not answer: only the
     * owner's cache can, without a master. */
    int err = 0;
    fx_client *fresh = fx_connect(run->tc.sockets[0], &err);
    CHECK(fresh, "connect a new client to owner0 during the outage: %s", fx_strerror(err));
    if (fresh) {
        char detail[256];
        int source = 0;
        enum read_result res = read_key(fresh, run, cached_key, &source, NULL, detail, sizeof detail);
        CHECK(res == READ_LATEST && source == FX_SRC_MEMORY,
              "during the outage, owner0's cache serves %s: %s", run->keys[cached_key].name,
              res == READ_LATEST ? "from memory" : detail);
        fx_close(fresh);
    }

    uint8_t *v = value_make(version_seed(refused_key, 1), 4 * KIB);
    uint64_t t = test_now_ms();
    int r = fx_put(run->c[0], refused_key, strlen(refused_key), v, 4 * KIB);
    uint64_t took = test_now_ms() - t;
    free(v);
    printf("during the outage: a put failed with %s after %llu ms (master_wait %d ms)\n",
           fx_strerror(r), (unsigned long long)took, MASTER_WAIT_MS);
    CHECK(r == FX_EMASTER, "a put without a master fails with MasterUnavailable (%d), not %s (%s)",
          FX_EMASTER, fx_strerror(r), fx_last_error_detail());
    CHECK(took >= PUT_FAIL_MIN_MS && took <= PUT_FAIL_MAX_MS,
          "the put waited about master_wait: %llu ms (%d..%d)", (unsigned long long)took,
          PUT_FAIL_MIN_MS, PUT_FAIL_MAX_MS);
    require_owners_unchanged(run, "after the outage's calls");
}

/* Polls probe (a key of owner1 read through a new client of owner0: only a
 * master that knows owner1's replica can plan it) until it reads back.
 * Returns the milliseconds from restarted_at. */
static uint64_t wait_recovery(const restart_run *run, int probe, uint64_t restarted_at)
{
    int err = 0;
    fx_client *c = fx_connect(run->tc.sockets[0], &err);
    REQUIRE(c, "connect a new client to owner0 after the restart: %s", fx_strerror(err));
    char detail[256] = "";
    enum read_result res = READ_FAILED;
    while (test_now_ms() < restarted_at + RECOVERY_MS) {
        res = read_key(c, run, probe, NULL, NULL, detail, sizeof detail);
        if (res != READ_FAILED)
            break;
        test_sleep_ms(POLL_MS);
    }
    uint64_t took = test_now_ms() - restarted_at;
    fx_close(c);
    REQUIRE(res == READ_LATEST, "within %d ms of the restart, %s (owner1's) reads back through "
                                "owner0: after %llu ms, %s",
            RECOVERY_MS, run->keys[probe].name, (unsigned long long)took, detail);
    return took;
}

/* New puts of each held value's size in the holders' segments: ranges the
 * master forgot were held would be reused now. */
static void burst_of_held_sizes(restart_run *run)
{
    char key[64];
    for (int round = 0; round < BURST_ROUNDS; round++)
        for (int n = 0; n < run->n_held; n++) {
            const held_value *hv = &run->held[n];
            size_t len = key_len(hv->key, hv->version);
            snprintf(key, sizeof key, "burst-%d-%d", n, round);
            int r = value_put(run->c[hv->segment], key, version_seed(key, 1), len);
            CHECK(r == 0, "put %s (%zu bytes) through owner%d after the restart: %s (%s)", key,
                  len, hv->segment, fx_strerror(r), fx_last_error_detail());
        }
}

static void master_restart(void)
{
    restart_run run;
    start_run(&run);
    put_first_versions(&run);
    take_holders(&run);
    int n_over, n_del;
    change_keys(&run, &n_over, &n_del);
    printf("put %d keys through 2 owners: %d overwritten, %d deleted, %d holders kept\n", N_KEYS,
           n_over, n_del, run.n_held);
    REQUIRE(check_holders(&run, "before the kill") == 0, "holders read right before the kill");
    record_put_ids(&run);
    int cached_key = warm_owner_cache(&run);
    int probe = find_key(1, SIZE_4K, UNCHANGED, true);
    REQUIRE(probe >= 0, "a 4 KiB key of owner1 to probe the recovery");
    const char *refused_key = "put-during-outage";

    REQUIRE(cluster_kill_master(&run.tc) == 0, "kill -9 the master");
    outage_checks(&run, cached_key, refused_key);

    uint64_t restarted_at = test_now_ms();
    REQUIRE(cluster_restart_master(&run.tc) == 0, "start the master again on %s",
            run.tc.master_addr);
    uint64_t took = wait_recovery(&run, probe, restarted_at);
    printf("recovery: %s (owner1's) read back through owner0 %llu ms after the restart\n",
           run.keys[probe].name, (unsigned long long)took);
    require_owners_unchanged(&run, "after the restart");

    fx_client *fresh[N_OWNERS];
    connect_fresh(&run, fresh);
    int from_memory = 0, from_ssd = 0, gone = 0;
    int bad = verify_all(&run, fresh, restarted_at + RECOVERY_MS, NULL, &from_memory, &from_ssd,
                         &gone);
    printf("after the restart: %d keys through both owners, %d reads from memory, %d from SSD, "
           "%d wrong (done %llu ms after the restart)\n",
           N_KEYS, from_memory, from_ssd, bad, (unsigned long long)(test_now_ms() - restarted_at));
    CHECK(bad == 0, "every live value reads its latest bytes, every deleted key is KeyNotFound");
    fx_holder *h = NULL;
    int r = fx_get(fresh[0], refused_key, strlen(refused_key), &h);
    CHECK(r == FX_ENOTFOUND, "the put refused during the outage left nothing: %s",
          fx_strerror(r));
    fx_holder_release(h);
    close_all(fresh);

    /* New puts: a fresh key, and an overwrite of one of owner1's keys. */
    const char *fresh_key = "put-after-restart";
    r = value_put(run.c[0], fresh_key, version_seed(fresh_key, 1), 4 * KIB);
    CHECK(r == 0, "put %s after the restart: %s (%s)", fresh_key, fx_strerror(r),
          fx_last_error_detail());
    int over = find_key(1, SIZE_64K, OVERWRITTEN, true);
    REQUIRE(over >= 0, "a key of owner1 to overwrite");
    r = put_version(&run, over, run.keys[over].version + 1);
    CHECK(r == 0, "overwrite %s after the restart: %s (%s)", run.keys[over].name,
          fx_strerror(r), fx_last_error_detail());
    raw_member obs;
    REQUIRE(register_observer(&run, &obs) == 0, "an observer registers with the restarted master");
    check_new_put_id(&obs, &run, fresh_key, "a new key");
    check_new_put_id(&obs, &run, run.keys[over].name, "an overwrite");
    raw_member_close(&obs);
    connect_fresh(&run, fresh);
    for (int via = 0; via < N_OWNERS; via++) {
        char detail[256];
        CHECK(read_key(fresh[via], &run, over, NULL, NULL, detail, sizeof detail) == READ_LATEST,
              "%s reads its new version %u through owner%d: %s", run.keys[over].name,
              run.keys[over].version, via, detail);
    }
    close_all(fresh);

    burst_of_held_sizes(&run);
    CHECK(check_holders(&run, "after the restart and a burst of puts") == 0,
          "every holder survived the restart");
    require_owners_unchanged(&run, "at the end");
    release_holders(&run);
    close_all(run.c);
    CHECK(cluster_stop(&run.tc) == 0, "cluster stopped cleanly (the restarted master too)");
}

/* ---- 2. the master and then an owner restarted --------------------------------- */

static void owner_restarted_too(void)
{
    restart_run run;
    start_run(&run);
    put_first_versions(&run);
    int n_over, n_del;
    change_keys(&run, &n_over, &n_del);
    int probe = find_key(0, SIZE_4K, UNCHANGED, true);
    REQUIRE(probe >= 0, "a 4 KiB key of owner0 to probe the recovery");

    REQUIRE(cluster_kill_master(&run.tc) == 0, "kill -9 the master");
    fx_close(run.c[1]);
    run.c[1] = NULL;
    REQUIRE(cluster_kill_owner(&run.tc, 1) == 0, "kill -9 owner1 while the master is down");
    test_sleep_ms(NOTICE_MS);
    char why[160];
    REQUIRE(cluster_owner_running(&run.tc, 0, why, sizeof why),
            "owner0 keeps running without a master: %s", why);

    uint64_t restarted_at = test_now_ms();
    REQUIRE(cluster_restart_master(&run.tc) == 0, "start the master again on %s",
            run.tc.master_addr);
    REQUIRE(cluster_restart_owner(&run.tc, 1) == 0, "start owner1 again");
    printf("owner1 answers again %llu ms after the master's restart\n",
           (unsigned long long)(test_now_ms() - restarted_at));
    REQUIRE(cluster_owner_running(&run.tc, 0, why, sizeof why) &&
                run.tc.owner_pids[0] == run.owner_pid[0],
            "owner0 is the same process after the restarts: %s", why);

    fx_client *fresh[N_OWNERS];
    connect_fresh(&run, fresh);
    const bool dead_owner[N_OWNERS] = {false, true};
    int from_memory = 0, from_ssd = 0, gone = 0;
    int bad = verify_all(&run, fresh, restarted_at + RECOVERY_MS, dead_owner, &from_memory,
                         &from_ssd, &gone);
    printf("after both restarts: %d reads from memory, %d from SSD, %d reads of owner1's old "
           "keys found nothing, %d wrong (done %llu ms after the master's restart)\n",
           from_memory, from_ssd, gone, bad, (unsigned long long)(test_now_ms() - restarted_at));
    CHECK(bad == 0, "owner0's values read back, deleted keys stay deleted, owner1's old keys "
                    "are gone or latest");
    if (bad)
        cluster_dump_logs(&run.tc);

    const char *key = "put-through-new-owner1";
    int err = 0;
    run.c[1] = fx_connect(run.tc.sockets[1], &err);
    REQUIRE(run.c[1], "connect to the new owner1: %s", fx_strerror(err));
    int r = value_put(run.c[1], key, version_seed(key, 1), 64 * KIB);
    CHECK(r == 0, "put through the new owner1: %s (%s)", fx_strerror(r), fx_last_error_detail());
    fx_holder *h = NULL;
    r = fx_get(fresh[0], key, strlen(key), &h);
    CHECK(r == 0 && value_holder_is(h, version_seed(key, 1), 64 * KIB),
          "owner0 reads the new owner1's value: %s (%s)", fx_strerror(r), fx_last_error_detail());
    fx_holder_release(h);
    close_all(fresh);
    close_all(run.c);
    CHECK(cluster_stop(&run.tc) == 0, "cluster stopped cleanly");
}

/* ---- 3. the master dies while answering an overwrite ---------------------------- */

/* Polls a get of key through c until it answers something but
 * MasterUnavailable / a lost connection, or until deadline_ms. */
static int get_after_recovery(fx_client *c, const char *key, fx_holder **h, uint64_t deadline_ms)
{
    int r;
    for (;;) {
        *h = NULL;
        r = fx_get(c, key, strlen(key), h);
        if ((r != FX_EMASTER && r != FX_ECONN) || test_now_ms() >= deadline_ms)
            return r;
        test_sleep_ms(POLL_MS);
    }
}

static void overwrite_at_crash(void)
{
    restart_run run;
    start_run(&run);
    const char *key = "overwritten-at-crash";
    const size_t len1 = 64 * KIB, len2 = 64 * KIB - 517;
    int r = value_put(run.c[1], key, version_seed(key, 1), len1);
    REQUIRE(r == 0, "put %s through owner1 (it lives there): %s (%s)", key, fx_strerror(r),
            fx_last_error_detail());

    /* A master that dies at its first PutDone answer that waited for owners'
     * indexes: the overwrite below, once owner1 acknowledged the drop of
     * version 1 and before owner0 hears that version 2 is published. */
    setenv("FLUXON_TEST_KILL_AT_PUT_DONE_ANSWER", "1", 1);
    r = cluster_restart_master(&run.tc);
    unsetenv("FLUXON_TEST_KILL_AT_PUT_DONE_ANSWER");
    REQUIRE(r == 0, "start the master with the kill hook");
    fx_holder *h = NULL;
    /* Through owner1: a get through owner0 would leave a copy of version 1
     * there, which owner0 (the requester) keeps until it hears the answer. */
    r = get_after_recovery(run.c[1], key, &h, test_now_ms() + RECOVERY_MS);
    CHECK(r == 0 && value_holder_is(h, version_seed(key, 1), len1),
          "version 1 reads back after the hooked master recovered: %s", fx_strerror(r));
    fx_holder_release(h);

    r = value_put(run.c[0], key, version_seed(key, 2), len2);
    CHECK(r == FX_EMASTER || r == FX_ECONN, "the overwrite through owner0 is not answered: %s (%s)",
          fx_strerror(r), fx_last_error_detail());
    int st = 0;
    REQUIRE(waitpid(run.tc.master_pid, &st, 0) == run.tc.master_pid && WIFSIGNALED(st) &&
                WTERMSIG(st) == SIGKILL,
            "the hooked master died at the overwrite's answer (status %#x)", st);
    run.tc.master_pid = 0;
    run.tc.master_killed = true;
    char why[160];
    for (int o = 0; o < N_OWNERS; o++)
        REQUIRE(cluster_owner_running(&run.tc, o, why, sizeof why) &&
                    run.tc.owner_pids[o] == run.owner_pid[o],
                "owner%d outlives the master: %s", o, why);

    uint64_t restarted_at = test_now_ms();
    REQUIRE(cluster_restart_master(&run.tc) == 0, "start the master again");
    fx_client *fresh[N_OWNERS];
    connect_fresh(&run, fresh);
    for (int via = 0; via < N_OWNERS; via++) {
        r = get_after_recovery(fresh[via], key, &h, restarted_at + RECOVERY_MS);
        /* Version 1 was dropped before the crash (R1); losing both would
         * lose a value whose owners all lived. */
        CHECK(r == 0 && value_holder_is(h, version_seed(key, 2), len2),
              "%s reads version 2 through owner%d after the crash: %s%s", key, via,
              fx_strerror(r),
              r == 0 && value_holder_is(h, version_seed(key, 1), len1) ? " (version 1!)" : "");
        fx_holder_release(h);
    }
    close_all(fresh);
    close_all(run.c);
    CHECK(cluster_stop(&run.tc) == 0, "cluster stopped cleanly");
}

/* ---- 4. two puts of a key that complete in the other order ------------------- */

/* Which of the two versions h holds: 1, 2, or 0 (neither). */
static int version_held(const fx_holder *h, const char *key, const size_t *lens)
{
    for (int v = 1; v <= 2; v++)
        if (value_holder_is(h, version_seed(key, (uint32_t)v), lens[v - 1]))
            return v;
    return 0;
}

static void puts_out_of_order(void)
{
    restart_run run;
    start_run(&run);
    const char *key = "out-of-order";
    const size_t lens[2] = {64 * KIB, 64 * KIB - 517};
    fx_put_handle *put[2];
    for (int v = 0; v < 2; v++) {
        int r = fx_put_begin(run.c[0], key, strlen(key), lens[v], NULL, &put[v]);
        REQUIRE(r == 0, "begin put %d of %s: %s", v + 1, key, fx_strerror(r));
        uint8_t *bytes = value_make(version_seed(key, (uint32_t)v + 1), lens[v]);
        memcpy(fx_put_handle_data(put[v]), bytes, lens[v]);
        free(bytes);
    }
    /* The put that started second (the higher put_id) completes first. */
    REQUIRE(fx_put_commit(put[1]) == 0, "commit put 2");
    REQUIRE(fx_put_commit(put[0]) == 0, "commit put 1");
    fx_client *fresh[N_OWNERS];
    connect_fresh(&run, fresh);
    fx_holder *h = NULL;
    /* Through owner0, which holds the replica: a get through owner1 would
     * leave a copy there, indexed. */
    int r = fx_get(fresh[0], key, strlen(key), &h);
    int before = r == 0 ? version_held(h, key, lens) : -1;
    fx_holder_release(h);
    CHECK(before == 2, "%s reads the version of the higher put_id (put 2), as a recovering "
                       "master would choose: %s, version %d",
          key, fx_strerror(r), before);
    close_all(fresh);

    /* New values of both sizes through owner0: the ranges freed by the two
     * puts are written again (an index entry left there is forgotten). */
    for (int i = 0; i < 32; i++) {
        char filler[32];
        snprintf(filler, sizeof filler, "filler-%d", i);
        r = value_put(run.c[0], filler, version_seed(filler, 1), lens[i % 2]);
        REQUIRE(r == 0, "put %s: %s", filler, fx_strerror(r));
    }
    REQUIRE(cluster_kill_master(&run.tc) == 0, "kill -9 the master");
    uint64_t restarted_at = test_now_ms();
    REQUIRE(cluster_restart_master(&run.tc) == 0, "start the master again");
    connect_fresh(&run, fresh);
    for (int via = 0; via < N_OWNERS; via++) {
        r = get_after_recovery(fresh[via], key, &h, restarted_at + RECOVERY_MS);
        int after = r == 0 ? version_held(h, key, lens) : -1;
        fx_holder_release(h);
        CHECK(after == before, "%s reads the same version through owner%d after the restart "
                               "(%d before, %d after: %s)",
              key, via, before, after, fx_strerror(r));
    }
    close_all(fresh);
    close_all(run.c);
    CHECK(cluster_stop(&run.tc) == 0, "cluster stopped cleanly");
}

int main(int argc, char **argv)
{
    static const test_scenario scenarios[] = {{"master_restart", master_restart},
                                              {"owner_restarted_too", owner_restarted_too},
                                              {"overwrite_at_crash", overwrite_at_crash},
                                              {"puts_out_of_order", puts_out_of_order}};
    return test_run_scenarios(argc, argv, scenarios, sizeof scenarios / sizeof scenarios[0]);
}
