/*
 * op_metrics.h - what an owner counts about the operations it serves, in a
 * shape both the owner (which counts) and the master (which renders
 * /metrics and /api/v1/cluster) know: the operations timed, the latency
 * histogram's bucket bounds, and the error kinds.
 *
 * Counting is lock-free (relaxed atomic adds), so the owner's get threads
 * count beside its loop; readers see each counter whole, not a consistent
 * cut across counters, which Prometheus counters never promise anyway.
 */
#ifndef FX_COMMON_OP_METRICS_H
#define FX_COMMON_OP_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* The operations timed, from the request's arrival at the owner to its answer. */
typedef enum op_kind {
    OP_PUT,        /* a put, from its start (PutStart, ExternalPut) to PutDone's answer */
    OP_GET_MEMORY, /* a get answered from this owner's memory (its cache or a replica) */
    OP_GET_SSD,    /* a get refilled from an SSD tier */
    OP_GET_REMOTE, /* a get whose bytes were pulled from another owner */
    OP_KINDS
} op_kind;

/* Upper bounds of the buckets in microseconds; one more bucket is +Inf. */
#define OP_METRICS_BOUNDS 19
#define OP_METRICS_BUCKETS (OP_METRICS_BOUNDS + 1)
extern const uint64_t op_metrics_bounds_us[OP_METRICS_BOUNDS];

/* Errors by kind: index -code of the FX_E* codes (1 KeyNotFound .. 14
 * MasterUnavailable); index 0 counts any other code. */
#define OP_METRICS_ERRORS 15

typedef struct op_histogram {
    uint64_t buckets[OP_METRICS_BUCKETS]; /* counts per bucket, not cumulative */
    uint64_t sum_us;
} op_histogram;

typedef struct op_metrics {
    uint64_t puts, put_bytes;
    uint64_t get_errors, get_bytes;
    uint64_t deletes;
    uint64_t errors[OP_METRICS_ERRORS];
    op_histogram latency[OP_KINDS];
} op_metrics;

/* "put", "get_memory", "get_ssd", "get_remote" (the label values). */
const char *op_kind_name(op_kind k);
/* The error kind's label: fx_strerror's name ("KeyNotFound"), "Other" for 0. */
const char *op_error_name(size_t index);
/* The bucket of a latency of us microseconds. */
size_t op_metrics_bucket(uint64_t us);

/* Counting (any thread). */
void op_metrics_add(uint64_t *counter, uint64_t n);
void op_metrics_observe(op_metrics *m, op_kind k, uint64_t us);
void op_metrics_error(op_metrics *m, int code);
/* A copy of m, each counter read whole. */
void op_metrics_read(const op_metrics *m, op_metrics *out);

/* The latency at quantile q (0..1) of h, in microseconds, interpolated
 * inside its bucket as Prometheus' histogram_quantile does; 0 for an empty
 * histogram, the last finite bound for what falls in +Inf. */
double op_histogram_quantile(const op_histogram *h, double q);
uint64_t op_histogram_count(const op_histogram *h);

#endif
