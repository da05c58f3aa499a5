/*
 * replica_index.c - the owner's replica index (see replica_index.h): a hash
 * by key for the master's ops and the owner's own updates, and a red-black
 * tree by offset (libbsd's <sys/tree.h>) of the entries with memory, for the
 * overlap query that runs before a range of the segment is written.
 */
#include "owner/replica_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/sys/tree.h>

#include "common/hashtable.h"
#include "common/memdup.h"

struct ientry {
    char *key;
    size_t klen;
    index_pid pid;
    uint64_t len;
    bool in_memory;
    uint64_t offset;
    bool on_ssd;
    uint64_t ssd_len;
    RB_ENTRY(ientry) by_off; /* only while in_memory */
    UT_hash_handle hh;
};

RB_HEAD(off_tree, ientry);

struct replica_index {
    struct ientry *by_key;
    struct off_tree by_off;
    size_t count;
};

static int off_cmp(const struct ientry *a, const struct ientry *b)
{
    return (a->offset > b->offset) - (a->offset < b->offset);
}

/* As in range_alloc.c: RB_GENERATE_STATIC marks its functions __unused. */
#ifndef __unused
#define __unused __attribute__((__unused__))
#define FX_UNDEF_UNUSED
#endif
RB_GENERATE_STATIC(off_tree, ientry, by_off, off_cmp)
#ifdef FX_UNDEF_UNUSED
#undef __unused
#undef FX_UNDEF_UNUSED
#endif

int index_pid_cmp(index_pid a, index_pid b)
{
    if (a.time_ms != b.time_ms)
        return a.time_ms < b.time_ms ? -1 : 1;
    return (a.version > b.version) - (a.version < b.version);
}

replica_index *replica_index_new(void)
{
    replica_index *ri = calloc(1, sizeof *ri);
    if (ri)
        RB_INIT(&ri->by_off);
    return ri;
}

static struct ientry *find(replica_index *ri, const void *key, size_t klen)
{
    struct ientry *e;
    HASH_FIND(hh, ri->by_key, key, klen, e);
    return e;
}

static void forget_memory(replica_index *ri, struct ientry *e)
{
    if (e->in_memory)
        RB_REMOVE(off_tree, &ri->by_off, e);
    e->in_memory = false;
}

static void entry_free(replica_index *ri, struct ientry *e)
{
    forget_memory(ri, e);
    HASH_DEL(ri->by_key, e);
    ri->count--;
    free(e->key);
    free(e);
}

/* An entry that no longer holds anything goes. */
static void drop_if_empty(replica_index *ri, struct ientry *e)
{
    if (!e->in_memory && !e->on_ssd)
        entry_free(ri, e);
}

void replica_index_free(replica_index *ri)
{
    if (!ri)
        return;
    replica_index_clear(ri);
    free(ri);
}

void replica_index_clear(replica_index *ri)
{
    struct ientry *e, *tmp;
    HASH_ITER(hh, ri->by_key, e, tmp) {
        entry_free(ri, e);
    }
}

int replica_index_publish(replica_index *ri, const void *key, size_t klen, index_pid pid,
                          uint64_t offset, uint64_t len)
{
    struct ientry *e = find(ri, key, klen);
    if (e) {
        int c = index_pid_cmp(pid, e->pid);
        if (c < 0)
            return 0; /* a newer version is already here */
        if (c > 0) {
            e->on_ssd = false; /* the older version's SSD copy is not this one */
            e->ssd_len = 0;
        }
        forget_memory(ri, e);
    } else {
        e = calloc(1, sizeof *e);
        if (!e || !(e->key = fx_memdup(key, klen))) {
            free(e);
            return -ENOMEM;
        }
        e->klen = klen;
        HASH_ADD_KEYPTR(hh, ri->by_key, e->key, e->klen, e);
        ri->count++;
    }
    /* What this range held before is no longer there. */
    replica_index_forget_range(ri, offset, len);
    e->pid = pid;
    e->len = len;
    e->offset = offset;
    e->in_memory = true;
    RB_INSERT(off_tree, &ri->by_off, e);
    return 0;
}

void replica_index_drop_upto(replica_index *ri, const void *key, size_t klen, index_pid pid)
{
    struct ientry *e = find(ri, key, klen);
    if (e && index_pid_cmp(e->pid, pid) <= 0)
        entry_free(ri, e);
}

void replica_index_drop_older(replica_index *ri, const void *key, size_t klen, index_pid pid)
{
    struct ientry *e = find(ri, key, klen);
    if (e && index_pid_cmp(e->pid, pid) < 0)
        entry_free(ri, e);
}

void replica_index_drop_memory(replica_index *ri, const void *key, size_t klen, index_pid pid)
{
    struct ientry *e = find(ri, key, klen);
    if (!e || index_pid_cmp(e->pid, pid) != 0)
        return;
    forget_memory(ri, e);
    drop_if_empty(ri, e);
}

void replica_index_set_ssd(replica_index *ri, const void *key, size_t klen, index_pid pid,
                           bool on, uint64_t ssd_len)
{
    struct ientry *e = find(ri, key, klen);
    if (!e || index_pid_cmp(e->pid, pid) != 0)
        return;
    e->on_ssd = on;
    e->ssd_len = on ? ssd_len : 0;
    drop_if_empty(ri, e);
}

size_t replica_index_forget_range(replica_index *ri, uint64_t offset, uint64_t len)
{
    if (len == 0)
        return 0;
    uint64_t end = offset + len < offset ? UINT64_MAX : offset + len;
    /* The first entry starting at or after end, then backwards: every entry
     * starting below end overlaps while it ends above offset; entries do not
     * overlap each other, so the first one ending at or below offset ends the
     * walk. */
    struct ientry probe = {.offset = end};
    struct ientry *e = RB_NFIND(off_tree, &ri->by_off, &probe);
    e = e ? RB_PREV(off_tree, &ri->by_off, e) : RB_MAX(off_tree, &ri->by_off);
    size_t n = 0;
    while (e) {
        uint64_t e_end = e->offset + (e->len ? e->len : 1);
        if (e_end <= offset)
            break;
        struct ientry *prev = RB_PREV(off_tree, &ri->by_off, e);
        forget_memory(ri, e);
        drop_if_empty(ri, e);
        n++;
        e = prev;
    }
    return n;
}

size_t replica_index_count(const replica_index *ri)
{
    return ri->count;
}

static void fill(const struct ientry *e, index_entry *out)
{
    *out = (index_entry){.key = e->key,
                         .klen = e->klen,
                         .pid = e->pid,
                         .len = e->len,
                         .in_memory = e->in_memory,
                         .offset = e->offset,
                         .on_ssd = e->on_ssd,
                         .ssd_len = e->ssd_len};
}

bool replica_index_find(replica_index *ri, const void *key, size_t klen, index_entry *out)
{
    struct ientry *e = find(ri, key, klen);
    if (e)
        fill(e, out);
    return e != NULL;
}

bool replica_index_first(replica_index *ri, index_cursor *c, index_entry *out)
{
    c->next = ri->by_key;
    return replica_index_next(c, out);
}

bool replica_index_next(index_cursor *c, index_entry *out)
{
    struct ientry *e = c->next;
    if (!e)
        return false;
    fill(e, out);
    c->next = e->hh.next;
    return true;
}
