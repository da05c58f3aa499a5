/*
 * inflight.h - the in-flight tables: puts between PutStart and
 * PutDone/PutRevoke, gets between GetStart and GetDone/GetRevoke.
 *
 * A table, not a call flow: put.c and get.c create and complete entries,
 * member-left drops a node's entries, server.c's sweep expires them after
 * inflight_ttl. An entry holds references (target and source allocations, a
 * get's route) that go when the entry is freed. Loop thread only.
 */
#ifndef FX_MASTER_INFLIGHT_H
#define FX_MASTER_INFLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "master/master.h"

/* A put between PutStart and PutDone/PutRevoke, or a grant of the owner's
 * put pool (put_grant.c): klen 0, target its range, until PutDone names it. */
struct inflight_put {
    char *hkey; /* (put_id, key) bytes: the table key */
    size_t hklen;
    const char *key; /* points into hkey */
    size_t klen;
    put_id pid;
    uint64_t len;
    uint32_t req_node;
    allocation *target;
    allocation *source; /* NULL when the source is the target (local placement) */
    uint32_t target_node;
    uint64_t target_tomb; /* the target owner's incarnation at PutStart */
    bool persist_to_ssd;
    uint64_t lease_id;      /* PutOptions: bind the route to this lease (0: none) */
    bool reject_if_exists;  /* PutOptions: checked again at PutDone */
    uint64_t deadline_ms;
    UT_hash_handle hh;
    struct inflight_put *prev, *next;
};

/* How many puts of one key are in flight (reject_if_inflight_same_key). */
struct inflight_key {
    char *key;
    size_t klen;
    uint32_t puts;
    UT_hash_handle hh;
};

enum get_source_kind { GET_SOURCE_MEMORY = 1, GET_SOURCE_SSD = 2 };

struct inflight_get {
    uint64_t get_id;
    put_id pid;
    uint32_t src_node;
    uint32_t req_node;
    allocation *target;
    allocation *source; /* memory source or remote SSD staging kept alive */
    route *route;
    int mode; /* FX__GET_MODE__* */
    bool holds_durable_slot; /* released when the entry goes */
    int source_kind;
    uint64_t deadline_ms;
    /* Remote SSD refill: the requester's GetStart is answered when the SSD
     * owner's stage read completes (or fails). */
    net_conn *stage_reply; /* referenced; NULL otherwise */
    frame_hdr stage_hdr;
    int attempt; /* GetStart rounds of this request so far */
    UT_hash_handle hh;
    struct inflight_get *prev, *next;
};

/* ---- puts ------------------------------------------------------------------ */

/* A new in-flight put of key under pid, already in the table (key, klen, pid
 * and the TTL deadline set, everything else zero) and counted for its key.
 * The caller fills in the rest before the loop turns. NULL when out of
 * memory (nothing changed). */
inflight_put *master_inflight_put_add(master *m, const void *key, size_t klen, put_id pid);
/* The in-flight put of key under wire's put_id, or NULL (also for wire NULL
 * or out of memory). */
inflight_put *master_inflight_put_find(master *m, const void *key, size_t klen,
                                       const Fx__PutId *wire);
/* True while some put of key is between PutStart and PutDone/PutRevoke. */
bool master_key_in_flight(master *m, const void *key, size_t klen);
/* Takes p out of the table and frees it with its references. */
void master_inflight_put_free(master *m, inflight_put *p);

/* ---- gets ------------------------------------------------------------------ */

/* A new in-flight get with a fresh get_id, already in the table (get_id and
 * the TTL deadline set, everything else zero). The caller fills in the rest,
 * route included, before the loop turns. NULL when out of memory (no id used). */
inflight_get *master_inflight_get_add(master *m);
/* The in-flight get get_id, or NULL. */
inflight_get *master_inflight_get_find(master *m, uint64_t get_id);
/* Takes g out of the table and frees it with its references: a remote refill
 * still waiting is answered ECONN, a durable slot and a reservation are
 * released. */
void master_inflight_get_free(master *m, inflight_get *g);

/* ---- both ------------------------------------------------------------------ */

/* Frees the puts and gets whose TTL (inflight_ttl) has passed, oldest first. */
void master_sweep_inflight(master *m);
/* Frees every entry that node_id requested or that targets or reads it. */
void master_inflight_drop_node(master *m, uint32_t node_id);

#endif
