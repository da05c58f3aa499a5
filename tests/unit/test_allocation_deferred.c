/*
 * test_allocation_deferred.c - a range the allocator cannot take back (no
 * memory for a free-range node) is kept and released later, never lost.
 *
 * The range allocator keeps nodes for its free ranges only (not one per
 * allocation: that cost 96 bytes per stored value), so a release of a range
 * with no free neighbour may need malloc, and malloc may fail. allocation.c
 * then parks the allocation on its space and releases it again on the
 * space's next allocation or release. Through the range allocator's test
 * failpoint: a space filled with one-unit allocations, every other one
 * dropped while node allocations fail (the spares run out and releases
 * fail), then node allocations work again and one more drop releases every
 * parked range; and a space dropped with ranges still parked frees them
 * (ASan's leak check sees the rest).
 */
#include "master/allocation.h"
#include "master/range_alloc.h"
#include "testlib.h"

#include <stdbool.h>
#include <stddef.h>

#define UNITS 256

typedef struct failpoint {
    bool on;
    unsigned long failed;
} failpoint;

/* The weak hook of range_alloc.c reaches the test's state through this one
 * pointer: the hook takes no arguments. */
static failpoint *fp_state;

bool range_alloc_failpoint(void);
bool range_alloc_failpoint(void)
{
    if (!fp_state || !fp_state->on)
        return false;
    fp_state->failed++;
    return true;
}

static size_t deferred_count(const seg_space *s)
{
    size_t n = 0;
    for (const allocation *a = s->deferred; a; a = a->next_deferred)
        n++;
    return n;
}

/* A space of UNITS alignment units, filled with one-unit allocations. */
static seg_space *filled_space(allocation **a)
{
    seg_space *s = seg_space_new(1, (uint64_t)UNITS * ALLOC_ALIGN);
    REQUIRE(s, "seg_space_new");
    for (int i = 0; i < UNITS; i++) {
        int err = 0;
        a[i] = allocation_new(s, 1, &err);
        REQUIRE(a[i], "allocation %d: err %d", i, err);
    }
    CHECK(range_alloc_used(s->ra) == (uint64_t)UNITS * ALLOC_ALIGN, "the space is full");
    CHECK(range_alloc_free_count(s->ra) == 0, "no free range left");
    return s;
}

static void parked_then_released(failpoint *fp)
{
    allocation *a[UNITS];
    seg_space *s = filled_space(a);
    fp->on = true;
    for (int i = 0; i < UNITS; i += 2) /* no two freed ranges touch: a node each */
        allocation_unref(a[i]);
    size_t parked = deferred_count(s);
    size_t freed = range_alloc_free_count(s->ra);
    CHECK(fp->failed > 0 && parked > 0, "with node allocations failing, releases are parked "
          "(%zu parked, %lu failed mallocs)", parked, fp->failed);
    CHECK(freed + parked == UNITS / 2, "every dropped range is either free or parked "
          "(%zu free, %zu parked of %d)", freed, parked, UNITS / 2);
    CHECK(range_alloc_used(s->ra) == (uint64_t)(UNITS - freed) * ALLOC_ALIGN,
          "parked ranges still count as used");

    fp->on = false;
    allocation_unref(a[1]); /* joins its two neighbours; then the parked go back */
    CHECK(deferred_count(s) == 0, "the next release takes every parked range back (%zu left)",
          deferred_count(s));
    CHECK(range_alloc_used(s->ra) == (uint64_t)(UNITS / 2 - 1) * ALLOC_ALIGN,
          "used is the live allocations' bytes");
    int err = 0;
    allocation *b = allocation_new(s, 1, &err);
    CHECK(b != NULL, "a freed unit is handed out again (err %d)", err);
    allocation_unref(b);
    for (int i = 3; i < UNITS; i += 2)
        allocation_unref(a[i]);
    CHECK(range_alloc_used(s->ra) == 0 && range_alloc_free_count(s->ra) == 1,
          "everything freed coalesces into one range");
    seg_space_unref(s);
}

static void parked_when_the_space_goes(failpoint *fp)
{
    allocation *a[UNITS];
    seg_space *s = filled_space(a);
    fp->on = true;
    for (int i = 0; i < UNITS; i += 2)
        allocation_unref(a[i]);
    CHECK(deferred_count(s) > 0, "ranges are parked");
    for (int i = 1; i < UNITS; i += 2)
        allocation_unref(a[i]);
    fp->on = false;
    seg_space_unref(s); /* the last reference: frees the parked allocations too */
}

int main(void)
{
    failpoint fp = {0};
    fp_state = &fp;
    parked_then_released(&fp);
    parked_when_the_space_goes(&fp);
    fp_state = NULL;
    return test_finish();
}
