/*
 * engine.h - the engines behind ssd.h. The owner's SSD tier has one interface
 * and two engines: "native" (the io_uring ring of store.c and load.c, the
 * default) and "rocksdb" (rocks.c, RocksDB with blob files and direct IO, a
 * general-purpose store for the ablation of spec 000 §8.4.1). engine.c checks
 * the config both read, picks the engine by ssd_config.backend and forwards
 * each ssd_* call through the store's (or guard's) engine table.
 *
 * Each engine's store begins with an ssd_store, each guard with an ssd_guard,
 * so a pointer to one is a pointer to the other (C11 6.7.2.1p15). Not for use
 * outside src/owner/ssd/.
 */
#ifndef FX_SSD_ENGINE_H
#define FX_SSD_ENGINE_H

#include "owner/ssd/ssd.h"

typedef struct ssd_engine ssd_engine;

struct ssd_store {
    const ssd_engine *engine;
};

struct ssd_guard {
    const ssd_engine *engine;
};

/* The calls of ssd.h, their arguments checked by engine.c (store and guard
 * non-NULL, pointers present where lengths say so, capacity >= len). */
struct ssd_engine {
    const char *name;
    int (*write)(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, const void *src,
                 uint64_t len, ssd_guard **guard);
    void (*guard_release)(ssd_guard *g);
    int (*load)(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, void *addr,
                uint64_t len, uint64_t capacity);
    /* Pushes the chunks but not the last item; engine.c pushes it with the
     * status returned and the bytes *delivered. */
    int (*load_chunks)(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, void *addr,
                       uint64_t len, uint64_t capacity, uint64_t chunk_bytes,
                       unsigned max_inflight, ssd_chunk_queue *q, uint64_t *delivered);
    size_t (*pop_evictions)(ssd_store *s, ssd_eviction *out, size_t cap);
    void (*get_stats)(ssd_store *s, ssd_stats *out);
    void (*close)(ssd_store *s);
};

/* Opens each engine's store (the config checked by engine.c). */
int native_open(const ssd_config *cfg, ssd_store **out, char *err, size_t errlen);
int rocks_open(const ssd_config *cfg, ssd_store **out, char *err, size_t errlen);

#endif
