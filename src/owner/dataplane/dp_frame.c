/*
 * dp_frame.c - encode, decode and judge data-plane headers and handshake bodies
 * (see dp_frame.h). Pure functions: the receivers in dp_server.c and
 * dp_client.c and the fuzz target all go through dp_hdr_check() before they
 * trust a length.
 */
#include "owner/dataplane/dp_frame.h"
#include "common/le.h"

#include <errno.h>
#include <string.h>

#include "fluxon/fluxon.h"

void dp_hdr_encode(const dp_hdr *h, uint8_t out[DP_HDR_LEN])
{
    le_put(out, DP_MAGIC, 4);
    out[4] = h->op;
    out[5] = h->flags;
    le_put(out + 6, h->rsvd, 2);
    le_put(out + 8, h->id, 8);
    le_put(out + 16, h->offset, 8);
    le_put(out + 24, h->len, 4);
    le_put(out + 28, (uint32_t)h->status, 4);
}

void dp_hdr_decode(const uint8_t in[DP_HDR_LEN], dp_hdr *h)
{
    h->magic = (uint32_t)le_get(in, 4);
    h->op = in[4];
    h->flags = in[5];
    h->rsvd = (uint16_t)le_get(in + 6, 2);
    h->id = le_get(in + 8, 8);
    h->offset = le_get(in + 16, 8);
    h->len = (uint32_t)le_get(in + 24, 4);
    h->status = (int32_t)(uint32_t)le_get(in + 28, 4);
}

static bool status_ok(int32_t s)
{
    return s == 0 || (s >= FX_EINTERNAL && s < 0);
}

/* An error reply carries at most DP_DETAIL_MAX bytes of text. */
static int check_error_reply(const dp_hdr *h)
{
    return h->len > DP_DETAIL_MAX ? -EMSGSIZE : 0;
}

/* A handshake body has one length; more is out of bounds, less malformed. */
static int check_handshake_body(const dp_hdr *h, uint32_t len)
{
    if (h->offset != 0 || h->len < len)
        return -EPROTO;
    return h->len > len ? -EMSGSIZE : 0;
}

static int check_request(const dp_hdr *h)
{
    if (h->status != 0)
        return -EPROTO;
    switch (h->op) {
    case DP_HELLO:
        return check_handshake_body(h, DP_HELLO_LEN);
    case DP_HELLO_PROOF:
        return check_handshake_body(h, DP_PROOF_LEN);
    case DP_READ:
    case DP_WRITE:
        if (h->len == 0)
            return -EPROTO;
        return h->len > DP_MAX_PAYLOAD ? -EMSGSIZE : 0;
    default:
        return -EPROTO;
    }
}

static int check_reply(const dp_hdr *h)
{
    switch (h->op) {
    case DP_HELLO_OK:
        return h->status == 0 && h->len == 0 && h->offset == 0 ? 0 : -EPROTO;
    case DP_HELLO_CHALLENGE:
        return h->status == 0 ? check_handshake_body(h, DP_CHALLENGE_LEN) : -EPROTO;
    case DP_HELLO_REFUSED:
        return h->status < 0 ? check_error_reply(h) : -EPROTO;
    case DP_READ_DATA:
        if (h->status < 0)
            return check_error_reply(h);
        if (h->len == 0)
            return -EPROTO;
        return h->len > DP_MAX_PAYLOAD ? -EMSGSIZE : 0;
    case DP_WRITE_ACK:
        if (h->status < 0)
            return check_error_reply(h);
        return h->len == 0 ? 0 : -EPROTO;
    default:
        return -EPROTO;
    }
}

int dp_hdr_check(const dp_hdr *h, enum dp_dir dir)
{
    if (h->magic != DP_MAGIC || h->flags != 0 || h->rsvd != 0 || !status_ok(h->status))
        return -EPROTO;
    return dir == DP_DIR_REQUEST ? check_request(h) : check_reply(h);
}

uint32_t dp_hdr_body_len(const dp_hdr *h)
{
    return h->op == DP_READ ? 0 : h->len;
}

bool dp_hdr_has_payload(const dp_hdr *h)
{
    return h->op == DP_WRITE || (h->op == DP_READ_DATA && h->status == 0);
}

void dp_hello_encode(const dp_hello *hello, uint8_t out[DP_HELLO_LEN])
{
    le_put(out, hello->client_tomb, 8);
    le_put(out + 8, hello->client_node, 4);
    le_put(out + 12, hello->server_node, 4);
    memcpy(out + 16, hello->nonce, DP_NONCE_LEN);
}

int dp_hello_decode(const uint8_t *body, size_t n, dp_hello *hello)
{
    if (n != DP_HELLO_LEN)
        return -EPROTO;
    hello->client_tomb = le_get(body, 8);
    hello->client_node = (uint32_t)le_get(body + 8, 4);
    hello->server_node = (uint32_t)le_get(body + 12, 4);
    memcpy(hello->nonce, body + 16, DP_NONCE_LEN);
    return 0;
}

void dp_challenge_encode(const dp_challenge *ch, uint8_t out[DP_CHALLENGE_LEN])
{
    memcpy(out, ch->nonce, DP_NONCE_LEN);
    memcpy(out + DP_NONCE_LEN, ch->proof, DP_PROOF_LEN);
}

int dp_challenge_decode(const uint8_t *body, size_t n, dp_challenge *ch)
{
    if (n != DP_CHALLENGE_LEN)
        return -EPROTO;
    memcpy(ch->nonce, body, DP_NONCE_LEN);
    memcpy(ch->proof, body + DP_NONCE_LEN, DP_PROOF_LEN);
    return 0;
}

bool dp_range_ok(uint64_t size, uint64_t off, uint64_t len)
{
    return off <= size && len <= size - off;
}

const char *dp_op_name(unsigned op)
{
    static const char *const names[] = {
        [DP_HELLO] = "HELLO", [DP_HELLO_OK] = "HELLO_OK", [DP_HELLO_REFUSED] = "HELLO_REFUSED",
        [DP_READ] = "READ",   [DP_READ_DATA] = "READ_DATA", [DP_WRITE] = "WRITE",
        [DP_WRITE_ACK] = "WRITE_ACK", [DP_HELLO_CHALLENGE] = "HELLO_CHALLENGE",
        [DP_HELLO_PROOF] = "HELLO_PROOF",
    };
    if (op < sizeof names / sizeof names[0] && names[op])
        return names[op];
    return "?";
}
