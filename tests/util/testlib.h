/*
 * testlib.h - the few assertion helpers every standalone test program uses.
 *
 * CHECK(cond, fmt, ...) records a failure with file:line and the message and
 * goes on; REQUIRE(cond, ...) stops the test at once. test_finish() prints
 * "N passed, N failed" and returns the exit code (0 pass, 1 fail). REQUIRE
 * belongs on the main thread (it exits the program). Cleanups registered
 * with test_at_exit run when the program exits, also through REQUIRE, so
 * that a failed test leaves no process or temporary file behind; a program
 * killed by a signal runs none (its cluster processes still die with it,
 * PR_SET_PDEATHSIG, but its directory stays).
 */
#ifndef FX_TESTS_TESTLIB_H
#define FX_TESTS_TESTLIB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>
#include <stdlib.h>

extern int test_checks_passed;
extern int test_checks_failed;

void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define CHECK(cond, ...)                                                                \
    do {                                                                                \
        if (cond)                                                                       \
            __atomic_add_fetch(&test_checks_passed, 1, __ATOMIC_RELAXED);               \
        else                                                                            \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);                                 \
    } while (0)

#define REQUIRE(cond, ...)                                                              \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);                                 \
            exit(test_finish());                                                        \
        }                                                                               \
        __atomic_add_fetch(&test_checks_passed, 1, __ATOMIC_RELAXED);                   \
    } while (0)

/* Prints the summary line and returns 0 when no check failed, else 1. */
int test_finish(void);

/* Cleanups that run when the program exits, also through REQUIRE, newest
 * first: a cluster's processes and directory, a test's own directory. A
 * test that did the cleanup itself cancels it (the same fn and arg). Only
 * the process that registered a cleanup runs it (not a forked child). */
void test_at_exit(void (*fn)(void *arg), void *arg);
void test_at_exit_cancel(void (*fn)(void *arg), void *arg);

/* Removes dir and everything under it (0, or -1 after saying why on
 * stderr). When a check failed and FX_TEST_KEEP=1 is set, the files are
 * kept for a look and the path is printed instead. */
int test_remove_dir(const char *dir);

/* True when this machine can bind a socket to the IPv6 loopback [::1] (tests
 * over IPv6 skip what needs it otherwise). */
int test_ipv6_loopback(void);

/* Milliseconds on the monotonic clock, and a sleep of ms milliseconds. */
uint64_t test_now_ms(void);
void test_sleep_ms(unsigned ms);

/* SIGSTOPs pid and returns once every thread of it is stopped (kill()
 * returns before a thread running on another CPU has stopped, and a test
 * that needs the process silent must not race it). 0, or -1 when it did not
 * stop within 2 s. */
int test_stop_process(pid_t pid);

/* A program of named scenarios: test_run_scenarios runs the one named by
 * argv[1] (all of them without an argument), each after a line "== NAME",
 * and returns test_finish()'s code; an unknown name prints the usage and
 * returns 1. */
typedef struct test_scenario {
    const char *name;
    void (*run)(void);
} test_scenario;
int test_run_scenarios(int argc, char **argv, const test_scenario *scenarios, size_t n);

/* Deterministic xorshift64* generator for tests and benchmarks. */
static inline unsigned long long test_rand(unsigned long long *s)
{
    unsigned long long x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 2685821657736338717ULL;
}

#endif
