/*
 * index_sync.h - keeping the owners' replica indexes in step, and answering
 * a delete or an overwrite only once they are.
 *
 * Each owner keeps an index of the replicas it holds (src/owner/
 * replica_index.h), which a new master rebuilds its routes from. The master
 * queues index ops per owner (a replica published there; the key's versions
 * up to a put_id dropped; one version's memory evicted) and sends them with
 * the invalidation keys in one numbered batch per owner per loop iteration
 * (invalidation.c's flush); the owner applies a batch in order and answers
 * with its number.
 *
 * The ordering that keeps a restarted master from bringing back a deleted or
 * overwritten version (docs/decisions.md, "A cache may lose, never lie"): a
 * delete or a PutDone that replaced a version parks its answer (an
 * index_wait) until every other owner that held a replica of the dropped
 * version, or cached it, acknowledged the batch carrying the drop; a PutDone
 * whose replica lives on another owner also waits for that owner to
 * acknowledge the publish, and sends the drops of the version it replaced
 * only after that acknowledgement (master_index_wait_then): a crash between
 * the two must not leave the key in no owner's index. The requester's own owner applies the same
 * changes when it receives the answer, before its client hears of it. An
 * owner that leaves releases the waits on it (its replicas died with its
 * incarnation); one that does not acknowledge within INDEX_ACK_TIMEOUT_MS is
 * made to leave (server.c's sweep). Loop thread only.
 */
#ifndef FX_MASTER_INDEX_SYNC_H
#define FX_MASTER_INDEX_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "master/master.h"

#define INDEX_ACK_TIMEOUT_MS 10000u

/* Queue one op for mb's next batch (copies key; out of memory: logged, the
 * op is lost and the owner's index keeps a stale entry until recovery
 * compares put_ids). */
void master_index_publish(member *mb, const char *key, size_t klen, put_id pid, uint64_t offset,
                          uint64_t len);
void master_index_drop_upto(member *mb, const char *key, size_t klen, put_id pid);
void master_index_drop_memory(member *mb, const char *key, size_t klen, put_id pid);

/* Queues the drop of r's version (DROP_UPTO) to every live owner holding a
 * replica of it, and adds those owners and the ones that cached it (their
 * invalidation is queued by invalidation.c) to w when w is not NULL; skip
 * (the requester, which applies the change itself when the answer reaches
 * it) gets nothing. */
typedef struct index_wait index_wait;
void master_index_drop_route(master *m, route *r, index_wait *w, uint32_t skip);

/* Adds to w every owner but skip with a drop of key not yet acknowledged
 * (an eviction, an expired lease, a stale version found by recovery): the
 * key's delete or new version must not be answered while an owner may still
 * report an older one. */
void master_index_wait_key(master *m, index_wait *w, const char *key, size_t klen, uint32_t skip);

/* A reply that may have to wait. */
index_wait *master_index_wait_new(master *m);
/* w waits for mb's batch being filled now (forcing one to be sent). */
void master_index_wait_on(index_wait *w, member *mb);
/* Sends resp on c for h now when w waits for nothing (or w is NULL: out of
 * memory, answered at once), else parks it until the owners acknowledged.
 * Frees w. */
void master_index_wait_reply(master *m, index_wait *w, net_conn *c, const frame_hdr *h,
                             const ProtobufCMessage *resp);

/* A step that must wait for owners' acknowledgements before it runs rather
 * than a reply: fn(m, ctx, true) once every owner w waits for acknowledged
 * (or left; at once when there is none), fn(m, ctx, false) when the master
 * shuts down first (fn then only frees ctx). Frees w; with w NULL (out of
 * memory) fn runs at once. */
typedef void (*index_then_fn)(master *m, void *ctx, bool run);
void master_index_wait_then(master *m, index_wait *w, index_then_fn fn, void *ctx);

/* The ops queued for mb, as wire messages, moved to the caller (freed with
 * master_index_ops_free); the batch number they go with is mb->index_seq. */
Fx__IndexOp **master_index_take_ops(member *mb, size_t *n);
void master_index_ops_free(Fx__IndexOp **ops, size_t n);
/* mb's owner acknowledged batch seq: releases the replies waiting for it. */
void master_index_acked(master *m, member *mb, uint64_t seq);
/* node_id left: the replies waiting on it stop waiting. */
void master_index_member_gone(master *m, uint32_t node_id);
/* A member that left a batch a reply waits for unanswered past
 * INDEX_ACK_TIMEOUT_MS (the sweep makes it leave), or NULL. */
member *master_index_overdue(master *m);
/* Frees mb's queued ops and unacknowledged drops (mb is leaving). */
void master_index_ops_drop(member *mb);
/* At shutdown: the parked replies are dropped unanswered. */
void master_index_waits_free(master *m);

#endif
