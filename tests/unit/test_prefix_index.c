/*
 * test_prefix_index.c - the master's prefix index (radix tree with subtree
 * counts) against a brute-force model.
 *
 * The model is an array of keys; a prefix count is a memcmp over all of them.
 * Random add/remove/count runs (several seeds) draw keys of 1..12 bytes over
 * the alphabet {0, 1, 2, 'a'} from a pool built out of each other's prefixes,
 * so edges split and merge all the time: duplicate adds, removes of absent
 * keys and of keys that are only a prefix of others, the empty prefix,
 * prefixes longer than any key and prefixes ending inside an edge. Size is
 * checked after every step and every prefix of every pool key periodically;
 * the run ends by removing everything and checking the index is empty. Two of
 * the runs also fail about one allocation in seven through the index's test
 * failpoint: add must then return -ENOMEM with nothing changed, and a failed
 * merge in remove must leave a tree that still counts right.
 * Fixed cases cover counts inside compressed edges, zero bytes, argument
 * errors, 4096-byte keys, a 4096-node-deep chain (freed without recursion),
 * -ENOMEM at each allocation of an add, and that memory after churn stays
 * close to that of a freshly built index with the same keys (merging works).
 */
#include "master/prefix_index.h"
#include "testlib.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- allocation failpoint (weak hook in prefix_index.c) ------------------ */

static long fp_countdown = -1;  /* >= 0: fail the allocation this many calls ahead */
static unsigned fp_rate;        /* else fail one in fp_rate allocations; 0: never */
static unsigned long long fp_seed = 0x9e3779b97f4a7c15ULL;
static unsigned long fp_failed; /* allocations failed so far */

bool prefix_index_failpoint(void);
bool prefix_index_failpoint(void)
{
    bool fail = false;
    if (fp_countdown >= 0)
        fail = fp_countdown-- == 0;
    else if (fp_rate)
        fail = test_rand(&fp_seed) % fp_rate == 0;
    fp_failed += fail;
    return fail;
}

static void fp_off(void)
{
    fp_countdown = -1;
    fp_rate = 0;
}

/* ---- brute-force model -------------------------------------------------- */

#define MAXK 12          /* longest random key */
#define MAXP (MAXK + 4)  /* longest probe prefix */
#define POOL 400
#define MODEL_CAP 40000

struct mkey {
    uint8_t len;
    uint8_t b[MAXK];
};

struct model {
    struct mkey *keys;
    size_t n;
};

static long model_find(const struct model *m, const uint8_t *b, size_t len)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->keys[i].len == len && memcmp(m->keys[i].b, b, len) == 0)
            return (long)i;
    return -1;
}

static bool model_add(struct model *m, const uint8_t *b, size_t len)
{
    if (model_find(m, b, len) >= 0)
        return false;
    REQUIRE(m->n < MODEL_CAP, "model full");
    m->keys[m->n].len = (uint8_t)len;
    memcpy(m->keys[m->n].b, b, len);
    m->n++;
    return true;
}

static bool model_remove(struct model *m, const uint8_t *b, size_t len)
{
    long i = model_find(m, b, len);
    if (i < 0)
        return false;
    m->keys[i] = m->keys[--m->n];
    return true;
}

static uint64_t model_count(const struct model *m, const uint8_t *p, size_t plen)
{
    uint64_t c = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->keys[i].len >= plen && memcmp(m->keys[i].b, p, plen) == 0)
            c++;
    return c;
}

static const uint8_t ALPHABET[4] = {0, 1, 2, 'a'};

static uint8_t rand_byte(unsigned long long *s)
{
    return ALPHABET[test_rand(s) % 4];
}

static void rand_key(unsigned long long *s, struct mkey *k)
{
    k->len = (uint8_t)(1 + test_rand(s) % MAXK);
    for (size_t i = 0; i < k->len; i++)
        k->b[i] = rand_byte(s);
}

/* Half the pool is random, the rest a prefix of an earlier key extended by
 * random bytes (or not at all), so keys share long prefixes. */
static void make_pool(unsigned long long *s, struct mkey *pool)
{
    for (size_t i = 0; i < POOL; i++) {
        if (i < 20 || test_rand(s) % 2 == 0) {
            rand_key(s, &pool[i]);
            continue;
        }
        const struct mkey *from = &pool[test_rand(s) % i];
        size_t l = 1 + test_rand(s) % from->len;
        size_t ext = test_rand(s) % (MAXK - l + 1);
        memcpy(pool[i].b, from->b, l);
        for (size_t j = 0; j < ext; j++)
            pool[i].b[l + j] = rand_byte(s);
        pool[i].len = (uint8_t)(l + ext);
    }
}

/* Every prefix (length 0..len, plus a few past it) of every pool key. */
static void check_all_prefixes(const prefix_index *pi, const struct model *m,
                               const struct mkey *pool, const char *what)
{
    for (size_t i = 0; i < POOL; i++) {
        uint8_t p[MAXP];
        memcpy(p, pool[i].b, pool[i].len);
        memset(p + pool[i].len, 'a', MAXP - pool[i].len);
        for (size_t l = 0; l <= (size_t)pool[i].len + 2; l++) {
            uint64_t got = prefix_index_count(pi, p, l);
            uint64_t want = model_count(m, p, l);
            REQUIRE(got == want, "%s: pool %zu prefix len %zu: count %" PRIu64 ", want %" PRIu64,
                    what, i, l, got, want);
        }
    }
    REQUIRE(prefix_index_size(pi) == m->n, "%s: size %" PRIu64 ", want %zu", what,
            prefix_index_size(pi), m->n);
    REQUIRE(prefix_index_count(pi, NULL, 0) == m->n, "%s: count of the empty prefix", what);
}

/* One differential run; rate > 0 fails one in rate allocations. */
static void test_random(unsigned long long seed, int ops, unsigned rate)
{
    unsigned long long s = seed;
    struct mkey *pool = calloc(POOL, sizeof *pool);
    struct model m = {.keys = calloc(MODEL_CAP, sizeof *m.keys)};
    REQUIRE(pool && m.keys, "calloc");
    make_pool(&s, pool);
    prefix_index *pi = prefix_index_new();
    REQUIRE(pi != NULL, "prefix_index_new");

    fp_seed = seed ^ 0x5555;
    fp_rate = rate;
    unsigned long enomem = 0, adds = 0, dups = 0, removes = 0, absent = 0;
    char what[96];
    for (int op = 0; op < ops; op++) {
        snprintf(what, sizeof what, "seed %llu rate %u op %d", seed, rate, op);
        struct mkey k;
        unsigned r = (unsigned)(test_rand(&s) % 100);
        if (r < 40) {
            if (test_rand(&s) % 10 == 0)
                rand_key(&s, &k);
            else
                k = pool[test_rand(&s) % POOL];
            bool present = model_find(&m, k.b, k.len) >= 0;
            int rc = prefix_index_add(pi, k.b, k.len);
            if (rc == -ENOMEM) {
                REQUIRE(rate && !present, "%s: add -ENOMEM (present %d)", what, present);
                enomem++;
            } else {
                REQUIRE(rc == (present ? 0 : 1), "%s: add returned %d, present %d", what, rc,
                        present);
                model_add(&m, k.b, k.len);
                adds += rc == 1;
                dups += rc == 0;
            }
        } else if (r < 70) {
            if (test_rand(&s) % 8 == 0)
                rand_key(&s, &k);
            else
                k = pool[test_rand(&s) % POOL];
            int want = model_remove(&m, k.b, k.len) ? 1 : 0;
            int rc = prefix_index_remove(pi, k.b, k.len);
            REQUIRE(rc == want, "%s: remove returned %d, want %d", what, rc, want);
            removes += rc == 1;
            absent += rc == 0;
        } else {
            uint8_t p[MAXP];
            size_t plen;
            unsigned kind = (unsigned)(test_rand(&s) % 3);
            const struct mkey *from = &pool[test_rand(&s) % POOL];
            if (kind == 0) { /* a prefix of a pool key, often ending inside an edge */
                plen = test_rand(&s) % (from->len + 1u);
                memcpy(p, from->b, plen);
            } else if (kind == 1) { /* a pool key and more: longer than the key */
                plen = from->len + 1 + test_rand(&s) % (MAXP - from->len);
                memcpy(p, from->b, from->len);
                for (size_t j = from->len; j < plen; j++)
                    p[j] = rand_byte(&s);
            } else {
                plen = test_rand(&s) % (MAXK + 2);
                for (size_t j = 0; j < plen; j++)
                    p[j] = rand_byte(&s);
            }
            uint64_t got = prefix_index_count(pi, p, plen);
            uint64_t want = model_count(&m, p, plen);
            REQUIRE(got == want, "%s: count of a %zu-byte prefix (kind %u) %" PRIu64
                    ", want %" PRIu64, what, plen, kind, got, want);
        }
        REQUIRE(prefix_index_size(pi) == m.n, "%s: size %" PRIu64 ", want %zu", what,
                prefix_index_size(pi), m.n);
        if (op % 2000 == 1999)
            check_all_prefixes(pi, &m, pool, what);
    }
    CHECK(adds > 100 && dups > 100 && removes > 100 && absent > 100,
          "seed %llu: ops mix too thin: %lu adds, %lu dups, %lu removes, %lu absent", seed,
          adds, dups, removes, absent);
    CHECK(rate == 0 || enomem > 10, "seed %llu: only %lu -ENOMEM with rate %u", seed, enomem,
          rate);
    check_all_prefixes(pi, &m, pool, "before drain");

    /* Remove everything in random order (the failpoint still on). */
    while (m.n) {
        size_t i = test_rand(&s) % m.n;
        struct mkey k = m.keys[i];
        REQUIRE(prefix_index_remove(pi, k.b, k.len) == 1, "drain: remove a present key");
        REQUIRE(prefix_index_remove(pi, k.b, k.len) == 0, "drain: remove it twice");
        model_remove(&m, k.b, k.len);
        REQUIRE(prefix_index_size(pi) == m.n, "drain: size");
        if (m.n % 97 == 0)
            check_all_prefixes(pi, &m, pool, "drain");
    }
    fp_off();
    CHECK(prefix_index_size(pi) == 0, "empty: size %" PRIu64, prefix_index_size(pi));
    CHECK(prefix_index_count(pi, "", 0) == 0, "empty: count of the empty prefix");
    check_all_prefixes(pi, &m, pool, "empty");

    /* The emptied index works like a new one. */
    CHECK(prefix_index_add(pi, pool[0].b, pool[0].len) == 1, "add after drain");
    CHECK(prefix_index_count(pi, "", 0) == 1, "count after re-add");
    CHECK(prefix_index_count(pi, pool[0].b, pool[0].len) == 1, "count of the re-added key");

    prefix_index_free(pi);
    free(m.keys);
    free(pool);
}

/* ---- fixed cases -------------------------------------------------------- */

static uint64_t cnt(const prefix_index *pi, const char *p)
{
    return prefix_index_count(pi, p, strlen(p));
}

static void test_edges(void)
{
    prefix_index *pi = prefix_index_new();
    REQUIRE(pi != NULL, "prefix_index_new");
    CHECK(prefix_index_size(pi) == 0 && cnt(pi, "") == 0 && cnt(pi, "a") == 0, "new is empty");

    CHECK(prefix_index_add(pi, "abcdef", 6) == 1, "add abcdef");
    CHECK(prefix_index_add(pi, "abcdef", 6) == 0, "add abcdef again");
    CHECK(cnt(pi, "") == 1 && cnt(pi, "a") == 1, "one key");
    CHECK(cnt(pi, "abc") == 1, "prefix inside the edge");
    CHECK(cnt(pi, "abcdef") == 1, "the whole key");
    CHECK(cnt(pi, "abcdefg") == 0, "longer than the key");
    CHECK(cnt(pi, "abx") == 0 && cnt(pi, "b") == 0, "mismatch inside the edge");
    CHECK(prefix_index_remove(pi, "abc", 3) == 0, "remove a prefix that is not a key");
    CHECK(prefix_index_remove(pi, "abcdefg", 7) == 0, "remove a longer key");

    CHECK(prefix_index_add(pi, "abcxyz", 6) == 1, "add abcxyz (splits the edge)");
    CHECK(cnt(pi, "ab") == 2 && cnt(pi, "abc") == 2, "both below the split");
    CHECK(cnt(pi, "abcd") == 1 && cnt(pi, "abcx") == 1 && cnt(pi, "abcxy") == 1, "each side");
    CHECK(prefix_index_remove(pi, "abc", 3) == 0, "remove the keyless branch node");
    CHECK(prefix_index_add(pi, "abc", 3) == 1, "add the branch node as a key");
    CHECK(cnt(pi, "abc") == 3 && prefix_index_size(pi) == 3, "branch key counted");
    CHECK(prefix_index_add(pi, "ab", 2) == 1, "add ab (splits above the branch)");
    CHECK(cnt(pi, "a") == 4 && cnt(pi, "ab") == 4 && cnt(pi, "abc") == 3, "after ab");

    CHECK(prefix_index_remove(pi, "abcdef", 6) == 1, "remove abcdef");
    CHECK(prefix_index_remove(pi, "abcdef", 6) == 0, "remove abcdef again");
    CHECK(cnt(pi, "abc") == 2 && cnt(pi, "abcd") == 0 && cnt(pi, "abcx") == 1, "after remove");
    CHECK(prefix_index_remove(pi, "abc", 3) == 1, "remove abc (merges into abcxyz)");
    CHECK(cnt(pi, "abc") == 1 && cnt(pi, "abcxy") == 1 && cnt(pi, "abcy") == 0, "merged edge");
    CHECK(prefix_index_remove(pi, "ab", 2) == 1 && prefix_index_remove(pi, "abcxyz", 6) == 1,
          "remove the rest");
    CHECK(prefix_index_size(pi) == 0 && cnt(pi, "") == 0 && cnt(pi, "a") == 0, "empty again");

    /* Zero bytes are ordinary bytes, and length tells "\0" from "\0\0". */
    CHECK(prefix_index_add(pi, "\0", 1) == 1, "add \\0");
    CHECK(prefix_index_add(pi, "\0\0", 2) == 1, "add \\0\\0");
    CHECK(prefix_index_add(pi, "\0a\0", 3) == 1, "add \\0a\\0");
    CHECK(prefix_index_add(pi, "\0\0", 2) == 0, "add \\0\\0 again");
    CHECK(prefix_index_count(pi, "\0", 1) == 3, "count \\0");
    CHECK(prefix_index_count(pi, "\0\0", 2) == 1, "count \\0\\0");
    CHECK(prefix_index_count(pi, "\0\0\0", 3) == 0, "count \\0\\0\\0");
    CHECK(prefix_index_count(pi, "\0a", 2) == 1, "count \\0a");
    CHECK(prefix_index_remove(pi, "\0", 1) == 1, "remove \\0");
    CHECK(prefix_index_count(pi, "\0", 1) == 2, "count \\0 after remove");
    CHECK(prefix_index_count(pi, "\0\0", 2) == 1, "\\0\\0 still there");

    /* Argument errors change nothing. */
    uint8_t big[4097];
    memset(big, 'q', sizeof big);
    CHECK(prefix_index_add(pi, "x", 0) == -EINVAL, "add of an empty key");
    CHECK(prefix_index_add(pi, big, sizeof big) == -EINVAL, "add of a 4097-byte key");
    CHECK(prefix_index_add(pi, NULL, 3) == -EINVAL, "add of a NULL key");
    CHECK(prefix_index_add(NULL, "x", 1) == -EINVAL, "add to a NULL index");
    CHECK(prefix_index_remove(pi, "x", 0) == 0, "remove of an empty key");
    CHECK(prefix_index_remove(pi, big, sizeof big) == 0, "remove of a 4097-byte key");
    CHECK(prefix_index_count(pi, big, sizeof big) == 0, "count of a 4097-byte prefix");
    CHECK(prefix_index_count(pi, NULL, 0) == 2, "NULL empty prefix counts everything");
    CHECK(prefix_index_size(pi) == 2 && cnt(pi, "q") == 0 && cnt(pi, "x") == 0,
          "argument errors changed nothing");
    CHECK(prefix_index_size(NULL) == 0 && prefix_index_count(NULL, "", 0) == 0, "NULL index");
    prefix_index_free(pi);
    prefix_index_free(NULL);
}

static void test_long_keys(void)
{
    enum { L = 4096 };
    unsigned long long s = 4096;
    static uint8_t a[L + 1], b[L], c[L];
    for (size_t i = 0; i < L; i++)
        a[i] = (uint8_t)test_rand(&s); /* any byte, zero included */
    a[L] = 'x';
    memcpy(b, a, L);
    b[L - 1] ^= 0xff;
    memcpy(c, a, L);
    c[2048] ^= 0x01;

    prefix_index *pi = prefix_index_new();
    REQUIRE(pi != NULL, "prefix_index_new");
    CHECK(prefix_index_add(pi, a, L) == 1, "add a 4096-byte key");
    CHECK(prefix_index_count(pi, a, L) == 1, "count the whole key");
    CHECK(prefix_index_count(pi, a, L - 1) == 1 && prefix_index_count(pi, a, 1) == 1,
          "count inside its 4096-byte edge");
    CHECK(prefix_index_count(pi, a, L + 1) == 0, "a 4097-byte prefix");
    CHECK(prefix_index_count(pi, b, L) == 0, "differs in the last byte");
    CHECK(prefix_index_add(pi, b, L) == 1 && prefix_index_add(pi, c, L) == 1, "add b and c");
    CHECK(prefix_index_count(pi, a, L - 1) == 2, "a and b share 4095 bytes");
    CHECK(prefix_index_count(pi, a, 2048) == 3, "all share 2048 bytes");
    CHECK(prefix_index_count(pi, a, 2049) == 2 && prefix_index_count(pi, c, 2049) == 1,
          "split at byte 2048");
    CHECK(prefix_index_count(pi, a, L) == 1 && prefix_index_count(pi, b, L) == 1 &&
              prefix_index_count(pi, c, L) == 1, "each whole key");
    CHECK(prefix_index_remove(pi, a, L) == 1, "remove a");
    CHECK(prefix_index_count(pi, a, L - 1) == 1 && prefix_index_count(pi, a, L) == 0,
          "after removing a");
    CHECK(prefix_index_remove(pi, b, L) == 1, "remove b");
    CHECK(prefix_index_count(pi, a, 2048) == 1 && prefix_index_count(pi, c, L) == 1,
          "c alone (merged back)");
    prefix_index_free(pi);

    /* A chain 4096 nodes deep: "z", "zz", ... every length is a key. Freed
     * while full (teardown must not recurse per level), then again after a
     * random drain. */
    static uint8_t z[L + 1];
    for (int round = 0; round < 2; round++) {
        uint8_t fill = round ? 0 : 'z';
        memset(z, fill, sizeof z);
        pi = prefix_index_new();
        REQUIRE(pi != NULL, "prefix_index_new");
        int bad = 0;
        for (size_t l = 1; l <= L; l++)
            bad += prefix_index_add(pi, z, l) != 1;
        CHECK(bad == 0, "chain: %d adds failed", bad);
        CHECK(prefix_index_size(pi) == L, "chain size");
        bad = 0;
        for (size_t l = 0; l <= L + 1; l++)
            bad += prefix_index_count(pi, z, l) != (l == 0 ? L : (uint64_t)(L + 1 - l));
        CHECK(bad == 0, "chain: %d counts wrong", bad);
        prefix_index_free(pi);
    }
    pi = prefix_index_new();
    REQUIRE(pi != NULL, "prefix_index_new");
    static uint16_t order[L];
    for (size_t i = 0; i < L; i++)
        order[i] = (uint16_t)(i + 1);
    for (size_t i = L - 1; i > 0; i--) {
        size_t j = test_rand(&s) % (i + 1);
        uint16_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    memset(z, 'z', sizeof z);
    for (size_t i = 0; i < L; i++)
        REQUIRE(prefix_index_add(pi, z, order[i]) == 1, "chain: shuffled add");
    for (size_t i = L; i-- > 0;) {
        REQUIRE(prefix_index_remove(pi, z, order[i]) == 1, "chain: shuffled remove");
        REQUIRE(prefix_index_size(pi) == i, "chain: size while draining");
    }
    CHECK(prefix_index_count(pi, "", 0) == 0 && prefix_index_count(pi, z, 1) == 0,
          "chain: empty after drain");
    prefix_index_free(pi);
}

/* Records the size and then the counts of every prefix of every probe
 * string (out has room for 160); returns how many it wrote. */
static size_t snapshot(const prefix_index *pi, const char *const *probe, size_t n, uint64_t *out)
{
    size_t k = 0;
    out[k++] = prefix_index_size(pi);
    for (size_t i = 0; i < n; i++)
        for (size_t l = 0; l <= strlen(probe[i]) + 1; l++) {
            REQUIRE(k < 160, "snapshot too big");
            out[k++] = prefix_index_count(pi, probe[i], l);
        }
    return k;
}

/* Each allocation an add makes fails in turn: -ENOMEM, nothing changed;
 * with none failing it succeeds. */
static void test_enomem(void)
{
    static const char *const base[] = {"abcdef", "abcxyz", "q"};
    /* attach under a full branch, split with and without a new leaf, new root child */
    static const char *const add[] = {"abcq", "abz", "abcdQQ", "abcd", "ab", "r", "qq"};
    const char *probe[16];
    size_t np = 0;
    for (size_t i = 0; i < 3; i++)
        probe[np++] = base[i];
    for (size_t i = 0; i < 7; i++)
        probe[np++] = add[i];

    for (size_t t = 0; t < 7; t++) {
        prefix_index *pi = prefix_index_new();
        REQUIRE(pi != NULL, "prefix_index_new");
        for (size_t i = 0; i < 3; i++)
            REQUIRE(prefix_index_add(pi, base[i], strlen(base[i])) == 1, "base add");
        uint64_t before[160], after[160];
        size_t ns = snapshot(pi, probe, np, before);
        int fails = 0, rc;
        for (long k = 0;; k++) {
            fp_countdown = k;
            rc = prefix_index_add(pi, add[t], strlen(add[t]));
            fp_off();
            if (rc != -ENOMEM)
                break;
            fails++;
            snapshot(pi, probe, np, after);
            CHECK(memcmp(before, after, ns * sizeof *before) == 0,
                  "add %s: -ENOMEM at allocation %ld changed the index", add[t], k);
            REQUIRE(k < 10, "add %s: still -ENOMEM after %ld allocations", add[t], k);
        }
        CHECK(rc == 1, "add %s: returned %d once allocations succeed", add[t], rc);
        CHECK(fails >= 1, "add %s: no allocation to fail", add[t]);
        snapshot(pi, probe, np, after);
        CHECK(after[0] == before[0] + 1, "add %s: size grew", add[t]);
        CHECK(prefix_index_count(pi, add[t], strlen(add[t])) >= 1, "add %s: counted", add[t]);
        CHECK(prefix_index_add(pi, add[t], strlen(add[t])) == 0, "add %s: now a duplicate",
              add[t]);
        prefix_index_free(pi);
    }
}

/* Churn must not leave garbage nodes behind: after adding and removing many
 * keys that split the edges of a base set, the index holds about as much
 * memory as one built from the base set alone. Needs glibc's mallinfo2, so
 * not under the sanitizers (they replace malloc). */
static void test_churn_memory(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33) && !defined(FX_SANITIZE)
    enum { NBASE = 2000, NEXTRA = 4000, KL = 24, OPS = 200000 };
    struct bkey {
        uint8_t len;
        uint8_t b[KL];
    };
    unsigned long long s = 777;
    struct bkey *base = calloc(NBASE, sizeof *base);
    struct bkey *extra = calloc(NEXTRA, sizeof *extra);
    bool *live = calloc(NEXTRA, sizeof *live);
    REQUIRE(base && extra && live, "calloc");
    for (size_t i = 0; i < NBASE; i++) {
        size_t l = 0;
        if (i > 0 && test_rand(&s) % 2) { /* share a prefix with an earlier key */
            const struct bkey *f = &base[test_rand(&s) % i];
            l = 1 + test_rand(&s) % f->len;
            if (l == KL)
                l--; /* leave room for at least one new byte */
            memcpy(base[i].b, f->b, l);
        }
        size_t len = l + 1 + test_rand(&s) % (KL - l);
        for (size_t j = l; j < len; j++)
            base[i].b[j] = (uint8_t)test_rand(&s);
        base[i].len = (uint8_t)len;
    }
    /* Extras branch off base keys at random points, so each splits an edge. */
    for (size_t i = 0; i < NEXTRA; i++) {
        const struct bkey *f = &base[test_rand(&s) % NBASE];
        size_t l = test_rand(&s) % f->len;
        memcpy(extra[i].b, f->b, l);
        size_t len = l + 1 + test_rand(&s) % (KL - l);
        for (size_t j = l; j < len; j++)
            extra[i].b[j] = (uint8_t)test_rand(&s);
        extra[i].len = (uint8_t)len;
    }

    size_t m0 = mallinfo2().uordblks;
    prefix_index *fresh = prefix_index_new();
    REQUIRE(fresh != NULL, "prefix_index_new");
    for (size_t i = 0; i < NBASE; i++)
        prefix_index_add(fresh, base[i].b, base[i].len);
    size_t mem_fresh = mallinfo2().uordblks - m0;

    size_t m1 = mallinfo2().uordblks;
    prefix_index *churned = prefix_index_new();
    REQUIRE(churned != NULL, "prefix_index_new");
    for (size_t i = 0; i < NBASE; i++)
        prefix_index_add(churned, base[i].b, base[i].len);
    for (int op = 0; op < OPS; op++) {
        /* extras shared with the base set (rare) must not be removed */
        size_t i = test_rand(&s) % NEXTRA;
        if (live[i])
            prefix_index_remove(churned, extra[i].b, extra[i].len);
        else
            prefix_index_add(churned, extra[i].b, extra[i].len);
        live[i] = !live[i];
    }
    for (size_t i = 0; i < NEXTRA; i++)
        if (live[i])
            prefix_index_remove(churned, extra[i].b, extra[i].len);
    /* An extra equal to a base key was removed above: put the base back. */
    for (size_t i = 0; i < NBASE; i++)
        prefix_index_add(churned, base[i].b, base[i].len);
    size_t mem_churned = mallinfo2().uordblks - m1;

    CHECK(prefix_index_size(churned) == prefix_index_size(fresh), "churned size %" PRIu64
          ", fresh %" PRIu64, prefix_index_size(churned), prefix_index_size(fresh));
    int bad = 0;
    for (size_t i = 0; i < NBASE; i++)
        for (size_t l = 0; l <= base[i].len; l++)
            bad += prefix_index_count(churned, base[i].b, l) !=
                   prefix_index_count(fresh, base[i].b, l);
    CHECK(bad == 0, "churned and fresh disagree on %d prefix counts", bad);
    CHECK(mem_churned <= mem_fresh + mem_fresh / 4,
          "churned index holds %zu bytes, a fresh one %zu", mem_churned, mem_fresh);
    printf("churn memory: fresh %zu bytes, churned %zu bytes\n", mem_fresh, mem_churned);

    prefix_index_free(fresh);
    prefix_index_free(churned);
    free(live);
    free(extra);
    free(base);
#else
    printf("churn memory: skipped (needs glibc mallinfo2 without sanitizers)\n");
#endif
}

int main(void)
{
    test_edges();
    test_long_keys();
    test_enomem();
    test_random(1, 20000, 0);
    test_random(2, 20000, 0);
    test_random(3, 20000, 0);
    test_random(4, 20000, 7);
    test_random(5, 20000, 7);
    CHECK(fp_failed > 100, "failpoint fired only %lu times", fp_failed);
    test_churn_memory();
    return test_finish();
}
