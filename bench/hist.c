/* hist.c - see hist.h. */
#include "hist.h"

static unsigned hist_index(uint64_t v)
{
    if (v < H_SUB)
        return (unsigned)v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - H_SUB_BITS;
    return H_SUB + shift * H_SUB + (unsigned)((v >> shift) - H_SUB);
}

/* The middle of bucket i, in ns. */
static double hist_value(unsigned i)
{
    if (i < H_SUB)
        return i;
    unsigned shift = (i - H_SUB) / H_SUB;
    uint64_t low = (uint64_t)((i - H_SUB) % H_SUB + H_SUB) << shift;
    return (double)low + (double)(1ull << shift) / 2.0;
}

void hist_add(hist *h, uint64_t ns)
{
    h->b[hist_index(ns)]++;
    h->n++;
}

void hist_merge(hist *into, const hist *from)
{
    for (unsigned i = 0; i < H_BUCKETS; i++)
        into->b[i] += from->b[i];
    into->n += from->n;
}

double hist_quantile(const hist *h, double q)
{
    if (!h->n)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->n + 0.999999);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < H_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank)
            return hist_value(i);
    }
    return hist_value(H_BUCKETS - 1);
}
