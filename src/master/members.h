/*
 * members.h - the member table: the live owners by node id, their
 * incarnations (tomb tags), whether any has an SSD tier, and the master's
 * clock.
 *
 * A table, not a call flow: Register (register.c) adds members and
 * member-left (member_left.c) removes them; every flow looks them up here.
 * Nothing here calls back into a flow. Loop thread only.
 */
#ifndef FX_MASTER_MEMBERS_H
#define FX_MASTER_MEMBERS_H

#include <stdbool.h>
#include <stdint.h>

#include "master/master.h"

/* The loop's monotonic clock in ms (uv_now): heartbeats, leases and TTLs. */
uint64_t master_now_ms(master *m);

/* The live member node_id, or NULL. */
member *master_member(master *m, uint32_t node_id);
/* True when node_id is live with incarnation tomb_tag. */
bool master_tomb_live(master *m, uint32_t node_id, uint64_t tomb_tag);
/* True when some live member has an SSD tier. */
bool master_any_ssd(master *m);

/* Enters mb (node_id set, not in the table) into the table; the table
 * references it until master_members_remove. */
void master_members_add(master *m, member *mb);
/* Takes mb out of the table; the caller then owns and frees it. */
void master_members_remove(master *m, member *mb);

/* Sends the live member table to every member (MemberTable, one-way), each
 * its own copy carrying the data-plane pair keys it shares with the others
 * (MemberInfo.pair_key). An out-of-memory failure is logged; owners keep the
 * previous table. */
void master_broadcast_members(master *m);

#endif
