/*
 * values.h - deterministic test values: len bytes drawn from test_rand()
 * with a seed each test derives from what the value stands for (key,
 * version, length), so a read of the wrong key or version cannot verify.
 */
#ifndef FX_TESTS_VALUES_H
#define FX_TESTS_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fluxon/fluxon.h"

/* The len bytes of seed (the generator's state as given: a seed of 0 gives
 * zeros). Returns a malloc'd buffer of at least one byte; the caller frees it. */
uint8_t *value_make(unsigned long long seed, size_t len);
/* True when h holds exactly the len bytes of seed. */
bool value_holder_is(const fx_holder *h, unsigned long long seed, size_t len);
/* Puts the len bytes of seed under key; returns fx_put's result. */
int value_put(fx_client *c, const char *key, unsigned long long seed, size_t len);

#endif
