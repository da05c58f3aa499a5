/* testlib.c - failure reporting, the closing summary line of a test program,
 * the cleanups that run at exit, whether the machine has IPv6 loopback, the
 * clock and the scenario runner. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "testlib.h"

#include <errno.h>
#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int test_checks_passed;
int test_checks_failed;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

void test_fail(const char *file, int line, const char *fmt, ...)
{
    pthread_mutex_lock(&report_lock);
    if (test_checks_failed++ < 50) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "FAIL %s:%d: ", file, line);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    pthread_mutex_unlock(&report_lock);
}

int test_finish(void)
{
    printf("%d passed, %d failed\n", test_checks_passed, test_checks_failed);
    fflush(stdout);
    return test_checks_failed ? 1 : 0;
}

/* ---- cleanups at exit ----------------------------------------------------- */

#define MAX_CLEANUPS 32

static struct cleanup {
    void (*fn)(void *);
    void *arg;
    pid_t pid; /* the process that registered it: a forked child runs none */
} cleanups[MAX_CLEANUPS];
static int n_cleanups;
static bool cleanups_installed;
static pthread_mutex_t cleanup_lock = PTHREAD_MUTEX_INITIALIZER;

static void run_cleanups(void)
{
    for (;;) {
        pthread_mutex_lock(&cleanup_lock);
        if (!n_cleanups) {
            pthread_mutex_unlock(&cleanup_lock);
            return;
        }
        struct cleanup c = cleanups[--n_cleanups];
        pthread_mutex_unlock(&cleanup_lock);
        if (c.pid == getpid())
            c.fn(c.arg);
    }
}

void test_at_exit(void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&cleanup_lock);
    if (!cleanups_installed) {
        atexit(run_cleanups);
        cleanups_installed = true;
    }
    if (n_cleanups < MAX_CLEANUPS)
        cleanups[n_cleanups++] = (struct cleanup){fn, arg, getpid()};
    else
        fprintf(stderr, "testlib: more than %d cleanups; one will not run\n", MAX_CLEANUPS);
    pthread_mutex_unlock(&cleanup_lock);
}

void test_at_exit_cancel(void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&cleanup_lock);
    for (int i = n_cleanups - 1; i >= 0; i--) {
        if (cleanups[i].fn == fn && cleanups[i].arg == arg) {
            memmove(&cleanups[i], &cleanups[i + 1], (size_t)(n_cleanups - i - 1) * sizeof *cleanups);
            n_cleanups--;
            break;
        }
    }
    pthread_mutex_unlock(&cleanup_lock);
}

static bool remove_failed; /* by the walk of test_remove_dir (under cleanup_lock) */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    if (remove(path) != 0) {
        fprintf(stderr, "testlib: cannot remove %s: %s\n", path, strerror(errno));
        remove_failed = true;
    }
    return 0; /* go on: remove what can be removed */
}

int test_remove_dir(const char *dir)
{
    const char *keep = getenv("FX_TEST_KEEP");
    if (test_checks_failed && keep && *keep && strcmp(keep, "0") != 0) {
        fprintf(stderr, "FX_TEST_KEEP: kept %s\n", dir);
        return 0;
    }
    pthread_mutex_lock(&cleanup_lock);
    remove_failed = false;
    int r = nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (r != 0 && errno != ENOENT) {
        fprintf(stderr, "testlib: cannot walk %s: %s\n", dir, strerror(errno));
        remove_failed = true;
    }
    bool failed = remove_failed;
    pthread_mutex_unlock(&cleanup_lock);
    return failed ? -1 : 0;
}

int test_ipv6_loopback(void)
{
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return ok;
}

uint64_t test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void test_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int test_run_scenarios(int argc, char **argv, const test_scenario *scenarios, size_t n)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* in order with the failures on stderr */
    int ran = 0;
    for (size_t s = 0; s < n; s++) {
        if (argc > 1 && strcmp(argv[1], scenarios[s].name) != 0)
            continue;
        printf("== %s\n", scenarios[s].name);
        scenarios[s].run();
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "usage: %s [", argv[0]);
        for (size_t s = 0; s < n; s++)
            fprintf(stderr, "%s%s", s ? "|" : "", scenarios[s].name);
        fprintf(stderr, "]\n");
        return 1;
    }
    return test_finish();
}

/* Whether every thread of pid is in state T (stopped) now. */
static bool all_threads_stopped(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool stopped = true;
    struct dirent *e;
    while (stopped && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char stat[320], buf[512];
        snprintf(stat, sizeof stat, "/proc/%d/task/%s/stat", (int)pid, e->d_name);
        FILE *f = fopen(stat, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')'); /* "tid (comm) S ..." */
        stopped = paren && paren[1] == ' ' && paren[2] == 'T';
    }
    closedir(d);
    return stopped;
}

int test_stop_process(pid_t pid)
{
    if (kill(pid, SIGSTOP) != 0)
        return -1;
    for (int i = 0; i < 2000; i++) {
        if (all_threads_stopped(pid))
            return 0;
        test_sleep_ms(1);
    }
    char cmd[96]; /* what was not stopped, for the failure's reader */
    snprintf(cmd, sizeof cmd, "grep -H State /proc/%d/task/*/status >&2", (int)pid);
    if (system(cmd) != 0)
        fprintf(stderr, "process %d has no threads to show\n", (int)pid);
    return -1;
}
