/*
 * test_batch_exists.c - fx_batch_exists and fx_prefix_hits (issue 21) on a
 * two-owner cluster (placement local: a key lives on the owner it was put
 * through):
 *
 *   exists   present, absent, deleted and overwritten keys, keys stored
 *            through the other owner, asked through either owner: every
 *            result agrees with fx_exists key by key;
 *   invalid  NULL, empty and over-long keys mixed in get FX_EINVAL in their
 *            own slots and the other keys are still looked up; NULL arrays
 *            and a NULL client are refused;
 *   limits   n = 0 sends nothing and touches nothing (NULL arrays are still
 *            refused); n = FX_BATCH_MAX keys
 *            of the longest length (4 MiB of keys in one message) is
 *            answered; FX_BATCH_MAX + 1 is refused with a detail saying to
 *            split;
 *   prefix   fx_prefix_hits: all hit, the first key missing, a miss (and a
 *            deleted key) in the middle, n = 0, an invalid key named by its
 *            index;
 *   raw      malformed BatchKeyInfo bodies (key lengths that do not add up
 *            to the keys, or overflow 32 bits, more than FX_BATCH_MAX
 *            lengths, a zero-length key) sent straight to an owner and to the
 *            master get an error reply naming what was wrong (a bad key
 *            alone: FX_EINVAL in its slot), prefix_only answers up to the
 *            first miss; both processes keep serving and exit cleanly.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "net/msg.h"
#include "raw_external.h"
#include "raw_member.h"
#include "testlib.h"

#define MIB (1024ull * 1024ull)
#define NKEYS 120
#define MAX_KEY 4096

static test_cluster tc;
static fx_client *near_c, *far_c; /* through owner 0 and owner 1 */

static char keybuf[NKEYS][32];
static const char *keys[NKEYS];
static size_t klens[NKEYS];
static int expect[NKEYS];

/* Keys 0..89 are put, even ones through owner 0 and odd ones through owner
 * 1; 30..39 are deleted again, 40..49 overwritten; 90..119 never exist. */
static void store_keys(void)
{
    for (int i = 0; i < NKEYS; i++) {
        snprintf(keybuf[i], sizeof keybuf[i], "bx-%d", i);
        keys[i] = keybuf[i];
        klens[i] = strlen(keybuf[i]);
        expect[i] = i < 90 && (i < 30 || i >= 40);
        if (i >= 90)
            continue;
        fx_client *c = i % 2 ? far_c : near_c;
        REQUIRE(fx_put(c, keys[i], klens[i], "value", 5) == 0, "put %s: %s", keys[i],
                fx_last_error_detail());
    }
    for (int i = 30; i < 40; i++)
        REQUIRE(fx_delete(near_c, keys[i], klens[i]) == 0, "delete %s", keys[i]);
    for (int i = 40; i < 50; i++)
        REQUIRE(fx_put(i % 2 ? near_c : far_c, keys[i], klens[i], "second", 6) == 0,
                "overwrite %s", keys[i]);
}

static void test_exists(void)
{
    fx_client *clients[2] = {near_c, far_c};
    for (int k = 0; k < 2; k++) {
        int results[NKEYS];
        memset(results, 0x55, sizeof results);
        int r = fx_batch_exists(clients[k], NKEYS, keys, klens, results);
        CHECK(r == 0, "batch exists through owner %d: %s (%s)", k, fx_strerror(r),
              fx_last_error_detail());
        int wrong = 0, disagree = 0;
        for (int i = 0; i < NKEYS; i++) {
            if (results[i] != expect[i] && wrong++ < 5)
                fprintf(stderr, "  %s: %d, want %d\n", keys[i], results[i], expect[i]);
            int one = fx_exists(clients[k], keys[i], klens[i]);
            if (one != results[i] && disagree++ < 5)
                fprintf(stderr, "  %s: fx_exists %d, batch %d\n", keys[i], one, results[i]);
        }
        CHECK(wrong == 0, "through owner %d: %d keys answered wrong", k, wrong);
        CHECK(disagree == 0, "through owner %d: %d keys disagree with fx_exists", k, disagree);
    }
    /* A key deleted after a batch saw it is gone from the next batch. */
    int before[1], after[1];
    const char *one[1] = {keys[0]};
    CHECK(fx_batch_exists(far_c, 1, one, klens, before) == 0 && before[0] == 1, "key 0 there");
    REQUIRE(fx_delete(far_c, keys[0], klens[0]) == 0, "delete key 0");
    CHECK(fx_batch_exists(near_c, 1, one, klens, after) == 0 && after[0] == 0,
          "key 0 gone after its delete (%d)", after[0]);
    REQUIRE(fx_put(near_c, keys[0], klens[0], "value", 5) == 0, "put key 0 again");
}

static void test_invalid(void)
{
    static char longkey[MAX_KEY + 1];
    memset(longkey, 'L', sizeof longkey);
    const char *k[6] = {keys[2], NULL, keys[3], "", longkey, keys[95]};
    size_t kl[6] = {klens[2], 4, klens[3], 0, MAX_KEY + 1, klens[95]};
    int results[6];
    int r = fx_batch_exists(near_c, 6, k, kl, results);
    CHECK(r == 0, "a batch with invalid keys: %s (%s)", fx_strerror(r), fx_last_error_detail());
    CHECK(results[0] == 1 && results[2] == 1 && results[5] == 0,
          "the valid keys are still looked up (%d %d %d)", results[0], results[2], results[5]);
    CHECK(results[1] == FX_EINVAL && results[3] == FX_EINVAL && results[4] == FX_EINVAL,
          "NULL, empty and %d-byte keys are FX_EINVAL (%d %d %d)", MAX_KEY + 1, results[1],
          results[3], results[4]);
    /* Only invalid keys: answered without a message, every slot FX_EINVAL. */
    CHECK(fx_batch_exists(near_c, 2, k + 3, kl + 3, results) == 0 && results[0] == FX_EINVAL &&
              results[1] == FX_EINVAL,
          "a batch of invalid keys only");

    CHECK(fx_batch_exists(NULL, 1, keys, klens, results) == FX_EINVAL, "NULL client");
    CHECK(fx_batch_exists(near_c, 1, NULL, klens, results) == FX_EINVAL, "NULL keys");
    CHECK(fx_batch_exists(near_c, 1, keys, NULL, results) == FX_EINVAL, "NULL klens");
    CHECK(fx_batch_exists(near_c, 1, keys, klens, NULL) == FX_EINVAL, "NULL results");
    size_t hits = 7;
    CHECK(fx_prefix_hits(near_c, 1, keys, klens, NULL) == FX_EINVAL, "NULL hits");
    CHECK(fx_prefix_hits(near_c, 1, NULL, klens, &hits) == FX_EINVAL, "prefix: NULL keys");
    CHECK(fx_prefix_hits(NULL, 1, keys, klens, &hits) == FX_EINVAL, "prefix: NULL client");
    CHECK(fx_ping(near_c) == 0, "the client still works after the refusals");
}

static void test_limits(void)
{
    int results[FX_BATCH_MAX + 1];
    results[0] = 42;
    CHECK(fx_batch_exists(near_c, 0, keys, klens, results) == 0 && results[0] == 42,
          "n = 0 is nothing to do and writes nothing");
    CHECK(fx_batch_exists(near_c, 0, NULL, NULL, results) == FX_EINVAL,
          "NULL arrays are refused even for n = 0");
    size_t hits = 9;
    CHECK(fx_prefix_hits(near_c, 0, keys, klens, &hits) == 0 && hits == 0,
          "prefix hits of no keys is 0 (%zu)", hits);

    /* FX_BATCH_MAX keys of the longest length: 4 MiB of keys in one frame.
     * Every 100th is stored (through either owner). */
    static char big[FX_BATCH_MAX + 1][MAX_KEY];
    const char *bk[FX_BATCH_MAX + 1];
    size_t bl[FX_BATCH_MAX + 1];
    for (int i = 0; i <= FX_BATCH_MAX; i++) {
        memset(big[i], 'a' + i % 26, MAX_KEY);
        snprintf(big[i], 16, "%08d", i);
        big[i][8] = '-';
        bk[i] = big[i];
        bl[i] = MAX_KEY;
    }
    for (int i = 0; i < FX_BATCH_MAX; i += 100)
        REQUIRE(fx_put(i % 200 ? far_c : near_c, bk[i], bl[i], "v", 1) == 0,
                "put long key %d: %s", i, fx_last_error_detail());
    int r = fx_batch_exists(near_c, FX_BATCH_MAX, bk, bl, results);
    CHECK(r == 0, "FX_BATCH_MAX keys of %d bytes: %s (%s)", MAX_KEY, fx_strerror(r),
          fx_last_error_detail());
    int wrong = 0;
    for (int i = 0; r == 0 && i < FX_BATCH_MAX; i++)
        wrong += results[i] != (i % 100 == 0);
    CHECK(wrong == 0, "%d of FX_BATCH_MAX long keys answered wrong", wrong);
    CHECK(fx_prefix_hits(far_c, FX_BATCH_MAX, bk, bl, &hits) == 0 && hits == 1,
          "prefix hits over FX_BATCH_MAX long keys: 1 (%zu)", hits);

    for (int i = 0; i <= FX_BATCH_MAX; i++)
        results[i] = 42;
    r = fx_batch_exists(near_c, FX_BATCH_MAX + 1, bk, bl, results);
    CHECK(r == FX_EINVAL && strstr(fx_last_error_detail(), "split"),
          "FX_BATCH_MAX + 1 keys refused, saying to split: %s (%s)", fx_strerror(r),
          fx_last_error_detail());
    CHECK(results[0] == FX_EINVAL && results[FX_BATCH_MAX] == FX_EINVAL,
          "a refused batch has the batch's code in every slot");
    r = fx_prefix_hits(near_c, FX_BATCH_MAX + 1, bk, bl, &hits);
    CHECK(r == FX_EINVAL && strstr(fx_last_error_detail(), "split"),
          "prefix hits of FX_BATCH_MAX + 1 keys refused: %s", fx_last_error_detail());
}

static void test_prefix(void)
{
    size_t hits = 99;
    int r = fx_prefix_hits(near_c, 30, keys, klens, &hits);
    CHECK(r == 0 && hits == 30, "all 30 hit: %s, %zu", fx_strerror(r), hits);
    hits = 99;
    CHECK(fx_prefix_hits(far_c, 10, keys + 90, klens + 90, &hits) == 0 && hits == 0,
          "the first key missing: 0 (%zu)", hits);
    /* keys 20..29 exist, 30..39 were deleted: the prefix from 20 is 10. */
    hits = 99;
    CHECK(fx_prefix_hits(near_c, 40, keys + 20, klens + 20, &hits) == 0 && hits == 10,
          "a deleted key in the middle stops the prefix: 10 (%zu)", hits);
    /* A never-stored key in the middle of stored ones. */
    const char *k[5] = {keys[1], keys[2], keys[100], keys[3], keys[4]};
    size_t kl[5] = {klens[1], klens[2], klens[100], klens[3], klens[4]};
    hits = 99;
    CHECK(fx_prefix_hits(far_c, 5, k, kl, &hits) == 0 && hits == 2,
          "a miss in the middle: 2 (%zu)", hits);
    /* Overwritten keys count. */
    hits = 99;
    CHECK(fx_prefix_hits(far_c, 10, keys + 40, klens + 40, &hits) == 0 && hits == 10,
          "overwritten keys hit (%zu)", hits);
    k[3] = "";
    kl[3] = 0;
    hits = 99;
    r = fx_prefix_hits(near_c, 5, k, kl, &hits);
    CHECK(r == FX_EINVAL && strstr(fx_last_error_detail(), "key 3"),
          "an invalid key fails the call, named by its index: %s (%s)", fx_strerror(r),
          fx_last_error_detail());
}

/* ---- raw messages ---------------------------------------------------------- */

typedef ProtobufCMessage *(*raw_call_fn)(void *peer, const Fx__BatchKeyInfoReq *req);

static ProtobufCMessage *call_owner(void *peer, const Fx__BatchKeyInfoReq *req)
{
    return raw_external_call(*(int *)peer, MSG_EXT_BATCH_EXISTS, &req->base);
}

static ProtobufCMessage *call_master(void *peer, const Fx__BatchKeyInfoReq *req)
{
    return raw_member_call(peer, MSG_BATCH_KEY_INFO, &req->base, 5000);
}

/* Sends keys (packed, n_klens lengths) and expects status with a detail
 * containing needle (status 0: the answer is returned, else freed). */
static Fx__BatchKeyInfoResp *expect_reply(const char *who, raw_call_fn call, void *peer,
                                          const char *keys_packed, size_t keys_len,
                                          uint32_t *kl, size_t n_klens, bool prefix_only,
                                          int status, const char *needle)
{
    Fx__BatchKeyInfoReq req = FX__BATCH_KEY_INFO_REQ__INIT;
    req.keys = (ProtobufCBinaryData){.len = keys_len, .data = (uint8_t *)keys_packed};
    req.klens = kl;
    req.n_klens = n_klens;
    req.prefix_only = prefix_only;
    ProtobufCMessage *m = call(peer, &req);
    CHECK(m != NULL, "%s: an answer (not a dropped connection) for %s", who, needle);
    if (!m)
        return NULL;
    CHECK(msg_status(m) == status, "%s: status %d for %s, want %d (%s)", who, msg_status(m),
          needle, status, msg_detail(m));
    if (needle[0] && status)
        CHECK(strstr(msg_detail(m), needle) != NULL, "%s: the detail names it: '%s' lacks '%s'",
              who, msg_detail(m), needle);
    if (status || msg_status(m)) {
        msg_free(m);
        return NULL;
    }
    return (Fx__BatchKeyInfoResp *)m;
}

static void raw_abuse(const char *who, raw_call_fn call, void *peer)
{
    char packed[64];
    size_t len = (size_t)snprintf(packed, sizeof packed, "%s%s%s", keys[2], keys[100], keys[4]);
    uint32_t kl[3] = {(uint32_t)klens[2], (uint32_t)klens[100], (uint32_t)klens[4]};

    uint32_t short_by_one[3] = {kl[0], kl[1], kl[2] - 1};
    expect_reply(who, call, peer, packed, len, short_by_one, 3, false, FX_EINVAL, "add up");
    uint32_t overflow[3] = {UINT32_MAX, UINT32_MAX, (uint32_t)len + 2};
    expect_reply(who, call, peer, packed, len, overflow, 3, false, FX_EINVAL, "add up");
    static uint32_t many[FX_BATCH_MAX + 1];
    for (int i = 0; i <= FX_BATCH_MAX; i++)
        many[i] = 1;
    static char ones[FX_BATCH_MAX + 1];
    memset(ones, 'k', sizeof ones);
    expect_reply(who, call, peer, ones, sizeof ones, many, FX_BATCH_MAX + 1, false, FX_EINVAL,
                 "over the limit");

    /* A zero-length key, and one over 4096 bytes, fail alone. */
    static char withlong[MAX_KEY + 1 + 16];
    int w = snprintf(withlong, sizeof withlong, "%s", keys[2]);
    memset(withlong + w, 'x', MAX_KEY + 1);
    uint32_t zero[4] = {kl[0], 0, MAX_KEY + 1, 0};
    Fx__BatchKeyInfoResp *r =
        expect_reply(who, call, peer, withlong, (size_t)w + MAX_KEY + 1, zero, 4, false, 0, "");
    CHECK(r && r->n_results == 4 && r->results[0] == 1 && r->results[1] == FX_EINVAL &&
              r->results[2] == FX_EINVAL && r->results[3] == FX_EINVAL,
          "%s: bad key lengths fail alone", who);
    if (r)
        msg_free(&r->base);

    r = expect_reply(who, call, peer, packed, len, kl, 3, false, 0, "");
    CHECK(r && r->n_results == 3 && r->results[0] == 1 && r->results[1] == 0 &&
              r->results[2] == 1 && r->prefix_hits == 1,
          "%s: a well-formed batch", who);
    if (r)
        msg_free(&r->base);
    r = expect_reply(who, call, peer, packed, len, kl, 3, true, 0, "");
    CHECK(r && r->n_results == 2 && r->results[1] == 0 && r->prefix_hits == 1,
          "%s: prefix_only stops at the first miss (%zu results)", who, r ? r->n_results : 0);
    if (r)
        msg_free(&r->base);
    r = expect_reply(who, call, peer, "", 0, NULL, 0, true, 0, "");
    CHECK(r && r->n_results == 0 && r->prefix_hits == 0, "%s: no keys", who);
    if (r)
        msg_free(&r->base);
}

static void test_raw(void)
{
    int fd = raw_external_open(tc.sockets[0]);
    REQUIRE(fd >= 0, "raw external");
    raw_abuse("owner", call_owner, &fd);
    close(fd);

    raw_member rm;
    REQUIRE(raw_member_register(&rm, tc.master_addr, "test", "raw-batch", 1) == 0,
            "raw member");
    raw_abuse("master", call_master, &rm);
    raw_member_close(&rm);

    int results[3];
    CHECK(fx_batch_exists(near_c, 3, keys, klens, results) == 0 && results[0] == 1,
          "owner and master still serve");
    char why[128];
    CHECK(cluster_owner_running(&tc, 0, why, sizeof why), "owner 0 runs (%s)", why);
}

int main(void)
{
    const char *const args[] = {"--placement", "local", NULL};
    REQUIRE(cluster_start_n(&tc, 2, 64 * MIB, args) == 0, "cluster start");
    int err = 0;
    near_c = fx_connect(tc.sockets[0], &err);
    far_c = fx_connect(tc.sockets[1], &err);
    REQUIRE(near_c && far_c, "connect: %d", err);
    store_keys();
    test_exists();
    test_invalid();
    test_limits();
    test_prefix();
    test_raw();
    fx_close(near_c);
    fx_close(far_c);
    CHECK(cluster_stop(&tc) == 0, "master and owners exit cleanly");
    return test_finish();
}
