/*
 * placement.h - where a put's target goes: the placement policy interface.
 *
 * A policy picks, among the live members whose allocator can hold the value,
 * the owner that receives the memory replica. The spec's policy is random
 * among those candidates (RandomPlacementPolicy); "local" keeps a value on the
 * requester's owner when it has room (no push, the external writes straight
 * into the replica) and "remote" prefers any other owner (it spreads load, and
 * benchmarks use it to measure the push path). A new policy is one more
 * `placement_policy` with a `choose` function.
 */
#ifndef FX_MASTER_PLACEMENT_H
#define FX_MASTER_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

struct master;
struct member;

typedef struct placement_policy {
    const char *name;
    /* The target owner for len bytes requested through `requester`, or NULL
     * when no live owner has room. */
    struct member *(*choose)(struct master *m, struct member *requester, uint64_t len);
} placement_policy;

/* The policy for a config's `placement` value (enum placement_policy_kind). */
const placement_policy *placement_policy_for(int kind);

/* Where to try making room when no owner has it now: the requester when it
 * may receive values, else the first member that may (SSD rule). */
struct member *placement_fallback(struct master *m, struct member *requester);

/* True when every value requested through `requester` goes to `requester`
 * (while it has room): placement local, or no other live owner may take
 * values. The condition of a put pool (put_grant.c). */
bool placement_keeps_local(struct master *m, struct member *requester);

/* True when mb's allocator has one free range that holds len bytes. */
bool placement_has_room(const struct member *mb, uint64_t len);

#endif
