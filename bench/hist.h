/*
 * hist.h - the latency histogram of the benchmarks: log-linear buckets (as
 * HdrHistogram), exact below 64 ns, then 64 buckets per power of two, so a
 * percentile is within 1.6% of the true sample. Fixed size, no allocation while
 * measuring, however long a row runs.
 */
#ifndef FX_BENCH_HIST_H
#define FX_BENCH_HIST_H

#include <stdint.h>

#define H_SUB_BITS 6
#define H_SUB (1u << H_SUB_BITS)
#define H_BUCKETS (H_SUB + (64 - H_SUB_BITS) * H_SUB)

typedef struct hist {
    uint64_t n;
    uint64_t b[H_BUCKETS];
} hist;

void hist_add(hist *h, uint64_t ns);
void hist_merge(hist *into, const hist *from);
/* The q-quantile in ns (0 for an empty histogram). */
double hist_quantile(const hist *h, double q);

#endif
