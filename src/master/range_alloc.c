/*
 * range_alloc.c - best-fit range allocator over one owner's memory segment.
 *
 * The master decides where each value lives inside an owner's shared segment;
 * this module keeps the free byte ranges of one segment and hands out aligned
 * ranges from them. Every free range is one node that sits in two red-black
 * trees (libbsd's <sys/tree.h> macros): by_off, ordered by offset, finds the
 * neighbours a released range coalesces with; by_size, ordered by (size,
 * offset), finds the best fit. Adjacent free ranges are always merged, so the
 * free set is a list of maximal gaps and freeing everything leaves one range.
 *
 * Node memory: a release may need a node of its own (a range with no free
 * neighbour). The nodes owned follow the free ranges, not the allocations:
 * alloc makes sure of one spare for its split, a release takes a spare or mallocs
 * one and fails with -ENOMEM (nothing changed) when it cannot, and spares
 * beyond SPARES_KEPT are freed. A segment filled front to back then costs a
 * handful of nodes, not one per value (an earlier version reserved live + 1
 * nodes so that a release never failed: 96 bytes per stored value on the
 * master). The caller keeps a failed release and tries it again
 * (allocation.c), so no range is lost to a failed malloc.
 *
 * Not thread-safe: the master's loop thread owns each allocator.
 */
#include "master/range_alloc.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <bsd/sys/tree.h>

/*
 * How many too-small-once-aligned candidates alloc looks at, in size order,
 * before it settles for the smallest range that fits at any alignment. A
 * candidate of size s < len + align - 1 fits only if its offset happens to be
 * close enough below an aligned one, and there may be many that do not; the
 * cap keeps alloc O(log n) at the price of a slightly worse fit in that case.
 */
#define ALIGN_SCAN_LIMIT 32

/* Spare nodes kept beyond the free ranges: an alloc / release pair in
 * steady state calls neither malloc nor free. */
#define SPARES_KEPT 16

/* One free range [off, off + len), len > 0, in both trees; or a spare node. */
struct free_range {
    uint64_t off;
    uint64_t len;
    RB_ENTRY(free_range) by_off;
    union {
        RB_ENTRY(free_range) by_size;
        struct free_range *next_spare; /* only while on the spare list */
    };
};

RB_HEAD(off_tree, free_range);
RB_HEAD(size_tree, free_range);

struct range_alloc {
    uint64_t capacity;
    uint64_t used;       /* capacity minus the sum of free range lengths */
    size_t free_count;   /* nodes in the trees */
    size_t nodes;        /* nodes owned: free_count + spares */
    struct free_range *spares;
    struct off_tree by_off;
    struct size_tree by_size;
};

static int off_cmp(const struct free_range *a, const struct free_range *b)
{
    return (a->off > b->off) - (a->off < b->off);
}

/* Offset breaks ties so that every node has a distinct key and equal sizes
 * are handed out lowest offset first. */
static int size_cmp(const struct free_range *a, const struct free_range *b)
{
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return off_cmp(a, b);
}

/* RB_GENERATE_STATIC marks its functions __unused, which libbsd leaves
 * undefined (Linux headers use the name for struct members), so each unused
 * one would trip -Werror. Defined only around the two expansions. */
#ifndef __unused
#define __unused __attribute__((__unused__))
#define FX_UNDEF_UNUSED
#endif
RB_GENERATE_STATIC(off_tree, free_range, by_off, off_cmp)
RB_GENERATE_STATIC(size_tree, free_range, by_size, size_cmp)
#ifdef FX_UNDEF_UNUSED
#undef __unused
#undef FX_UNDEF_UNUSED
#endif

/* Test-only allocation failpoint: a unit test that defines this function
 * makes node allocations fail when it returns true. */
extern bool range_alloc_failpoint(void) __attribute__((weak));

static struct free_range *node_malloc(void)
{
    if (range_alloc_failpoint && range_alloc_failpoint())
        return NULL;
    return malloc(sizeof(struct free_range));
}

/* A node from the spare list, else from malloc; NULL when out of memory. */
static struct free_range *node_get(range_alloc *ra)
{
    struct free_range *n = ra->spares;
    if (n) {
        ra->spares = n->next_spare;
        return n;
    }
    n = node_malloc();
    if (n)
        ra->nodes++;
    return n;
}

static void node_put(range_alloc *ra, struct free_range *n)
{
    n->next_spare = ra->spares;
    ra->spares = n;
}

/* Makes sure one spare node is there for a split. -ENOMEM leaves nothing
 * changed. */
static int node_reserve(range_alloc *ra)
{
    if (!ra->spares) {
        struct free_range *n = node_malloc();
        if (!n)
            return -ENOMEM;
        ra->nodes++;
        node_put(ra, n);
    }
    return 0;
}

/* Gives back spares beyond SPARES_KEPT, so that node memory follows the
 * number of free ranges. */
static void node_trim(range_alloc *ra)
{
    while (ra->spares && ra->nodes > ra->free_count + SPARES_KEPT) {
        struct free_range *n = ra->spares;
        ra->spares = n->next_spare;
        free(n);
        ra->nodes--;
    }
}

static void insert_free(range_alloc *ra, struct free_range *n)
{
    RB_INSERT(off_tree, &ra->by_off, n);
    RB_INSERT(size_tree, &ra->by_size, n);
    ra->free_count++;
}

/* Sets *at to the lowest offset in r aligned to align where len bytes fit. */
static bool fits(const struct free_range *r, uint64_t len, uint64_t align, uint64_t *at)
{
    uint64_t pad = (0 - r->off) & (align - 1);
    if (pad > r->len || r->len - pad < len)
        return false;
    *at = r->off + pad;
    return true;
}

/*
 * The smallest free range where an aligned block of len bytes fits, or NULL
 * when none does. Ranges of at least len + align - 1 bytes fit wherever they
 * start; smaller ones (the window [len, len + align - 1)) depend on their
 * offset, so they are tried in size order first. Past ALIGN_SCAN_LIMIT
 * misfits the smallest sure fit is taken instead; only when no sure fit
 * exists does the scan go on through the rest of the window, because
 * answering -ENOSPC while some range fits would strand free space.
 */
static struct free_range *find_fit(range_alloc *ra, uint64_t len, uint64_t align, uint64_t *at)
{
    struct free_range key = {.off = 0, .len = len};
    struct free_range *r = RB_NFIND(size_tree, &ra->by_size, &key);
    for (int scanned = 0; r && scanned < ALIGN_SCAN_LIMIT; scanned++) {
        if (fits(r, len, align, at))
            return r;
        r = RB_NEXT(size_tree, &ra->by_size, r);
    }
    if (!r)
        return NULL;
    if (align - 1 <= UINT64_MAX - len) {
        key.len = len + align - 1;
        struct free_range *sure = RB_NFIND(size_tree, &ra->by_size, &key);
        if (sure) {
            bool ok = fits(sure, len, align, at);
            assert(ok);
            (void)ok;
            return sure;
        }
    }
    for (; r; r = RB_NEXT(size_tree, &ra->by_size, r))
        if (fits(r, len, align, at))
            return r;
    return NULL;
}

/* Takes [at, at + len) out of free range r, keeping up to two remainders.
 * A node for a split comes from the spare node_reserve made sure of, so this
 * cannot fail. */
static void carve(range_alloc *ra, struct free_range *r, uint64_t at, uint64_t len)
{
    uint64_t head = at - r->off;
    uint64_t tail = r->off + r->len - (at + len);

    RB_REMOVE(size_tree, &ra->by_size, r);
    if (head && tail) {
        struct free_range *t = ra->spares;
        assert(t); /* node_reserve guaranteed one */
        ra->spares = t->next_spare;
        t->off = at + len;
        t->len = tail;
        insert_free(ra, t);
        r->len = head;
        RB_INSERT(size_tree, &ra->by_size, r);
    } else if (head) {
        r->len = head;
        RB_INSERT(size_tree, &ra->by_size, r);
    } else if (tail) {
        /* The offset moves inside [r->off, r->off + r->len), which no other
         * free range touches, so r keeps its place in by_off. */
        r->off = at + len;
        r->len = tail;
        RB_INSERT(size_tree, &ra->by_size, r);
    } else {
        RB_REMOVE(off_tree, &ra->by_off, r);
        ra->free_count--;
        node_put(ra, r);
    }
}

range_alloc *range_alloc_new(uint64_t capacity)
{
    range_alloc *ra = calloc(1, sizeof *ra);
    if (!ra)
        return NULL;
    ra->capacity = capacity;
    RB_INIT(&ra->by_off);
    RB_INIT(&ra->by_size);
    if (capacity > 0) {
        struct free_range *n = node_get(ra);
        if (!n) {
            free(ra);
            return NULL;
        }
        n->off = 0;
        n->len = capacity;
        insert_free(ra, n);
    }
    return ra;
}

/* Post-order, so no freed node is read again; the depth is O(log n). */
static void free_subtree(struct free_range *n)
{
    while (n) {
        struct free_range *right = RB_RIGHT(n, by_off);
        free_subtree(RB_LEFT(n, by_off));
        free(n);
        n = right;
    }
}

void range_alloc_free(range_alloc *ra)
{
    if (!ra)
        return;
    free_subtree(RB_ROOT(&ra->by_off));
    while (ra->spares) {
        struct free_range *n = ra->spares;
        ra->spares = n->next_spare;
        free(n);
    }
    free(ra);
}

int range_alloc_alloc(range_alloc *ra, uint64_t len, uint64_t align, uint64_t *off)
{
    if (!ra || !off || len == 0 || align == 0 || (align & (align - 1)) != 0)
        return -EINVAL;

    uint64_t at = 0;
    struct free_range *r = find_fit(ra, len, align, &at);
    if (!r)
        return -ENOSPC;
    /* The node a split needs, before anything changes. */
    if (node_reserve(ra) < 0)
        return -ENOMEM;
    carve(ra, r, at, len);
    ra->used += len;
    node_trim(ra);
    *off = at;
    return 0;
}

int range_alloc_take(range_alloc *ra, uint64_t off, uint64_t len)
{
    if (!ra || len == 0 || len > ra->capacity || off > ra->capacity - len)
        return -EINVAL;
    /* The free range holding off: the last one starting at or before it. */
    struct free_range key = {.off = off, .len = 0};
    struct free_range *r = RB_NFIND(off_tree, &ra->by_off, &key);
    if (!r || r->off != off)
        r = r ? RB_PREV(off_tree, &ra->by_off, r) : RB_MAX(off_tree, &ra->by_off);
    if (!r || off - r->off >= r->len || r->len - (off - r->off) < len)
        return -EBUSY; /* some byte of it is allocated */
    if (node_reserve(ra) < 0)
        return -ENOMEM;
    carve(ra, r, off, len);
    ra->used += len;
    node_trim(ra); /* takes in any order leave nodes spare as gaps fill */
    return 0;
}

int range_alloc_release(range_alloc *ra, uint64_t off, uint64_t len)
{
    if (!ra || len == 0 || len > ra->capacity || off > ra->capacity - len)
        return -EINVAL;

    /* The free neighbours: right is the first free range at or after off,
     * left the last one before it. Any overlap with either means the range
     * is (partly) free already. */
    struct free_range key = {.off = off, .len = 0};
    struct free_range *right = RB_NFIND(off_tree, &ra->by_off, &key);
    struct free_range *left = right ? RB_PREV(off_tree, &ra->by_off, right)
                                    : RB_MAX(off_tree, &ra->by_off);
    if (right && right->off - off < len)
        return -EINVAL;
    if (left && off - left->off < left->len)
        return -EINVAL;

    bool join_left = left && left->off + left->len == off;
    bool join_right = right && right->off == off + len;
    if (join_left && join_right) {
        RB_REMOVE(size_tree, &ra->by_size, left);
        RB_REMOVE(size_tree, &ra->by_size, right);
        RB_REMOVE(off_tree, &ra->by_off, right);
        ra->free_count--;
        left->len += len + right->len;
        RB_INSERT(size_tree, &ra->by_size, left);
        node_put(ra, right);
    } else if (join_left) {
        RB_REMOVE(size_tree, &ra->by_size, left);
        left->len += len;
        RB_INSERT(size_tree, &ra->by_size, left);
    } else if (join_right) {
        /* right's new offset stays above left's end: by_off order holds. */
        RB_REMOVE(size_tree, &ra->by_size, right);
        right->off = off;
        right->len += len;
        RB_INSERT(size_tree, &ra->by_size, right);
    } else {
        /* A spare, or malloc: the one step of a release that can fail. */
        struct free_range *n = node_get(ra);
        if (!n)
            return -ENOMEM;
        n->off = off;
        n->len = len;
        insert_free(ra, n);
    }

    assert(ra->used >= len); /* every byte outside the free set is used */
    ra->used -= len;
    node_trim(ra);
    return 0;
}

uint64_t range_alloc_capacity(const range_alloc *ra)
{
    return ra->capacity;
}

uint64_t range_alloc_used(const range_alloc *ra)
{
    return ra->used;
}

uint64_t range_alloc_largest_free(const range_alloc *ra)
{
    /* RB_MAX takes a non-const head; the walk only reads it. */
    struct free_range *r = RB_MAX(size_tree, (struct size_tree *)&ra->by_size);
    return r ? r->len : 0;
}

size_t range_alloc_free_count(const range_alloc *ra)
{
    return ra->free_count;
}
