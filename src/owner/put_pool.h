/*
 * put_pool.h - the owner's pool of put grants (put_pool.c): ranges and grant
 * ids the master gave this owner in advance, so that a small put starts
 * without asking it.
 */
#ifndef FX_OWNER_PUT_POOL_H
#define FX_OWNER_PUT_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "owner/owner.h"

/* One grant: a range of this segment the master holds for a put to come,
 * named by a grant id (a put_id). */
typedef struct put_grant {
    uint64_t time_ms;
    uint32_t version;
    uint64_t offset, len;
    uint64_t usable_until_ms; /* loop time after which it goes back unused */
} put_grant;

/* The pool, empty, within cfg.put_pool_size bytes. 0 or FX_ENOMEM. */
int owner_put_pool_init(owner *o);
void owner_put_pool_free(owner *o);
/* A grant for a len-byte value in *out, or false (no pool for that size, none
 * held now, or no master): the put goes through PutStart. Asks the master
 * for more when the size's grants run low. */
bool owner_put_pool_take(owner *o, uint64_t len, put_grant *out);
/* Gives an unused grant back (PutRevoke without a key). */
void owner_put_pool_revoke(owner *o, const put_grant *g);
/* From the heartbeat: grants past their use-by time go back. */
void owner_put_pool_tick(owner *o);
/* The master link is lost: the grants held are forgotten. */
void owner_put_pool_master_lost(owner *o);

#endif
