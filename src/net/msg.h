/*
 * msg.h - message type codes and the protobuf-c body codec.
 *
 * A frame's `type` names a request/response pair of proto/fluxon.proto; the
 * FRAME_RESPONSE flag picks the half. msg_decode() refuses unknown types and
 * malformed bodies, so a handler only ever sees a well-formed message of the
 * type it registered for. Every Resp message has `status` and `detail` as its
 * first two fields; msg_status() and msg_new_error() use that.
 */
#ifndef FX_NET_MSG_H
#define FX_NET_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fluxon.pb-c.h"
#include "net/frame.h"

enum msg_type {
    MSG_REGISTER = 1,
    MSG_HEARTBEAT,
    MSG_PUT_START,
    MSG_PUT_DONE,
    MSG_PUT_REVOKE,
    MSG_GET_START,
    MSG_GET_DONE,
    MSG_GET_REVOKE,
    MSG_DELETE,
    MSG_BATCH_DELETE_ACK,
    MSG_BATCH_DELETE_CLIENT_KV_META_CACHE,
    MSG_STAT,
    MSG_MEMBER_TABLE,
    MSG_ROUTE_INFO,
    MSG_SSD_REPLICA_PERSIST,
    MSG_SSD_REPLICA_COMMIT,
    MSG_BATCH_SSD_REPLICA_EVICT,
    MSG_SSD_STAGE_READ,
    MSG_KEY_INFO,
    MSG_LEASE,
    MSG_ACCESS_REPORT,
    MSG_RECOVERY_REPORT,
    MSG_BATCH_KEY_INFO,
    MSG_BATCH_DELETE,
    MSG_PUT_GRANT,
    MSG_EXT_HELLO = 32,
    MSG_EXT_PUT_START,
    MSG_EXT_PUT_TRANSFER_END,
    MSG_EXT_GET,
    MSG_EXT_DELETE,
    MSG_EXT_DELETE_ACK,
    MSG_EXT_INVALIDATE_WEAK_INDEX,
    MSG_EXT_PING,
    MSG_EXT_STAT,
    MSG_EXT_KEY_INFO,
    MSG_EXT_LEASE,
    MSG_EXT_BATCH_EXISTS,
    MSG_EXT_BATCH_GET,
    MSG_EXT_BATCH_DELETE,
    MSG_EXT_PUT,
    MSG_EXT_ACCESS_REPORT,
    MSG_TYPE_END
};

/* The descriptor of type's request or response body; NULL for unknown types. */
const ProtobufCMessageDescriptor *msg_descriptor(uint16_t type, bool response);
/* "PutStart", "ExternalGet", ... ; "Unknown" for unknown types. */
const char *msg_name(uint16_t type);

/* Decodes a body. Returns a message owned by the caller (free with msg_free),
 * or NULL when the type is unknown or the body is malformed. */
ProtobufCMessage *msg_decode(uint16_t type, bool response, const uint8_t *body, size_t len);
void msg_free(ProtobufCMessage *m);

/* Encodes header + body into one malloc'd buffer the caller frees. The body's
 * descriptor must be the one of (type, flags & FRAME_RESPONSE). Returns NULL on
 * a mismatch, an oversized body or out of memory. */
uint8_t *msg_encode(uint16_t type, uint16_t flags, uint64_t req_id, const ProtobufCMessage *m,
                    size_t *out_len);

/* The `status` field of a Resp message (0 when the message has none). */
int32_t msg_status(const ProtobufCMessage *m);
/* The `detail` field of a Resp message ("" when empty or absent). */
const char *msg_detail(const ProtobufCMessage *m);

/* A Resp of the given descriptor with only status and detail set (detail is
 * copied). Free with msg_free_built(). NULL when out of memory. */
ProtobufCMessage *msg_new_error(const ProtobufCMessageDescriptor *d, int32_t status,
                                const char *detail);
/* Frees a message built by msg_new_error. */
void msg_free_built(ProtobufCMessage *m);

#endif
