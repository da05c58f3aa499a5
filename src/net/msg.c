/*
 * msg.c - the table from type codes to protobuf-c descriptors, and the body
 * codec on top of protobuf-c (see msg.h).
 */
#include "net/msg.h"

#include <stdlib.h>
#include <string.h>

typedef struct msg_entry {
    const char *name;
    const ProtobufCMessageDescriptor *req;
    const ProtobufCMessageDescriptor *resp;
} msg_entry;

#define ENTRY(code, nm, base) \
    [code] = {nm, &fx__##base##_req__descriptor, &fx__##base##_resp__descriptor}

static const msg_entry msg_table[MSG_TYPE_END] = {
    ENTRY(MSG_REGISTER, "Register", register),
    ENTRY(MSG_HEARTBEAT, "Heartbeat", heartbeat),
    ENTRY(MSG_PUT_START, "PutStart", put_start),
    ENTRY(MSG_PUT_DONE, "PutDone", put_done),
    ENTRY(MSG_PUT_REVOKE, "PutRevoke", put_revoke),
    ENTRY(MSG_GET_START, "GetStart", get_start),
    ENTRY(MSG_GET_DONE, "GetDone", get_done),
    ENTRY(MSG_GET_REVOKE, "GetRevoke", get_revoke),
    ENTRY(MSG_DELETE, "Delete", delete),
    ENTRY(MSG_BATCH_DELETE_ACK, "BatchDeleteAck", batch_delete_ack),
    ENTRY(MSG_BATCH_DELETE_CLIENT_KV_META_CACHE, "BatchDeleteClientKvMetaCache",
          batch_delete_client_kv_meta_cache),
    ENTRY(MSG_STAT, "Stat", stat),
    ENTRY(MSG_MEMBER_TABLE, "MemberTable", member_table),
    ENTRY(MSG_ROUTE_INFO, "RouteInfo", route_info),
    ENTRY(MSG_SSD_REPLICA_PERSIST, "SsdReplicaPersist", ssd_replica_persist),
    ENTRY(MSG_SSD_REPLICA_COMMIT, "SsdReplicaCommit", ssd_replica_commit),
    ENTRY(MSG_BATCH_SSD_REPLICA_EVICT, "BatchSsdReplicaEvict", batch_ssd_replica_evict),
    ENTRY(MSG_SSD_STAGE_READ, "SsdStageRead", ssd_stage_read),
    ENTRY(MSG_KEY_INFO, "KeyInfo", key_info),
    ENTRY(MSG_LEASE, "Lease", lease),
    ENTRY(MSG_ACCESS_REPORT, "AccessReport", access_report),
    ENTRY(MSG_RECOVERY_REPORT, "RecoveryReport", recovery_report),
    ENTRY(MSG_BATCH_KEY_INFO, "BatchKeyInfo", batch_key_info),
    ENTRY(MSG_BATCH_DELETE, "BatchDelete", batch_delete),
    ENTRY(MSG_PUT_GRANT, "PutGrant", put_grant),
    ENTRY(MSG_EXT_HELLO, "ExternalHello", external_hello),
    ENTRY(MSG_EXT_PUT_START, "ExternalPutStart", external_put_start),
    ENTRY(MSG_EXT_PUT_TRANSFER_END, "ExternalPutTransferEnd", external_put_transfer_end),
    ENTRY(MSG_EXT_GET, "ExternalGet", external_get),
    ENTRY(MSG_EXT_DELETE, "ExternalDelete", external_delete),
    ENTRY(MSG_EXT_DELETE_ACK, "ExternalDeleteAck", external_delete_ack),
    ENTRY(MSG_EXT_INVALIDATE_WEAK_INDEX, "ExternalInvalidateWeakIndex",
          external_invalidate_weak_index),
    ENTRY(MSG_EXT_PING, "ExternalPing", external_ping),
    [MSG_EXT_STAT] = {"ExternalStat", &fx__stat_req__descriptor, &fx__stat_resp__descriptor},
    [MSG_EXT_KEY_INFO] = {"ExternalKeyInfo", &fx__key_info_req__descriptor,
                          &fx__key_info_resp__descriptor},
    [MSG_EXT_LEASE] = {"ExternalLease", &fx__lease_req__descriptor, &fx__lease_resp__descriptor},
    [MSG_EXT_BATCH_EXISTS] = {"ExternalBatchExists", &fx__batch_key_info_req__descriptor,
                              &fx__batch_key_info_resp__descriptor},
    ENTRY(MSG_EXT_BATCH_GET, "ExternalBatchGet", external_batch_get),
    [MSG_EXT_BATCH_DELETE] = {"ExternalBatchDelete", &fx__batch_delete_req__descriptor,
                              &fx__batch_delete_resp__descriptor},
    ENTRY(MSG_EXT_PUT, "ExternalPut", external_put),
    ENTRY(MSG_EXT_ACCESS_REPORT, "ExternalAccessReport", external_access_report),
};

const ProtobufCMessageDescriptor *msg_descriptor(uint16_t type, bool response)
{
    if (type >= MSG_TYPE_END || !msg_table[type].name)
        return NULL;
    return response ? msg_table[type].resp : msg_table[type].req;
}

const char *msg_name(uint16_t type)
{
    if (type >= MSG_TYPE_END || !msg_table[type].name)
        return "Unknown";
    return msg_table[type].name;
}

/* protobuf-c refuses field number 0 only when the first byte of the tag shows
 * it: an overlong tag varint (0x81 0x00 ...) slips through as an unknown field
 * of tag 0, which then packs into bytes protobuf-c itself refuses. True when m
 * or a message nested in it holds such a field. */
static bool has_field_zero(const ProtobufCMessage *m)
{
    for (unsigned i = 0; i < m->n_unknown_fields; i++)
        if (m->unknown_fields[i].tag == 0)
            return true;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const char *at = (const char *)m + f->offset;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n;
            ProtobufCMessage **v;
            memcpy(&n, (const char *)m + f->quantifier_offset, sizeof n);
            memcpy(&v, at, sizeof v);
            for (size_t j = 0; j < n; j++)
                if (has_field_zero(v[j]))
                    return true;
        } else {
            const ProtobufCMessage *sub;
            memcpy(&sub, at, sizeof sub);
            if (sub && has_field_zero(sub))
                return true;
        }
    }
    return false;
}

ProtobufCMessage *msg_decode(uint16_t type, bool response, const uint8_t *body, size_t len)
{
    const ProtobufCMessageDescriptor *d = msg_descriptor(type, response);
    if (!d)
        return NULL;
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, len, body);
    if (m && has_field_zero(m)) {
        protobuf_c_message_free_unpacked(m, NULL);
        return NULL;
    }
    return m;
}

void msg_free(ProtobufCMessage *m)
{
    if (m)
        protobuf_c_message_free_unpacked(m, NULL);
}

uint8_t *msg_encode(uint16_t type, uint16_t flags, uint64_t req_id, const ProtobufCMessage *m,
                    size_t *out_len)
{
    const ProtobufCMessageDescriptor *d = msg_descriptor(type, flags & FRAME_RESPONSE);
    if (!d || !m || m->descriptor != d)
        return NULL;
    size_t body = protobuf_c_message_get_packed_size(m);
    if (body > FRAME_MAX_BODY)
        return NULL;
    uint8_t *buf = malloc(FRAME_HDR_LEN + body);
    if (!buf)
        return NULL;
    frame_hdr h = {.len = (uint32_t)body, .type = type, .flags = flags, .req_id = req_id};
    frame_hdr_encode(&h, buf);
    protobuf_c_message_pack(m, buf + FRAME_HDR_LEN);
    *out_len = FRAME_HDR_LEN + body;
    return buf;
}

static const ProtobufCFieldDescriptor *field_named(const ProtobufCMessageDescriptor *d,
                                                   const char *name, ProtobufCType type)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
    return f && f->type == type && f->label != PROTOBUF_C_LABEL_REPEATED ? f : NULL;
}

int32_t msg_status(const ProtobufCMessage *m)
{
    const ProtobufCFieldDescriptor *f = field_named(m->descriptor, "status", PROTOBUF_C_TYPE_INT32);
    if (!f)
        return 0;
    int32_t v;
    memcpy(&v, (const char *)m + f->offset, sizeof v);
    return v;
}

const char *msg_detail(const ProtobufCMessage *m)
{
    const ProtobufCFieldDescriptor *f = field_named(m->descriptor, "detail", PROTOBUF_C_TYPE_STRING);
    if (!f)
        return "";
    const char *s;
    memcpy(&s, (const char *)m + f->offset, sizeof s);
    return s ? s : "";
}

ProtobufCMessage *msg_new_error(const ProtobufCMessageDescriptor *d, int32_t status,
                                const char *detail)
{
    ProtobufCMessage *m = calloc(1, d->sizeof_message);
    if (!m)
        return NULL;
    protobuf_c_message_init(d, m);
    const ProtobufCFieldDescriptor *fs = field_named(d, "status", PROTOBUF_C_TYPE_INT32);
    const ProtobufCFieldDescriptor *fd = field_named(d, "detail", PROTOBUF_C_TYPE_STRING);
    if (fs)
        memcpy((char *)m + fs->offset, &status, sizeof status);
    if (fd) {
        char *copy = strdup(detail ? detail : "");
        if (!copy) {
            free(m);
            return NULL;
        }
        memcpy((char *)m + fd->offset, &copy, sizeof copy);
    }
    return m;
}

void msg_free_built(ProtobufCMessage *m)
{
    if (!m)
        return;
    const ProtobufCFieldDescriptor *fd = field_named(m->descriptor, "detail", PROTOBUF_C_TYPE_STRING);
    if (fd) {
        char *s;
        memcpy(&s, (char *)m + fd->offset, sizeof s);
        if (s != (char *)protobuf_c_empty_string)
            free(s);
    }
    free(m);
}
