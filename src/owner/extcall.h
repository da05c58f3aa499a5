/*
 * extcall.h - what the owner's external-request handlers share (extapi.c,
 * ext_put.c, ext_get.c, ext_batch_get.c, ext_batch_delete.c): the context of a request that waits on the master or
 * on a data-plane transfer, and the common checks and replies (extcall.c);
 * and the entry points of the put and get handlers, which extapi.c
 * dispatches to.
 */
#ifndef FX_OWNER_EXTCALL_H
#define FX_OWNER_EXTCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "owner/owner.h"

#define MAX_KEY_LEN 4096u
#define EXT_ACCESS_REPORT_MAX 256u /* keys in one ExternalAccessReport */

/* An external request waiting on the master or the data plane. */
typedef struct ext_call {
    owner *o;
    net_conn *conn; /* referenced */
    frame_hdr hdr;
    uint64_t t0_us; /* when the request arrived (owner_now_us) */
    char *key;
    size_t klen;
    uint64_t len;
    ext_put *put; /* ExternalPutTransferEnd: the put being finished (ext_put.c's to free) */
    uint8_t *value; /* ExternalPut: its value until written into the put's range */
    bool nowait;   /* ExternalPut: answer when PutDone is sent (fx_put_nowait) */
    bool answered; /* ... and it was: the PutDone answer is not forwarded */
} ext_call;

/* extcall.c */
/* A request context for the external on c (referenced until ext_call_free)
 * answering request h; key is copied. NULL when out of memory. */
ext_call *ext_call_new(owner *o, net_conn *c, const frame_hdr *h, const void *key, size_t klen);
/* Drops the connection's reference and frees x; x->put is left to ext_put.c. */
void ext_call_free(ext_call *x);
/* The detail an external gets when the master call for request `what`
 * ("PutStart", ...) failed with status (rpc_cb's status, or an error
 * owner_master_call returned): FX_EMASTER reads "MasterUnavailable: <what>:
 * ...". Written into buf (cap bytes, truncated). */
void ext_master_failure(char *buf, size_t cap, int status, const char *what);
/* Forwards a failed master call to the external: transport errors (worded by
 * ext_master_failure) and the master's own status with its detail. Returns
 * true when the call failed (the external, if still connected, has its
 * answer), false when resp is a success for the caller to use. */
bool ext_forward_failure(ext_call *x, int status, ProtobufCMessage *resp, const char *what);
/* Replies FX_EINVAL and returns false unless the key length is 1..MAX_KEY_LEN. */
bool ext_valid_key(net_conn *c, const frame_hdr *h, const ProtobufCBinaryData *key);

/* ext_put.c */
void ext_on_put_start(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalPutStartReq *req);
void ext_on_put_transfer_end(owner *o, ext_conn *ec, const frame_hdr *h,
                             Fx__ExternalPutTransferEndReq *req);
void ext_on_put(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalPutReq *req);
/* Revokes the puts a closed connection started and never ended. */
void ext_revoke_started_puts(owner *o, ext_conn *ec);

/* ext_get.c */
void ext_on_get(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalGetReq *req);
/* Gets key (klen 1..MAX_KEY_LEN, checked by the caller) for target, whose
 * answer function runs exactly once with the outcome: at once for a hit in
 * the owner-local cache or when out of memory, else when the key's pending
 * get (joined or started here) completes. target is copied (its conn, if
 * any, referenced meanwhile). */
void ext_get_key(owner *o, const void *key, size_t klen, const get_waiter *target);

/* ext_batch_get.c */
void ext_on_batch_get(owner *o, ext_conn *ec, const frame_hdr *h, Fx__ExternalBatchGetReq *req);

/* ext_batch_delete.c */
void ext_on_batch_delete(owner *o, ext_conn *ec, const frame_hdr *h, Fx__BatchDeleteReq *req);

#endif
