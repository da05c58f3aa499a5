/*
 * values.c - deterministic test values (see values.h).
 */
#include "values.h"

#include <stdlib.h>
#include <string.h>

#include "testlib.h"

uint8_t *value_make(unsigned long long seed, size_t len)
{
    uint8_t *v = malloc(len ? len : 1);
    unsigned long long s = seed;
    for (size_t i = 0; i < len; i++)
        v[i] = (uint8_t)(test_rand(&s) >> 56);
    return v;
}

bool value_holder_is(const fx_holder *h, unsigned long long seed, size_t len)
{
    if (fx_holder_len(h) != len)
        return false;
    uint8_t *want = value_make(seed, len);
    bool ok = memcmp(fx_holder_data(h), want, len) == 0;
    free(want);
    return ok;
}

int value_put(fx_client *c, const char *key, unsigned long long seed, size_t len)
{
    uint8_t *v = value_make(seed, len);
    int r = fx_put(c, key, strlen(key), v, len);
    free(v);
    return r;
}
