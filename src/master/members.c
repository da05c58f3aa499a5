/*
 * members.c - the member table (see members.h).
 *
 * Members are hashed by node id in master.members; the table also keeps
 * n_ssd_members, the count behind placement's SSD rule, in step with what it
 * holds. The member struct itself (master.h) is created by Register and freed
 * by member-left; this file only files, finds and announces members. The
 * announcement carries each recipient the data-plane keys it shares with
 * every other member (pair_key below).
 */
#include "master/members.h"

#include <stdlib.h>
#include <string.h>

#include "common/le.h"
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

/* K_AB = HMAC(pair_root, lower (node_id u32, tomb_tag u64) || higher one),
 * little-endian: both members of a pair get the same key, and a new
 * incarnation of either gets a new one. */
static void pair_key(const master *m, const member *a, const member *b, auth_key *out)
{
    if (a->node_id > b->node_id) {
        const member *t = a;
        a = b;
        b = t;
    }
    uint8_t info[2 * 12];
    le_put(info, a->node_id, 4);
    le_put(info + 4, a->tomb_tag, 8);
    le_put(info + 12, b->node_id, 4);
    le_put(info + 16, b->tomb_tag, 8);
    auth_key_derive(&m->pair_root, info, sizeof info, out);
}

/* Each member's copy differs only in the pair keys: the one for member R
 * carries K_{R,X} in the entry of every other member X. */
void master_broadcast_members(master *m)
{
    size_t n = HASH_COUNT(m->members);
    Fx__MemberInfo *infos = calloc(n ? n : 1, sizeof *infos);
    Fx__MemberInfo **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    member **mbs = calloc(n ? n : 1, sizeof *mbs);
    auth_key *keys = calloc(n ? n : 1, sizeof *keys);
    uint8_t (*sealed)[AUTH_SEALED_KEY_LEN] = calloc(n ? n : 1, sizeof *sealed);
    if (!infos || !ptrs || !mbs || !keys || !sealed) {
        FX_LOG(ERROR, "out of memory sending the member table; owners keep the previous one");
        goto out;
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
        mbs[i] = mb;
        i++;
    }
    Fx__MemberTableReq req = FX__MEMBER_TABLE_REQ__INIT;
    req.n_members = i;
    req.members = ptrs;
    for (size_t r = 0; r < i; r++) {
        /* With the cluster secret, each key travels sealed under the session
         * key of R's connection: an observer of the link learns none. */
        auth_key session;
        bool seal = net_conn_session_key(mbs[r]->conn, &session);
        for (size_t x = 0; x < i; x++) {
            if (x == r) {
                infos[x].pair_key = (ProtobufCBinaryData){0};
                continue;
            }
            pair_key(m, mbs[r], mbs[x], &keys[x]);
            if (seal) {
                uint8_t ad[AUTH_MEMBER_AD_LEN];
                auth_member_ad(mbs[x]->node_id, mbs[x]->tomb_tag, ad);
                auth_seal(&session, keys[x].bytes, AUTH_KEY_LEN, ad, sizeof ad, sealed[x]);
                infos[x].pair_key = (ProtobufCBinaryData){.len = AUTH_SEALED_KEY_LEN,
                                                          .data = sealed[x]};
            } else {
                infos[x].pair_key = (ProtobufCBinaryData){.len = AUTH_KEY_LEN,
                                                          .data = keys[x].bytes};
            }
        }
        auth_key_wipe(&session);
        net_send(mbs[r]->conn, MSG_MEMBER_TABLE, FRAME_ONEWAY, 0, &req.base);
    }
out:
    for (size_t k = 0; keys && k < n; k++)
        auth_key_wipe(&keys[k]);
    free(keys);
    if (sealed)
        memset(sealed, 0, (n ? n : 1) * sizeof *sealed);
    free(sealed);
    free(mbs);
    free(infos);
    free(ptrs);
}
