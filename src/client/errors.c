/*
 * errors.c - the per-thread detail message of the last failed call.
 */
#include <stdarg.h>
#include <stdio.h>

#include "client/client.h"

static __thread char last_detail[512];

int client_fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_detail, sizeof last_detail, fmt, ap);
    va_end(ap);
    return err;
}

void client_clear_error(void)
{
    last_detail[0] = 0;
}

const char *fx_last_error_detail(void)
{
    return last_detail;
}

int client_check_key(const char *key, size_t klen)
{
    if (!key || klen == 0 || klen > CLIENT_MAX_KEY_LEN)
        return client_fail(FX_EINVAL, "key length %zu is outside 1..%u", klen, CLIENT_MAX_KEY_LEN);
    return 0;
}
