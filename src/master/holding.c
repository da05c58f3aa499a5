/*
 * holding.c - get_holding: the master-side reference behind every holder.
 *
 * GetDone files the requester's target under a fresh holder id; the owner's
 * BatchDeleteAck (sent when its last local reference goes) removes it, and
 * member-left removes all of a node's holdings. Only entries of the sending
 * node are touched, so one owner cannot release another's holders.
 */
#include "master/master.h"

#include <stdlib.h>

#include "common/log.h"

uint64_t master_holding_add(master *m, uint32_t node_id, allocation *target)
{
    holding *hd = malloc(sizeof *hd);
    if (!hd)
        return 0;
    hd->holder_id = m->next_holder_id++;
    hd->node_id = node_id;
    hd->target = target;
    HASH_ADD(hh, m->holdings, holder_id, sizeof hd->holder_id, hd);
    return hd->holder_id;
}

static void holding_free(master *m, holding *hd)
{
    HASH_DEL(m->holdings, hd);
    allocation_unref(hd->target);
    free(hd);
}

void master_on_batch_delete_ack(master *m, member *mb, net_conn *c, const frame_hdr *h,
                                Fx__BatchDeleteAckReq *req)
{
    size_t unknown = 0, freed = 0;
    for (size_t i = 0; i < req->n_holder_ids; i++) {
        holding *hd;
        HASH_FIND(hh, m->holdings, &req->holder_ids[i], sizeof req->holder_ids[i], hd);
        if (hd && hd->node_id == mb->node_id) {
            holding_free(m, hd);
            freed++;
        } else {
            unknown++;
        }
    }
    if (freed)
        master_alloc_wait_kick(m);
    if (unknown)
        FX_LOG(WARN, "member %u acked %zu unknown holder(s)", mb->node_id, unknown);
    net_reply(c, h, &((Fx__BatchDeleteAckResp)FX__BATCH_DELETE_ACK_RESP__INIT).base);
}

void master_holdings_drop_node(master *m, uint32_t node_id)
{
    holding *hd, *tmp;
    HASH_ITER(hh, m->holdings, hd, tmp)
        if (hd->node_id == node_id)
            holding_free(m, hd);
}
