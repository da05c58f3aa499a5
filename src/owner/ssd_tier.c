/*
 * ssd_tier.c - the SSD tier's lifetime in fluxon-owner and its local refill
 * reads (see ssd_tier.h for the threads and the shutdown order).
 *
 * A configured tier is opened before the owner registers (so that Register
 * can say kv_ssd_storage=true) and closed after the loop has drained. Its
 * cache roots are named after node_name (or "default" without one), so a
 * restarted owner reuses, and truncates, the files of its previous run. The
 * engine truncates every shard file at open and starts with an empty index:
 * an owner restarted on the same paths serves nothing of its previous run
 * (spec 000 §7.3), and its new incarnation keeps the master from routing to
 * the old one.
 *
 * A local refill (GetStart planned the SSD copy on this owner, spec 000 §5.1)
 * reads straight into the requester's target range on a worker; ext_get.c
 * checks the plan and decides what a failure means.
 */
#include "owner/ssd_tier.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memdup.h"
#include "fluxon/fluxon.h"

/* The cache root's instance when node_name is not configured: the owner's
 * default node name changes with every process, and a root per run would
 * leave the reserved shard files of every earlier run on the disk. */
#define SSD_TIER_DEFAULT_INSTANCE "default"

/* ssd_open names its keys without the fluxonkv_spec prefix, its roots by path,
 * and the instance by the engine's name for it: say which owner key it was. */
static void open_error(char *err, size_t errlen, int rc, const char *why)
{
    if (strncmp(why, "large_", 6) == 0)
        snprintf(err, errlen, "fluxonkv_spec.%s", why);
    else if (strncmp(why, "instance", 8) == 0)
        snprintf(err, errlen, "node_name (the SSD cache root's instance)%s", why + 8);
    else if (strncmp(why, "cluster_name", 12) == 0)
        snprintf(err, errlen, "%s", why);
    else if (rc == SSD_EIO)
        snprintf(err, errlen, "fluxonkv_spec.large_file_paths: %s", why);
    else
        snprintf(err, errlen, "fluxonkv_spec.large_limit_size: cannot open the SSD tier: %s", why);
}

/* Paths on the file system of an earlier path share its tier (spec 000: one
 * tier per device, the first path's limit): say so, since their own limit is
 * not used. */
static void warn_merged_paths(owner *o)
{
    const owner_config *c = &o->cfg;
    ssd_stats st;
    ssd_get_stats(o->ssd->store, &st);
    size_t shown = st.n_devices < SSD_MAX_DEVICE_STATS ? st.n_devices : SSD_MAX_DEVICE_STATS;
    for (size_t i = 0; i < c->n_large_file_paths; i++) {
        bool kept = false;
        for (size_t d = 0; d < shown && !kept; d++)
            kept = st.devices[d].cfg_index == i;
        if (!kept && shown == st.n_devices)
            FX_LOG(WARN,
                   "fluxonkv_spec.large_file_paths[%zu] %s is on the same file system as an "
                   "earlier path: one SSD tier per device, so its large_limit_size[%zu] "
                   "(%llu bytes) is not used",
                   i, c->large_file_paths[i], i, (unsigned long long)c->large_limit_size[i]);
    }
}

int ssd_tier_open(owner *o, char *err, size_t errlen)
{
    const owner_config *c = &o->cfg;
    if (!c->large_limit_size)
        return 0;
    ssd_tier *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "fluxonkv_spec.large_limit_size: out of memory");
        return -1;
    }
    t->o = o;
    atomic_init(&t->closing, false);
    ssd_config sc = {
        .cluster_name = c->cluster_name,
        .instance = c->node_name ? c->node_name : SSD_TIER_DEFAULT_INSTANCE,
        .paths = (const char *const *)c->large_file_paths,
        .limits = c->large_limit_size,
        .n_paths = c->n_large_file_paths,
        .n_limits = c->n_large_limit_size,
    };
    char why[768];
    why[0] = '\0';
    int rc = ssd_open(&sc, &t->store, why, sizeof why);
    if (rc != SSD_OK) {
        if (!c->node_name && strstr(why, "locked by another owner"))
            snprintf(why + strlen(why), sizeof why - strlen(why),
                     " (owners sharing large_file_paths need distinct node_name values)");
        open_error(err, errlen, rc, why[0] ? why : ssd_tier_strerror(rc));
        free(t);
        return -1;
    }
    /* libuv reads this once, when the first job is queued. */
    char threads[16];
    snprintf(threads, sizeof threads, "%u", SSD_TIER_THREADS);
    setenv("UV_THREADPOOL_SIZE", threads, 0);
    o->ssd = t;
    warn_merged_paths(o);
    uint64_t cap, used;
    ssd_tier_usage(o, &cap, &used);
    FX_LOG(INFO, "SSD tier: %zu path(s), %llu bytes", c->n_large_file_paths,
           (unsigned long long)cap);
    return 0;
}

void ssd_tier_start(owner *o)
{
    if (o->ssd && !o->ssd->evict_timer_init)
        ssd_evict_start(o->ssd);
}

void ssd_tier_shutdown(owner *o)
{
    ssd_tier *t = o->ssd;
    if (!t)
        return;
    atomic_store(&t->closing, true);
    ssd_persist_drop_waiting(t);
    ssd_stage_drop_waiting(t);
    ssd_evict_stop(t);
}

void ssd_tier_close(owner *o)
{
    ssd_tier *t = o->ssd;
    if (!t)
        return;
    assert(t->jobs == 0 && !t->wait_head && !t->stage_wait_head);
    ssd_close(t->store);
    free(t);
    o->ssd = NULL;
}

void ssd_tier_usage(owner *o, uint64_t *capacity, uint64_t *used)
{
    *capacity = *used = 0;
    if (!o->ssd)
        return;
    ssd_stats st;
    ssd_get_stats(o->ssd->store, &st);
    *capacity = st.capacity_bytes;
    *used = st.used_bytes;
}

/* ---- local refill ------------------------------------------------------- */

typedef struct ssd_load {
    uv_work_t work;
    ssd_tier *t;
    char *key;
    size_t klen;
    ssd_put_id pid;
    uint8_t *addr;
    uint64_t len, capacity;
    int rc;
    ssd_tier_load_cb cb;
    void *ud;
} ssd_load;

/* Worker thread. */
static void load_work(uv_work_t *w)
{
    ssd_load *l = w->data;
    if (atomic_load(&l->t->closing))
        l->rc = SSD_ECLOSED;
    else
        l->rc = ssd_load_into_addr(l->t->store, l->key, l->klen, l->pid, l->addr, l->len,
                                   l->capacity);
}

static void load_after(uv_work_t *w, int status)
{
    ssd_load *l = w->data;
    l->t->jobs--;
    int rc = status < 0 ? SSD_ECLOSED : l->rc;
    l->cb(rc, l->ud);
    free(l->key);
    free(l);
}

int ssd_tier_load(owner *o, const void *key, size_t klen, ssd_put_id pid, uint64_t offset,
                  uint64_t len, uint64_t capacity, ssd_tier_load_cb cb, void *ud)
{
    ssd_tier *t = o->ssd;
    if (!t)
        return FX_ENOTSUP;
    ssd_load *l = calloc(1, sizeof *l);
    if (!l || !(l->key = fx_memdup(key, klen))) {
        free(l);
        return FX_ENOMEM;
    }
    l->t = t;
    l->klen = klen;
    l->pid = pid;
    l->addr = o->seg.base + offset;
    l->len = len;
    l->capacity = capacity;
    l->cb = cb;
    l->ud = ud;
    l->work.data = l;
    if (uv_queue_work(o->loop, &l->work, load_work, load_after) < 0) {
        free(l->key);
        free(l);
        return FX_EINTERNAL;
    }
    t->jobs++;
    return 0;
}
