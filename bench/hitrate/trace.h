/*
 * trace.h - the deterministic key sets and get traces of the hit-rate
 * benchmark (fx_bench_hitrate).
 *
 * A key set is keys "hr%06u" with a size fixed per key, uniform in
 * 1..16 MiB in 4 KiB steps, and as many keys as it takes for their sizes to
 * total 1.25 x the cache budget. A trace is a sequence of gets of key
 * indices over a key set, drawn from a seeded generator, so the same
 * (budget, seed, length) always gives the same sequence:
 *   - "zipf-0.9" and "zipf-0.99": Zipf popularity over the keys, the ranks
 *     shuffled over the keys by the seed (so popularity and size are
 *     independent);
 *   - "zipf+scan": Zipf 0.9 interrupted by scans: after every 4L Zipf gets a
 *     run of L = 10% of the keys in key order, each run starting where the
 *     previous one stopped (cyclically through the key space); about 20% of
 *     the gets belong to scans.
 * Every run first puts every key once in key order (the bootstrap; not part
 * of the trace).
 */
#ifndef FX_BENCH_HITRATE_TRACE_H
#define FX_BENCH_HITRATE_TRACE_H

#include <stdint.h>

typedef struct key_set {
    uint32_t n;
    uint64_t *size;  /* bytes of key i's value */
    uint64_t total;  /* sum of the sizes */
    uint64_t max_size;
} key_set;

typedef enum trace_kind { TRACE_ZIPF_09, TRACE_ZIPF_099, TRACE_ZIPF_SCAN, TRACE_KINDS } trace_kind;

typedef struct trace {
    const char *name;
    uint32_t n_ops;
    uint32_t *op;        /* key index of each get */
    uint32_t scan_ops;   /* how many of them belong to scans */
} trace;

/* Formats key i's name ("hr%06u") into buf (at least 16 bytes). */
void trace_key_name(uint32_t i, char *buf, unsigned cap);

/* Fills ks for a cache of budget bytes. Returns 0, or -1 on out of memory.
 * The caller frees it with key_set_free. */
int key_set_make(key_set *ks, uint64_t budget, uint64_t seed);
void key_set_free(key_set *ks);

/* Fills t with n_ops gets of the given kind over ks. Returns 0, or -1 on out
 * of memory. The caller frees it with trace_free. */
int trace_make(trace *t, trace_kind kind, const key_set *ks, uint32_t n_ops, uint64_t seed);
void trace_free(trace *t);

#endif
