/*
 * test_replica_index.c - the owner's replica index (src/owner/replica_index.c),
 * what a new master rebuilds its routes from.
 *
 * Checks the rules that keep the index from claiming more than is true: one
 * entry per key, a newer publish replaces and an older one is ignored; drop
 * up to a put_id removes that version and older ones, never a newer one; an
 * eviction drops exactly its version's memory and keeps an SSD copy; an SSD
 * commit or eviction touches only its own version; a range about to be
 * written forgets every memory replica overlapping it (and only those),
 * against a brute-force model over random ranges; iteration visits every
 * entry once.
 */
#include "owner/replica_index.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static index_pid P(uint64_t ms, uint32_t v)
{
    return (index_pid){.time_ms = ms, .version = v};
}

static bool has(replica_index *ri, const char *key, index_entry *e)
{
    return replica_index_find(ri, key, strlen(key), e);
}

static void test_versions(void)
{
    replica_index *ri = replica_index_new();
    index_entry e;
    REQUIRE(replica_index_publish(ri, "k", 1, P(10, 1), 0, 100) == 0, "publish");
    CHECK(replica_index_publish(ri, "k", 1, P(9, 7), 4096, 100) == 0 && has(ri, "k", &e) &&
              e.pid.time_ms == 10 && e.offset == 0,
          "an older publish is ignored");
    CHECK(replica_index_publish(ri, "k", 1, P(10, 2), 8192, 50) == 0 && has(ri, "k", &e) &&
              e.pid.version == 2 && e.offset == 8192 && e.len == 50,
          "a newer publish replaces the entry");
    CHECK(replica_index_count(ri) == 1, "one entry per key");
    CHECK(replica_index_forget_range(ri, 0, 100) == 0, "the replaced range left the tree");

    replica_index_drop_upto(ri, "k", 1, P(10, 1));
    CHECK(has(ri, "k", &e), "dropping an older version keeps the newer entry");
    replica_index_drop_upto(ri, "k", 1, P(10, 2));
    CHECK(!has(ri, "k", &e) && replica_index_count(ri) == 0, "drop up to its own put_id");

    replica_index_publish(ri, "s", 1, P(20, 0), 0, 512);
    replica_index_set_ssd(ri, "s", 1, P(19, 0), true, 512);
    CHECK(has(ri, "s", &e) && !e.on_ssd, "an SSD commit of another version adds nothing");
    replica_index_set_ssd(ri, "s", 1, P(20, 0), true, 512);
    replica_index_drop_memory(ri, "s", 1, P(20, 1));
    CHECK(has(ri, "s", &e) && e.in_memory, "an eviction of another version keeps the memory");
    replica_index_drop_memory(ri, "s", 1, P(20, 0));
    CHECK(has(ri, "s", &e) && !e.in_memory && e.on_ssd && e.ssd_len == 512,
          "an eviction keeps the SSD copy");
    CHECK(replica_index_forget_range(ri, 0, 512) == 0, "an SSD-only entry has no range");
    replica_index_set_ssd(ri, "s", 1, P(20, 0), false, 0);
    CHECK(!has(ri, "s", &e), "an entry with neither memory nor SSD goes");

    replica_index_publish(ri, "t", 1, P(30, 0), 0, 512);
    replica_index_set_ssd(ri, "t", 1, P(30, 0), true, 512);
    replica_index_publish(ri, "t", 1, P(31, 0), 1024, 512);
    CHECK(has(ri, "t", &e) && !e.on_ssd, "a newer version does not inherit the SSD copy");
    replica_index_clear(ri);
    CHECK(replica_index_count(ri) == 0 && replica_index_forget_range(ri, 0, 1 << 20) == 0,
          "clear empties both the table and the tree");
    replica_index_free(ri);
}

/* Random non-overlapping memory entries, then random writes: the index must
 * forget exactly the entries a brute-force overlap test names. */
#define SLOTS 64
#define UNIT 4096u
static void test_forget_range_model(void)
{
    replica_index *ri = replica_index_new();
    unsigned seed = 12345;
    bool live[SLOTS] = {0};
    uint64_t len[SLOTS];
    char key[32];
    for (int round = 0; round < 2000; round++) {
        int s = rand_r(&seed) % SLOTS;
        snprintf(key, sizeof key, "key%d", s);
        if (rand_r(&seed) % 3) {
            /* Slot s owns [s * UNIT, s * UNIT + len), len < UNIT: no overlap. */
            len[s] = 1 + (uint64_t)(rand_r(&seed) % (UNIT - 1));
            REQUIRE(replica_index_publish(ri, key, strlen(key), P((uint64_t)round + 1, 0),
                                          (uint64_t)s * UNIT, len[s]) == 0,
                    "publish");
            live[s] = true;
        } else {
            uint64_t off = (uint64_t)(rand_r(&seed) % (SLOTS * UNIT));
            uint64_t wlen = 1 + (uint64_t)(rand_r(&seed) % (3 * UNIT));
            size_t want = 0;
            for (int i = 0; i < SLOTS; i++) {
                uint64_t a = (uint64_t)i * UNIT, b = a + len[i];
                if (live[i] && a < off + wlen && off < b) {
                    want++;
                    live[i] = false;
                }
            }
            size_t got = replica_index_forget_range(ri, off, wlen);
            CHECK(got == want, "round %d: write %llu+%llu forgot %zu entries, model %zu", round,
                  (unsigned long long)off, (unsigned long long)wlen, got, want);
        }
        size_t n_live = 0;
        for (int i = 0; i < SLOTS; i++)
            n_live += live[i];
        if (replica_index_count(ri) != n_live) {
            CHECK(false, "round %d: %zu entries, model %zu", round, replica_index_count(ri),
                  n_live);
            break;
        }
    }
    index_cursor c;
    index_entry e;
    size_t seen = 0;
    for (bool ok = replica_index_first(ri, &c, &e); ok; ok = replica_index_next(&c, &e)) {
        char name[32] = {0}; /* keys are not NUL-terminated */
        memcpy(name, e.key, e.klen < sizeof name - 1 ? e.klen : sizeof name - 1);
        int s = atoi(name + 3);
        CHECK(s >= 0 && s < SLOTS && live[s] && e.offset == (uint64_t)s * UNIT && e.len == len[s],
              "entry %.*s matches the model", (int)e.klen, e.key);
        seen++;
    }
    CHECK(seen == replica_index_count(ri), "iteration visits every entry once (%zu)", seen);
    replica_index_free(ri);
}

int main(void)
{
    test_versions();
    test_forget_range_model();
    return test_finish();
}
