/*
 * owner_test_delay.h - test-only delays read from the owner's environment.
 *
 * Some failure orderings can only be tested when one step of the owner waits
 * on purpose: a commit held back while the key is overwritten, a stage
 * producer held on its worker while more stages arrive. Each such delay is
 * an environment variable holding a number of milliseconds (0..600000); it
 * is read once, on the loop thread, and a set delay is logged as a warning.
 * Unset, empty or 0 means none. Never set one in production.
 */
#ifndef FX_OWNER_OWNER_TEST_DELAY_H
#define FX_OWNER_OWNER_TEST_DELAY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct owner_test_delay {
    const char *env;  /* the variable's name */
    const char *what; /* what it delays, for the warning */
    bool read;
    uint64_t ms;
} owner_test_delay;

/* The delay in ms (0: none); the first call reads and checks the variable. */
uint64_t owner_test_delay_ms(owner_test_delay *d);
/* Sleeps ms milliseconds on the calling thread (a worker's, never the loop's). */
void owner_test_delay_sleep(uint64_t ms);

#endif
