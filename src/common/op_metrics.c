/*
 * op_metrics.c - counting an owner's operations (see op_metrics.h).
 */
#include "common/op_metrics.h"

#include "fluxon/fluxon.h"

/* 10 us .. 10 s in 1-2.5-5 steps: a 4 KiB hit is tens of microseconds, a
 * 16 MiB remote get or SSD refill tens of milliseconds. */
const uint64_t op_metrics_bounds_us[OP_METRICS_BOUNDS] = {
    10,     25,     50,      100,     250,     500,     1000,    2500,    5000,    10000,
    25000,  50000,  100000,  250000,  500000,  1000000, 2500000, 5000000, 10000000};

const char *op_kind_name(op_kind k)
{
    switch (k) {
    case OP_PUT: return "put";
    case OP_GET_MEMORY: return "get_memory";
    case OP_GET_SSD: return "get_ssd";
    case OP_GET_REMOTE: return "get_remote";
    default: return "unknown";
    }
}

const char *op_error_name(size_t index)
{
    return index == 0 || index >= OP_METRICS_ERRORS ? "Other" : fx_strerror(-(int)index);
}

size_t op_metrics_bucket(uint64_t us)
{
    size_t i = 0;
    while (i < OP_METRICS_BOUNDS && us > op_metrics_bounds_us[i])
        i++;
    return i;
}

void op_metrics_add(uint64_t *counter, uint64_t n)
{
    __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

void op_metrics_observe(op_metrics *m, op_kind k, uint64_t us)
{
    if ((unsigned)k >= OP_KINDS)
        return;
    op_histogram *h = &m->latency[k];
    op_metrics_add(&h->buckets[op_metrics_bucket(us)], 1);
    op_metrics_add(&h->sum_us, us);
}

void op_metrics_error(op_metrics *m, int code)
{
    size_t i = code < 0 && -code < OP_METRICS_ERRORS ? (size_t)-code : 0;
    op_metrics_add(&m->errors[i], 1);
}

static uint64_t load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

void op_metrics_read(const op_metrics *m, op_metrics *out)
{
    out->puts = load(&m->puts);
    out->put_bytes = load(&m->put_bytes);
    out->get_errors = load(&m->get_errors);
    out->get_bytes = load(&m->get_bytes);
    out->deletes = load(&m->deletes);
    for (size_t i = 0; i < OP_METRICS_ERRORS; i++)
        out->errors[i] = load(&m->errors[i]);
    for (size_t k = 0; k < OP_KINDS; k++) {
        for (size_t b = 0; b < OP_METRICS_BUCKETS; b++)
            out->latency[k].buckets[b] = load(&m->latency[k].buckets[b]);
        out->latency[k].sum_us = load(&m->latency[k].sum_us);
    }
}

uint64_t op_histogram_count(const op_histogram *h)
{
    uint64_t n = 0;
    for (size_t b = 0; b < OP_METRICS_BUCKETS; b++)
        n += h->buckets[b];
    return n;
}

double op_histogram_quantile(const op_histogram *h, double q)
{
    uint64_t total = op_histogram_count(h);
    if (!total)
        return 0;
    double rank = q * (double)total;
    uint64_t below = 0;
    for (size_t b = 0; b < OP_METRICS_BUCKETS; b++) {
        uint64_t n = h->buckets[b];
        if (n && (double)(below + n) >= rank) {
            if (b == OP_METRICS_BOUNDS)
                return (double)op_metrics_bounds_us[OP_METRICS_BOUNDS - 1];
            double lo = b ? (double)op_metrics_bounds_us[b - 1] : 0;
            double hi = (double)op_metrics_bounds_us[b];
            return lo + (hi - lo) * ((rank - (double)below) / (double)n);
        }
        below += n;
    }
    return (double)op_metrics_bounds_us[OP_METRICS_BOUNDS - 1];
}
