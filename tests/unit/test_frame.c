/*
 * test_frame.c - the wire layer: the 16-byte frame header (byte layout, round
 * trip at the extremes, frame_parse on every truncated prefix, oversized and
 * unknown-flag headers) and the protobuf-c body codec of msg.c (round trips of
 * several message types with binary keys, repeated and nested fields; refusal
 * of unknown types, malformed and truncated bodies and mismatched descriptors;
 * the status/detail helpers and msg_new_error).
 */
#include "net/frame.h"
#include "net/msg.h"
#include "testlib.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fluxon/fluxon.h"

/* ---- helpers --------------------------------------------------------------- */

static bool bin_eq(ProtobufCBinaryData a, const void *data, size_t len)
{
    return a.len == len && (len == 0 || memcmp(a.data, data, len) == 0);
}

/* Encodes m as (type, flags, req_id), checks the header msg_encode wrote and
 * that frame_parse sees exactly one whole frame, then decodes the body.
 * Returns the decoded message (caller frees with msg_free) or NULL. */
static ProtobufCMessage *round_trip(uint16_t type, uint16_t flags, uint64_t req_id,
                                    const ProtobufCMessage *m)
{
    size_t len = 0;
    uint8_t *buf = msg_encode(type, flags, req_id, m, &len);
    CHECK(buf != NULL, "msg_encode(%s, flags %u) failed", msg_name(type), flags);
    if (!buf)
        return NULL;
    size_t body = protobuf_c_message_get_packed_size(m);
    CHECK(len == FRAME_HDR_LEN + body, "%s: encoded %zu bytes, want %zu", msg_name(type), len,
          FRAME_HDR_LEN + body);
    frame_hdr h;
    frame_hdr_decode(buf, &h);
    CHECK(h.len == body && h.type == type && h.flags == flags && h.req_id == req_id,
          "%s: header {len %u type %u flags %u req %llu}", msg_name(type), h.len, h.type, h.flags,
          (unsigned long long)h.req_id);
    frame_hdr p;
    memset(&p, 0, sizeof p);
    int r = frame_parse(buf, len, FRAME_MAX_BODY, &p);
    CHECK(r == 1 && p.len == h.len && p.type == type && p.flags == flags && p.req_id == req_id,
          "%s: frame_parse of an encoded frame = %d", msg_name(type), r);
    ProtobufCMessage *out = msg_decode(type, flags & FRAME_RESPONSE, buf + FRAME_HDR_LEN, body);
    CHECK(out != NULL, "%s: msg_decode of msg_encode output failed", msg_name(type));
    CHECK(!out || out->descriptor == msg_descriptor(type, flags & FRAME_RESPONSE),
          "%s: decoded with the wrong descriptor", msg_name(type));
    free(buf);
    return out;
}

/* Positions in body[0, n) where a top-level protobuf field ends, found by an
 * independent wire walker (varint, 64-bit, length-delimited, 32-bit). Returns
 * the number of boundaries written to ends[], or -1 if body is not well formed. */
static int field_ends(const uint8_t *body, size_t n, size_t *ends, int cap)
{
    size_t pos = 0;
    int k = 0;
    while (pos < n) {
        uint64_t tag = 0;
        int shift = 0;
        while (pos < n && (body[pos] & 0x80)) {
            tag |= (uint64_t)(body[pos++] & 0x7f) << shift;
            shift += 7;
        }
        if (pos >= n)
            return -1;
        tag |= (uint64_t)body[pos++] << shift;
        switch (tag & 7) {
        case 0:
            while (pos < n && (body[pos] & 0x80))
                pos++;
            if (pos >= n)
                return -1;
            pos++;
            break;
        case 1:
            pos += 8;
            break;
        case 5:
            pos += 4;
            break;
        case 2: {
            uint64_t l = 0;
            shift = 0;
            while (pos < n && (body[pos] & 0x80)) {
                l |= (uint64_t)(body[pos++] & 0x7f) << shift;
                shift += 7;
            }
            if (pos >= n)
                return -1;
            l |= (uint64_t)body[pos++] << shift;
            pos += l;
            break;
        }
        default:
            return -1;
        }
        if (pos > n || k >= cap)
            return -1;
        ends[k++] = pos;
    }
    return k;
}

/* ---- frame header ------------------------------------------------------------ */

static void test_header_layout(void)
{
    frame_hdr h = {.len = 0x04030201u, .type = 0x0605, .flags = 0x0807,
                   .req_id = 0x100f0e0d0c0b0a09ull};
    uint8_t b[FRAME_HDR_LEN];
    frame_hdr_encode(&h, b);
    for (unsigned i = 0; i < FRAME_HDR_LEN; i++)
        CHECK(b[i] == i + 1, "header byte %u = 0x%02x, want 0x%02x (little-endian layout)", i,
              b[i], i + 1);
    frame_hdr d;
    memset(&d, 0xAA, sizeof d);
    frame_hdr_decode(b, &d);
    CHECK(d.len == h.len && d.type == h.type && d.flags == h.flags && d.req_id == h.req_id,
          "header decode of the layout vector");
}

static void test_header_round_trip(void)
{
    const frame_hdr cases[] = {
        {0, 0, 0, 0},
        {1, MSG_PUT_START, 0, 1},
        {FRAME_MAX_BODY, MSG_EXT_STAT, FRAME_RESPONSE, 42},
        {UINT32_MAX, UINT16_MAX, UINT16_MAX, UINT64_MAX},
        {0x80000000u, 0x8000, 0x8000, 0x8000000000000000ull},
        {0x7fffffffu, 0x7fff, FRAME_ONEWAY, 0x7fffffffffffffffull},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t b[FRAME_HDR_LEN];
        frame_hdr_encode(&cases[i], b);
        frame_hdr d;
        memset(&d, 0x55, sizeof d);
        frame_hdr_decode(b, &d);
        CHECK(d.len == cases[i].len && d.type == cases[i].type && d.flags == cases[i].flags &&
                  d.req_id == cases[i].req_id,
              "header case %zu does not round-trip", i);
    }
    /* All-ones bytes decode to the maxima (no sign extension anywhere). */
    uint8_t ones[FRAME_HDR_LEN];
    memset(ones, 0xff, sizeof ones);
    frame_hdr d;
    frame_hdr_decode(ones, &d);
    CHECK(d.len == UINT32_MAX && d.type == UINT16_MAX && d.flags == UINT16_MAX &&
              d.req_id == UINT64_MAX,
          "all-ones header");
}

static void test_header_check(void)
{
    frame_hdr h = {.len = FRAME_MAX_BODY, .type = MSG_PUT_START, .flags = 0, .req_id = 1};
    CHECK(frame_hdr_check(&h, FRAME_MAX_BODY) == 0, "len == max is accepted");
    h.len = FRAME_MAX_BODY + 1;
    CHECK(frame_hdr_check(&h, FRAME_MAX_BODY) == -EMSGSIZE, "len == max + 1 is -EMSGSIZE");
    h.len = UINT32_MAX;
    CHECK(frame_hdr_check(&h, FRAME_MAX_BODY) == -EMSGSIZE, "len 0xffffffff is -EMSGSIZE");
    h.len = 1u << 20;
    CHECK(frame_hdr_check(&h, 1u << 20) == 0, "external limit: 1 MiB accepted");
    h.len = (1u << 20) + 1;
    CHECK(frame_hdr_check(&h, 1u << 20) == -EMSGSIZE, "external limit: 1 MiB + 1 refused");
    h.len = 0;
    CHECK(frame_hdr_check(&h, 0) == 0, "empty body with max 0");
    const uint16_t good[] = {0, FRAME_RESPONSE, FRAME_ONEWAY, FRAME_RESPONSE | FRAME_ONEWAY};
    for (size_t i = 0; i < 4; i++) {
        h.flags = good[i];
        CHECK(frame_hdr_check(&h, FRAME_MAX_BODY) == 0, "known flags 0x%x accepted", good[i]);
    }
    for (unsigned bit = 2; bit < 16; bit++) {
        h.flags = (uint16_t)(1u << bit);
        CHECK(frame_hdr_check(&h, FRAME_MAX_BODY) == -EPROTO, "flag bit %u is -EPROTO", bit);
        h.flags = (uint16_t)((1u << bit) | FRAME_RESPONSE);
        CHECK(frame_hdr_check(&h, FRAME_MAX_BODY) == -EPROTO,
              "flag bit %u with RESPONSE is -EPROTO", bit);
    }
    h.flags = 0x8000;
    h.len = UINT32_MAX;
    int r = frame_hdr_check(&h, FRAME_MAX_BODY);
    CHECK(r == -EMSGSIZE || r == -EPROTO, "oversized with unknown flags is refused (%d)", r);
}

static void test_parse(void)
{
    /* A frame with a 300-byte body, followed by a second, empty-body frame. */
    uint8_t buf[2 * FRAME_HDR_LEN + 300];
    frame_hdr a = {.len = 300, .type = MSG_EXT_GET, .flags = FRAME_ONEWAY, .req_id = 0xdeadbeefcafeull};
    frame_hdr b = {.len = 0, .type = MSG_EXT_PING, .flags = FRAME_RESPONSE, .req_id = 7};
    frame_hdr_encode(&a, buf);
    for (int i = 0; i < 300; i++)
        buf[FRAME_HDR_LEN + i] = (uint8_t)(i * 7);
    frame_hdr_encode(&b, buf + FRAME_HDR_LEN + 300);
    size_t whole = FRAME_HDR_LEN + 300;

    int zeros = 0;
    for (size_t n = 0; n < whole; n++) {
        frame_hdr h;
        if (frame_parse(buf, n, FRAME_MAX_BODY, &h) == 0)
            zeros++;
        else
            CHECK(0, "frame_parse of a %zu-byte prefix (of %zu) did not return 0", n, whole);
    }
    CHECK(zeros == (int)whole, "every truncated prefix needs more bytes");

    frame_hdr h;
    memset(&h, 0, sizeof h);
    CHECK(frame_parse(buf, whole, FRAME_MAX_BODY, &h) == 1, "the whole frame parses");
    CHECK(h.len == a.len && h.type == a.type && h.flags == a.flags && h.req_id == a.req_id,
          "parsed header matches");
    memset(&h, 0, sizeof h);
    CHECK(frame_parse(buf, sizeof buf, FRAME_MAX_BODY, &h) == 1 && h.len == 300 &&
              h.type == MSG_EXT_GET,
          "trailing bytes of the next frame do not change the first");
    memset(&h, 0, sizeof h);
    CHECK(frame_parse(buf + whole, FRAME_HDR_LEN, FRAME_MAX_BODY, &h) == 1 && h.len == 0 &&
              h.type == MSG_EXT_PING && h.flags == FRAME_RESPONSE && h.req_id == 7,
          "an empty-body frame is whole with just its header");
    for (size_t n = 0; n < FRAME_HDR_LEN; n++)
        CHECK(frame_parse(buf + whole, n, FRAME_MAX_BODY, &h) == 0,
              "a %zu-byte prefix of an empty-body frame needs more bytes", n);

    /* Oversized: judged from the header alone, before any body byte. */
    uint8_t big[FRAME_HDR_LEN + 8] = {0};
    frame_hdr o = {.len = FRAME_MAX_BODY + 1, .type = MSG_PUT_START, .flags = 0, .req_id = 1};
    frame_hdr_encode(&o, big);
    CHECK(frame_parse(big, FRAME_HDR_LEN, FRAME_MAX_BODY, &h) == -EMSGSIZE,
          "max + 1 declared: -EMSGSIZE from the header alone");
    CHECK(frame_parse(big, sizeof big, FRAME_MAX_BODY, &h) == -EMSGSIZE,
          "max + 1 declared with some body: -EMSGSIZE");
    o.len = UINT32_MAX;
    frame_hdr_encode(&o, big);
    CHECK(frame_parse(big, FRAME_HDR_LEN, FRAME_MAX_BODY, &h) == -EMSGSIZE,
          "0xffffffff declared: -EMSGSIZE");
    o.len = 2u << 20;
    frame_hdr_encode(&o, big);
    CHECK(frame_parse(big, FRAME_HDR_LEN, 1u << 20, &h) == -EMSGSIZE,
          "2 MiB against the 1 MiB external limit: -EMSGSIZE");
    CHECK(frame_parse(big, FRAME_HDR_LEN, FRAME_MAX_BODY, &h) == 0,
          "2 MiB against the 16 MiB limit: needs more bytes");
    /* A huge max must not overflow the length arithmetic. */
    o.len = UINT32_MAX;
    frame_hdr_encode(&o, big);
    CHECK(frame_parse(big, sizeof big, SIZE_MAX, &h) == 0, "0xffffffff with max SIZE_MAX: 0");
    /* Bytes before a whole header are never judged. */
    memset(big, 0xff, sizeof big);
    for (size_t n = 0; n < FRAME_HDR_LEN; n++)
        CHECK(frame_parse(big, n, FRAME_MAX_BODY, &h) == 0, "%zu bytes of 0xff: not judged yet", n);
    CHECK(frame_parse(big, FRAME_HDR_LEN, FRAME_MAX_BODY, &h) < 0, "16 bytes of 0xff: refused");

    /* Unknown flags. */
    frame_hdr f = {.len = 4, .type = MSG_EXT_HELLO, .flags = 0x4, .req_id = 1};
    uint8_t fb[FRAME_HDR_LEN + 4] = {0};
    frame_hdr_encode(&f, fb);
    CHECK(frame_parse(fb, sizeof fb, FRAME_MAX_BODY, &h) == -EPROTO, "flags 0x4: -EPROTO");
    CHECK(frame_parse(fb, FRAME_HDR_LEN, FRAME_MAX_BODY, &h) == -EPROTO,
          "flags 0x4, header only: -EPROTO");
    f.flags = 0xfffc;
    frame_hdr_encode(&f, fb);
    CHECK(frame_parse(fb, sizeof fb, FRAME_MAX_BODY, &h) == -EPROTO, "flags 0xfffc: -EPROTO");
}

/* ---- message codec --------------------------------------------------------- */

static const uint8_t nul_key[] = {'k', 0, 'e', 0, 0, 'y', 0xff, 0};

static void test_put_start(void)
{
    Fx__PutStartReq req = FX__PUT_START_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = sizeof nul_key, .data = (uint8_t *)nul_key};
    req.len = (16ull << 30) + 3;
    req.source_node_id = UINT32_MAX;
    ProtobufCMessage *m = round_trip(MSG_PUT_START, 0, 12345, &req.base);
    if (m) {
        Fx__PutStartReq *d = (Fx__PutStartReq *)m;
        CHECK(bin_eq(d->key, nul_key, sizeof nul_key), "PutStartReq key with NUL bytes");
        CHECK(d->len == req.len && d->source_node_id == UINT32_MAX, "PutStartReq scalars");
    }
    msg_free(m);

    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = 1700000000123ull;
    pid.version = 0xfffffffeu;
    Fx__PutStartResp resp = FX__PUT_START_RESP__INIT;
    resp.status = FX_ENOSPC;
    resp.detail = "no space: free 12 bytes";
    resp.put_id = &pid;
    resp.target_node_id = 3;
    resp.target_offset = UINT64_MAX - 4095;
    resp.src_offset = 4096;
    resp.total_bytes = 64ull << 20;
    resp.free_bytes = 12;
    m = round_trip(MSG_PUT_START, FRAME_RESPONSE, UINT64_MAX, &resp.base);
    if (m) {
        Fx__PutStartResp *d = (Fx__PutStartResp *)m;
        CHECK(d->status == FX_ENOSPC && msg_status(m) == FX_ENOSPC, "negative status round-trips");
        CHECK(strcmp(d->detail, resp.detail) == 0 && strcmp(msg_detail(m), resp.detail) == 0,
              "detail round-trips");
        CHECK(d->put_id && d->put_id->time_ms == pid.time_ms && d->put_id->version == pid.version,
              "nested PutId round-trips");
        CHECK(d->target_node_id == 3 && d->target_offset == UINT64_MAX - 4095 &&
                  d->src_offset == 4096 && d->total_bytes == (64ull << 20) && d->free_bytes == 12,
              "PutStartResp scalars");
    }
    msg_free(m);

    /* An absent nested PutId stays absent. */
    Fx__PutStartResp empty = FX__PUT_START_RESP__INIT;
    m = round_trip(MSG_PUT_START, FRAME_RESPONSE, 0, &empty.base);
    CHECK(m && ((Fx__PutStartResp *)m)->put_id == NULL && msg_status(m) == 0 &&
              strcmp(msg_detail(m), "") == 0,
          "empty PutStartResp: no put_id, status 0, detail \"\"");
    msg_free(m);
}

static void test_put_transfer_end(void)
{
    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = 1;
    pid.version = 2;
    Fx__ExternalPutTransferEndReq req = FX__EXTERNAL_PUT_TRANSFER_END_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = sizeof nul_key, .data = (uint8_t *)nul_key};
    req.put_id = &pid;
    req.abort = true;
    ProtobufCMessage *m = round_trip(MSG_EXT_PUT_TRANSFER_END, 0, 9, &req.base);
    if (m) {
        Fx__ExternalPutTransferEndReq *d = (Fx__ExternalPutTransferEndReq *)m;
        CHECK(bin_eq(d->key, nul_key, sizeof nul_key) && d->put_id && d->put_id->time_ms == 1 &&
                  d->put_id->version == 2 && d->abort,
              "ExternalPutTransferEndReq round-trips");
    }
    msg_free(m);
}

static void test_repeated(void)
{
    /* Repeated bytes, including an empty element and NUL-laden keys. */
    ProtobufCBinaryData keys[4] = {
        {.len = sizeof nul_key, .data = (uint8_t *)nul_key},
        {.len = 0, .data = NULL},
        {.len = 1, .data = (uint8_t *)"\0"},
        {.len = 5, .data = (uint8_t *)"plain"},
    };
    Fx__BatchDeleteClientKvMetaCacheReq inv = FX__BATCH_DELETE_CLIENT_KV_META_CACHE_REQ__INIT;
    inv.n_keys = 4;
    inv.keys = keys;
    ProtobufCMessage *m = round_trip(MSG_BATCH_DELETE_CLIENT_KV_META_CACHE, FRAME_ONEWAY, 0, &inv.base);
    if (m) {
        Fx__BatchDeleteClientKvMetaCacheReq *d = (Fx__BatchDeleteClientKvMetaCacheReq *)m;
        CHECK(d->n_keys == 4, "4 repeated keys, got %zu", d->n_keys);
        for (size_t i = 0; i < 4 && i < d->n_keys; i++)
            CHECK(bin_eq(d->keys[i], keys[i].data, keys[i].len), "repeated key %zu", i);
    }
    msg_free(m);

    /* Repeated uint64 (packed in proto3), with the extremes. */
    uint64_t ids[] = {0, 1, 127, 128, UINT32_MAX, (uint64_t)UINT32_MAX + 1, UINT64_MAX};
    size_t nids = sizeof ids / sizeof ids[0];
    Fx__ExternalDeleteAckReq ack = FX__EXTERNAL_DELETE_ACK_REQ__INIT;
    ack.n_holder_ids = nids;
    ack.holder_ids = ids;
    m = round_trip(MSG_EXT_DELETE_ACK, FRAME_ONEWAY, 77, &ack.base);
    if (m) {
        Fx__ExternalDeleteAckReq *d = (Fx__ExternalDeleteAckReq *)m;
        CHECK(d->n_holder_ids == nids && memcmp(d->holder_ids, ids, sizeof ids) == 0,
              "repeated holder_ids round-trip");
    }
    msg_free(m);

    /* Repeated nested messages; ExternalStat shares the Stat bodies. */
    Fx__OwnerStat o1 = FX__OWNER_STAT__INIT, o2 = FX__OWNER_STAT__INIT;
    o1.node_id = 1;
    o1.name = "owner-a";
    o1.live = true;
    o1.memory_capacity = 64ull << 20;
    o1.memory_used = 4096;
    o1.hits_memory = 10;
    o2.node_id = 2;
    o2.name = "";
    o2.misses = UINT64_MAX;
    Fx__OwnerStat *owners[] = {&o1, &o2};
    Fx__StatResp st = FX__STAT_RESP__INIT;
    st.n_owners = 2;
    st.owners = owners;
    st.routes = 99;
    m = round_trip(MSG_EXT_STAT, FRAME_RESPONSE, 5, &st.base);
    if (m) {
        Fx__StatResp *d = (Fx__StatResp *)m;
        CHECK(d->n_owners == 2 && d->routes == 99, "StatResp counts");
        if (d->n_owners == 2) {
            CHECK(d->owners[0]->node_id == 1 && strcmp(d->owners[0]->name, "owner-a") == 0 &&
                      d->owners[0]->live && d->owners[0]->memory_capacity == (64ull << 20) &&
                      d->owners[0]->memory_used == 4096 && d->owners[0]->hits_memory == 10,
                  "first OwnerStat");
            CHECK(d->owners[1]->node_id == 2 && strcmp(d->owners[1]->name, "") == 0 &&
                      !d->owners[1]->live && d->owners[1]->misses == UINT64_MAX,
                  "second OwnerStat");
        }
    }
    msg_free(m);
    CHECK(msg_descriptor(MSG_EXT_STAT, true) == &fx__stat_resp__descriptor &&
              msg_descriptor(MSG_STAT, false) == &fx__stat_req__descriptor,
          "ExternalStat and Stat share bodies");
}

static void test_register_and_hello(void)
{
    Fx__RegisterReq reg = FX__REGISTER_REQ__INIT;
    reg.cluster_name = "test-cluster";
    reg.node_name = "n\xc3\xa9ud-1";
    reg.segment_size = 1ull << 40;
    reg.kv_ssd_storage = true;
    reg.data_addr = "10.0.0.1:7000";
    ProtobufCMessage *m = round_trip(MSG_REGISTER, 0, 1, &reg.base);
    if (m) {
        Fx__RegisterReq *d = (Fx__RegisterReq *)m;
        CHECK(strcmp(d->cluster_name, reg.cluster_name) == 0 &&
                  strcmp(d->node_name, reg.node_name) == 0 && d->segment_size == (1ull << 40) &&
                  d->kv_ssd_storage && strcmp(d->data_addr, reg.data_addr) == 0,
              "RegisterReq round-trips");
    }
    msg_free(m);

    Fx__ExternalHelloResp hr = FX__EXTERNAL_HELLO_RESP__INIT;
    hr.client_id = UINT64_MAX;
    hr.segment_size = 64ull << 20;
    hr.node_id = 7;
    m = round_trip(MSG_EXT_HELLO, FRAME_RESPONSE, 3, &hr.base);
    if (m) {
        Fx__ExternalHelloResp *d = (Fx__ExternalHelloResp *)m;
        CHECK(d->client_id == UINT64_MAX && d->segment_size == (64ull << 20) && d->node_id == 7 &&
                  d->status == 0,
              "ExternalHelloResp round-trips");
    }
    msg_free(m);

    /* Request and response halves of one type are different messages. */
    Fx__ExternalHelloReq hq = FX__EXTERNAL_HELLO_REQ__INIT;
    hq.version = 1;
    hq.client_id = 12;
    m = round_trip(MSG_EXT_HELLO, 0, 4, &hq.base);
    CHECK(m && ((Fx__ExternalHelloReq *)m)->version == 1 &&
              ((Fx__ExternalHelloReq *)m)->client_id == 12,
          "ExternalHelloReq round-trips");
    msg_free(m);

    /* An empty body is a valid message of every known type. */
    for (uint16_t t = 0; t < MSG_TYPE_END; t++) {
        for (int resp = 0; resp < 2; resp++) {
            if (!msg_descriptor(t, resp))
                continue;
            ProtobufCMessage *e = msg_decode(t, resp, (const uint8_t *)"", 0);
            CHECK(e != NULL, "empty body of %s (resp %d) decodes", msg_name(t), resp);
            msg_free(e);
        }
    }
}

static void test_encode_refusals(void)
{
    Fx__PutStartReq req = FX__PUT_START_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = 3, .data = (uint8_t *)"abc"};
    size_t len = 0;
    uint8_t *b;
    b = msg_encode(MSG_GET_START, 0, 1, &req.base, &len);
    CHECK(b == NULL, "PutStartReq under GetStart's type is refused");
    free(b);
    b = msg_encode(MSG_PUT_START, FRAME_RESPONSE, 1, &req.base, &len);
    CHECK(b == NULL, "a Req body with the RESPONSE flag is refused");
    free(b);
    Fx__PutStartResp resp = FX__PUT_START_RESP__INIT;
    b = msg_encode(MSG_PUT_START, 0, 1, &resp.base, &len);
    CHECK(b == NULL, "a Resp body without the RESPONSE flag is refused");
    free(b);
    const uint16_t unknown[] = {0, 28, 31, MSG_TYPE_END, 1000, UINT16_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        b = msg_encode(unknown[i], 0, 1, &req.base, &len);
        CHECK(b == NULL, "unknown type %u is refused by msg_encode", unknown[i]);
        free(b);
        CHECK(msg_descriptor(unknown[i], false) == NULL && msg_descriptor(unknown[i], true) == NULL,
              "no descriptor for type %u", unknown[i]);
        CHECK(strcmp(msg_name(unknown[i]), "Unknown") == 0, "msg_name(%u)", unknown[i]);
    }
    b = msg_encode(MSG_PUT_START, 0, 1, NULL, &len);
    CHECK(b == NULL, "a NULL message is refused");
    free(b);
    CHECK(strcmp(msg_name(MSG_PUT_START), "PutStart") == 0 &&
              strcmp(msg_name(MSG_EXT_GET), "ExternalGet") == 0 &&
              strcmp(msg_name(MSG_BATCH_DELETE_CLIENT_KV_META_CACHE),
                     "BatchDeleteClientKvMetaCache") == 0,
          "msg_name of known types");

    /* The body limit: a PutStartReq whose only field is a key of L bytes packs
     * into 1 (tag) + 4 (varint of L, 2^21 <= L < 2^28) + L bytes. */
    size_t klen = FRAME_MAX_BODY - 5;
    uint8_t *key = calloc(1, klen + 1);
    REQUIRE(key, "calloc");
    req.key = (ProtobufCBinaryData){.len = klen, .data = key};
    REQUIRE(protobuf_c_message_get_packed_size(&req.base) == FRAME_MAX_BODY, "packed size");
    b = msg_encode(MSG_PUT_START, 0, 1, &req.base, &len);
    CHECK(b != NULL && len == FRAME_HDR_LEN + FRAME_MAX_BODY, "a body of exactly the maximum encodes");
    if (b) {
        frame_hdr h;
        CHECK(frame_parse(b, len, FRAME_MAX_BODY, &h) == 1 && h.len == FRAME_MAX_BODY,
              "and parses as one whole frame");
    }
    free(b);
    req.key.len = klen + 1;
    b = msg_encode(MSG_PUT_START, 0, 1, &req.base, &len);
    CHECK(b == NULL, "a body of maximum + 1 is refused");
    free(b);
    free(key);
}

static void test_decode_refusals(void)
{
    uint8_t ping[1] = {0};
    const uint16_t unknown[] = {0, 28, 31, MSG_TYPE_END, 1000, UINT16_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        CHECK(msg_decode(unknown[i], false, ping, 0) == NULL, "unknown type %u: NULL", unknown[i]);
        CHECK(msg_decode(unknown[i], true, ping, 0) == NULL, "unknown type %u resp: NULL",
              unknown[i]);
    }

    /* Bodies that cannot be protobuf: invalid wire types (3, 4: groups; 6, 7
     * do not exist), field number 0, truncated or overlong varints, lengths
     * past the end, the wrong wire type for a known field. */
    static const struct {
        const char *what;
        uint8_t b[16];
        size_t n;
    } bad[] = {
        {"wire type 6", {0x0e, 1, 2, 3}, 4},
        {"wire type 7", {0x0f, 1, 2, 3}, 4},
        {"start group", {0x0b, 1, 2, 3}, 4},
        {"end group", {0x0c}, 1},
        {"field number 0", {0x00, 1}, 2},
        {"truncated tag varint", {0x80}, 1},
        {"tag without value", {0x10}, 1},
        {"truncated value varint", {0x10, 0xff}, 2},
        {"overlong varint", {0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
         12},
        {"length past the end", {0x0a, 0x05, 'a'}, 3},
        {"huge length", {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 'a'}, 7},
        {"bytes field as varint", {0x08, 0x01}, 2},
        {"varint field as bytes", {0x12, 0x01, 0x05}, 3},
        {"unknown field past the end", {0x7a, 0x05, 1}, 3},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ProtobufCMessage *m = msg_decode(MSG_PUT_START, false, bad[i].b, bad[i].n);
        CHECK(m == NULL, "malformed PutStartReq (%s) decoded", bad[i].what);
        msg_free(m);
    }
    /* A nested PutId cut short inside its own length. */
    const uint8_t nest[] = {0x0a, 0x01, 'k', 0x12, 0x03, 0x08, 0xff};
    CHECK(msg_decode(MSG_PUT_DONE, false, nest, sizeof nest) == NULL, "truncated nested PutId");
    /* Unknown fields are skipped, as protobuf requires. */
    const uint8_t unk[] = {0x78, 0x05, 0x0a, 0x01, 'k'};
    ProtobufCMessage *m = msg_decode(MSG_PUT_START, false, unk, sizeof unk);
    CHECK(m && bin_eq(((Fx__PutStartReq *)m)->key, "k", 1), "unknown field skipped");
    msg_free(m);

    /* Random garbage behind an invalid first tag: always refused, for every
     * known type and both halves. */
    unsigned long long seed = 0x5eed1234abcdull;
    uint8_t g[512];
    int refused = 0, tried = 0;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(test_rand(&seed) % sizeof g);
        for (size_t j = 0; j < n; j++)
            g[j] = (uint8_t)test_rand(&seed);
        g[0] = (uint8_t)((g[0] & 0xf8) | (round & 1 ? 6 : 7));
        g[0] &= 0x7f; /* a one-byte tag */
        for (uint16_t t = 1; t < MSG_TYPE_END; t++) {
            if (!msg_descriptor(t, false))
                continue;
            ProtobufCMessage *x = msg_decode(t, round & 2, g, n);
            tried++;
            if (!x)
                refused++;
            msg_free(x);
        }
    }
    CHECK(refused == tried, "garbage with an invalid tag: %d of %d refused", refused, tried);

    /* Pure random bytes: never a crash; what decodes must encode again within
     * the frame limit (the decoder built a consistent message). */
    int nulls = 0, total = 0;
    for (int round = 0; round < 20000; round++) {
        size_t n = 1 + (size_t)(test_rand(&seed) % 96);
        for (size_t j = 0; j < n; j++)
            g[j] = (uint8_t)test_rand(&seed);
        uint16_t t = (uint16_t)(1 + test_rand(&seed) % (MSG_TYPE_END - 1));
        bool resp = test_rand(&seed) & 1;
        if (!msg_descriptor(t, resp))
            continue;
        total++;
        ProtobufCMessage *x = msg_decode(t, resp, g, n);
        if (!x) {
            nulls++;
            continue;
        }
        size_t len;
        uint8_t *b = msg_encode(t, resp ? FRAME_RESPONSE : 0, 1, x, &len);
        CHECK(b != NULL, "a decoded random %s body re-encodes", msg_name(t));
        free(b);
        msg_free(x);
    }
    CHECK(nulls > total * 9 / 10, "most random bodies are refused (%d of %d)", nulls, total);
}

/* Every truncation of a valid encoding either ends on a field boundary (and
 * then decodes: a shorter valid message) or is refused. */
static void check_truncations(uint16_t type, bool resp, const ProtobufCMessage *m)
{
    size_t body = protobuf_c_message_get_packed_size(m);
    uint8_t *b = malloc(body ? body : 1);
    REQUIRE(b, "malloc");
    protobuf_c_message_pack(m, b);
    size_t ends[64];
    int nends = field_ends(b, body, ends, 64);
    REQUIRE(nends > 1, "%s: test message needs several fields (%d)", msg_name(type), nends);
    int refused = 0;
    for (size_t n = 0; n < body; n++) {
        bool boundary = n == 0;
        for (int i = 0; i < nends; i++)
            boundary = boundary || ends[i] == n;
        ProtobufCMessage *x = msg_decode(type, resp, b, n);
        if (boundary)
            CHECK(x != NULL, "%s: prefix of %zu bytes ends on a field boundary but was refused",
                  msg_name(type), n);
        else
            CHECK(x == NULL, "%s: prefix of %zu bytes (of %zu) cuts a field but decoded",
                  msg_name(type), n, body);
        if (!x)
            refused++;
        msg_free(x);
    }
    CHECK(refused >= (int)body - nends, "%s: %d of %zu truncations refused", msg_name(type),
          refused, body);
    free(b);
}

static void test_truncated(void)
{
    /* One length-delimited field: every non-empty prefix is malformed. */
    uint8_t key[100];
    for (int i = 0; i < 100; i++)
        key[i] = (uint8_t)i;
    Fx__DeleteReq del = FX__DELETE_REQ__INIT;
    del.key = (ProtobufCBinaryData){.len = sizeof key, .data = key};
    size_t body = protobuf_c_message_get_packed_size(&del.base);
    uint8_t b[128];
    REQUIRE(body <= sizeof b, "DeleteReq size");
    protobuf_c_message_pack(&del.base, b);
    for (size_t n = 1; n < body; n++) {
        ProtobufCMessage *x = msg_decode(MSG_DELETE, false, b, n);
        CHECK(x == NULL, "DeleteReq truncated to %zu of %zu bytes decoded", n, body);
        msg_free(x);
    }
    ProtobufCMessage *x = msg_decode(MSG_DELETE, false, b, body);
    CHECK(x && bin_eq(((Fx__DeleteReq *)x)->key, key, sizeof key), "whole DeleteReq decodes");
    msg_free(x);

    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = 1700000000999ull;
    pid.version = 300;
    Fx__PutStartResp psr = FX__PUT_START_RESP__INIT;
    psr.status = FX_EBUSY;
    psr.detail = "busy right now";
    psr.put_id = &pid;
    psr.target_node_id = 1;
    psr.target_offset = 1ull << 33;
    psr.total_bytes = 5;
    check_truncations(MSG_PUT_START, true, &psr.base);

    ProtobufCBinaryData keys[3] = {{3, (uint8_t *)"a\0b"}, {1, (uint8_t *)"c"}, {4, (uint8_t *)"dddd"}};
    Fx__ExternalInvalidateWeakIndexReq inv = FX__EXTERNAL_INVALIDATE_WEAK_INDEX_REQ__INIT;
    inv.n_keys = 3;
    inv.keys = keys;
    check_truncations(MSG_EXT_INVALIDATE_WEAK_INDEX, false, &inv.base);

    Fx__ExternalPutTransferEndReq te = FX__EXTERNAL_PUT_TRANSFER_END_REQ__INIT;
    te.key = (ProtobufCBinaryData){.len = sizeof nul_key, .data = (uint8_t *)nul_key};
    te.put_id = &pid;
    te.abort = true;
    check_truncations(MSG_EXT_PUT_TRANSFER_END, false, &te.base);
}

static void test_status_helpers(void)
{
    ProtobufCMessage *e = msg_new_error(&fx__put_start_resp__descriptor, FX_ENOSPC, "no room at all");
    REQUIRE(e, "msg_new_error");
    CHECK(e->descriptor == &fx__put_start_resp__descriptor, "descriptor set");
    CHECK(msg_status(e) == FX_ENOSPC, "msg_status of a built error = %d", msg_status(e));
    CHECK(strcmp(msg_detail(e), "no room at all") == 0, "msg_detail of a built error");
    CHECK(((Fx__PutStartResp *)e)->put_id == NULL && ((Fx__PutStartResp *)e)->target_offset == 0,
          "other fields stay at their defaults");
    ProtobufCMessage *d = round_trip(MSG_PUT_START, FRAME_RESPONSE, 8, e);
    CHECK(d && msg_status(d) == FX_ENOSPC && strcmp(msg_detail(d), "no room at all") == 0,
          "a built error survives the wire");
    msg_free(d);
    msg_free_built(e);

    /* The detail is copied, and NULL means "". */
    char buf[32];
    snprintf(buf, sizeof buf, "transient");
    e = msg_new_error(&fx__external_get_resp__descriptor, FX_ECONN, buf);
    REQUIRE(e, "msg_new_error");
    memset(buf, 'X', sizeof buf - 1);
    CHECK(strcmp(msg_detail(e), "transient") == 0, "detail copied, not borrowed");
    msg_free_built(e);
    e = msg_new_error(&fx__external_ping_resp__descriptor, -22, NULL);
    REQUIRE(e, "msg_new_error with NULL detail");
    CHECK(msg_status(e) == -22 && strcmp(msg_detail(e), "") == 0, "NULL detail is \"\"");
    msg_free_built(e);

    /* Messages without status/detail: 0 and "". */
    Fx__PutStartReq req = FX__PUT_START_REQ__INIT;
    CHECK(msg_status(&req.base) == 0 && strcmp(msg_detail(&req.base), "") == 0,
          "a Req has status 0 and detail \"\"");
    e = msg_new_error(&fx__stat_req__descriptor, FX_EINVAL, "ignored");
    REQUIRE(e, "msg_new_error on a message without status");
    CHECK(msg_status(e) == 0 && strcmp(msg_detail(e), "") == 0, "no status field to set");
    msg_free_built(e);
    msg_free_built(NULL);
    msg_free(NULL);

    /* An error response for every known type, as net_reply_error builds it. */
    for (uint16_t t = 1; t < MSG_TYPE_END; t++) {
        const ProtobufCMessageDescriptor *rd = msg_descriptor(t, true);
        if (!rd)
            continue;
        e = msg_new_error(rd, FX_EPROTO, msg_name(t));
        REQUIRE(e, "msg_new_error(%s)", msg_name(t));
        size_t len;
        uint8_t *b = msg_encode(t, FRAME_RESPONSE, t, e, &len);
        CHECK(b != NULL, "error response of %s encodes", msg_name(t));
        if (b) {
            ProtobufCMessage *x = msg_decode(t, true, b + FRAME_HDR_LEN, len - FRAME_HDR_LEN);
            CHECK(x && msg_status(x) == FX_EPROTO && strcmp(msg_detail(x), msg_name(t)) == 0,
                  "error response of %s decodes with its status and detail", msg_name(t));
            msg_free(x);
        }
        free(b);
        msg_free_built(e);
    }
}

/* Regression: an overlong tag varint (0x81 0x00) must not smuggle field
 * number 0 past msg_decode (protobuf-c checks only the tag's first byte, and
 * the message then re-encodes into bytes that no longer decode). */
static void test_overlong_field_zero(void)
{
    const uint8_t fixed64[] = {0x81, 0x00, 1, 2, 3, 4, 5, 6, 7, 8};
    const uint8_t bytes[] = {0x82, 0x00, 0x01, 'x'};
    const uint8_t varint[] = {0x80, 0x80, 0x00, 0x05};
    const uint8_t nested[] = {0x0a, 0x01, 'k', 0x12, 0x0a, 0x81, 0x00, 1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(msg_decode(MSG_GET_START, true, fixed64, sizeof fixed64) == NULL, "field 0, fixed64");
    CHECK(msg_decode(MSG_PUT_START, false, bytes, sizeof bytes) == NULL, "field 0, bytes");
    CHECK(msg_decode(MSG_EXT_PING, false, varint, sizeof varint) == NULL, "field 0, varint");
    CHECK(msg_decode(MSG_PUT_DONE, false, nested, sizeof nested) == NULL, "field 0 in PutId");
    /* An overlong tag of a real field is still that field. */
    const uint8_t ok[] = {0x88, 0x00, 0x07};
    ProtobufCMessage *m = msg_decode(MSG_EXT_HELLO, false, ok, sizeof ok);
    CHECK(m && ((Fx__ExternalHelloReq *)m)->version == 7, "overlong tag of field 1");
    msg_free(m);
}

int main(void)
{
    test_header_layout();
    test_header_round_trip();
    test_header_check();
    test_parse();
    test_put_start();
    test_put_transfer_end();
    test_repeated();
    test_register_and_hello();
    test_encode_refusals();
    test_decode_refusals();
    test_truncated();
    test_status_helpers();
    test_overlong_field_zero();
    return test_finish();
}
