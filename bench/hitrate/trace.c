/*
 * trace.c - seeded key sets and Zipf / Zipf+scan get traces (see trace.h).
 *
 * Everything is drawn from splitmix64 so that a (budget, seed, length)
 * triple gives the same key sizes and the same gets on every machine; the
 * Zipf sampler inverts a precomputed CDF over the ranks by binary search.
 */
#include "trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define SIZE_STEP (4 * KIB)
#define SIZE_MIN (1 * MIB)
#define SIZE_MAX_ (16 * MIB)
#define DATASET_PERCENT 125 /* of the budget */
#define SCAN_KEYS_PERCENT 10
#define ZIPF_PER_SCAN 4 /* Zipf gets between scans, in scan lengths: ~20% scans */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double uniform(uint64_t *s)
{
    return (double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

void trace_key_name(uint32_t i, char *buf, unsigned cap)
{
    snprintf(buf, cap, "hr%06u", i);
}

int key_set_make(key_set *ks, uint64_t budget, uint64_t seed)
{
    uint64_t want = budget / 100 * DATASET_PERCENT, s = seed ^ 0x6b65797300000000ull;
    uint32_t cap = 64;
    *ks = (key_set){0};
    ks->size = malloc(cap * sizeof *ks->size);
    if (!ks->size)
        return -1;
    uint64_t steps = (SIZE_MAX_ - SIZE_MIN) / SIZE_STEP + 1;
    while (ks->total < want || ks->n == 0) {
        if (ks->n == cap) {
            uint64_t *p = realloc(ks->size, 2 * cap * sizeof *p);
            if (!p) {
                key_set_free(ks);
                return -1;
            }
            ks->size = p;
            cap *= 2;
        }
        uint64_t size = SIZE_MIN + splitmix64(&s) % steps * SIZE_STEP;
        ks->size[ks->n++] = size;
        ks->total += size;
        if (size > ks->max_size)
            ks->max_size = size;
    }
    return 0;
}

void key_set_free(key_set *ks)
{
    free(ks->size);
    *ks = (key_set){0};
}

/* A Zipf(skew) sampler over n keys whose ranks are shuffled by the seed. */
typedef struct zipf {
    uint32_t n;
    double *cdf;    /* cdf[r]: P(rank <= r), ranks from 0 */
    uint32_t *key;  /* key of rank r */
} zipf;

static int zipf_init(zipf *z, uint32_t n, double skew, uint64_t *s)
{
    z->n = n;
    z->cdf = malloc(n * sizeof *z->cdf);
    z->key = malloc(n * sizeof *z->key);
    if (!z->cdf || !z->key) {
        free(z->cdf);
        free(z->key);
        return -1;
    }
    double sum = 0;
    for (uint32_t r = 0; r < n; r++)
        z->cdf[r] = sum += 1.0 / pow((double)(r + 1), skew);
    for (uint32_t r = 0; r < n; r++)
        z->cdf[r] /= sum;
    for (uint32_t r = 0; r < n; r++)
        z->key[r] = r;
    for (uint32_t r = n - 1; r > 0; r--) { /* Fisher-Yates */
        uint32_t j = (uint32_t)(splitmix64(s) % (r + 1));
        uint32_t t = z->key[r];
        z->key[r] = z->key[j];
        z->key[j] = t;
    }
    return 0;
}

static uint32_t zipf_next(const zipf *z, uint64_t *s)
{
    double u = uniform(s);
    uint32_t lo = 0, hi = z->n - 1; /* first rank whose cdf exceeds u */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (z->cdf[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return z->key[lo];
}

static void zipf_free(zipf *z)
{
    free(z->cdf);
    free(z->key);
}

int trace_make(trace *t, trace_kind kind, const key_set *ks, uint32_t n_ops, uint64_t seed)
{
    static const char *const names[TRACE_KINDS] = {"zipf-0.9", "zipf-0.99", "zipf+scan"};
    uint64_t s = seed ^ (0x7472616365000000ull + (uint64_t)kind);
    *t = (trace){.name = names[kind], .n_ops = n_ops};
    t->op = malloc((n_ops ? n_ops : 1) * sizeof *t->op);
    zipf z;
    if (!t->op || zipf_init(&z, ks->n, kind == TRACE_ZIPF_099 ? 0.99 : 0.9, &s) < 0) {
        trace_free(t);
        return -1;
    }
    uint32_t scan_len = (ks->n * SCAN_KEYS_PERCENT + 99) / 100, period = 0, cursor = 0;
    for (uint32_t i = 0; i < n_ops; i++) {
        if (kind == TRACE_ZIPF_SCAN && period == ZIPF_PER_SCAN * scan_len) {
            for (uint32_t j = 0; j < scan_len && i < n_ops; j++, i++) {
                t->op[i] = cursor;
                cursor = (cursor + 1) % ks->n;
                t->scan_ops++;
            }
            period = 0;
            if (i == n_ops)
                break;
        }
        t->op[i] = zipf_next(&z, &s);
        period++;
    }
    zipf_free(&z);
    return 0;
}

void trace_free(trace *t)
{
    free(t->op);
    t->op = NULL;
}
