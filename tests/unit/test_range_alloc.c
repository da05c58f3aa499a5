/*
 * test_range_alloc.c - the master's range allocator against a reference model.
 *
 * The model is a sorted array of the live ranges; its gaps are the free set
 * the allocator should have. Random alloc/release sequences (several seeds and
 * capacities) check after every step that each returned range is aligned,
 * inside the capacity and disjoint from every live range, that used(),
 * free_count() and largest_free() match the model's gaps (so coalescing is
 * complete), that -ENOSPC comes only when a brute-force scan of the gaps finds
 * no aligned fit, that the fit is no worse than the smallest range that fits
 * at any offset, and that double, overlapping and out-of-bounds releases are
 * refused with nothing changed. Fixed cases cover argument errors, exact fits,
 * capacities near UINT64_MAX and many alignment misfits in a row.
 */
#include "master/range_alloc.h"
#include "testlib.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define KiB (1024ULL)
#define MiB (1024ULL * 1024ULL)

struct span {
    uint64_t off, len;
};

/* Live ranges sorted by offset; used is their total length. */
struct model {
    uint64_t capacity;
    uint64_t used;
    struct span *live;
    size_t n, cap;
};

/* What a brute-force scan of the model's gaps says about one request. */
struct gap_scan {
    size_t count;       /* number of gaps */
    uint64_t largest;   /* largest gap */
    bool any_fit;       /* some gap holds an aligned block of len */
    uint64_t best_fit;  /* smallest gap that holds it */
    bool any_sure;      /* some gap has len + align - 1 bytes */
    uint64_t best_sure; /* smallest such gap */
    size_t window;      /* gaps of len .. len + align - 2 bytes */
};

static void model_init(struct model *m, uint64_t capacity)
{
    memset(m, 0, sizeof *m);
    m->capacity = capacity;
}

/* Index of the first live range whose offset is >= off. */
static size_t model_lower(const struct model *m, uint64_t off)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->live[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The gap [*start, *end) around index i as model_lower returned it. */
static void model_gap_at(const struct model *m, size_t i, uint64_t *start, uint64_t *end)
{
    *start = i > 0 ? m->live[i - 1].off + m->live[i - 1].len : 0;
    *end = i < m->n ? m->live[i].off : m->capacity;
}

static void model_insert(struct model *m, size_t i, uint64_t off, uint64_t len)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->live = realloc(m->live, m->cap * sizeof *m->live);
        REQUIRE(m->live != NULL, "model realloc");
    }
    memmove(&m->live[i + 1], &m->live[i], (m->n - i) * sizeof *m->live);
    m->live[i] = (struct span){off, len};
    m->n++;
    m->used += len;
}

static void model_remove(struct model *m, size_t i)
{
    m->used -= m->live[i].len;
    memmove(&m->live[i], &m->live[i + 1], (m->n - i - 1) * sizeof *m->live);
    m->n--;
}

static bool gap_fits(uint64_t start, uint64_t size, uint64_t len, uint64_t align)
{
    uint64_t pad = (0 - start) & (align - 1);
    return pad <= size && size - pad >= len;
}

/* Walks every gap; len == 0 skips the per-request fields. */
static struct gap_scan model_scan(const struct model *m, uint64_t len, uint64_t align)
{
    struct gap_scan g = {0};
    bool sure_ok = align - 1 <= UINT64_MAX - len;
    uint64_t sure = sure_ok ? len + align - 1 : 0;
    uint64_t prev_end = 0;
    for (size_t i = 0; i <= m->n; i++) {
        uint64_t start = prev_end;
        uint64_t end = i < m->n ? m->live[i].off : m->capacity;
        if (i < m->n)
            prev_end = m->live[i].off + m->live[i].len;
        if (end == start)
            continue;
        uint64_t size = end - start;
        g.count++;
        if (size > g.largest)
            g.largest = size;
        if (len == 0)
            continue;
        if (gap_fits(start, size, len, align) && (!g.any_fit || size < g.best_fit)) {
            g.any_fit = true;
            g.best_fit = size;
        }
        if (sure_ok && size >= sure) {
            if (!g.any_sure || size < g.best_sure) {
                g.any_sure = true;
                g.best_sure = size;
            }
        } else if (size >= len) {
            g.window++;
        }
    }
    return g;
}

/* used, free_count and largest_free agree with the model's gaps. */
static bool state_matches(range_alloc *ra, const struct model *m)
{
    struct gap_scan g = model_scan(m, 0, 1);
    bool ok = range_alloc_used(ra) == m->used && range_alloc_free_count(ra) == g.count &&
              range_alloc_largest_free(ra) == g.largest;
    CHECK(ok, "state: used %" PRIu64 "/%" PRIu64 " free_count %zu/%zu largest %" PRIu64 "/%" PRIu64,
          range_alloc_used(ra), m->used, range_alloc_free_count(ra), g.count,
          range_alloc_largest_free(ra), g.largest);
    return ok;
}

struct snapshot {
    uint64_t used, largest;
    size_t count;
};

static struct snapshot snap(range_alloc *ra)
{
    return (struct snapshot){range_alloc_used(ra), range_alloc_largest_free(ra),
                             range_alloc_free_count(ra)};
}

static bool snap_eq(struct snapshot a, struct snapshot b)
{
    return a.used == b.used && a.largest == b.largest && a.count == b.count;
}

/* A release that must be refused and leave everything as it was. */
static void expect_refused(range_alloc *ra, uint64_t off, uint64_t len, const char *what)
{
    struct snapshot before = snap(ra);
    int rc = range_alloc_release(ra, off, len);
    CHECK(rc == -EINVAL, "%s release(%" PRIu64 ", %" PRIu64 ") = %d, want -EINVAL", what, off,
          len, rc);
    CHECK(snap_eq(before, snap(ra)), "%s release changed the allocator", what);
}

static uint64_t pick_len(unsigned long long *rng, uint64_t capacity, uint64_t small_max)
{
    unsigned r = test_rand(rng) % 100;
    if (r < 90)
        return 1 + test_rand(rng) % small_max;
    if (r < 98)
        return 1 + test_rand(rng) % (capacity / 4); /* large */
    if (r < 99)
        return capacity - test_rand(rng) % 4096; /* about everything */
    return capacity + 1 + test_rand(rng) % 4096; /* never fits */
}

static uint64_t pick_align(unsigned long long *rng)
{
    static const uint64_t aligns[] = {1, 64, 512, 4096};
    if (test_rand(rng) % 200 == 0)
        return 1ULL << (test_rand(rng) % 64); /* occasionally huge */
    return aligns[test_rand(rng) % 4];
}

static void random_alloc(range_alloc *ra, struct model *m, unsigned long long *rng,
                         uint64_t small_max)
{
    uint64_t len = pick_len(rng, m->capacity, small_max);
    uint64_t align = pick_align(rng);
    struct gap_scan g = model_scan(m, len, align);
    uint64_t off = UINT64_MAX;
    int rc = range_alloc_alloc(ra, len, align, &off);
    if (rc == -ENOSPC) {
        CHECK(!g.any_fit, "ENOSPC for len %" PRIu64 " align %" PRIu64 " but a gap of %" PRIu64
              " fits", len, align, g.best_fit);
        return;
    }
    REQUIRE(rc == 0, "alloc(%" PRIu64 ", %" PRIu64 ") = %d", len, align, rc);
    CHECK(off % align == 0, "offset %" PRIu64 " not aligned to %" PRIu64, off, align);
    REQUIRE(len <= m->capacity && off <= m->capacity - len,
            "range %" PRIu64 "+%" PRIu64 " beyond capacity %" PRIu64, off, len, m->capacity);
    size_t i = model_lower(m, off);
    uint64_t start, end;
    model_gap_at(m, i, &start, &end);
    REQUIRE(start <= off && off + len <= end,
            "range %" PRIu64 "+%" PRIu64 " overlaps a live range (gap %" PRIu64 "..%" PRIu64 ")",
            off, len, start, end);
    /* Never worse than the smallest range that fits at any offset; exactly
     * the best fit when only a few ranges are misfits by alignment (the
     * allocator scans more than 8 before giving up on them). */
    uint64_t chosen = end - start;
    if (g.any_sure)
        CHECK(chosen <= g.best_sure, "gap %" PRIu64 " chosen over sure fit %" PRIu64, chosen,
              g.best_sure);
    if (g.window <= 8)
        CHECK(chosen == g.best_fit, "gap %" PRIu64 " chosen, best fit is %" PRIu64
              " (len %" PRIu64 " align %" PRIu64 ")", chosen, g.best_fit, len, align);
    model_insert(m, i, off, len);
}

static void random_release(range_alloc *ra, struct model *m, unsigned long long *rng)
{
    size_t i = test_rand(rng) % m->n;
    struct span s = m->live[i];
    uint64_t cap = m->capacity;

    if (test_rand(rng) % 8 == 0) {
        uint64_t start, end;
        /* Reaching one byte into a free neighbour is a partial double free. */
        model_gap_at(m, i, &start, &end); /* gap before s */
        if (start < s.off)
            expect_refused(ra, s.off - 1, s.len + 1, "into left gap");
        model_gap_at(m, i + 1, &start, &end); /* gap after s */
        if (end > s.off + s.len)
            expect_refused(ra, s.off, s.len + 1, "into right gap");
        expect_refused(ra, s.off, cap - s.off + 1, "past capacity");
        expect_refused(ra, cap, 1, "at capacity");
        expect_refused(ra, UINT64_MAX - 2, 10, "offset overflow");
        expect_refused(ra, s.off, UINT64_MAX, "length overflow");
        expect_refused(ra, s.off, 0, "zero length");
    }

    int rc = range_alloc_release(ra, s.off, s.len);
    REQUIRE(rc == 0, "release(%" PRIu64 ", %" PRIu64 ") = %d", s.off, s.len, rc);
    model_remove(m, i);

    if (test_rand(rng) % 8 == 0) {
        expect_refused(ra, s.off, s.len, "double free");
        expect_refused(ra, s.off + s.len / 2, 1, "double free of a piece");
    }
}

struct run_cfg {
    unsigned long long seed;
    uint64_t capacity;
    uint64_t small_max; /* most lengths are 1..small_max */
    int ops;
    unsigned alloc_pct; /* above 50 keeps the segment near full, so ENOSPC happens */
};

static void test_random(const struct run_cfg *cfg)
{
    unsigned long long rng = cfg->seed;
    range_alloc *ra = range_alloc_new(cfg->capacity);
    REQUIRE(ra != NULL, "range_alloc_new");
    struct model m;
    model_init(&m, cfg->capacity);
    int enospc = 0, allocs = 0;

    for (int op = 0; op < cfg->ops; op++) {
        if (m.n == 0 || test_rand(&rng) % 100 < cfg->alloc_pct) {
            size_t before = m.n;
            random_alloc(ra, &m, &rng, cfg->small_max);
            if (m.n == before)
                enospc++;
            else
                allocs++;
        } else {
            random_release(ra, &m, &rng);
        }
        if (!state_matches(ra, &m)) {
            fprintf(stderr, "seed %llu: diverged at op %d\n", cfg->seed, op);
            break;
        }
    }
    /* Both outcomes must have been exercised, or the run proves little. */
    CHECK(allocs > cfg->ops / 4 && enospc > 0, "seed %llu: %d allocs, %d ENOSPC", cfg->seed,
          allocs, enospc);

    while (m.n > 0) {
        size_t i = test_rand(&rng) % m.n;
        CHECK(range_alloc_release(ra, m.live[i].off, m.live[i].len) == 0, "final release");
        model_remove(&m, i);
    }
    CHECK(range_alloc_free_count(ra) == 1, "free_count %zu after freeing all",
          range_alloc_free_count(ra));
    CHECK(range_alloc_largest_free(ra) == cfg->capacity, "largest %" PRIu64 " after freeing all",
          range_alloc_largest_free(ra));
    CHECK(range_alloc_used(ra) == 0, "used %" PRIu64 " after freeing all", range_alloc_used(ra));
    free(m.live);
    range_alloc_free(ra);
}

/* Allocates and insists on the offset; the fixed layouts below rely on it. */
static void must_alloc(range_alloc *ra, uint64_t len, uint64_t align, uint64_t want)
{
    uint64_t off = UINT64_MAX;
    int rc = range_alloc_alloc(ra, len, align, &off);
    REQUIRE(rc == 0 && off == want, "alloc(%" PRIu64 ", %" PRIu64 ") = %d at %" PRIu64
            ", want 0 at %" PRIu64, len, align, rc, off, want);
}

static void test_bad_args(void)
{
    range_alloc *ra = range_alloc_new(MiB);
    REQUIRE(ra != NULL, "range_alloc_new");
    uint64_t off = 7;
    CHECK(range_alloc_alloc(ra, 0, 1, &off) == -EINVAL, "len 0");
    static const uint64_t bad_aligns[] = {0, 3, 6, 12, 4097, (1ULL << 63) + 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof bad_aligns / sizeof bad_aligns[0]; i++)
        CHECK(range_alloc_alloc(ra, 64, bad_aligns[i], &off) == -EINVAL,
              "align %" PRIu64 " accepted", bad_aligns[i]);
    CHECK(range_alloc_alloc(ra, 64, 64, NULL) == -EINVAL, "NULL off");
    CHECK(off == 7, "off written on failure");
    expect_refused(ra, 0, 0, "zero length");
    expect_refused(ra, 0, 64, "never allocated");
    CHECK(range_alloc_used(ra) == 0 && range_alloc_free_count(ra) == 1 &&
          range_alloc_largest_free(ra) == MiB && range_alloc_capacity(ra) == MiB,
          "bad arguments changed the allocator");
    range_alloc_free(ra);
    range_alloc_free(NULL);
}

static void test_exact_fit(void)
{
    range_alloc *ra = range_alloc_new(MiB);
    REQUIRE(ra != NULL, "range_alloc_new");
    uint64_t off;
    CHECK(range_alloc_alloc(ra, MiB + 1, 1, &off) == -ENOSPC, "len over capacity");
    must_alloc(ra, MiB, 4096, 0);
    CHECK(range_alloc_used(ra) == MiB && range_alloc_free_count(ra) == 0 &&
          range_alloc_largest_free(ra) == 0, "full segment state");
    CHECK(range_alloc_alloc(ra, 1, 1, &off) == -ENOSPC, "alloc from a full segment");
    CHECK(range_alloc_release(ra, 0, MiB) == 0, "release everything");
    CHECK(range_alloc_free_count(ra) == 1 && range_alloc_largest_free(ra) == MiB, "empty again");
    expect_refused(ra, 0, MiB, "double free of everything");
    range_alloc_free(ra);

    /* An odd capacity: the tail cannot take an aligned block past its end. */
    ra = range_alloc_new(1000003);
    REQUIRE(ra != NULL, "range_alloc_new");
    CHECK(range_alloc_alloc(ra, 1000003, 2, &off) == 0 && off == 0, "odd exact fit");
    CHECK(range_alloc_release(ra, 0, 1000003) == 0, "odd release");
    must_alloc(ra, 3, 1, 0);
    CHECK(range_alloc_alloc(ra, 1000000, 4, &off) == -ENOSPC, "aligned block past the end");
    must_alloc(ra, 1000000, 1, 3);
    range_alloc_free(ra);

    ra = range_alloc_new(0);
    REQUIRE(ra != NULL, "range_alloc_new(0)");
    CHECK(range_alloc_alloc(ra, 1, 1, &off) == -ENOSPC, "alloc from capacity 0");
    CHECK(range_alloc_free_count(ra) == 0 && range_alloc_largest_free(ra) == 0, "capacity 0");
    expect_refused(ra, 0, 1, "release in capacity 0");
    range_alloc_free(ra);
}

static void test_huge_capacity(void)
{
    const uint64_t max = UINT64_MAX, half = 1ULL << 63, quarter = 1ULL << 62;
    range_alloc *ra = range_alloc_new(max);
    REQUIRE(ra != NULL, "range_alloc_new");
    uint64_t off;

    /* len + align - 1 overflows, yet offset 0 is aligned and it fits. */
    must_alloc(ra, max, half, 0);
    CHECK(range_alloc_used(ra) == max && range_alloc_free_count(ra) == 0, "all of UINT64_MAX");
    CHECK(range_alloc_release(ra, 0, max) == 0, "release all of UINT64_MAX");

    must_alloc(ra, 1, 1, 0);
    CHECK(range_alloc_alloc(ra, max - 1, 2, &off) == -ENOSPC, "[1, max) is not 2-aligned");
    must_alloc(ra, max - 1, 1, 1);
    CHECK(range_alloc_release(ra, 0, 1) == 0 && range_alloc_release(ra, 1, max - 1) == 0,
          "release both");
    CHECK(range_alloc_free_count(ra) == 1 && range_alloc_largest_free(ra) == max, "coalesced");

    must_alloc(ra, half, half, 0);
    must_alloc(ra, quarter, half, half);
    CHECK(range_alloc_alloc(ra, quarter, quarter, &off) == -ENOSPC, "3/4 + 1/4 passes the end");
    must_alloc(ra, quarter - 1, 1, half + quarter);
    CHECK(range_alloc_free_count(ra) == 0, "full");

    expect_refused(ra, max, 1, "end at 2^64");
    expect_refused(ra, max - 1, 2, "end past 2^64");
    expect_refused(ra, 1, max, "length UINT64_MAX from 1");
    expect_refused(ra, 2, max - 1, "wraps");
    expect_refused(ra, max, max, "both maximal");

    CHECK(range_alloc_release(ra, half, quarter) == 0, "release middle");
    CHECK(range_alloc_release(ra, half + quarter, quarter - 1) == 0, "release top");
    CHECK(range_alloc_release(ra, 0, half) == 0, "release bottom");
    CHECK(range_alloc_free_count(ra) == 1 && range_alloc_largest_free(ra) == max &&
          range_alloc_used(ra) == 0, "empty after huge ranges");
    range_alloc_free(ra);

    ra = range_alloc_new(max - 5);
    REQUIRE(ra != NULL, "range_alloc_new");
    expect_refused(ra, max - 5, 1, "at capacity");
    expect_refused(ra, max - 6, 2, "one past capacity");
    CHECK(range_alloc_alloc(ra, max - 4, 1, &off) == -ENOSPC, "one more than capacity");
    must_alloc(ra, max - 5, 1, 0);
    range_alloc_free(ra);
}

static void test_coalesce(void)
{
    const uint64_t b = 4096;
    range_alloc *ra = range_alloc_new(8 * b);
    REQUIRE(ra != NULL, "range_alloc_new");
    for (uint64_t i = 0; i < 8; i++)
        must_alloc(ra, b, b, i * b);
    /* block freed, then free_count and largest_free after it */
    static const struct {
        uint64_t block;
        size_t count;
        uint64_t largest;
    } steps[] = {{1, 1, 1}, {3, 2, 1}, {2, 1, 3}, {0, 1, 4}, {7, 2, 4},
                 {6, 2, 4}, {4, 2, 5}, {5, 1, 8}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        CHECK(range_alloc_release(ra, steps[i].block * b, b) == 0, "release block %" PRIu64,
              steps[i].block);
        CHECK(range_alloc_free_count(ra) == steps[i].count &&
              range_alloc_largest_free(ra) == steps[i].largest * b,
              "after block %" PRIu64 ": free_count %zu largest %" PRIu64, steps[i].block,
              range_alloc_free_count(ra), range_alloc_largest_free(ra));
    }
    range_alloc_free(ra);
}

/* A smaller range that fits once aligned beats a bigger one that fits anywhere. */
static void test_best_fit_aligned(void)
{
    range_alloc *ra = range_alloc_new(MiB);
    REQUIRE(ra != NULL, "range_alloc_new");
    must_alloc(ra, 1000, 1, 0);
    must_alloc(ra, 5000, 1, 1000);          /* G1 [1000, 6000): no 4096-aligned 4096 */
    must_alloc(ra, 2192, 1, 6000);
    must_alloc(ra, 6000, 1, 8192);          /* G2 [8192, 14192): fits at 8192 */
    must_alloc(ra, 5808, 1, 14192);
    must_alloc(ra, 9000, 1, 20000);         /* G3 [20000, 29000): fits anywhere */
    must_alloc(ra, MiB - 29000, 1, 29000);
    CHECK(range_alloc_release(ra, 20000, 9000) == 0 && range_alloc_release(ra, 1000, 5000) == 0 &&
          range_alloc_release(ra, 8192, 6000) == 0, "open the gaps");
    must_alloc(ra, 4096, 4096, 8192);       /* G2, not the larger G3 */
    must_alloc(ra, 4096, 1, 1000);          /* unaligned: smallest is G1 */
    must_alloc(ra, 4096, 4096, 20480);      /* only G3 is left that fits */
    range_alloc_free(ra);
}

/*
 * Hundreds of ranges just too small once aligned: the allocator must give up
 * scanning them when a sure fit exists, and must still find the one aligned
 * fit (never -ENOSPC) when none does.
 */
static void test_many_misaligned(void)
{
    const uint64_t block = 16 * KiB, gap = 4096 + 100;
    const uint64_t k = 300;
    const uint64_t last = k * block;
    range_alloc *ra = range_alloc_new(last + block);
    REQUIRE(ra != NULL, "range_alloc_new");
    uint64_t off;

    /* Each block: 1000 spacer, a gap starting at 1000 mod 4096, spacer. */
    for (uint64_t i = 0; i < k; i++) {
        must_alloc(ra, 1000, 1, i * block);
        must_alloc(ra, gap, 1, i * block + 1000);
        must_alloc(ra, block - 1000 - gap, 1, i * block + 1000 + gap);
    }
    /* The last block's gap is aligned, and last in (size, offset) order. */
    must_alloc(ra, 4096, 1, last);
    must_alloc(ra, gap, 1, last + 4096);
    must_alloc(ra, block - 4096 - gap, 1, last + 4096 + gap);
    CHECK(range_alloc_free_count(ra) == 0, "laid out to full");

    for (uint64_t i = 0; i < k; i++)
        CHECK(range_alloc_release(ra, i * block + 1000, gap) == 0, "open misaligned gap");
    CHECK(range_alloc_alloc(ra, 4096, 4096, &off) == -ENOSPC, "no gap fits aligned yet");

    CHECK(range_alloc_release(ra, last + 4096, gap) == 0, "open aligned gap");
    must_alloc(ra, 4096, 4096, last + 4096);
    CHECK(range_alloc_release(ra, last + 4096, 4096) == 0, "give it back");

    /* A sure fit in block 0: [1000, 16384) once its spacer goes. */
    CHECK(range_alloc_release(ra, 1000 + gap, block - 1000 - gap) == 0, "open a sure fit");
    CHECK(range_alloc_alloc(ra, 4096, 4096, &off) == 0 && (off == 4096 || off == last + 4096),
          "alloc with a sure fit: offset %" PRIu64, off);
    range_alloc_free(ra);
}

/* Releasing pieces of what alloc returned breaks the contract, and the
 * allocator's node reserve undercounts then; it must still stay exact. */
static void test_release_in_pieces(void)
{
    const uint64_t piece = 4096, pieces = 256;
    range_alloc *ra = range_alloc_new(pieces * piece);
    REQUIRE(ra != NULL, "range_alloc_new");
    must_alloc(ra, pieces * piece, 1, 0);
    unsigned long long rng = 7;
    uint64_t order[256];
    for (uint64_t i = 0; i < pieces; i++)
        order[i] = i;
    for (uint64_t i = pieces - 1; i > 0; i--) {
        uint64_t j = test_rand(&rng) % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (uint64_t i = 0; i < pieces; i++) {
        CHECK(range_alloc_release(ra, order[i] * piece, piece) == 0, "release piece %" PRIu64,
              order[i]);
        /* Take a little of the free space and return it: the 64-aligned
         * block after the 1-byte one splits a range, with a node the
         * reserve did not plan for. */
        uint64_t one, off;
        CHECK(range_alloc_alloc(ra, 1, 1, &one) == 0, "alloc 1 byte");
        CHECK(range_alloc_alloc(ra, 100, 64, &off) == 0, "alloc 100 bytes");
        CHECK(range_alloc_release(ra, off, 100) == 0 && range_alloc_release(ra, one, 1) == 0,
              "release the little blocks");
        CHECK(range_alloc_used(ra) == (pieces - 1 - i) * piece, "used after %" PRIu64 " pieces",
              i + 1);
    }
    CHECK(range_alloc_free_count(ra) == 1 && range_alloc_largest_free(ra) == pieces * piece,
          "coalesced after pieces");
    range_alloc_free(ra);
}

/* range_alloc_take: a rebuild claims exactly the ranges owners report; a
 * byte already taken refuses the claim, and claimed ranges release and
 * coalesce like allocated ones. */
static void test_take(void)
{
    range_alloc *ra = range_alloc_new(MiB);
    CHECK(range_alloc_take(ra, 4096, 8192) == 0, "take the middle");
    CHECK(range_alloc_take(ra, 0, 4096) == 0, "take the head");
    CHECK(range_alloc_take(ra, 8192, 512) == -EBUSY, "inside a taken range");
    CHECK(range_alloc_take(ra, 12000, 1000) == -EBUSY, "straddling a taken end");
    CHECK(range_alloc_take(ra, MiB - 512, 1024) == -EINVAL, "past the end");
    CHECK(range_alloc_take(ra, 100, 0) == -EINVAL, "empty range");
    CHECK(range_alloc_used(ra) == 12288, "used counts what was taken");
    uint64_t off = 0;
    CHECK(range_alloc_alloc(ra, 4096, 512, &off) == 0 && off == 12288,
          "alloc goes past the taken ranges (got %" PRIu64 ")", off);
    CHECK(range_alloc_take(ra, MiB - 4096, 4096) == 0, "take the tail");
    CHECK(range_alloc_release(ra, 4096, 8192) == 0 && range_alloc_release(ra, 0, 4096) == 0 &&
              range_alloc_release(ra, off, 4096) == 0 &&
              range_alloc_release(ra, MiB - 4096, 4096) == 0,
          "taken ranges release");
    CHECK(range_alloc_free_count(ra) == 1 && range_alloc_used(ra) == 0, "coalesced after take");
    range_alloc_free(ra);
}

int main(void)
{
    test_bad_args();
    test_take();
    test_exact_fit();
    test_huge_capacity();
    test_coalesce();
    test_best_fit_aligned();
    test_many_misaligned();
    test_release_in_pieces();

    static const struct run_cfg runs[] = {
        {0x9e3779b97f4a7c15ULL, 16 * MiB, 64 * KiB, 40000, 60},
        {0x0123456789abcdefULL, 4 * MiB, 64 * KiB, 40000, 55},
        {0xfeedfacecafebeefULL, 1 * MiB + 12345, 64 * KiB, 30000, 60},
        {0x5151515151515151ULL, 64 * MiB, 64 * KiB, 30000, 65},
        {0x2545f4914f6cdd1dULL, 1 * MiB, 4 * KiB, 40000, 55}, /* small, fragmented */
        {42, 3 * MiB + 7, 512, 30000, 60},                    /* many tiny ranges */
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++)
        test_random(&runs[i]);
    return test_finish();
}
