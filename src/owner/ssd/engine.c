/*
 * engine.c - the ssd.h calls over the two engines (engine.h): the checks every
 * engine relies on (the config keys both read, the arguments of each call),
 * the choice of engine at open, and the forwarding through its table.
 */
#include "owner/ssd/engine.h"

#include <stdio.h>
#include <string.h>

#include "owner/ssd/chunkq.h"

const char *ssd_backend_name(ssd_backend b)
{
    return b == SSD_BACKEND_ROCKSDB ? "rocksdb" : "native";
}

bool ssd_backend_parse(const char *name, ssd_backend *out)
{
    if (name && !strcmp(name, "native"))
        *out = SSD_BACKEND_NATIVE;
    else if (name && !strcmp(name, "rocksdb"))
        *out = SSD_BACKEND_ROCKSDB;
    else
        return false;
    return true;
}

bool ssd_backend_available(ssd_backend b)
{
#ifdef FX_HAVE_ROCKSDB
    return b == SSD_BACKEND_NATIVE || b == SSD_BACKEND_ROCKSDB;
#else
    return b == SSD_BACKEND_NATIVE;
#endif
}

static bool has_slash(const char *s)
{
    return strchr(s, '/') != NULL;
}

/* Checks everything that does not need the file system. */
static int config_check(const ssd_config *cfg, char *err, size_t errlen)
{
    if (!cfg) {
        snprintf(err, errlen, "config: missing");
        return SSD_EINVAL;
    }
    if (!cfg->cluster_name || !*cfg->cluster_name) {
        snprintf(err, errlen, "cluster_name: missing");
        return SSD_EINVAL;
    }
    if (has_slash(cfg->cluster_name)) {
        snprintf(err, errlen, "cluster_name: \"%s\" must not contain '/'", cfg->cluster_name);
        return SSD_EINVAL;
    }
    if (!cfg->instance || !*cfg->instance) {
        snprintf(err, errlen, "instance: missing");
        return SSD_EINVAL;
    }
    if (has_slash(cfg->instance) || !strcmp(cfg->instance, ".") ||
        !strcmp(cfg->instance, "..")) {
        snprintf(err, errlen, "instance: \"%s\" is not a valid directory name", cfg->instance);
        return SSD_EINVAL;
    }
    if (cfg->n_paths == 0 || !cfg->paths) {
        snprintf(err, errlen, "large_file_paths: empty (the SSD tier needs at least one path)");
        return SSD_EINVAL;
    }
    if (cfg->n_limits != cfg->n_paths || !cfg->limits) {
        snprintf(err, errlen,
                 "large_limit_size: %zu entries for %zu large_file_paths (lengths must match)",
                 cfg->limits ? cfg->n_limits : (size_t)0, cfg->n_paths);
        return SSD_EINVAL;
    }
    for (size_t i = 0; i < cfg->n_paths; i++) {
        if (!cfg->paths[i] || !*cfg->paths[i]) {
            snprintf(err, errlen, "large_file_paths[%zu]: empty", i);
            return SSD_EINVAL;
        }
        if (cfg->limits[i] < SSD_ALIGN) {
            snprintf(err, errlen,
                     "large_limit_size[%zu]: %llu bytes is under the %u-byte minimum", i,
                     (unsigned long long)cfg->limits[i], SSD_ALIGN);
            return SSD_EINVAL;
        }
    }
    return SSD_OK;
}

int ssd_open(const ssd_config *cfg, ssd_store **out, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!out) {
        snprintf(err, errlen, "out: missing");
        return SSD_EINVAL;
    }
    *out = NULL;
    int rc = config_check(cfg, err, errlen);
    if (rc != SSD_OK)
        return rc;
    switch (cfg->backend) {
    case SSD_BACKEND_NATIVE:
        return native_open(cfg, out, err, errlen);
    case SSD_BACKEND_ROCKSDB:
#ifdef FX_HAVE_ROCKSDB
        return rocks_open(cfg, out, err, errlen);
#else
        snprintf(err, errlen, "ssd_backend: rocksdb is not in this build (install "
                              "librocksdb-dev, scripts/deps.sh, and rebuild)");
        return SSD_EINVAL;
#endif
    }
    snprintf(err, errlen, "ssd_backend: %d is not native or rocksdb", (int)cfg->backend);
    return SSD_EINVAL;
}

void ssd_close(ssd_store *s)
{
    if (s)
        s->engine->close(s);
}

int ssd_write(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, const void *src,
              uint64_t len, ssd_guard **guard)
{
    if (guard)
        *guard = NULL;
    if (!s || (!key && klen) || (!src && len))
        return SSD_EINVAL;
    return s->engine->write(s, key, klen, pid, src, len, guard);
}

void ssd_guard_release(ssd_guard *g)
{
    if (g)
        g->engine->guard_release(g);
}

int ssd_load_into_addr(ssd_store *s, const void *key, size_t klen, ssd_put_id pid, void *addr,
                       uint64_t len, uint64_t capacity)
{
    if (!s || (!key && klen) || (!addr && len) || capacity < len)
        return SSD_EINVAL;
    return s->engine->load(s, key, klen, pid, addr, len, capacity);
}

int ssd_load_into_addr_chunks(ssd_store *s, const void *key, size_t klen, ssd_put_id pid,
                              void *addr, uint64_t len, uint64_t capacity, uint64_t chunk_bytes,
                              unsigned max_inflight, ssd_chunk_queue *q)
{
    if (!q)
        return SSD_EINVAL;
    uint64_t delivered = 0;
    int rc = SSD_EINVAL;
    if (s && (key || !klen) && (addr || !len) && capacity >= len)
        rc = s->engine->load_chunks(s, key, klen, pid, addr, len, capacity, chunk_bytes,
                                    max_inflight, q, &delivered);
    ssd_chunk_queue_push(q, (ssd_chunk){.offset = delivered, .len = 0, .last = true,
                                        .status = rc});
    return rc;
}

size_t ssd_pop_evictions(ssd_store *s, ssd_eviction *out, size_t cap)
{
    return s && out ? s->engine->pop_evictions(s, out, cap) : 0;
}

void ssd_get_stats(ssd_store *s, ssd_stats *out)
{
    memset(out, 0, sizeof *out);
    if (s)
        s->engine->get_stats(s, out);
}
