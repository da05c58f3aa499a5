/*
 * store.c - KvSsdStorage (see ssd.h; spec 000 §2, §5.3, §6; DESIGN §6): opens
 * and closes the store and its devices (one shard file per shard, one io_uring
 * engine per device), the write path, and the eviction queue the writers fill
 * when a ring's tail passes indexed records. The read path is in load.c; how
 * the parts fit, the locking and the life of a record are described in
 * store_internal.h.
 */
#include "owner/ssd/ssd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/bulk_hash.h"
#include "owner/ssd/evict_queue.h"
#include "owner/ssd/index.h"
#include "owner/ssd/ring.h"
#include "owner/ssd/root.h"
#include "owner/ssd/ssd_test.h"
#include "owner/ssd/store_internal.h"
#include "owner/ssd/uring.h"

#define DEFAULT_SHARDS 4u
#define MAX_SHARDS 1024u
#define DEFAULT_IO_DEPTH 32u
#define MAX_IO_DEPTH 4096u
#define ENTRY_OF(g) ((ssd_entry *)((char *)(g)-offsetof(ssd_entry, guard)))

/* ---- IO: a request per piece, the caller waits -------------------------- */

/* Writes the value at off: copies src into aligned pieces of WRITE_PIECE
 * bytes (zeroing the padding of the last), with up to WRITE_INFLIGHT pieces
 * in flight so that the copy of one overlaps the IO of the one before, and
 * sets *sum to the checksum of the len real bytes. The buffers come from the
 * pool, so a write never holds more than WRITE_INFLIGHT pieces of memory,
 * however large the value. Returns SSD_OK only when every piece transferred
 * exactly its length, else SSD_EIO or SSD_ENOMEM (after all its IO ended). */
static int write_value(native_store *s, ssd_device *d, int fd, const uint8_t *src, uint64_t len,
                       uint64_t alen, uint64_t off, uint64_t *sum)
{
    uint64_t n = (alen + WRITE_PIECE - 1) / WRITE_PIECE, sub = 0, done = 0;
    unsigned width = n < WRITE_INFLIGHT ? (unsigned)n : WRITE_INFLIGHT;
    uint64_t bufsz = alen < WRITE_PIECE ? alen : WRITE_PIECE;
    io_slot slots[WRITE_INFLIGHT];
    io_wait w;
    ssd_io_wait_init(&w);
    bulk_hash_state st;
    bulk_hash_reset(&st);
    int rc = SSD_OK;
    for (unsigned i = 0; i < width; i++)
        slots[i].scratch = NULL;
    while (sub < n && rc == SSD_OK) {
        io_slot *sl = &slots[sub % width];
        if (sub >= width) { /* reuse the slot of piece sub - width */
            ssd_slot_wait(&w, sl);
            done++;
            if (sl->req.res < 0 || (uint32_t)sl->req.res != sl->req.len) {
                note_io_error(s, sl->req.res);
                rc = SSD_EIO;
                break;
            }
        } else if (!(sl->scratch = ssd_buf_get(&s->pool, bufsz))) {
            rc = SSD_ENOMEM;
            break;
        }
        uint64_t o = sub * WRITE_PIECE, plen = alen - o < WRITE_PIECE ? alen - o : WRITE_PIECE;
        uint64_t real = o >= len ? 0 : len - o < plen ? len - o : plen;
        uint8_t *buf = sl->scratch;
        if (real)
            memcpy(buf, src + o, real);
        memset(buf + real, 0, plen - real);
        bulk_hash_update(&st, buf, real);
        ssd_slot_submit(d->eng, sl, &w, URING_WRITE, fd, buf, plen, off + o);
        sub++;
    }
    for (; done < sub; done++) { /* drain: the IO still uses our buffers */
        io_slot *sl = &slots[done % width];
        ssd_slot_wait(&w, sl);
        if (sl->req.res < 0 || (uint32_t)sl->req.res != sl->req.len) {
            note_io_error(s, sl->req.res);
            rc = SSD_EIO;
        }
    }
    for (unsigned i = 0; i < width; i++)
        ssd_buf_put(&s->pool, slots[i].scratch, bufsz);
    ssd_io_wait_destroy(&w);
    *sum = bulk_hash_digest(&st);
    return rc;
}

/* ---- records and evictions ---------------------------------------------- */

static void entry_free(ssd_entry *e)
{
    if (!e)
        return;
    free(e->hkey);
    free(e);
}

/* Records the tail passed, oldest first. */
typedef struct evict_list {
    ssd_entry *head, **tailp;
} evict_list;

/* ring_evict_fn: collects the records the tail passed (shard lock held). */
static void collect_evicted(ring_entry *re, void *ud)
{
    evict_list *l = ud;
    ssd_entry *e = (ssd_entry *)re;
    e->evict_next = NULL;
    *l->tailp = e;
    l->tailp = &e->evict_next;
}

/* Unindexes the records the tail passed, reports those that were indexed, and
 * frees them. No lock held. */
static void release_evicted(native_store *s, ssd_entry *list)
{
    pthread_mutex_lock(&s->index_lock);
    for (ssd_entry *e = list; e; e = e->evict_next)
        e->report = index_remove(&s->ix, e);
    pthread_mutex_unlock(&s->index_lock);

    for (ssd_entry *e = list; e; e = e->evict_next) {
        if (!e->report)
            continue;
        count(&s->evictions);
        /* The key bytes lead the hash key, which is no longer in the index: the
         * put_id bytes after them make room for the terminating NUL. */
        e->hkey[e->klen] = '\0';
        if (evict_queue_push(&s->evq, (char *)e->hkey, e->klen, e->pid))
            e->hkey = NULL;
        else
            count(&s->evictions_dropped);
    }

    while (list) {
        ssd_entry *next = list->evict_next;
        entry_free(list);
        list = next;
    }
}

/* ---- write path --------------------------------------------------------- */

/* Places e in sh, waiting while the ring is blocked by busy entries. Returns
 * SSD_OK with *off set, SSD_ECLOSED, SSD_E2BIG or SSD_EINVAL. */
static int reserve(native_store *s, ssd_shard *sh, ssd_entry *e, uint64_t *off)
{
    int rc;
    pthread_mutex_lock(&sh->lock);
    for (;;) {
        evict_list evicted = {NULL, &evicted.head};
        rc = ring_reserve(&sh->ring, &e->re, collect_evicted, &evicted);
        if (evicted.head) {
            /* Hand them on before waiting, without the shard lock. */
            pthread_mutex_unlock(&sh->lock);
            release_evicted(s, evicted.head);
            pthread_mutex_lock(&sh->lock);
            if (rc == -EBUSY)
                continue; /* the blocker may have gone meanwhile */
        }
        if (rc != -EBUSY || atomic_load(&s->closing))
            break;
        pthread_cond_wait(&sh->cv, &sh->lock);
    }
    if (rc == 0)
        *off = ring_file_offset(&sh->ring, &e->re);
    pthread_mutex_unlock(&sh->lock);
    switch (rc) {
    case 0: return SSD_OK;
    case -EBUSY: return SSD_ECLOSED;
    case -E2BIG: return SSD_E2BIG;
    default: return SSD_EINVAL;
    }
}

/* The next device (round-robin) whose shards can hold alen bytes. */
static ssd_device *pick_device(native_store *s, uint64_t alen)
{
    unsigned start = atomic_fetch_add_explicit(&s->next_dev, 1, memory_order_relaxed);
    for (size_t i = 0; i < s->n_devs; i++) {
        ssd_device *d = &s->devs[(start + i) % s->n_devs];
        if (alen <= d->shard_bytes)
            return d;
    }
    return NULL;
}

int native_write(ssd_store *base, const void *key, size_t klen, ssd_put_id pid, const void *src,
                 uint64_t len, ssd_guard **guard)
{
    native_store *s = native_of(base);
    if (!op_enter(s))
        return SSD_ECLOSED;
    int rc;
    ssd_entry *e = NULL;
    uint64_t alen;
    if (len > s->max_shard_bytes) {
        rc = SSD_E2BIG;
        goto out;
    }
    alen = len ? ALIGN_UP(len) : SSD_ALIGN; /* an empty value still takes a block */
    ssd_device *d = pick_device(s, alen);
    if (!d) {
        rc = SSD_E2BIG;
        goto out;
    }
    ssd_shard *sh = &d->shards[atomic_fetch_add_explicit(&d->next_shard, 1,
                                                         memory_order_relaxed) % d->n_shards];
    size_t hlen;
    e = calloc(1, sizeof *e);
    if (!e || !(e->hkey = index_key(key, klen, pid, NULL, 0, &hlen))) {
        rc = SSD_ENOMEM;
        goto out;
    }
    e->klen = klen;
    e->pid = pid;
    e->guard.engine = &native_engine;
    e->len = len;
    e->shard = sh;
    e->re.aligned_len = alen;

    uint64_t off = 0;
    rc = reserve(s, sh, e, &off);
    if (rc != SSD_OK)
        goto out;
    /* From here the ring owns e: it is freed when the tail passes it. */
    ssd_entry *mine = e;
    e = NULL;
    rc = write_value(s, d, sh->fd, src, len, alen, off, &mine->checksum);
    if (rc != SSD_OK) {
        pthread_mutex_lock(&sh->lock);
        ring_abort(&sh->ring, &mine->re);
        pthread_cond_broadcast(&sh->cv);
        pthread_mutex_unlock(&sh->lock);
        if (rc == SSD_EIO)
            count(&s->write_errors);
        goto out;
    }
    pthread_mutex_lock(&s->index_lock);
    pthread_mutex_lock(&sh->lock);
    ring_commit(&sh->ring, &mine->re);
    if (guard)
        ring_pin_commit(&sh->ring, &mine->re);
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->lock);
    index_insert(&s->ix, mine); /* an older record of (key, put_id) stays in its ring */
    pthread_mutex_unlock(&s->index_lock);
    /* Without a guard, mine may be evicted and freed from here on. */
    if (guard)
        *guard = &mine->guard;
    count(&s->writes);
    rc = SSD_OK;
out:
    entry_free(e);
    op_exit(s);
    return rc;
}

void native_guard_release(ssd_guard *g)
{
    ssd_entry *e = ENTRY_OF(g);
    ssd_shard *sh = e->shard;
    pthread_mutex_lock(&sh->lock);
    ring_unpin_commit(&sh->ring, &e->re);
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->lock);
}

/* ---- evictions ---------------------------------------------------------- */

size_t native_pop_evictions(ssd_store *base, ssd_eviction *out, size_t cap)
{
    return evict_queue_pop(&native_of(base)->evq, out, cap);
}

/* ---- open and close ----------------------------------------------------- */

static void shard_path(char *buf, size_t cap, const ssd_root *root, unsigned i)
{
    snprintf(buf, cap, "%s/shard-%03u", root->path, i);
}

/* The bytes the shard files of root may take: the file system's free space
 * (for unprivileged users) plus what the shard files of an earlier run hold
 * (those beyond this run's count are removed first, the others truncated).
 * UINT64_MAX when statvfs fails. */
static uint64_t disk_room(const ssd_root *root)
{
    struct statvfs sv;
    if (statvfs(root->path, &sv) != 0)
        return UINT64_MAX;
    uint64_t room = (uint64_t)sv.f_bavail * sv.f_frsize;
    char path[4096];
    struct stat st;
    for (unsigned i = 0; i < MAX_SHARDS; i++) {
        shard_path(path, sizeof path, root, i);
        if (stat(path, &st) != 0)
            break;
        room += (uint64_t)st.st_blocks * 512;
    }
    return room;
}

/* Creates, truncates and reserves the shard files of d and starts its engine.
 * Shards narrower than 512 bytes make no sense: a small limit gets fewer. A
 * limit larger than the file system's free space fails before anything is
 * reserved (fallocate would fail halfway, after filling the disk). */
static int device_open(ssd_device *d, const ssd_root *root, unsigned shards, unsigned depth,
                       bool iovec_mode, char *err, size_t errlen)
{
    d->root = root;
    pthread_mutex_init(&d->readers_lock, NULL);
    if (shards > root->limit / SSD_ALIGN)
        shards = (unsigned)(root->limit / SSD_ALIGN);
    d->shard_bytes = ALIGN_DOWN(root->limit / shards);
    char path[4096];
    /* Shard files of an earlier run with more shards only waste the disk. */
    for (unsigned i = shards; i < MAX_SHARDS; i++) {
        shard_path(path, sizeof path, root, i);
        if (unlink(path) != 0)
            break;
    }
    uint64_t need = d->shard_bytes * shards, room = disk_room(root);
    if (need > room) {
        snprintf(err, errlen,
                 "large_limit_size[%zu]: %llu bytes for %s is more than its file system has "
                 "free (%llu bytes)",
                 root->cfg_index, (unsigned long long)need, root->path, (unsigned long long)room);
        return SSD_EINVAL;
    }
    d->shards = calloc(shards, sizeof *d->shards);
    if (!d->shards) {
        snprintf(err, errlen, "out of memory");
        return SSD_ENOMEM;
    }
    for (unsigned i = 0; i < shards; i++) {
        ssd_shard *sh = &d->shards[i];
        shard_path(path, sizeof path, root, i);
        sh->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
        if (sh->fd < 0) {
            snprintf(err, errlen, "root %s: cannot open shard-%03u%s: %s", root->path, i,
                     errno == EINVAL ? " (O_DIRECT refused?)" : "", strerror(errno));
            return SSD_EIO;
        }
        pthread_mutex_init(&sh->lock, NULL);
        pthread_cond_init(&sh->cv, NULL);
        ring_init(&sh->ring, d->shard_bytes);
        sh->dev = d;
        d->n_shards = i + 1; /* from here device_close cleans it up */
        if (fallocate(sh->fd, 0, 0, (off_t)d->shard_bytes) != 0) {
            snprintf(err, errlen, "root %s: cannot reserve %llu bytes for shard-%03u: %s",
                     root->path, (unsigned long long)d->shard_bytes, i, strerror(errno));
            return SSD_EIO;
        }
    }
    int rc = uring_engine_start(&d->eng, depth, iovec_mode);
    if (rc < 0) {
        snprintf(err, errlen, "root %s: cannot start the io_uring engine: %s", root->path,
                 strerror(-rc));
        return SSD_EIO;
    }
    return SSD_OK;
}

/* Stops the engine (no IO may be in flight), frees the records left in the
 * rings, closes the files and removes them: a store never reads what an
 * earlier one wrote (a restart starts empty), so they would only hold disk. */
static void device_close(ssd_device *d)
{
    char path[4096];
    for (unsigned i = 0; i < d->n_idle_readers; i++)
        uring_reader_close(d->idle_readers[i]);
    d->n_idle_readers = 0;
    pthread_mutex_destroy(&d->readers_lock);
    uring_engine_stop(d->eng);
    d->eng = NULL;
    for (unsigned i = 0; i < d->n_shards; i++) {
        ssd_shard *sh = &d->shards[i];
        for (ring_entry *re = sh->ring.oldest; re;) {
            ring_entry *next = re->next;
            entry_free((ssd_entry *)re);
            re = next;
        }
        close(sh->fd);
        shard_path(path, sizeof path, d->root, i);
        unlink(path);
        pthread_cond_destroy(&sh->cv);
        pthread_mutex_destroy(&sh->lock);
    }
    free(d->shards);
    d->shards = NULL;
    d->n_shards = 0;
}

/* What only this engine reads (engine.c checked the rest). */
static int config_check(const ssd_config *cfg, char *err, size_t errlen)
{
    if (cfg->shards_per_device > MAX_SHARDS) {
        snprintf(err, errlen, "shards_per_device: %u is over the maximum of %u",
                 cfg->shards_per_device, MAX_SHARDS);
        return SSD_EINVAL;
    }
    if (cfg->io_depth > MAX_IO_DEPTH) {
        snprintf(err, errlen, "io_depth: %u is over the maximum of %u", cfg->io_depth,
                 MAX_IO_DEPTH);
        return SSD_EINVAL;
    }
    return SSD_OK;
}

int native_open(const ssd_config *cfg, ssd_store **out, char *err, size_t errlen)
{
    int rc = config_check(cfg, err, errlen);
    if (rc != SSD_OK)
        return rc;
    native_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return SSD_ENOMEM;
    }
    pthread_mutex_init(&s->index_lock, NULL);
    pthread_mutex_init(&s->pool.lock, NULL);
    pthread_mutex_init(&s->close_lock, NULL);
    pthread_cond_init(&s->close_cv, NULL);
    s->base.engine = &native_engine;
    evict_queue_init(&s->evq, cfg->eviction_queue_cap);

    int r = root_set_open(cfg->cluster_name, cfg->instance, cfg->paths, cfg->limits,
                          cfg->n_paths, &s->roots, &s->n_roots, err, errlen);
    if (r != 0) {
        rc = r == -ENOMEM ? SSD_ENOMEM : r == -EINVAL ? SSD_EINVAL : SSD_EIO;
        goto fail;
    }
    s->devs = calloc(s->n_roots, sizeof *s->devs);
    if (!s->devs) {
        snprintf(err, errlen, "out of memory");
        rc = SSD_ENOMEM;
        goto fail;
    }
    unsigned shards = cfg->shards_per_device ? cfg->shards_per_device : DEFAULT_SHARDS;
    unsigned depth = cfg->io_depth ? cfg->io_depth : DEFAULT_IO_DEPTH;
    for (size_t i = 0; i < s->n_roots; i++) {
        s->n_devs = i + 1;
        rc = device_open(&s->devs[i], &s->roots[i], shards, depth, cfg->iovec_mode, err,
                         errlen);
        if (rc != SSD_OK)
            goto fail;
        if (s->devs[i].shard_bytes > s->max_shard_bytes)
            s->max_shard_bytes = s->devs[i].shard_bytes;
    }
    *out = &s->base;
    return SSD_OK;
fail:
    native_close(&s->base);
    return rc;
}

void native_close(ssd_store *base)
{
    native_store *s = native_of(base);
    atomic_store(&s->closing, 1);
    for (size_t i = 0; i < s->n_devs; i++) {
        ssd_device *d = &s->devs[i];
        for (unsigned j = 0; j < d->n_shards; j++) {
            pthread_mutex_lock(&d->shards[j].lock);
            pthread_cond_broadcast(&d->shards[j].cv); /* waiting writers give up */
            pthread_mutex_unlock(&d->shards[j].lock);
        }
    }
    pthread_mutex_lock(&s->close_lock);
    while (atomic_load(&s->active) > 0)
        pthread_cond_wait(&s->close_cv, &s->close_lock);
    pthread_mutex_unlock(&s->close_lock);

    index_clear(&s->ix);
    for (size_t i = 0; i < s->n_devs; i++)
        device_close(&s->devs[i]);
    free(s->devs);
    root_set_close(s->roots, s->n_roots);
    evict_queue_destroy(&s->evq);
    ssd_buf_pool_destroy(&s->pool);
    pthread_cond_destroy(&s->close_cv);
    pthread_mutex_destroy(&s->close_lock);
    pthread_mutex_destroy(&s->index_lock);
    free(s);
}

#ifdef FX_FAILPOINTS
uring_engine *ssd_test_engine(ssd_store *base, size_t device)
{
    native_store *s = base && base->engine == &native_engine ? native_of(base) : NULL;
    return s && device < s->n_devs ? s->devs[device].eng : NULL;
}

void ssd_test_stale_next_reads(ssd_store *base, unsigned n)
{
    if (base && base->engine == &native_engine)
        atomic_store(&native_of(base)->fp_stale, n);
}
#endif

const ssd_engine native_engine = {
    .name = "native",
    .write = native_write,
    .guard_release = native_guard_release,
    .load = native_load_into_addr,
    .load_chunks = native_load_into_addr_chunks,
    .pop_evictions = native_pop_evictions,
    .get_stats = native_get_stats,
    .close = native_close,
};
