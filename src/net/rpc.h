/*
 * rpc.h - requests with responses over one net_conn: request ids, matching and
 * per-request timeouts.
 *
 * rpc_call() sends a request with a fresh req_id and remembers its callback;
 * the connection's on_frame hands responses to rpc_on_response(), which
 * matches them by req_id. A request that gets no response within its timeout
 * completes with -FX_ETIMEDOUT semantics (status FX_ETIMEDOUT); when the
 * connection closes, every pending request completes with FX_ECONN. Each
 * callback runs exactly once, on the loop thread.
 */
#ifndef FX_NET_RPC_H
#define FX_NET_RPC_H

#include <stdint.h>
#include <uv.h>

#include "net/conn.h"

/* status is 0 with resp set (resp's own status field may still be an error),
 * or FX_ETIMEDOUT / FX_ECONN / FX_EPROTO with resp NULL. resp is freed after
 * the callback returns. */
typedef void (*rpc_cb)(int status, ProtobufCMessage *resp, void *ud);

typedef struct rpc_client rpc_client;

rpc_client *rpc_client_new(uv_loop_t *loop, net_conn *conn);
/* Completes every pending request with FX_ECONN and frees the client. */
void rpc_client_free(rpc_client *r);

/* Sends type's request m and calls cb with the response. Returns 0, or a
 * negative error (cb is then not called). */
int rpc_call(rpc_client *r, uint16_t type, const ProtobufCMessage *m, uint32_t timeout_ms, rpc_cb cb,
             void *ud);
/* Sends a one-way request (no response expected). */
int rpc_notify(rpc_client *r, uint16_t type, const ProtobufCMessage *m);

/* Feeds a response frame; returns false when no request waits for it. */
bool rpc_on_response(rpc_client *r, const frame_hdr *h, ProtobufCMessage *m);
/* Completes every pending request with status (used when the link drops). */
void rpc_fail_all(rpc_client *r, int status);
/* Number of requests waiting for a response. */
size_t rpc_pending(const rpc_client *r);

#endif
