/*
 * errors.c - the per-thread detail message of the last failed call, and the
 * argument checks every call shares (keys, the shape of a batch).
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

int client_check_batch(fx_client *c, size_t n, size_t min_n, const char *const *keys,
                       const size_t *klens, const void *results)
{
    if (!c)
        return client_fail(FX_EINVAL, "client is NULL");
    if (n < min_n || n > FX_BATCH_MAX)
        return client_fail(FX_EINVAL, "batch of %zu keys is outside %zu..%u (split it)", n, min_n,
                           FX_BATCH_MAX);
    if (n && (!keys || !klens || !results))
        return client_fail(FX_EINVAL, "keys, klens and results must not be NULL");
    return 0;
}
