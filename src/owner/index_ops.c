/*
 * index_ops.c - the owner's replica index (replica_index.h) fed by what the
 * master sends and by what this owner does itself.
 *
 * The master's batches (BatchDeleteClientKvMetaCache) carry IndexOps, applied
 * in order before the batch is acknowledged: the master answers a delete or
 * an overwrite only after that acknowledgement (src/master/index_sync.h).
 * This owner applies its own changes when it learns of them, before its
 * client does: a put it made (PutDone answered, or unanswered because the
 * link to the master was lost: ext_put.c), a delete it made, an SSD
 * commit the master published, an SSD eviction. (A durable copy it pulled
 * comes as the master's PUBLISH: losing one to a crash loses a copy, not a
 * version.) And
 * before any range of the segment is written (a put's range, a get's target,
 * a peer's push: the data plane's write hook), the entries overlapping it
 * forget their memory.
 */
#include "owner/owner.h"

#include "common/log.h"
#include "owner/replica_index.h"

static index_pid pid_of(const Fx__PutId *p)
{
    return p ? (index_pid){.time_ms = p->time_ms, .version = p->version} : (index_pid){0, 0};
}

/* Register tells a new master the newest put_id we saw. */
static void note_put_id(owner *o, index_pid pid)
{
    index_pid seen = {.time_ms = o->max_put_seen.time_ms, .version = o->max_put_seen.version};
    if (index_pid_cmp(pid, seen) > 0) {
        o->max_put_seen.time_ms = pid.time_ms;
        o->max_put_seen.version = pid.version;
    }
}

void owner_index_apply_ops(owner *o, Fx__IndexOp **ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const Fx__IndexOp *op = ops[i];
        index_pid pid = pid_of(op->put_id);
        note_put_id(o, pid);
        switch (op->kind) {
        case FX__INDEX_OP__KIND__PUBLISH:
            if (!segment_contains(&o->seg, op->offset, op->len)) {
                FX_LOG_LIMITED(WARN, "index op: a replica outside the segment (%llu+%llu) "
                                     "ignored", (unsigned long long)op->offset,
                               (unsigned long long)op->len);
                break;
            }
            if (replica_index_publish(o->index, op->key.data, op->key.len, pid, op->offset,
                                      op->len) < 0)
                FX_LOG_LIMITED(ERROR, "out of memory in the replica index: a replica will not "
                                      "survive a master restart");
            break;
        case FX__INDEX_OP__KIND__DROP_UPTO:
            replica_index_drop_upto(o->index, op->key.data, op->key.len, pid);
            break;
        case FX__INDEX_OP__KIND__DROP_MEMORY:
            replica_index_drop_memory(o->index, op->key.data, op->key.len, pid);
            break;
        default:
            FX_LOG_LIMITED(WARN, "index op of unknown kind %d ignored", (int)op->kind);
        }
    }
}

void owner_index_put_done(owner *o, const void *key, size_t klen, uint64_t time_ms,
                          uint32_t version, bool local, uint64_t offset, uint64_t len)
{
    index_pid pid = {.time_ms = time_ms, .version = version};
    note_put_id(o, pid);
    replica_index_drop_older(o->index, key, klen, pid);
    if (local && replica_index_publish(o->index, key, klen, pid, offset, len) < 0)
        FX_LOG_LIMITED(ERROR, "out of memory in the replica index: a replica will not survive "
                              "a master restart");
}

void owner_index_deleted(owner *o, const void *key, size_t klen)
{
    replica_index_drop_upto(o->index, key, klen,
                            (index_pid){.time_ms = UINT64_MAX, .version = UINT32_MAX});
}

void owner_index_ssd(owner *o, const void *key, size_t klen, uint64_t time_ms, uint32_t version,
                     bool on, uint64_t ssd_len)
{
    replica_index_set_ssd(o->index, key, klen, (index_pid){.time_ms = time_ms, .version = version},
                          on, ssd_len);
}

void owner_index_writing(owner *o, uint64_t offset, uint64_t len)
{
    replica_index_forget_range(o->index, offset, len);
}

void owner_index_on_peer_write(void *ud, uint64_t offset, uint64_t len)
{
    owner_index_writing(ud, offset, len);
}
