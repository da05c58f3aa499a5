/*
 * members.c - the member table (see members.h).
 *
 * Members are hashed by node id in master.members; the table also keeps
 * n_ssd_members, the count behind placement's SSD rule, in step with what it
 * holds. The member struct itself (master.h) is created by Register and freed
 * by member-left; this file only files, finds and announces members.
 */
#include "master/members.h"

#include <stdlib.h>

#include "common/log.h"
#include "fluxon/fluxon.h"

uint64_t master_now_ms(master *m)
{
    return uv_now(m->loop);
}

member *master_member(master *m, uint32_t node_id)
{
    member *mb;
    HASH_FIND(hh, m->members, &node_id, sizeof node_id, mb);
    return mb;
}

bool master_tomb_live(master *m, uint32_t node_id, uint64_t tomb_tag)
{
    member *mb = master_member(m, node_id);
    return mb && mb->tomb_tag == tomb_tag;
}

bool master_any_ssd(master *m)
{
    return m->n_ssd_members > 0;
}

void master_members_add(master *m, member *mb)
{
    HASH_ADD(hh, m->members, node_id, sizeof mb->node_id, mb);
    if (mb->kv_ssd_storage)
        m->n_ssd_members++;
}

void master_members_remove(master *m, member *mb)
{
    HASH_DEL(m->members, mb);
    if (mb->kv_ssd_storage)
        m->n_ssd_members--;
}

void master_broadcast_members(master *m)
{
    size_t n = HASH_COUNT(m->members);
    Fx__MemberInfo *infos = calloc(n ? n : 1, sizeof *infos);
    Fx__MemberInfo **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    if (!infos || !ptrs) {
        FX_LOG(ERROR, "out of memory sending the member table; owners keep the previous one");
        free(infos);
        free(ptrs);
        return;
    }
    size_t i = 0;
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp) {
        fx__member_info__init(&infos[i]);
        infos[i].node_id = mb->node_id;
        infos[i].tomb_tag = mb->tomb_tag;
        infos[i].name = mb->name;
        infos[i].data_addr = mb->data_addr;
        infos[i].kv_ssd_storage = mb->kv_ssd_storage;
        ptrs[i] = &infos[i];
        i++;
    }
    Fx__MemberTableReq req = FX__MEMBER_TABLE_REQ__INIT;
    req.n_members = i;
    req.members = ptrs;
    HASH_ITER(hh, m->members, mb, tmp)
        net_send(mb->conn, MSG_MEMBER_TABLE, FRAME_ONEWAY, 0, &req.base);
    free(infos);
    free(ptrs);
}
