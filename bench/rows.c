/*
 * rows.c - alternating benchmark rows over one client (rows.h): the rates
 * of every round are kept per row and sorted for the median once all ran.
 */
#include "rows.h"

#include <stdio.h>
#include <stdlib.h>

#include "benchutil.h"

int bench_rows_run(fx_client *c, bench_row *rows, int n, int rounds, int keys)
{
    if (rounds < 1 || rounds > BENCH_ROWS_MAX_ROUNDS)
        return -1;
    double *rate = malloc((size_t)n * BENCH_ROWS_MAX_ROUNDS * sizeof *rate);
    if (!rate)
        return -1;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < n; k++) {
            uint64_t t0 = now_ns();
            if (rows[k].run(c) < 0) {
                free(rate);
                return -1;
            }
            rate[k * BENCH_ROWS_MAX_ROUNDS + r] = keys / ((double)(now_ns() - t0) / 1e9);
        }
    for (int k = 0; k < n; k++) {
        double *row = rate + k * BENCH_ROWS_MAX_ROUNDS;
        qsort(row, (size_t)rounds, sizeof *row, cmp_double);
        rows[k].median = row[rounds / 2];
        printf("  %-12s %10.0f keys/s  (min %.0f, max %.0f)\n", rows[k].name, rows[k].median,
               row[0], row[rounds - 1]);
    }
    free(rate);
    return 0;
}
