/*
 * benchutil.c - shared benchmark helpers (see benchutil.h).
 */
#include "benchutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10))
            continue;
        char *v = strchr(line, ':');
        if (v) {
            v += strspn(v, ": \t");
            v[strcspn(v, "\n")] = 0;
            snprintf(buf, cap, "%s", v);
        }
        break;
    }
    fclose(f);
}

int env_number(const char *prog, const char *name, double max, bool zero_ok, double *out)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v > 0 || (zero_ok && v == 0)) || v > max) {
        fprintf(stderr, "%s: %s=%s is not a number in %s0, %g]\n", prog, name, s,
                zero_ok ? "[" : "(", max);
        return -1;
    }
    *out = v;
    return 0;
}

double proc_cpu_seconds(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* after the command name */
    unsigned long ut = 0, stime = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
                     &stime) != 2)
        return -1;
    return (double)(ut + stime) / (double)sysconf(_SC_CLK_TCK);
}
