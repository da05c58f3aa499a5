/*
 * invalidation.h - the asynchronous invalidation broadcast: telling the
 * owners that cached a version that it is gone (BatchDeleteClientKvMetaCache).
 *
 * Delete, overwrites (PutDone), eviction (capacity.c) and lease expiry all
 * queue here; keys are batched per owner and flushed once per loop iteration
 * (server.c's check handle), after the responses of that iteration were
 * queued, so an owner always sees the response before the invalidation it
 * causes. The pending keys live in each member (master.h). Loop thread only.
 */
#ifndef FX_MASTER_INVALIDATION_H
#define FX_MASTER_INVALIDATION_H

#include <stddef.h>

#include "master/master.h"

/* Queues an invalidation of key for one owner (copies key). Out of memory
 * drops this key's invalidation, nothing else. */
void master_queue_invalidation(member *mb, const char *key, size_t klen);
/* Queues the invalidation of old's key for every live owner that cached it.
 * Does not take or drop a reference to old. */
void master_invalidate_route(master *m, route *old);
/* Sends each member's queued keys in one batch and empties the queues. */
void master_flush_invalidations(master *m);
/* Frees mb's queued keys without sending them (mb is leaving). */
void master_invalidations_free(member *mb);

#endif
