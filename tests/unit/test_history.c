/*
 * test_history.c - the history checker of the failover test
 * (tests/util/history.c) on hand-made histories: values that are torn,
 * foreign or intact; reads it must flag (a stale version, a stale
 * KeyNotFound, read-your-writes broken, a phantom, a read from the future)
 * and reads it must let pass (concurrent writes, the invalidation window,
 * a failed write that may or may not have happened, a delete).
 */
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "testlib.h"

#define MS 1000000ull
#define WINDOW (100 * MS)
#define T0 (1000 * MS) /* times are ms after T0 below */

static void values(void)
{
    uint8_t buf[4096];
    uint32_t w = 0;
    uint64_t s = 0;
    hist_value_make(buf, sizeof buf, 7, 3, 42);
    CHECK(hist_value_parse(buf, sizeof buf, 7, &w, &s) == HIST_VALUE_OK && w == 3 && s == 42,
          "an intact value names its writer and seq (%u, %llu)", w, (unsigned long long)s);
    CHECK(hist_value_parse(buf, sizeof buf, 8, &w, &s) == HIST_VALUE_FOREIGN,
          "key 7's value read for key 8 is foreign");
    CHECK(hist_value_parse(buf, sizeof buf - 1, 7, &w, &s) == HIST_VALUE_TORN,
          "a value one byte short is torn");
    CHECK(hist_value_parse(buf, 10, 7, &w, &s) == HIST_VALUE_TORN, "a stub is torn");
    uint8_t other[4096];
    hist_value_make(other, sizeof other, 7, 4, 1);
    memcpy(buf + 2048, other + 2048, 2048); /* the second half of another version */
    CHECK(hist_value_parse(buf, sizeof buf, 7, &w, &s) == HIST_VALUE_TORN,
          "two versions' halves make a torn value");
    hist_value_make(buf, HIST_VALUE_HEADER, 1, 1, 1);
    CHECK(hist_value_parse(buf, HIST_VALUE_HEADER, 1, &w, &s) == HIST_VALUE_OK,
          "a header-only value is intact");
}

/* ---- hand-made histories -------------------------------------------------------- */

static uint64_t write_op(history *h, int client, int kind, uint32_t key, int inv_ms, int resp_ms,
                         int outcome)
{
    hist_op op = {.inv_ns = T0 + (uint64_t)inv_ms * MS, .resp_ns = T0 + (uint64_t)resp_ms * MS,
                  .key = key, .kind = (uint8_t)kind, .outcome = (uint8_t)outcome,
                  .seq = hist_next_seq(h, client)};
    hist_add(h, client, &op);
    return op.seq;
}

static uint64_t put(history *h, int client, uint32_t key, int inv_ms, int resp_ms, bool ok)
{
    return write_op(h, client, HIST_PUT, key, inv_ms, resp_ms, ok ? HIST_OK : HIST_FAILED);
}

static void del(history *h, int client, uint32_t key, int inv_ms, int resp_ms, bool ok)
{
    write_op(h, client, HIST_DEL, key, inv_ms, resp_ms, ok ? HIST_OK : HIST_FAILED);
}

/* A get of key by client answered with (writer, seq), or KeyNotFound when
 * writer < 0. */
static void get(history *h, int client, uint32_t key, int inv_ms, int resp_ms, int writer,
                uint64_t seq)
{
    hist_op op = {.inv_ns = T0 + (uint64_t)inv_ms * MS, .resp_ns = T0 + (uint64_t)resp_ms * MS,
                  .key = key, .kind = HIST_GET};
    if (writer < 0) {
        op.outcome = HIST_NOTFOUND;
    } else {
        op.outcome = HIST_OK;
        op.writer = (uint32_t)writer;
        op.seq = seq;
    }
    hist_add(h, client, &op);
}

static hist_report check(history *h)
{
    hist_report r;
    hist_check(h, WINDOW, T0, 10, stdout, &r);
    return r;
}

/* Reads a correct cache may answer: none is flagged. */
static void allowed(void)
{
    history *h = hist_new(3, 64, 8);
    REQUIRE(h, "a history");
    /* Key 0: A puts v1 (0-10), B puts v2 (20-30); C reads v1 within the window. */
    uint64_t a1 = put(h, 0, 0, 0, 10, true);
    uint64_t b1 = put(h, 1, 0, 20, 30, true);
    get(h, 2, 0, 100, 101, 0, a1); /* 70 ms after v2's ack: inside the window */
    get(h, 1, 0, 31, 32, 1, b1);   /* B reads its own write */
    /* Key 1: overlapping puts by A (0-50) and B (10-60): either may be last. */
    uint64_t a2 = put(h, 0, 1, 0, 50, true);
    uint64_t b2 = put(h, 1, 1, 10, 60, true);
    get(h, 2, 1, 500, 501, 0, a2);
    get(h, 2, 1, 502, 503, 1, b2);
    /* Key 2: a failed put may show up any time after it was invoked, and
     * may leave the key absent even after an acknowledged put before it. */
    uint64_t a3 = put(h, 0, 2, 0, 10, true);
    uint64_t b3 = put(h, 1, 2, 20, 3020, false);
    get(h, 2, 2, 5000, 5001, 1, b3);
    get(h, 2, 2, 5002, 5003, -1, 0);
    get(h, 2, 2, 5004, 5005, 0, a3); /* the failed put may not have happened */
    /* Key 3: never written: KeyNotFound. Key 4: put then deleted: KeyNotFound. */
    get(h, 2, 3, 0, 1, -1, 0);
    put(h, 0, 4, 0, 10, true);
    del(h, 1, 4, 20, 30, true);
    get(h, 2, 4, 200, 201, -1, 0);
    /* Key 5: a read overlapping the put may return it (invoked before the read returned). */
    uint64_t a5 = put(h, 0, 5, 100, 200, true);
    get(h, 2, 5, 90, 150, 0, a5);
    get(h, 2, 5, 90, 150, -1, 0);
    hist_report r = check(h);
    CHECK(r.violations == 0, "no correct read is flagged (%llu violations)",
          (unsigned long long)r.violations);
    CHECK(r.gets_value == 7 && r.gets_absent == 4, "the reads are counted (%llu values, %llu "
                                                   "absent)",
          (unsigned long long)r.gets_value, (unsigned long long)r.gets_absent);
    hist_free(h);
}

static void flagged(void)
{
    history *h = hist_new(3, 64, 8);
    REQUIRE(h, "a history");
    /* Key 0: v1 then v2 (sequential); C reads v1 200 ms after v2's ack. */
    uint64_t a1 = put(h, 0, 0, 0, 10, true);
    put(h, 1, 0, 20, 30, true);
    get(h, 2, 0, 230, 231, 0, a1);
    hist_report r = check(h);
    CHECK(r.stale_value == 1, "an overwritten version read past the window is stale (%llu)",
          (unsigned long long)r.stale_value);
    hist_free(h);

    /* Read-your-writes: A reads its old version right after its own overwrite. */
    h = hist_new(3, 64, 8);
    a1 = put(h, 0, 0, 0, 10, true);
    put(h, 0, 0, 11, 20, true);
    get(h, 0, 0, 21, 22, 0, a1);
    r = check(h);
    CHECK(r.stale_value == 1, "read-your-writes: no window for one's own write (%llu)",
          (unsigned long long)r.stale_value);
    hist_free(h);

    /* A lost value: KeyNotFound long after an acknowledged put, nothing deleted. */
    h = hist_new(3, 64, 8);
    put(h, 0, 0, 0, 10, true);
    get(h, 1, 0, 500, 501, -1, 0);
    /* A delete acknowledged before an acknowledged put does not explain it. */
    del(h, 2, 1, 0, 10, true);
    put(h, 0, 1, 20, 30, true);
    get(h, 1, 1, 500, 501, -1, 0);
    r = check(h);
    CHECK(r.stale_absent == 2, "KeyNotFound where an acknowledged put must be seen (%llu)",
          (unsigned long long)r.stale_absent);
    CHECK(!hist_absent_allowed(h, 1, 0, T0 + 500 * MS, T0 + 501 * MS, WINDOW),
          "key 0 must be readable");
    hist_free(h);

    /* A delete acknowledged, then the old value read past the window. */
    h = hist_new(3, 64, 8);
    a1 = put(h, 0, 0, 0, 10, true);
    del(h, 1, 0, 20, 30, true);
    get(h, 2, 0, 300, 301, 0, a1);
    /* A phantom (no such put) and a version from the future. */
    get(h, 2, 1, 0, 1, 0, 99);
    get(h, 2, 2, 0, 1, 1, 1); /* client 1's seq 1 is a delete of key 0 */
    uint64_t later = put(h, 0, 3, 50, 60, true);
    get(h, 2, 3, 10, 20, 0, later);
    r = check(h);
    CHECK(r.stale_value == 1 && r.phantom == 2 && r.future == 1,
          "deleted value, phantoms, future: %llu stale, %llu phantom, %llu future",
          (unsigned long long)r.stale_value, (unsigned long long)r.phantom,
          (unsigned long long)r.future);
    CHECK(r.violations == 4, "4 violations (%llu)", (unsigned long long)r.violations);
    hist_free(h);

    /* Corrupt reads are counted apart. */
    h = hist_new(1, 4, 2);
    hist_op bad = {.inv_ns = T0, .resp_ns = T0 + MS, .key = 0, .kind = HIST_GET,
                   .outcome = HIST_CORRUPT, .code = HIST_VALUE_FOREIGN};
    hist_add(h, 0, &bad);
    bad.code = HIST_VALUE_TORN;
    hist_add(h, 0, &bad);
    CHECK(hist_add(h, 0, &bad) == 0 && hist_add(h, 0, &bad) == 0 && hist_add(h, 0, &bad) < 0,
          "a full log drops the op");
    r = check(h);
    CHECK(r.corrupt_foreign == 1 && r.corrupt_torn == 3 && r.dropped == 1 && r.violations == 0,
          "corrupt reads and drops counted (%llu foreign, %llu torn, %llu dropped)",
          (unsigned long long)r.corrupt_foreign, (unsigned long long)r.corrupt_torn,
          (unsigned long long)r.dropped);
    hist_free(h);
}

int main(void)
{
    values();
    allowed();
    flagged();
    return test_finish();
}
