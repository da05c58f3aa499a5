/*
 * ssd_test.h - test-only hooks into an ssd_store, compiled in test builds
 * (FX_FAILPOINTS, the fx_ssd_fp library) and absent from the real one.
 */
#ifndef FX_SSD_SSD_TEST_H
#define FX_SSD_SSD_TEST_H

#ifdef FX_FAILPOINTS
#include <stddef.h>

#include "owner/ssd/ssd.h"
#include "owner/ssd/uring.h"

/* The IO engine of device i (for uring_failpoint), or NULL when out of range. */
uring_engine *ssd_test_engine(ssd_store *s, size_t device);

/* The next n post-IO re-checks of a load find the captured begin behind the
 * tail, as if the ring had been overwritten under the read (which the read pin
 * prevents, so nothing else can make this path run). */
void ssd_test_stale_next_reads(ssd_store *s, unsigned n);
#endif

#endif
