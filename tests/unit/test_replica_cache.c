/*
 * test_replica_cache.c - the master's replica eviction policy
 * (src/master/replica_cache.c, byte-weighted S3-FIFO).
 *
 * Checks the bookkeeping (weights and counts through inserts, removes and
 * pops; pop_victim drains the cache returning every ctx exactly once, and
 * removed items never), and the behaviour that makes the policy worth having:
 * an item hit before a long scan of one-time keys survives it while an
 * unhit item of the same age does not; a key evicted from the small queue
 * and inserted again goes to main and survives the next scan, while a
 * brand-new key inserted beside it does not; the ghost remembers only
 * recent victims; main passes over items hit since they entered it; and a
 * capacity change resizes the small queue at once.
 */
#include "master/replica_cache.h"
#include "testlib.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define W 10 /* the weight of most items */

/* One key of a test: its item while resident and how often it was popped. */
typedef struct slot {
    rc_item *it;
    int popped;
} slot;

static uint64_t hash_of(int i)
{
    return 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
}

static void insert(replica_cache *rc, slot *s, int i, uint64_t weight)
{
    s[i].it = replica_cache_insert(rc, hash_of(i), weight, &s[i]);
    REQUIRE(s[i].it != NULL, "insert %d", i);
}

/* Pops one victim and records it; returns its slot (NULL when empty). */
static slot *pop(replica_cache *rc)
{
    slot *v = replica_cache_pop_victim(rc);
    if (v) {
        v->popped++;
        v->it = NULL;
    }
    return v;
}

/* Evicts as the master does until the weight fits the capacity. */
static void fit(replica_cache *rc, uint64_t capacity)
{
    while (replica_cache_weight(rc) > capacity)
        REQUIRE(pop(rc) != NULL, "pop_victim returned NULL with weight %llu",
                (unsigned long long)replica_cache_weight(rc));
}

/* Inserts keys [from, to) of weight W once each, fitting after each. */
static void scan(replica_cache *rc, slot *s, int from, int to, uint64_t capacity)
{
    for (int i = from; i < to; i++) {
        insert(rc, s, i, W);
        fit(rc, capacity);
    }
}

/* The resident weight, summed over the slots that hold an item. */
static uint64_t resident_weight(const slot *s, const uint64_t *w, int n)
{
    uint64_t sum = 0;
    for (int i = 0; i < n; i++)
        if (s[i].it)
            sum += w[i];
    return sum;
}

static void test_accounting(void)
{
    enum { N = 2000 };
    static slot s[N];
    static uint64_t w[N];
    static bool removed[N];
    memset(s, 0, sizeof s);
    replica_cache *rc = replica_cache_new(1 << 20);
    REQUIRE(rc, "new");
    CHECK(replica_cache_count(rc) == 0 && replica_cache_weight(rc) == 0, "empty at first");
    CHECK(replica_cache_pop_victim(rc) == NULL, "pop on an empty cache");

    unsigned long long seed = 7;
    for (int i = 0; i < N; i++) {
        w[i] = test_rand(&seed) % 5000; /* zero weights too */
        insert(rc, s, i, w[i]);
        for (int k = 0; k < (i % 3 == 0) + 5 * (i % 7 == 0); k++)
            replica_cache_hit(rc, s[i].it);
    }
    CHECK(replica_cache_weight(rc) == resident_weight(s, w, N), "weight %llu, expected %llu",
          (unsigned long long)replica_cache_weight(rc),
          (unsigned long long)resident_weight(s, w, N));
    CHECK(replica_cache_count(rc) == N, "count %zu, expected %d", replica_cache_count(rc), N);

    /* Removes and pops interleaved; the totals follow each of them. */
    size_t count = N;
    int wrong = 0;
    for (int i = 0; i < N; i += 5) {
        if (s[i].it) {
            replica_cache_remove(rc, s[i].it);
            s[i].it = NULL;
            removed[i] = true;
            count--;
            wrong += replica_cache_weight(rc) != resident_weight(s, w, N) ||
                     replica_cache_count(rc) != count;
        }
        if (i % 10 == 0) {
            REQUIRE(pop(rc), "pop_victim returned NULL with %zu items", replica_cache_count(rc));
            count--;
            wrong += replica_cache_weight(rc) != resident_weight(s, w, N) ||
                     replica_cache_count(rc) != count;
        }
    }
    CHECK(wrong == 0, "weight or count wrong after %d removes or pops", wrong);

    /* Draining returns every resident ctx exactly once, removed ones never. */
    size_t pops = 0;
    while (pop(rc))
        pops++;
    CHECK(pops == count, "drained %zu, expected %zu", pops, count);
    CHECK(replica_cache_count(rc) == 0 && replica_cache_weight(rc) == 0, "empty after drain");
    CHECK(replica_cache_pop_victim(rc) == NULL, "pop after drain");
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += removed[i] ? s[i].popped != 0 : s[i].popped != 1;
    CHECK(bad == 0, "%d keys popped a wrong number of times", bad);
    replica_cache_free(rc);
}

static void test_hot_survives_scan(void)
{
    enum { CAP = 100 * W, SCAN = 5000 };
    static slot s[SCAN + 2 + 5 * 300];
    memset(s, 0, sizeof s);
    replica_cache *rc = replica_cache_new(CAP);
    REQUIRE(rc, "new");
    insert(rc, s, 0, W); /* hot */
    insert(rc, s, 1, W); /* cold, same age */
    for (int k = 0; k < 3; k++)
        replica_cache_hit(rc, s[0].it);
    scan(rc, s, 2, SCAN + 2, CAP);
    CHECK(s[0].it && s[0].popped == 0, "the hot item was evicted by a scan");
    CHECK(s[1].popped == 1, "the cold item survived a scan of %d keys", SCAN);
    CHECK(replica_cache_weight(rc) <= CAP, "over capacity");
    /* It stays through more scans, hit once between each. */
    for (int round = 0; round < 5; round++) {
        replica_cache_hit(rc, s[0].it);
        scan(rc, s, SCAN + 2 + round * 300, SCAN + 2 + (round + 1) * 300, CAP);
    }
    CHECK(s[0].it && s[0].popped == 0, "the hot item was evicted by a later scan");
    replica_cache_free(rc);
}

static void test_ghost_readmits_to_main(void)
{
    enum { CAP = 100 * W, SCAN = 3000 };
    static slot s[SCAN + 10];
    memset(s, 0, sizeof s);
    replica_cache *rc = replica_cache_new(CAP);
    REQUIRE(rc, "new");
    /* Key 0 is the oldest of a full cache: the first victim, from small. */
    scan(rc, s, 0, 100, CAP);
    CHECK(s[0].popped == 0 && replica_cache_weight(rc) == CAP, "cache filled");
    scan(rc, s, 100, 101, CAP);
    REQUIRE(s[0].popped == 1, "key 0 was not the first victim");
    /* Inserted again while its hash is in the ghost, it goes to main; a
     * brand-new key inserted beside it goes to small. */
    insert(rc, s, 0, W);
    s[SCAN + 5].it = replica_cache_insert(rc, 0xabcdef, W, &s[SCAN + 5]);
    REQUIRE(s[SCAN + 5].it, "insert");
    fit(rc, CAP);
    scan(rc, s, 101, SCAN, CAP);
    CHECK(s[0].it && s[0].popped == 1, "the re-inserted key did not survive the next scan");
    CHECK(s[SCAN + 5].popped == 1, "a new key survived the scan");
    replica_cache_free(rc);

    /* The ghost is bounded: a victim of long ago is not remembered. */
    memset(s, 0, sizeof s);
    rc = replica_cache_new(CAP);
    REQUIRE(rc, "new");
    scan(rc, s, 0, 101, CAP); /* pops key 0 */
    REQUIRE(s[0].popped == 1, "key 0 was not the first victim");
    scan(rc, s, 101, 2000, CAP); /* ~1900 more victims pass through the ghost */
    insert(rc, s, 0, W);
    fit(rc, CAP);
    scan(rc, s, 2000, SCAN, CAP);
    CHECK(s[0].popped == 2, "a key evicted long ago was still admitted to main");
    replica_cache_free(rc);
}

static void test_capacity_change(void)
{
    slot a[8], b[8];
    memset(a, 0, sizeof a);
    memset(b, 0, sizeof b);
    replica_cache *x = replica_cache_new(100 * W), *y = replica_cache_new(100 * W);
    REQUIRE(x && y, "new");
    /* Both: key 0 in main (through the ghost), five keys of W in small
     * (50 bytes: under 10% of 1000, over 10% of 400). */
    replica_cache *both[2] = {x, y};
    slot *ss[2] = {a, b};
    for (int c = 0; c < 2; c++) {
        insert(both[c], ss[c], 0, W);
        REQUIRE(pop(both[c]) == &ss[c][0], "first pop");
        insert(both[c], ss[c], 0, W);
        for (int i = 1; i <= 5; i++)
            insert(both[c], ss[c], i, W);
    }
    replica_cache_set_capacity(y, 40 * W);
    CHECK(pop(x) == &a[0], "capacity 1000: small is under its share, main's item goes first");
    CHECK(pop(y) == &b[1], "capacity 400: small is over its share, its oldest item goes first");
    /* Growing it back makes small small again. */
    replica_cache_set_capacity(y, 100 * W);
    CHECK(pop(y) == &b[0], "capacity 1000 again: main's item goes first");
    replica_cache_free(x);
    replica_cache_free(y);
}

/* Main is a CLOCK: its oldest item, hit since it came in, is passed over
 * for a younger one that was not. */
static void test_main_reinserts_hit_items(void)
{
    slot s[4];
    memset(s, 0, sizeof s);
    replica_cache *rc = replica_cache_new(100 * W);
    REQUIRE(rc, "new");
    for (int i = 0; i < 2; i++) { /* both through the ghost into main */
        insert(rc, s, i, W);
        REQUIRE(pop(rc) == &s[i], "pop %d", i);
    }
    insert(rc, s, 0, W);
    insert(rc, s, 1, W);
    replica_cache_hit(rc, s[0].it);
    CHECK(pop(rc) == &s[1], "main's unhit item goes before its older hit one");
    CHECK(pop(rc) == &s[0], "then the other");
    CHECK(pop(rc) == NULL, "then none");
    replica_cache_free(rc);
}

/* Frequencies only rotate main: a cache whose every item is hot still
 * yields victims, and draining it ends. */
static void test_progress_when_all_hot(void)
{
    enum { N = 1000 };
    static slot s[N];
    memset(s, 0, sizeof s);
    replica_cache *rc = replica_cache_new(N * W);
    REQUIRE(rc, "new");
    for (int i = 0; i < N; i++)
        insert(rc, s, i, W);
    for (int k = 0; k < 20; k++)
        for (int i = 0; i < N; i++)
            replica_cache_hit(rc, s[i].it);
    /* Half go, the other half are hit again, then everything goes. */
    for (int i = 0; i < N / 2; i++)
        REQUIRE(pop(rc), "pop %d", i);
    for (int i = 0; i < N; i++)
        if (s[i].it)
            replica_cache_hit(rc, s[i].it);
    int n = N / 2;
    while (pop(rc))
        n++;
    CHECK(n == N && replica_cache_count(rc) == 0, "drained %d of %d", n, N);
    replica_cache_free(rc);
    replica_cache_free(NULL);
}

int main(void)
{
    test_accounting();
    test_hot_survives_scan();
    test_ghost_readmits_to_main();
    test_capacity_change();
    test_main_reinserts_hit_items();
    test_progress_when_all_hot();
    return test_finish();
}
