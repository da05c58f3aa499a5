/*
 * inflight.c - the in-flight put and get tables (see inflight.h).
 *
 * Puts are hashed by (put_id, key) and counted per key (inflight_keys, for
 * reject_if_inflight_same_key); gets are hashed by get_id. Each table also
 * keeps its entries oldest first in a list, and since every entry gets the
 * same TTL, the sweep only looks at the heads of those lists.
 */
#include "master/inflight.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/memdup.h"
#include "fluxon/fluxon.h"
#include "master/members.h"

/* ---- puts ------------------------------------------------------------------ */

/* Table key of an in-flight put: put_id then the key bytes. */
static char *put_table_key(const void *key, size_t klen, put_id pid, size_t *out_len)
{
    size_t n = sizeof pid.time_ms + sizeof pid.version + klen;
    char *k = malloc(n);
    if (!k)
        return NULL;
    memcpy(k, &pid.time_ms, sizeof pid.time_ms);
    memcpy(k + sizeof pid.time_ms, &pid.version, sizeof pid.version);
    if (klen) /* a grant (put_grant.c) has no key */
        memcpy(k + sizeof pid.time_ms + sizeof pid.version, key, klen);
    *out_len = n;
    return k;
}

/* Counts one more (delta 1) or one less (-1) in-flight put of key. Returns
 * the count before the change, or -ENOMEM (nothing counted). */
static int count_inflight_key(master *m, const char *key, size_t klen, int delta)
{
    if (klen == 0)
        return 0; /* a grant: no key to count */
    inflight_key *k;
    HASH_FIND(hh, m->inflight_keys, key, klen, k);
    if (!k) {
        if (delta < 0)
            return 0;
        k = calloc(1, sizeof *k);
        if (!k || !(k->key = fx_memdup(key, klen))) {
            free(k);
            return -ENOMEM;
        }
        k->klen = klen;
        HASH_ADD_KEYPTR(hh, m->inflight_keys, k->key, k->klen, k);
    }
    int before = (int)k->puts;
    k->puts += (uint32_t)delta;
    if (k->puts == 0) {
        HASH_DEL(m->inflight_keys, k);
        free(k->key);
        free(k);
    }
    return before;
}

inflight_put *master_inflight_put_add(master *m, const void *key, size_t klen, put_id pid)
{
    inflight_put *p = calloc(1, sizeof *p);
    if (p)
        p->hkey = put_table_key(key, klen, pid, &p->hklen);
    if (!p || !p->hkey || count_inflight_key(m, key, klen, 1) < 0) {
        if (p)
            free(p->hkey);
        free(p);
        return NULL;
    }
    p->key = p->hkey + sizeof pid.time_ms + sizeof pid.version;
    p->klen = klen;
    p->pid = pid;
    p->deadline_ms = master_now_ms(m) + m->cfg.inflight_ttl_ms;
    HASH_ADD_KEYPTR(hh, m->inflight_puts, p->hkey, p->hklen, p);
    DL_APPEND(m->inflight_put_order, p);
    return p;
}

inflight_put *master_inflight_put_find(master *m, const void *key, size_t klen,
                                       const Fx__PutId *wire)
{
    if (!wire)
        return NULL;
    put_id pid = {.time_ms = wire->time_ms, .version = wire->version};
    size_t hklen;
    char *hk = put_table_key(key, klen, pid, &hklen);
    if (!hk)
        return NULL;
    inflight_put *p;
    HASH_FIND(hh, m->inflight_puts, hk, hklen, p);
    free(hk);
    return p;
}

bool master_key_in_flight(master *m, const void *key, size_t klen)
{
    inflight_key *k;
    HASH_FIND(hh, m->inflight_keys, key, klen, k);
    return k != NULL;
}

void master_inflight_put_free(master *m, inflight_put *p)
{
    if (p->klen == 0 && p->target) /* a grant that goes unused */
        p->target->space->granted -= allocation_capacity(p->target);
    count_inflight_key(m, p->key, p->klen, -1);
    HASH_DEL(m->inflight_puts, p);
    DL_DELETE(m->inflight_put_order, p);
    allocation_unref(p->target);
    allocation_unref(p->source);
    free(p->hkey);
    free(p);
}

/* ---- gets ------------------------------------------------------------------ */

inflight_get *master_inflight_get_add(master *m)
{
    inflight_get *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->get_id = m->next_get_id++;
    g->deadline_ms = master_now_ms(m) + m->cfg.inflight_ttl_ms;
    HASH_ADD(hh, m->inflight_gets, get_id, sizeof g->get_id, g);
    DL_APPEND(m->inflight_get_order, g);
    return g;
}

inflight_get *master_inflight_get_find(master *m, uint64_t get_id)
{
    inflight_get *g;
    HASH_FIND(hh, m->inflight_gets, &get_id, sizeof get_id, g);
    return g;
}

void master_inflight_get_free(master *m, inflight_get *g)
{
    if (g->stage_reply) { /* a remote refill that never completed */
        if (net_conn_is_open(g->stage_reply))
            net_reply_error(g->stage_reply, &g->stage_hdr, FX_ECONN,
                            "the SSD owner's stage read did not complete (owner left or expired)");
        net_conn_unref(g->stage_reply);
        g->stage_reply = NULL;
    }
    if (g->holds_durable_slot && g->route->durable_slots_used)
        g->route->durable_slots_used--;
    if (g->target && g->mode == FX__GET_MODE__DURABLE_REPLICA)
        allocation_unreserve(g->target);
    HASH_DEL(m->inflight_gets, g);
    DL_DELETE(m->inflight_get_order, g);
    allocation_unref(g->target);
    allocation_unref(g->source);
    route_unref(g->route);
    free(g);
}

/* ---- both ------------------------------------------------------------------ */

void master_sweep_inflight(master *m)
{
    uint64_t now = master_now_ms(m);
    while (m->inflight_put_order && m->inflight_put_order->deadline_ms <= now) {
        if (m->inflight_put_order->klen)
            FX_LOG(WARN, "in-flight put of a %zu-byte key expired after %llu ms",
                   m->inflight_put_order->klen, (unsigned long long)m->cfg.inflight_ttl_ms);
        else /* normal when its owner lost our link (it forgets its pool) */
            FX_LOG(INFO, "an unused put grant of node %u expired after %llu ms",
                   m->inflight_put_order->req_node, (unsigned long long)m->cfg.inflight_ttl_ms);
        master_inflight_put_free(m, m->inflight_put_order);
    }
    while (m->inflight_get_order && m->inflight_get_order->deadline_ms <= now) {
        FX_LOG(WARN, "in-flight get %llu expired", (unsigned long long)m->inflight_get_order->get_id);
        master_inflight_get_free(m, m->inflight_get_order);
    }
}

void master_inflight_drop_node(master *m, uint32_t node_id)
{
    inflight_put *p, *ptmp;
    DL_FOREACH_SAFE(m->inflight_put_order, p, ptmp)
        if (p->req_node == node_id || p->target_node == node_id)
            master_inflight_put_free(m, p);
    inflight_get *g, *gtmp;
    DL_FOREACH_SAFE(m->inflight_get_order, g, gtmp)
        if (g->req_node == node_id || g->src_node == node_id)
            master_inflight_get_free(m, g);
}
