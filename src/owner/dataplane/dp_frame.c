/*
 * dp_frame.c - encode, decode and judge data-plane headers and HELLO bodies
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

static int check_request(const dp_hdr *h)
{
    if (h->status != 0)
        return -EPROTO;
    switch (h->op) {
    case DP_HELLO:
        if (h->offset != 0 || h->len < DP_HELLO_FIXED)
            return -EPROTO;
        return h->len > DP_HELLO_MAX_BODY ? -EMSGSIZE : 0;
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

size_t dp_hello_encode(const dp_hello *hello, uint8_t *out, size_t cap)
{
    size_t n = DP_HELLO_FIXED + hello->token_len;
    if (hello->token_len > DP_TOKEN_MAX || n > cap)
        return 0;
    le_put(out, hello->tomb_tag, 8);
    le_put(out + 8, hello->node_id, 4);
    if (hello->token_len)
        memcpy(out + DP_HELLO_FIXED, hello->token, hello->token_len);
    return n;
}

int dp_hello_decode(const uint8_t *body, size_t n, dp_hello *hello)
{
    if (n < DP_HELLO_FIXED || n > DP_HELLO_MAX_BODY)
        return -EPROTO;
    hello->tomb_tag = le_get(body, 8);
    hello->node_id = (uint32_t)le_get(body + 8, 4);
    hello->token = body + DP_HELLO_FIXED;
    hello->token_len = n - DP_HELLO_FIXED;
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
        [DP_WRITE_ACK] = "WRITE_ACK",
    };
    if (op < sizeof names / sizeof names[0] && names[op])
        return names[op];
    return "?";
}
