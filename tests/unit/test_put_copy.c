/*
 * test_put_copy.c - the copier of fx_put and fx_batch_put (src/client/put_copy.c):
 * every byte of every value lands, and the owner's wake function runs exactly
 * once, after all but the last PUT_WAKE_TAIL bytes were copied, when the values
 * are larger than that in all (never otherwise), whether that point falls
 * inside a value, on a value's end, or among empty values.
 */
#include "client/put_copy.h"
#include "testlib.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1 << 20)
#define MAX_VALUES 8
#define BUF (10 * MIB)

/* The values are copied from src into dst back to back, so at any moment the
 * bytes copied so far are the prefix of dst that matches src (dst starts as
 * the complement of src). */
typedef struct probe {
    const uint8_t *src, *dst;
    size_t total;
    int wakes;
    size_t copied_at_wake;
} probe;

static size_t matching_prefix(const uint8_t *a, const uint8_t *b, size_t n)
{
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

static void record_wake(void *ctx)
{
    probe *p = ctx;
    p->wakes++;
    p->copied_at_wake = matching_prefix(p->src, p->dst, p->total);
}

static void run_case(const char *name, const size_t *lens, int n, uint8_t *src, uint8_t *dst)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += lens[i];
    REQUIRE(total <= BUF, "%s: case too large", name);
    for (size_t i = 0; i < total; i++)
        dst[i] = (uint8_t)~src[i];
    probe p = {.src = src, .dst = dst, .total = total};
    put_copy pc;
    put_copy_init(&pc, total, record_wake, &p);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        put_copy_value(&pc, dst + off, lens[i] ? src + off : NULL, lens[i]);
        off += lens[i];
    }
    CHECK(memcmp(src, dst, total) == 0, "%s: the %zu bytes differ after the copy", name, total);
    if (total > PUT_WAKE_TAIL) {
        CHECK(p.wakes == 1, "%s: %d wake-ups for %zu bytes, want 1", name, p.wakes, total);
        CHECK(p.copied_at_wake == total - PUT_WAKE_TAIL,
              "%s: woke after %zu bytes, want %zu (all but the last %zu)", name, p.copied_at_wake,
              total - PUT_WAKE_TAIL, PUT_WAKE_TAIL);
    } else {
        CHECK(p.wakes == 0, "%s: %d wake-ups for %zu bytes, want none", name, p.wakes, total);
    }
}

int main(void)
{
    uint8_t *src = malloc(BUF), *dst = malloc(BUF);
    REQUIRE(src && dst, "malloc");
    unsigned long long seed = 42;
    for (size_t i = 0; i < BUF; i++)
        src[i] = (uint8_t)test_rand(&seed);

    struct {
        const char *name;
        int n;
        size_t lens[MAX_VALUES];
    } cases[] = {
        {"one empty value", 1, {0}},
        {"exactly the tail", 1, {PUT_WAKE_TAIL}},
        {"one byte over the tail", 1, {PUT_WAKE_TAIL + 1}},
        {"one 3 MiB + 5 value", 1, {3 * MIB + 5}},
        {"inside the third value", 5, {1, 0, 3 * MIB, 0, 7}},
        {"on a value's end", 2, {2 * MIB, 2 * MIB}},
        {"after the first byte", 3, {MIB, MIB, 1}},
        {"among empty values", 5, {0, 3 * MIB, 0, 0, 2 * MIB}},
        {"small values only", 4, {4096, 0, 511, MIB}},
        {"the batch test's values", 6, {3 * MIB + 5, 1, MIB + 3, 0, 2 * MIB, 513 * 1024}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        run_case(cases[c].name, cases[c].lens, cases[c].n, src, dst);

    /* Random batches of up to 8 values, some empty, up to 10 MiB. */
    for (int r = 0; r < 40; r++) {
        size_t lens[MAX_VALUES], left = BUF;
        int n = 1 + (int)(test_rand(&seed) % MAX_VALUES);
        for (int i = 0; i < n; i++) {
            size_t want = test_rand(&seed) % 4 == 0 ? 0 : test_rand(&seed) % (3 * MIB);
            lens[i] = want < left ? want : left;
            left -= lens[i];
        }
        run_case("random", lens, n, src, dst);
    }
    free(src);
    free(dst);
    return test_finish();
}
