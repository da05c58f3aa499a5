/*
 * test_ssd_ring.c - the SSD shard ring allocator against a reference model.
 *
 * The model keeps every entry ever placed in placement order; the live ones
 * are a window [first_live, nplaced) of that order, since eviction is FIFO.
 * For each reserve it predicts, without looking at the ring, where the entry
 * must begin (the head, or the next lap when the room before the file end is
 * short), which oldest entries must be evicted (exactly those that begin
 * before end - capacity, no more), and whether the first of them that is
 * Writing or pinned makes the call fail with -EBUSY. Random runs (several
 * seeds and capacities, tens of laps each) mix reserves, commits, aborts,
 * read and commit pins and bad lengths, and after every step check that the
 * ring's FIFO is the model's live window, that no two live entries share a
 * file byte and none straddles the file end, that the tail never passes a
 * live entry but does pass every evicted one (stale detection), that
 * ring_used stays within the capacity, and, in the eviction callback, that
 * only unpinned Committed/Aborted entries are evicted, once each, oldest
 * first. Fixed cases cover exact fits, wraps with dead space, argument
 * errors, stale detection and a retry after the blocking pin is released.
 */
#include "owner/ssd/ring.h"
#include "testlib.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLK ((uint64_t)RING_ALIGN)

/* ---- fixed cases ------------------------------------------------------- */

/* Records what the eviction callback saw, in order. */
struct evlog {
    ring *r;
    ring_entry *seen[64];
    int n;
    int bad; /* callbacks that broke a rule */
};

static void log_evict(ring_entry *e, void *ud)
{
    struct evlog *l = ud;
    if (e->state != RING_COMMITTED && e->state != RING_ABORTED)
        l->bad++;
    if (e->read_pins != 0 || e->commit_pins != 0)
        l->bad++;
    if (l->r->oldest == e || l->r->newest == e)
        l->bad++; /* must be unlinked already */
    if (l->n < 64)
        l->seen[l->n] = e;
    l->n++;
}

static void entry_new(ring_entry *e, uint64_t len)
{
    memset(e, 0, sizeof *e);
    e->aligned_len = len;
    e->begin = UINT64_MAX; /* a reserve that fails must leave it alone */
}

/* Reserve e of len bytes; returns the ring's result. */
static int reserve(ring *r, struct evlog *l, ring_entry *e, uint64_t len)
{
    entry_new(e, len);
    return ring_reserve(r, e, log_evict, l);
}

static void test_exact_fit(void)
{
    ring r;
    struct evlog l = {.r = &r};
    ring_entry e[8], x, y, z;
    ring_init(&r, 8 * BLK);
    CHECK(ring_used(&r) == 0, "empty ring uses %" PRIu64, ring_used(&r));

    for (int i = 0; i < 8; i++) {
        CHECK(reserve(&r, &l, &e[i], BLK) == 0, "fill %d", i);
        CHECK(e[i].begin == (uint64_t)i * BLK, "fill %d begins at %" PRIu64, i, e[i].begin);
        CHECK(e[i].state == RING_WRITING, "fill %d not Writing", i);
        ring_commit(&r, &e[i]);
    }
    CHECK(l.n == 0, "filling to exactly the capacity evicted %d", l.n);
    CHECK(ring_used(&r) == 8 * BLK, "full ring uses %" PRIu64, ring_used(&r));

    /* One block more evicts exactly the oldest one and reuses offset 0. */
    CHECK(reserve(&r, &l, &x, BLK) == 0, "reserve into a full ring");
    CHECK(l.n == 1 && l.seen[0] == &e[0], "evicted %d, want only the oldest", l.n);
    CHECK(ring_file_offset(&r, &x) == 0, "wrapped offset %" PRIu64, ring_file_offset(&r, &x));
    CHECK(ring_used(&r) == 8 * BLK, "used %" PRIu64, ring_used(&r));
    ring_commit(&r, &x);

    /* A full-capacity value starts at the next lap and evicts everything. */
    l.n = 0;
    CHECK(reserve(&r, &l, &y, 8 * BLK) == 0, "full-capacity reserve");
    CHECK(y.begin == 16 * BLK && ring_file_offset(&r, &y) == 0, "full value at %" PRIu64,
          y.begin);
    CHECK(l.n == 8, "evicted %d, want 8", l.n);
    for (int i = 1; i < 8 && i - 1 < l.n; i++)
        CHECK(l.seen[i - 1] == &e[i], "eviction %d out of order", i - 1);
    CHECK(l.n == 8 && l.seen[7] == &x, "last evicted is not the newest old entry");
    CHECK(ring_used(&r) == 8 * BLK && r.tail == y.begin, "used %" PRIu64 " tail %" PRIu64,
          ring_used(&r), r.tail);
    ring_commit(&r, &y);

    l.n = 0;
    CHECK(reserve(&r, &l, &z, 8 * BLK) == 0, "second full-capacity reserve");
    CHECK(z.begin == 24 * BLK && l.n == 1 && l.seen[0] == &y, "z at %" PRIu64 ", %d evicted",
          z.begin, l.n);
    CHECK(l.bad == 0, "%d bad evictions", l.bad);
}

static void test_wrap_dead_space(void)
{
    ring r;
    struct evlog l = {.r = &r};
    ring_entry a, b, c, d, e;

    /* Dead space behind a live entry. */
    ring_init(&r, 8 * BLK);
    CHECK(reserve(&r, &l, &a, 4 * BLK) == 0, "a");
    CHECK(reserve(&r, &l, &b, 3 * BLK) == 0, "b");
    ring_commit(&r, &a);
    ring_commit(&r, &b);
    /* One block left before the file end: c (2 blocks) goes to the next lap
     * and needs a's space only; b stays. */
    CHECK(reserve(&r, &l, &c, 2 * BLK) == 0, "c");
    CHECK(c.begin == 8 * BLK && ring_file_offset(&r, &c) == 0, "c at %" PRIu64, c.begin);
    CHECK(l.n == 1 && l.seen[0] == &a, "c evicted %d entries, want a only", l.n);
    CHECK(!ring_is_stale(&r, b.begin) && ring_is_stale(&r, a.begin), "stale flags after c");
    CHECK(ring_used(&r) <= 8 * BLK, "used %" PRIu64, ring_used(&r));
    ring_commit(&r, &c);

    /* d needs b's space; the tail then passes the dead block too. */
    l.n = 0;
    CHECK(reserve(&r, &l, &d, 3 * BLK) == 0, "d");
    CHECK(d.begin == 10 * BLK && ring_file_offset(&r, &d) == 2 * BLK, "d at %" PRIu64, d.begin);
    CHECK(l.n == 1 && l.seen[0] == &b, "d evicted %d entries, want b only", l.n);
    ring_commit(&r, &d);

    /* e ends exactly at the file end and must not evict c: the dead block
     * before c is not live. */
    l.n = 0;
    CHECK(reserve(&r, &l, &e, 3 * BLK) == 0, "e");
    CHECK(e.begin == 13 * BLK && ring_file_offset(&r, &e) + e.aligned_len == 8 * BLK,
          "e at %" PRIu64, e.begin);
    CHECK(l.n == 0, "e evicted %d entries, want none", l.n);
    CHECK(ring_used(&r) == 8 * BLK, "used %" PRIu64, ring_used(&r));

    /* Dead space when the ring has emptied. */
    ring_init(&r, 8 * BLK);
    l.n = 0;
    CHECK(reserve(&r, &l, &a, 6 * BLK) == 0, "a2");
    ring_commit(&r, &a);
    CHECK(reserve(&r, &l, &b, 4 * BLK) == 0, "b2");
    CHECK(b.begin == 8 * BLK && l.n == 1 && l.seen[0] == &a, "b2 at %" PRIu64 ", %d evicted",
          b.begin, l.n);
    CHECK(ring_is_stale(&r, a.begin) && !ring_is_stale(&r, b.begin), "stale flags after b2");
    CHECK(ring_used(&r) <= 8 * BLK, "used %" PRIu64, ring_used(&r));
    ring_commit(&r, &b);
    l.n = 0;
    CHECK(reserve(&r, &l, &c, 4 * BLK) == 0, "c2");
    CHECK(c.begin == 12 * BLK && l.n == 0, "c2 at %" PRIu64 " evicted %d, want none", c.begin,
          l.n);
    CHECK(l.bad == 0, "%d bad evictions", l.bad);
}

static void test_bad_lengths(void)
{
    ring r;
    struct evlog l = {.r = &r};
    ring_entry a, b, x;
    ring_init(&r, 8 * BLK);
    CHECK(reserve(&r, &l, &a, 4 * BLK) == 0, "a");
    ring_commit(&r, &a);
    CHECK(reserve(&r, &l, &b, 4 * BLK) == 0, "b"); /* b stays Writing */

    static const uint64_t bad_len[] = {0, 1, 100, BLK - 1, BLK + 1, 8 * BLK + 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof bad_len / sizeof bad_len[0]; i++) {
        int rc = reserve(&r, &l, &x, bad_len[i]);
        CHECK(rc == -EINVAL, "len %" PRIu64 ": %d, want -EINVAL", bad_len[i], rc);
        CHECK(x.begin == UINT64_MAX, "len %" PRIu64 " touched the entry", bad_len[i]);
    }
    static const uint64_t big_len[] = {9 * BLK, 16 * BLK, 1ULL << 40, UINT64_MAX - BLK + 1};
    for (size_t i = 0; i < sizeof big_len / sizeof big_len[0]; i++) {
        int rc = reserve(&r, &l, &x, big_len[i]);
        CHECK(rc == -E2BIG, "len %" PRIu64 ": %d, want -E2BIG", big_len[i], rc);
        CHECK(x.begin == UINT64_MAX, "len %" PRIu64 " touched the entry", big_len[i]);
    }
    CHECK(ring_reserve(&r, NULL, log_evict, &l) == -EINVAL, "NULL entry");
    CHECK(l.n == 0, "a refused reserve evicted %d entries", l.n);
    CHECK(r.oldest == &a && r.newest == &b && r.head == 8 * BLK && r.tail == 0,
          "a refused reserve changed the ring");
}

static void test_stale(void)
{
    ring r;
    struct evlog l = {.r = &r};
    ring_entry a, b, c, d;
    ring_init(&r, 4 * BLK);
    CHECK(reserve(&r, &l, &a, 2 * BLK) == 0, "a");
    CHECK(!ring_pin_read(&r, &a), "read pin on a Writing entry");
    ring_commit(&r, &a);
    CHECK(ring_pin_read(&r, &a) && a.read_pins == 1, "read pin on a Committed entry");
    CHECK(ring_pin_read(&r, &a) && a.read_pins == 2, "second read pin");
    ring_unpin_read(&r, &a);
    ring_unpin_read(&r, &a);
    CHECK(a.read_pins == 0, "read pins left: %u", a.read_pins);
    uint64_t a_begin = a.begin;
    CHECK(!ring_is_stale(&r, a_begin), "a stale while live");

    CHECK(reserve(&r, &l, &b, 2 * BLK) == 0, "b");
    ring_commit(&r, &b);
    CHECK(reserve(&r, &l, &c, 2 * BLK) == 0, "c");
    CHECK(l.n == 1 && l.seen[0] == &a, "c evicted %d entries, want a", l.n);
    CHECK(ring_is_stale(&r, a_begin), "a not stale after eviction");
    CHECK(!ring_is_stale(&r, b.begin) && !ring_is_stale(&r, c.begin), "live entries stale");
    CHECK(!ring_pin_read(&r, &a) && a.read_pins == 0, "read pin on an evicted entry");

    ring_abort(&r, &c);
    CHECK(!ring_pin_read(&r, &c), "read pin on an Aborted entry");
    /* The Aborted entry is evicted like a Committed one. */
    l.n = 0;
    CHECK(reserve(&r, &l, &d, 4 * BLK) == 0, "d");
    CHECK(l.n == 2 && l.seen[0] == &b && l.seen[1] == &c, "d evicted %d entries", l.n);
    CHECK(l.n == 2 && l.seen[1]->state == RING_ABORTED, "Aborted entry not handed over");
    CHECK(ring_is_stale(&r, b.begin) && ring_is_stale(&r, c.begin), "b, c not stale");
    CHECK(l.bad == 0, "%d bad evictions", l.bad);
}

static void test_busy_retry(void)
{
    ring r;
    struct evlog l = {.r = &r};
    ring_entry a, b, c, d, p1, p2, p3, q;

    ring_init(&r, 4 * BLK);
    CHECK(reserve(&r, &l, &a, 2 * BLK) == 0, "a");
    ring_commit(&r, &a);
    CHECK(ring_pin_read(&r, &a), "pin a");
    CHECK(reserve(&r, &l, &b, 2 * BLK) == 0, "b");
    ring_commit(&r, &b);

    /* Read pin. */
    int rc = reserve(&r, &l, &c, 2 * BLK);
    CHECK(rc == -EBUSY, "reserve over a read pin: %d", rc);
    CHECK(l.n == 0 && c.begin == UINT64_MAX && r.newest == &b && r.head == 4 * BLK,
          "a -EBUSY reserve changed the ring");
    ring_unpin_read(&r, &a);
    CHECK(ring_reserve(&r, &c, log_evict, &l) == 0, "retry after read unpin");
    CHECK(l.n == 1 && l.seen[0] == &a && c.begin == 4 * BLK, "retry evicted %d", l.n);

    /* Route-commit pin. */
    ring_pin_commit(&r, &b);
    l.n = 0;
    rc = reserve(&r, &l, &d, 2 * BLK);
    CHECK(rc == -EBUSY && l.n == 0, "reserve over a commit pin: %d", rc);
    ring_unpin_commit(&r, &b);
    CHECK(ring_reserve(&r, &d, log_evict, &l) == 0, "retry after commit unpin");
    CHECK(l.n == 1 && l.seen[0] == &b, "retry evicted %d", l.n);

    /* Writing entry (c was never committed). */
    l.n = 0;
    rc = reserve(&r, &l, &a, 2 * BLK);
    CHECK(rc == -EBUSY && l.n == 0, "reserve over a Writing entry: %d", rc);
    ring_commit(&r, &c);
    CHECK(ring_reserve(&r, &a, log_evict, &l) == 0, "retry after commit");
    CHECK(l.n == 1 && l.seen[0] == &c, "retry evicted %d", l.n);

    /* Partial progress: p1 goes, p2 is pinned and stops the tail. */
    ring_init(&r, 8 * BLK);
    l.n = 0;
    CHECK(reserve(&r, &l, &p1, 2 * BLK) == 0, "p1");
    CHECK(reserve(&r, &l, &p2, 2 * BLK) == 0, "p2");
    CHECK(reserve(&r, &l, &p3, 2 * BLK) == 0, "p3");
    ring_commit(&r, &p1);
    ring_commit(&r, &p2);
    ring_commit(&r, &p3);
    CHECK(ring_pin_read(&r, &p2), "pin p2");
    rc = reserve(&r, &l, &q, 6 * BLK);
    CHECK(rc == -EBUSY, "reserve over p2: %d", rc);
    CHECK(l.n == 1 && l.seen[0] == &p1, "evicted %d before the pin, want p1", l.n);
    CHECK(ring_is_stale(&r, p1.begin) && !ring_is_stale(&r, p2.begin), "stale flags");
    CHECK(r.oldest == &p2 && r.newest == &p3 && r.tail == p2.begin,
          "ring after partial eviction: tail %" PRIu64, r.tail);
    CHECK(ring_used(&r) == 4 * BLK, "used %" PRIu64, ring_used(&r));
    CHECK(q.begin == UINT64_MAX, "q touched");
    ring_unpin_read(&r, &p2);
    CHECK(ring_reserve(&r, &q, log_evict, &l) == 0, "retry q");
    CHECK(l.n == 3 && l.seen[1] == &p2 && l.seen[2] == &p3, "retry evicted %d", l.n);
    CHECK(q.begin == 8 * BLK && r.oldest == &q && r.newest == &q, "q at %" PRIu64, q.begin);
    CHECK(l.bad == 0, "%d bad evictions", l.bad);
}

/* ---- random runs against the model --------------------------------------- */

struct rec {
    ring_entry re; /* what the ring sees */
    bool placed, evicted;
    int m_state; /* the model's copy of what the ring should hold */
    uint32_t m_reads, m_commits;
    uint64_t m_begin;
};

struct model {
    ring r;
    uint64_t cap;
    uint64_t head;
    struct rec *recs; /* pool, in placement order once placed */
    size_t nrecs;
    size_t nplaced;    /* recs[0 .. nplaced) were placed */
    size_t first_live; /* recs[first_live .. nplaced) are live */
    size_t next_evict; /* the callback expects recs[next_evict] next */
    size_t evict_limit; /* and nothing at or past this index */
    unsigned long long seed;
    /* statistics, to show the run covered what it claims */
    unsigned long long live_sum; /* live entries summed over steps */
    size_t live_max;
    unsigned long retries, retries_ok; /* after releasing the blocker */
    unsigned long ebusy, evictions, aborted_evicted, dead_wraps, exact_fits, refused, stale_refused;
};

static bool rec_busy(const struct rec *x)
{
    return x->m_state == RING_WRITING || x->m_reads > 0 || x->m_commits > 0;
}

static void model_evict(ring_entry *e, void *ud)
{
    struct model *m = ud;
    struct rec *x = (struct rec *)((char *)e - offsetof(struct rec, re));
    size_t i = (size_t)(x - m->recs);
    CHECK(i < m->nplaced, "evicted entry %zu was never placed", i);
    CHECK(!x->evicted, "entry %zu evicted twice", i);
    CHECK(i == m->next_evict, "evicted entry %zu, want %zu: not FIFO", i, m->next_evict);
    CHECK(i < m->evict_limit, "evicted entry %zu; only those before %zu were in the way", i,
          m->evict_limit);
    CHECK(e->state == RING_COMMITTED || e->state == RING_ABORTED,
          "entry %zu evicted in state %d", i, e->state);
    CHECK(e->read_pins == 0 && e->commit_pins == 0 && !rec_busy(x),
          "entry %zu evicted with pins %u/%u (model state %d)", i, e->read_pins,
          e->commit_pins, x->m_state);
    CHECK(m->r.oldest != e && m->r.newest != e, "entry %zu handed over still linked", i);
    x->evicted = true;
    m->next_evict = i + 1;
    m->evictions++;
    if (e->state == RING_ABORTED)
        m->aborted_evicted++;
}

static int cmp_u64_pair(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Compares the ring with the model; scratch holds 2 * live slots. */
static void model_check(struct model *m, uint64_t *scratch)
{
    ring *r = &m->r;
    CHECK(r->head == m->head, "head %" PRIu64 ", model %" PRIu64, r->head, m->head);
    CHECK(ring_used(r) == r->head - r->tail && ring_used(r) <= m->cap,
          "used %" PRIu64 " (head %" PRIu64 " tail %" PRIu64 ") over capacity %" PRIu64,
          ring_used(r), r->head, r->tail, m->cap);
    CHECK(r->tail <= r->head, "tail %" PRIu64 " past head %" PRIu64, r->tail, r->head);

    /* The FIFO is the model's live window, in order. */
    ring_entry *e = r->oldest;
    size_t n = 0;
    for (size_t i = m->first_live; i < m->nplaced; i++, n++) {
        struct rec *x = &m->recs[i];
        if (e != &x->re) {
            CHECK(false, "FIFO position %zu holds the wrong entry (want %zu)", n, i);
            return;
        }
        uint64_t off = ring_file_offset(r, e);
        CHECK(e->begin == x->m_begin && off == x->m_begin % m->cap,
              "entry %zu at %" PRIu64 "/%" PRIu64 ", model %" PRIu64, i, e->begin, off,
              x->m_begin);
        CHECK(off + e->aligned_len <= m->cap, "entry %zu straddles the file end", i);
        CHECK(e->state == x->m_state && e->read_pins == x->m_reads &&
                  e->commit_pins == x->m_commits,
              "entry %zu state %d pins %u/%u, model %d %u/%u", i, e->state, e->read_pins,
              e->commit_pins, x->m_state, x->m_reads, x->m_commits);
        CHECK(!ring_is_stale(r, e->begin), "live entry %zu is stale", i);
        scratch[2 * n] = off;
        scratch[2 * n + 1] = e->aligned_len;
        if (e == r->newest && i + 1 != m->nplaced)
            CHECK(false, "newest is entry %zu, model has %zu", i, m->nplaced - 1);
        e = e->next;
    }
    CHECK(e == NULL, "FIFO longer than the model's %zu live entries", n);
    m->live_sum += n;
    if (n > m->live_max)
        m->live_max = n;
    CHECK((n == 0) == (r->oldest == NULL && r->newest == NULL), "empty FIFO ends disagree");
    if (n > 0)
        CHECK(r->newest == &m->recs[m->nplaced - 1].re, "newest is not the last placed");
    if (m->first_live > 0)
        CHECK(ring_is_stale(r, m->recs[m->first_live - 1].m_begin),
              "last evicted entry %zu not stale (tail %" PRIu64 ")", m->first_live - 1, r->tail);

    /* No two live entries share a file byte. */
    qsort(scratch, n, 2 * sizeof(uint64_t), cmp_u64_pair);
    for (size_t k = 1; k < n; k++)
        CHECK(scratch[2 * (k - 1)] + scratch[2 * (k - 1) + 1] <= scratch[2 * k],
              "live entries overlap at file offsets %" PRIu64 " and %" PRIu64,
              scratch[2 * (k - 1)], scratch[2 * k]);
}

/* A random live entry index, scanning forward from a random start for one
 * that pred accepts; SIZE_MAX when none does. */
static size_t pick_live(struct model *m, bool (*pred)(const struct rec *))
{
    size_t n = m->nplaced - m->first_live;
    if (n == 0)
        return SIZE_MAX;
    size_t start = (size_t)(test_rand(&m->seed) % n);
    for (size_t k = 0; k < n; k++) {
        size_t i = m->first_live + (start + k) % n;
        if (pred(&m->recs[i]))
            return i;
    }
    return SIZE_MAX;
}

static bool is_writing(const struct rec *x) { return x->m_state == RING_WRITING; }
static bool has_reads(const struct rec *x) { return x->m_reads > 0; }
static bool has_commits(const struct rec *x) { return x->m_commits > 0; }
static bool can_commit_pin(const struct rec *x)
{
    return x->m_state == RING_COMMITTED && x->m_commits < 2;
}

static uint64_t random_len(struct model *m)
{
    uint64_t blocks = m->cap / BLK;
    unsigned t = (unsigned)(test_rand(&m->seed) % 64);
    if (t == 0)
        return m->cap;
    if (t <= 4)
        return (1 + test_rand(&m->seed) % blocks) * BLK;
    uint64_t small = t <= 32 && blocks >= 8 ? blocks / 8 : 2;
    return (1 + test_rand(&m->seed) % small) * BLK;
}

/* Returns the index of the busy entry that made the ring refuse, or
 * SIZE_MAX when the reserve went through (or was not tried). */
static size_t op_reserve(struct model *m)
{
    if (m->nplaced == m->nrecs)
        return SIZE_MAX;
    struct rec *x = &m->recs[m->nplaced];
    uint64_t len = random_len(m);

    /* What must happen, from the model alone. */
    uint64_t room = m->cap - m->head % m->cap;
    uint64_t begin = room >= len ? m->head : m->head + room;
    uint64_t end = begin + len;
    size_t k = m->first_live;
    bool busy = false;
    while (k < m->nplaced && end - m->recs[k].m_begin > m->cap) {
        if (rec_busy(&m->recs[k])) {
            busy = true;
            break;
        }
        k++;
    }

    memset(&x->re, 0xa5, sizeof x->re); /* the ring must set what it uses */
    x->re.aligned_len = len;
    x->re.begin = UINT64_MAX;
    x->re.next = NULL;
    m->next_evict = m->first_live;
    m->evict_limit = k;
    int rc = ring_reserve(&m->r, &x->re, model_evict, m);

    CHECK(m->next_evict == k, "evicted up to %zu, want %zu (rc %d)", m->next_evict, k, rc);
    for (size_t i = m->first_live; i < k; i++)
        m->recs[i].evicted = true; /* keep the model right after a failed check */
    m->first_live = k;
    if (busy) {
        m->ebusy++;
        CHECK(rc == -EBUSY, "rc %d, want -EBUSY: entry %zu in the way is busy", rc, k);
        CHECK(x->re.begin == UINT64_MAX && m->r.newest != &x->re, "an -EBUSY entry was placed");
        return k;
    }
    CHECK(rc == 0, "rc %d, want 0 (len %" PRIu64 ", head %" PRIu64 ")", rc, len, m->head);
    if (rc != 0)
        return SIZE_MAX;
    CHECK(x->re.begin == begin, "begin %" PRIu64 ", want %" PRIu64, x->re.begin, begin);
    CHECK(x->re.state == RING_WRITING && x->re.read_pins == 0 && x->re.commit_pins == 0,
          "new entry not a clean Writing entry");
    if (begin != m->head)
        m->dead_wraps++;
    if (end % m->cap == 0)
        m->exact_fits++; /* ends exactly at the file end */
    x->placed = true;
    x->m_state = RING_WRITING;
    x->m_reads = x->m_commits = 0;
    x->m_begin = begin;
    m->nplaced++;
    m->head = end;
    return SIZE_MAX;
}

/* The writer waits for the blocking entry: its write completes and its
 * pins go. */
static void release_all(struct model *m, size_t i)
{
    struct rec *x = &m->recs[i];
    if (x->m_state == RING_WRITING) {
        ring_commit(&m->r, &x->re);
        x->m_state = RING_COMMITTED;
    }
    for (; x->m_reads > 0; x->m_reads--)
        ring_unpin_read(&m->r, &x->re);
    for (; x->m_commits > 0; x->m_commits--)
        ring_unpin_commit(&m->r, &x->re);
}

static void op_bad_reserve(struct model *m)
{
    ring_entry junk;
    uint64_t len;
    int want;
    switch (test_rand(&m->seed) % 3) {
    case 0:
        len = m->cap + (1 + test_rand(&m->seed) % 8) * BLK;
        want = -E2BIG;
        break;
    case 1:
        len = (test_rand(&m->seed) % (2 * m->cap / BLK)) * BLK + 1 + test_rand(&m->seed) % (BLK - 1);
        want = -EINVAL;
        break;
    default:
        len = 0;
        want = -EINVAL;
        break;
    }
    ring before = m->r;
    entry_new(&junk, len);
    m->next_evict = m->first_live;
    m->evict_limit = m->first_live; /* nothing may go */
    int rc = ring_reserve(&m->r, &junk, model_evict, m);
    CHECK(rc == want, "len %" PRIu64 ": rc %d, want %d", len, rc, want);
    CHECK(memcmp(&before, &m->r, sizeof before) == 0 && junk.begin == UINT64_MAX,
          "a refused reserve changed something");
    m->refused++;
}

static void op_pin_read(struct model *m)
{
    if (m->nplaced == 0)
        return;
    /* Any entry ever placed: evicted ones must be refused as stale. */
    size_t i = (size_t)(test_rand(&m->seed) % m->nplaced);
    if (test_rand(&m->seed) % 2 && m->nplaced > m->first_live)
        i = m->first_live + (size_t)(test_rand(&m->seed) % (m->nplaced - m->first_live));
    struct rec *x = &m->recs[i];
    bool want = !x->evicted && x->m_state == RING_COMMITTED;
    if (x->evicted) {
        CHECK(ring_is_stale(&m->r, x->m_begin), "evicted entry %zu not stale", i);
        m->stale_refused++;
    }
    uint32_t pins = x->re.read_pins;
    bool got = ring_pin_read(&m->r, &x->re);
    CHECK(got == want, "pin_read of entry %zu (state %d, evicted %d) gave %d", i, x->m_state,
          x->evicted, got);
    CHECK(x->re.read_pins == pins + (got ? 1u : 0u), "read pins %u after pin_read, had %u",
          x->re.read_pins, pins);
    if (got && !x->evicted)
        x->m_reads++;
    else if (got)
        ring_unpin_read(&m->r, &x->re); /* already reported */
}

static void random_run(unsigned long long seed, uint64_t cap, size_t nops)
{
    struct model m;
    memset(&m, 0, sizeof m);
    m.cap = cap;
    m.seed = seed;
    m.nrecs = nops;
    m.recs = calloc(m.nrecs, sizeof *m.recs);
    uint64_t *scratch = calloc(2 * (cap / BLK + 1), sizeof *scratch);
    REQUIRE(m.recs != NULL && scratch != NULL, "out of memory");
    ring_init(&m.r, cap);
    int failed_before = test_checks_failed;

    for (size_t op = 0; op < nops && test_checks_failed == failed_before; op++) {
        unsigned t = (unsigned)(test_rand(&m.seed) % 100);
        size_t i;
        if (t < 40) {
            /* Half the time, wait for whatever blocks and retry at once. */
            size_t blocker = op_reserve(&m);
            if (blocker != SIZE_MAX && test_rand(&m.seed) % 2) {
                model_check(&m, scratch);
                release_all(&m, blocker);
                m.retries++;
                if (op_reserve(&m) == SIZE_MAX)
                    m.retries_ok++;
            }
        } else if (t < 41) {
            op_bad_reserve(&m);
        } else if (t < 61) {
            if ((i = pick_live(&m, is_writing)) != SIZE_MAX) {
                struct rec *x = &m.recs[i];
                if (test_rand(&m.seed) % 5 == 0) {
                    ring_abort(&m.r, &x->re);
                    x->m_state = RING_ABORTED;
                } else {
                    ring_commit(&m.r, &x->re);
                    x->m_state = RING_COMMITTED;
                    if (test_rand(&m.seed) % 4 == 0) { /* the KvSsdPersistGuard */
                        ring_pin_commit(&m.r, &x->re);
                        x->m_commits++;
                    }
                }
            }
        } else if (t < 71) {
            op_pin_read(&m);
        } else if (t < 86) {
            if ((i = pick_live(&m, has_reads)) != SIZE_MAX) {
                ring_unpin_read(&m.r, &m.recs[i].re);
                m.recs[i].m_reads--;
            }
        } else if (t < 88) {
            if ((i = pick_live(&m, can_commit_pin)) != SIZE_MAX) {
                ring_pin_commit(&m.r, &m.recs[i].re);
                m.recs[i].m_commits++;
            }
        } else {
            if ((i = pick_live(&m, has_commits)) != SIZE_MAX) {
                ring_unpin_commit(&m.r, &m.recs[i].re);
                m.recs[i].m_commits--;
            }
        }
        model_check(&m, scratch);
    }
    if (test_checks_failed != failed_before)
        fprintf(stderr, "random run seed %llu capacity %" PRIu64 " stopped at the first failure\n",
                seed, cap);

    uint64_t laps = m.head / cap;
    printf("random seed %llu cap %" PRIu64 ": %zu placed, %" PRIu64 " laps, live %.1f avg "
           "%zu max, %lu evicted (%lu aborted), %lu -EBUSY (%lu retried, %lu then placed), "
           "%lu dead-space wraps, %lu exact fits, %lu refused, %lu stale pins refused\n",
           seed, cap, m.nplaced, laps, (double)m.live_sum / (double)nops, m.live_max,
           m.evictions, m.aborted_evicted, m.ebusy, m.retries, m.retries_ok, m.dead_wraps, m.exact_fits, m.refused,
           m.stale_refused);
    /* The run must have exercised what it claims to test. */
    CHECK(laps >= 5, "only %" PRIu64 " laps", laps);
    CHECK(m.evictions > 0 && m.ebusy > 0 && m.dead_wraps > 0 && m.exact_fits > 0 &&
              m.aborted_evicted > 0 && m.stale_refused > 0 && m.retries_ok > 0,
          "run did not cover every case");
    free(scratch);
    free(m.recs);
}

int main(void)
{
    test_exact_fit();
    test_wrap_dead_space();
    test_bad_lengths();
    test_stale();
    test_busy_retry();

    static const uint64_t caps[] = {4 * BLK, 8 * BLK, 21 * BLK, 128 * BLK};
    static const unsigned long long seeds[] = {1, 0x9e3779b97f4a7c15ULL, 42};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++)
        for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++)
            random_run(seeds[s] + c, caps[c], 20000);
    return test_finish();
}
