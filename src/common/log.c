/*
 * log.c - the stderr sink behind FX_LOG. One write(2) per line so that lines
 * from several threads do not interleave.
 */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

int fx_log_threshold = FX_LOG_WARN;
static char log_role[32] = "fluxon";

int fx_log_level_parse(const char *s)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (s && strcasecmp(s, names[i]) == 0)
            return i;
    return -1;
}

void fx_log_init(const char *role)
{
    if (role)
        snprintf(log_role, sizeof log_role, "%s", role);
    int lvl = fx_log_level_parse(getenv("FLUXON_LOG"));
    if (lvl >= 0)
        fx_log_threshold = lvl;
}

void fx_log_write(int level, const char *file, int line, const char *fmt, ...)
{
    static const char *tags[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    char buf[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    const char *base = strrchr(file, '/');
    int n = snprintf(buf, sizeof buf, "%02d:%02d:%02d.%03ld %s[%d] %s %s:%d: ", tm.tm_hour,
                     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, log_role, (int)getpid(),
                     tags[level & 3], base ? base + 1 : file, line);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof buf)
        n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof buf - 1)
        n = sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
    (void)w;
}

static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;

int fx_log_limit_pass(fx_log_limit *l, unsigned *suppressed)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return fx_log_limit_pass_at(
        l, (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000,
        suppressed);
}

int fx_log_limit_pass_at(fx_log_limit *l, unsigned long long now, unsigned *suppressed)
{
    int pass;
    pthread_mutex_lock(&limit_lock);
    if (l->in_window == 0 || now - l->window_start_ms >= FX_LOG_LIMIT_WINDOW_MS) {
        l->window_start_ms = now;
        l->in_window = 0;
    }
    pass = l->in_window < FX_LOG_LIMIT_BURST;
    if (pass) {
        l->in_window++;
        *suppressed = l->suppressed;
        l->suppressed = 0;
    } else {
        l->suppressed++;
    }
    pthread_mutex_unlock(&limit_lock);
    return pass;
}
