/*
 * benchutil.h - the small pieces every benchmark program shares: a monotonic
 * clock, sleeping, sorting doubles for medians, the CPU's name for the report
 * header, reading a numeric setting from the environment, and a process's CPU
 * time.
 */
#ifndef FX_BENCH_BENCHUTIL_H
#define FX_BENCH_BENCHUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint64_t now_ns(void);
void sleep_ns(uint64_t ns);
/* qsort comparator for doubles. */
int cmp_double(const void *a, const void *b);
/* The "model name" of /proc/cpuinfo, or "unknown CPU". */
void cpu_model(char *buf, size_t cap);
/* Reads environment variable name into *out when it is set: a number in
 * (0, max] ([0, max] with zero_ok). Returns 0 (unset or valid), or -1 after
 * printing "prog: NAME=value is not a number in ..." to stderr. */
int env_number(const char *prog, const char *name, double max, bool zero_ok, double *out);
/* User + system CPU time of process pid so far, in seconds (/proc/PID/stat),
 * or -1 when it cannot be read. */
double proc_cpu_seconds(long pid);

#endif
