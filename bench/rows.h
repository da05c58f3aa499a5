/*
 * rows.h - the rounds of a client benchmark whose rows alternate: each round
 * runs every row once, in order, so that all rows see the same machine
 * state; each row's rate is reported as the median of the rounds with its
 * range (fx_bench_batch, fx_bench_exists).
 */
#ifndef FX_BENCH_ROWS_H
#define FX_BENCH_ROWS_H

#include "fluxon/fluxon.h"

/* One pass of a row over its keys: 0, or -1 after printing why. */
typedef int (*bench_row_fn)(fx_client *c);

typedef struct bench_row {
    const char *name;
    bench_row_fn run;
    double median; /* keys/s, set by bench_rows_run */
} bench_row;

#define BENCH_ROWS_MAX_ROUNDS 64

/* Runs rounds (1..BENCH_ROWS_MAX_ROUNDS) rounds of the n rows on c, each
 * pass timed as `keys` keys, then prints one line per row: the median keys/s
 * and the range. Returns 0, or -1 when a row failed (nothing printed). */
int bench_rows_run(fx_client *c, bench_row *rows, int n, int rounds, int keys);

#endif
