/*
 * owner_test_delay.c - test-only delays from the environment (see
 * owner_test_delay.h).
 */
#include "owner/owner_test_delay.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"

#define TEST_DELAY_MAX_MS 600000ull

uint64_t owner_test_delay_ms(owner_test_delay *d)
{
    if (d->read)
        return d->ms;
    d->read = true;
    const char *v = getenv(d->env);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || *end || n > TEST_DELAY_MAX_MS) {
        FX_LOG(WARN, "%s='%s' is not a number of ms up to %llu; ignored", d->env, v,
               TEST_DELAY_MAX_MS);
        return 0;
    }
    d->ms = n;
    if (n)
        FX_LOG(WARN, "test-only (%s): %s by %llu ms", d->env, d->what, n);
    return d->ms;
}

void owner_test_delay_sleep(uint64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}
