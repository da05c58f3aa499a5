/*
 * placement.c - the placement policies (see placement.h).
 *
 * Candidates are the live members whose largest free range holds the value
 * (rounded up to the allocation alignment), and, when any live member has an
 * SSD tier, only those with one (spec 000 §3: a value is placed where it can
 * be persisted). Random choice is uniform over the candidates in one pass
 * (reservoir sampling), so no candidate list is built.
 */
#include "master/placement.h"

#include <stdlib.h>

#include "master/master_config.h"
#include "master/master.h"
#include "master/members.h"

bool placement_has_room(const member *mb, uint64_t len)
{
    uint64_t need = len ? (len + ALLOC_ALIGN - 1) / ALLOC_ALIGN * ALLOC_ALIGN : ALLOC_ALIGN;
    return mb->ready && need >= len && range_alloc_largest_free(mb->space->ra) >= need;
}

/* A member that may receive a value at all (the SSD rule). */
static bool eligible(master *m, const member *mb)
{
    return mb->ready && (mb->kv_ssd_storage || !master_any_ssd(m));
}

/* Uniform choice among the eligible live members with room, skipping `skip`
 * (may be NULL). */
static member *random_with_room(master *m, const member *skip, uint64_t len)
{
    member *pick = NULL, *mb, *tmp;
    unsigned seen = 0;
    bool ssd_only = master_any_ssd(m);
    HASH_ITER(hh, m->members, mb, tmp) {
        if (mb == skip || (ssd_only && !mb->kv_ssd_storage) || !placement_has_room(mb, len))
            continue;
        if ((unsigned)random() % ++seen == 0)
            pick = mb;
    }
    return pick;
}

static member *choose_random(master *m, member *requester, uint64_t len)
{
    (void)requester;
    return random_with_room(m, NULL, len);
}

static member *choose_local(master *m, member *requester, uint64_t len)
{
    if (eligible(m, requester) && placement_has_room(requester, len))
        return requester;
    return random_with_room(m, requester, len);
}

static member *choose_remote(master *m, member *requester, uint64_t len)
{
    member *other = random_with_room(m, requester, len);
    if (other)
        return other;
    return eligible(m, requester) && placement_has_room(requester, len) ? requester : NULL;
}

static const placement_policy policies[] = {
    [PLACEMENT_RANDOM] = {"random", choose_random},
    [PLACEMENT_LOCAL] = {"local", choose_local},
    [PLACEMENT_REMOTE] = {"remote", choose_remote},
};

bool placement_keeps_local(master *m, member *requester)
{
    if (!eligible(m, requester))
        return false;
    if (m->placement == &policies[PLACEMENT_LOCAL])
        return true;
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp) {
        if (mb != requester && eligible(m, mb))
            return false;
    }
    return true;
}

member *placement_fallback(master *m, member *requester)
{
    if (eligible(m, requester))
        return requester;
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp)
        if (eligible(m, mb))
            return mb;
    return NULL;
}

const placement_policy *placement_policy_for(int kind)
{
    if (kind < 0 || (size_t)kind >= sizeof policies / sizeof policies[0])
        return &policies[PLACEMENT_RANDOM];
    return &policies[kind];
}
