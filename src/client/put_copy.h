/*
 * put_copy.h - copying the values of one put (or one batch) into their
 * staging ranges, and waking the owner before the commit.
 *
 * An owner whose CPU sat idle through a long copy answers the commit late:
 * waking an idle CPU costs tens of microseconds, on the virtual machines
 * measured here about 60 us (docs/benchmarks.md, "Streaming copy and waking
 * the owner"), paid by the owner and again by the master behind it. So when
 * the values of one put or batch are larger than PUT_WAKE_TAIL in all, the
 * wake function runs once, after all but the last PUT_WAKE_TAIL bytes were
 * copied (a value may be split for it); the client's wake function sends the
 * owner a one-way ExternalPing on the put's own connection, so the commit
 * finds it awake. The copies are bulk_copy: large values bypass the cache.
 *
 * This module knows nothing of connections (the unit test gives it its own
 * wake function).
 */
#ifndef FX_CLIENT_PUT_COPY_H
#define FX_CLIENT_PUT_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* About 100 us of copying here: shorter than the idle time after which
 * waking a CPU gets slow, longer than the owner needs to wake. */
#define PUT_WAKE_TAIL ((size_t)2 << 20)

typedef void (*put_copy_wake_fn)(void *ctx);

typedef struct put_copy {
    put_copy_wake_fn wake;
    void *ctx;
    size_t before_wake; /* bytes still to copy before wake runs */
    bool woken;         /* wake ran, or is not needed */
} put_copy;

/* total: the bytes that put_copy_value will be given, in all. */
void put_copy_init(put_copy *pc, size_t total, put_copy_wake_fn wake, void *ctx);
/* Copies n bytes (n may be 0; src may then be NULL), running wake at its
 * point. The values must be given in order and add up to total. */
void put_copy_value(put_copy *pc, uint8_t *dst, const uint8_t *src, size_t n);

#endif
