/*
 * index_sync.c - the owners' replica indexes kept in step, and the replies
 * that wait for them (see index_sync.h).
 *
 * Ops are kept per member in queue order and become IndexOp messages at the
 * flush. A parked reply is {connection, header, packed response, the
 * (member, incarnation, batch number) pairs it waits for}; the list is short
 * (the deletes and overwrites of the last round trip), so an acknowledgement
 * walks all of it. A parked step (then, then_ctx) takes the reply's place
 * when the next step of a request must wait, not its answer.
 */
#include "master/index_sync.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memdup.h"
#include "fluxon/fluxon.h"
#include "master/members.h"

struct index_op {
    int kind; /* FX__INDEX_OP__KIND__* */
    char *key;
    size_t klen;
    put_id pid;
    uint64_t offset, len;
};

/* A drop queued for a member and not acknowledged yet: the key's later
 * delete or overwrite waits for it (the member may still hold the dropped
 * version although the route no longer names it: an eviction). One per key
 * per member, the newest; the table's order is batch order. */
typedef struct unacked_drop {
    char *key;
    size_t klen;
    uint64_t seq;
    UT_hash_handle hh;
} unacked_drop;

typedef struct wait_on {
    uint32_t node_id;
    uint64_t tomb_tag;
    uint64_t seq;
} wait_on;

struct index_wait {
    master *m;
    wait_on *on;
    size_t n_on;
    net_conn *conn; /* referenced while parked */
    frame_hdr hdr;
    const ProtobufCMessageDescriptor *desc;
    uint8_t *resp; /* packed */
    size_t resp_len;
    uint64_t parked_ms;
    index_then_fn then; /* instead of a reply (master_index_wait_then) */
    void *then_ctx;
    struct index_wait *next;
};

static void note_unacked_drop(member *mb, const char *key, size_t klen)
{
    unacked_drop *d;
    HASH_FIND(hh, mb->unacked_drops, key, klen, d);
    if (d) {
        HASH_DEL(mb->unacked_drops, d); /* re-added last: the table stays in batch order */
    } else {
        d = calloc(1, sizeof *d);
        if (!d || !(d->key = fx_memdup(key, klen))) {
            free(d);
            FX_LOG_LIMITED(ERROR, "out of memory: a later delete of a key may not wait for "
                                  "member %u's eviction of it", mb->node_id);
            return;
        }
        d->klen = klen;
    }
    d->seq = mb->index_seq;
    HASH_ADD_KEYPTR(hh, mb->unacked_drops, d->key, d->klen, d);
}

/* Forgets mb's drops acknowledged up to seq (all of them with UINT64_MAX). */
static void clear_unacked_drops(member *mb, uint64_t seq)
{
    unacked_drop *d, *tmp;
    HASH_ITER(hh, mb->unacked_drops, d, tmp) {
        if (d->seq > seq)
            break;
        HASH_DEL(mb->unacked_drops, d);
        free(d->key);
        free(d);
    }
}

void master_index_wait_key(master *m, index_wait *w, const char *key, size_t klen, uint32_t skip)
{
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp) {
        unacked_drop *d;
        if (mb->node_id == skip || !mb->unacked_drops)
            continue;
        HASH_FIND(hh, mb->unacked_drops, key, klen, d);
        if (d)
            master_index_wait_on(w, mb);
    }
}

static void queue_op(member *mb, int kind, const char *key, size_t klen, put_id pid,
                     uint64_t offset, uint64_t len)
{
    if (mb->n_pending_ops == mb->cap_pending_ops) {
        size_t cap = mb->cap_pending_ops ? mb->cap_pending_ops * 2 : 16;
        struct index_op *n = realloc(mb->pending_ops, cap * sizeof *n);
        if (!n)
            goto oom;
        mb->pending_ops = n;
        mb->cap_pending_ops = cap;
    }
    char *k = fx_memdup(key, klen);
    if (!k)
        goto oom;
    mb->pending_ops[mb->n_pending_ops++] =
        (struct index_op){.kind = kind, .key = k, .klen = klen, .pid = pid, .offset = offset,
                          .len = len};
    mb->batch_dirty = true;
    if (kind != FX__INDEX_OP__KIND__PUBLISH)
        note_unacked_drop(mb, key, klen);
    return;
oom:
    FX_LOG_LIMITED(ERROR, "out of memory queueing a replica-index op for member %u", mb->node_id);
}

void master_index_publish(member *mb, const char *key, size_t klen, put_id pid, uint64_t offset,
                          uint64_t len)
{
    queue_op(mb, FX__INDEX_OP__KIND__PUBLISH, key, klen, pid, offset, len);
}

void master_index_drop_upto(member *mb, const char *key, size_t klen, put_id pid)
{
    queue_op(mb, FX__INDEX_OP__KIND__DROP_UPTO, key, klen, pid, 0, 0);
}

void master_index_drop_memory(member *mb, const char *key, size_t klen, put_id pid)
{
    queue_op(mb, FX__INDEX_OP__KIND__DROP_MEMORY, key, klen, pid, 0, 0);
}

void master_index_drop_route(master *m, route *r, index_wait *w, uint32_t skip)
{
    for (size_t i = 0; i < r->n_replicas; i++) {
        replica *rep = &r->replicas[i];
        member *mb = master_member(m, rep->node_id);
        if (!mb || mb->tomb_tag != rep->tomb_tag || mb->node_id == skip)
            continue; /* died with its incarnation, or the requester (it applies this itself) */
        master_index_drop_upto(mb, r->key, r->klen, r->pid);
        if (w)
            master_index_wait_on(w, mb);
    }
    for (size_t i = 0; w && i < r->n_cached_by; i++) {
        member *mb = master_member(m, r->cached_by[i]);
        if (mb && mb->node_id != skip)
            master_index_wait_on(w, mb);
    }
}

index_wait *master_index_wait_new(master *m)
{
    index_wait *w = calloc(1, sizeof *w);
    if (w)
        w->m = m;
    return w;
}

void master_index_wait_on(index_wait *w, member *mb)
{
    if (!w)
        return;
    mb->batch_dirty = true;
    for (size_t i = 0; i < w->n_on; i++)
        if (w->on[i].node_id == mb->node_id)
            return;
    wait_on *n = realloc(w->on, (w->n_on + 1) * sizeof *n);
    if (!n) {
        FX_LOG_LIMITED(ERROR, "out of memory: a reply does not wait for member %u's index",
                       mb->node_id);
        return;
    }
    w->on = n;
    n[w->n_on++] = (wait_on){.node_id = mb->node_id, .tomb_tag = mb->tomb_tag, .seq = mb->index_seq};
}

static void wait_free(index_wait *w)
{
    if (w->then)
        w->then(w->m, w->then_ctx, false);
    if (w->conn)
        net_conn_unref(w->conn);
    free(w->on);
    free(w->resp);
    free(w);
}

/* True when every member w waits for acknowledged its batch or left. */
static bool wait_done(master *m, const index_wait *w)
{
    for (size_t i = 0; i < w->n_on; i++) {
        member *mb = master_member(m, w->on[i].node_id);
        if (mb && mb->tomb_tag == w->on[i].tomb_tag && mb->index_acked < w->on[i].seq)
            return false;
    }
    return true;
}

static void send_parked(index_wait *w)
{
    /* The test hook of the crash point "an overwrite's drops applied, its
     * answer not sent" (docs/decisions.md): dies as kill -9 does. */
    if (w->m->test_kill_at_put_done_answer && w->desc == &fx__put_done_resp__descriptor)
        raise(SIGKILL);
    if (!net_conn_is_open(w->conn))
        return;
    ProtobufCMessage *resp = protobuf_c_message_unpack(w->desc, NULL, w->resp_len, w->resp);
    if (!resp) {
        net_reply_error(w->conn, &w->hdr, FX_ENOMEM, "out of memory");
        return;
    }
    net_reply(w->conn, &w->hdr, resp);
    protobuf_c_message_free_unpacked(resp, NULL);
}

void master_index_wait_reply(master *m, index_wait *w, net_conn *c, const frame_hdr *h,
                             const ProtobufCMessage *resp)
{
    if (!w || wait_done(m, w)) {
        net_reply(c, h, resp);
        if (w)
            wait_free(w);
        return;
    }
    size_t len = protobuf_c_message_get_packed_size(resp);
    w->resp = malloc(len ? len : 1);
    if (!w->resp) {
        net_reply_error(c, h, FX_ENOMEM, "out of memory");
        wait_free(w);
        return;
    }
    w->resp_len = protobuf_c_message_pack(resp, w->resp);
    w->desc = resp->descriptor;
    w->conn = c;
    net_conn_ref(c);
    w->hdr = *h;
    w->parked_ms = master_now_ms(m);
    w->next = m->index_waits;
    m->index_waits = w;
}

void master_index_wait_then(master *m, index_wait *w, index_then_fn fn, void *ctx)
{
    if (!w || wait_done(m, w)) {
        if (w)
            wait_free(w);
        fn(m, ctx, true);
        return;
    }
    w->then = fn;
    w->then_ctx = ctx;
    w->parked_ms = master_now_ms(m);
    w->next = m->index_waits;
    m->index_waits = w;
}

/* Sends (or runs) and frees every parked reply (or step) whose owners are
 * all done. A step may park new waits: they go to the head of the list, and
 * the walk goes on from where it stood. */
static void release_done(master *m)
{
    index_wait **pp = &m->index_waits;
    while (*pp) {
        index_wait *w = *pp;
        if (wait_done(m, w)) {
            *pp = w->next;
            if (w->then) {
                index_then_fn fn = w->then;
                void *ctx = w->then_ctx;
                w->then = NULL;
                wait_free(w);
                fn(m, ctx, true);
                continue;
            }
            send_parked(w);
            wait_free(w);
        } else {
            pp = &w->next;
        }
    }
}

Fx__IndexOp **master_index_take_ops(member *mb, size_t *n)
{
    *n = 0;
    if (!mb->n_pending_ops)
        return NULL;
    Fx__IndexOp **ops = calloc(mb->n_pending_ops, sizeof *ops);
    if (!ops) {
        FX_LOG_LIMITED(ERROR, "out of memory sending member %u's index ops; kept for the next "
                              "batch", mb->node_id);
        return NULL;
    }
    for (size_t i = 0; i < mb->n_pending_ops; i++) {
        struct index_op *q = &mb->pending_ops[i];
        Fx__IndexOp *op = malloc(sizeof *op);
        Fx__PutId *pid = malloc(sizeof *pid);
        if (!op || !pid) {
            free(op);
            free(pid);
            master_index_ops_free(ops, i);
            return NULL;
        }
        fx__index_op__init(op);
        fx__put_id__init(pid);
        pid->time_ms = q->pid.time_ms;
        pid->version = q->pid.version;
        op->kind = q->kind;
        op->key = (ProtobufCBinaryData){.len = q->klen, .data = (uint8_t *)q->key}; /* moved */
        op->put_id = pid;
        op->offset = q->offset;
        op->len = q->len;
        ops[i] = op;
    }
    *n = mb->n_pending_ops;
    mb->n_pending_ops = 0;
    return ops;
}

void master_index_ops_free(Fx__IndexOp **ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(ops[i]->key.data);
        free(ops[i]->put_id);
        free(ops[i]);
    }
    free(ops);
}

void master_index_ops_drop(member *mb)
{
    for (size_t i = 0; i < mb->n_pending_ops; i++)
        free(mb->pending_ops[i].key);
    free(mb->pending_ops);
    mb->pending_ops = NULL;
    mb->n_pending_ops = mb->cap_pending_ops = 0;
    clear_unacked_drops(mb, UINT64_MAX);
}

void master_index_acked(master *m, member *mb, uint64_t seq)
{
    if (seq > mb->index_acked)
        mb->index_acked = seq;
    clear_unacked_drops(mb, mb->index_acked);
    release_done(m);
}

void master_index_member_gone(master *m, uint32_t node_id)
{
    (void)node_id; /* wait_done finds it gone */
    release_done(m);
}

member *master_index_overdue(master *m)
{
    uint64_t now = master_now_ms(m);
    for (index_wait *w = m->index_waits; w; w = w->next) {
        if (now - w->parked_ms < INDEX_ACK_TIMEOUT_MS)
            continue;
        for (size_t i = 0; i < w->n_on; i++) {
            member *mb = master_member(m, w->on[i].node_id);
            if (mb && mb->tomb_tag == w->on[i].tomb_tag && mb->index_acked < w->on[i].seq)
                return mb;
        }
    }
    return NULL;
}

void master_index_waits_free(master *m)
{
    while (m->index_waits) {
        index_wait *w = m->index_waits;
        m->index_waits = w->next;
        wait_free(w);
    }
}
