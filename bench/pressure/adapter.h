/*
 * adapter.h - one storage system under the pressure benchmark (spec 000 §8).
 *
 * The load generator (pressure.c) drives every system through this table:
 * each worker thread opens its own connection, bootstrap puts go through
 * put(), and the measured window runs get() only. Output modes (spec 000
 * §8.2), the point where one get is counted:
 *   - PR_MODE_HOLDER: the value is available to the caller without a further
 *     copy (Fluxon: the MemHolder is returned; memcached / redis: the whole
 *     response has been received into the connection's own buffer);
 *   - PR_MODE_BYTES: additionally a full copy of the value exists in the
 *     caller's buffer `out` and its first and last bytes were read.
 * A get reports its source per operation when the system knows it (Fluxon:
 * memory or SSD); otherwise PR_SRC_UNKNOWN, and the window's split between
 * DRAM and SSD hits comes from the server's own counters (window_ssd_hits,
 * memcached's extstore counters), sampled by the coordinator at the window's
 * start and end.
 */
#ifndef FX_BENCH_PRESSURE_ADAPTER_H
#define FX_BENCH_PRESSURE_ADAPTER_H

#include <stddef.h>
#include <stdint.h>

enum pr_mode { PR_MODE_HOLDER, PR_MODE_BYTES };
enum pr_source { PR_SRC_UNKNOWN = 0, PR_SRC_MEMORY = 1, PR_SRC_SSD = 2 };

typedef struct pr_conn pr_conn; /* one per worker thread; defined by each adapter */

typedef struct pr_adapter {
    const char *name; /* "fluxon", "memcached", "redis" */
    /* Connects to addr (Fluxon: the owner's socket path; memcached / redis:
     * "host:port"). NULL with a message in err on failure. */
    pr_conn *(*connect)(const char *addr, char *err, size_t errlen);
    void (*close)(pr_conn *c);
    /* Stores len bytes under key. 0, or -1 with a message in err. */
    int (*put)(pr_conn *c, const char *key, size_t klen, const void *val, size_t len, char *err,
               size_t errlen);
    /* Reads key in mode. Returns 1 on a hit (*len = the value's length,
     * *source = where it came from or PR_SRC_UNKNOWN), 0 on a miss, -1 on an
     * error (message in err). In PR_MODE_BYTES the value is copied into out
     * (cap bytes; a longer value is an error). */
    int (*get)(pr_conn *c, const char *key, size_t klen, int mode, uint8_t *out, size_t cap,
               size_t *len, int *source, char *err, size_t errlen);
    /* Whether key is stored at all (memory or SSD), without reading its
     * value: 1 yes, 0 no, -1 on an error (message in err). The coordinator
     * asks this of every key before the window to weigh which keys each
     * system kept (the resident Zipf mass, see pressure.c). */
    int (*resident)(pr_conn *c, const char *key, size_t klen, char *err, size_t errlen);
    /* The server's count of gets served from its SSD tier so far (a fresh
     * connection each call), for systems without a per-operation source; NULL
     * when the system reports sources per operation or has no SSD tier. 0, or
     * -1 with a message in err. */
    int (*window_ssd_hits)(const char *addr, uint64_t *out, char *err, size_t errlen);
} pr_adapter;

extern const pr_adapter pr_adapter_fluxon;
extern const pr_adapter pr_adapter_memcached;
extern const pr_adapter pr_adapter_redis;

#endif
