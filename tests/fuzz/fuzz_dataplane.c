/*
 * fuzz_dataplane.c - libFuzzer target for the data-plane wire codec
 * (src/owner/dataplane/dp_frame.c).
 *
 * The first input byte picks the direction (even: requests as the server
 * receives them, odd: replies as the client does); the rest is a byte stream
 * walked exactly as the receivers walk it: a 32-byte header, dp_hdr_check(),
 * then dp_hdr_body_len() bytes. Every accepted header must re-encode to the
 * same bytes and keep its bounds (body within what its op allows, a handshake
 * body exactly its op's length); every HELLO and HELLO_CHALLENGE body must
 * decode and re-encode to the same bytes, and no other length may decode;
 * dp_range_ok() must agree with wide arithmetic on the header's offset and
 * length.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "owner/dataplane/dp_frame.h"

static void check_range(const dp_hdr *h)
{
    const uint64_t sizes[] = {0, 1, 4096, 64ull << 20, UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned __int128 end = (unsigned __int128)h->offset + h->len;
        bool want = end <= sizes[i];
        if (dp_range_ok(sizes[i], h->offset, h->len) != want)
            abort();
    }
}

static void check_handshake_body(uint8_t op, const uint8_t *body, size_t n)
{
    uint8_t out[DP_HELLO_LEN > DP_CHALLENGE_LEN ? DP_HELLO_LEN : DP_CHALLENGE_LEN];
    if (op == DP_HELLO) {
        dp_hello hello;
        if (n != DP_HELLO_LEN || dp_hello_decode(body, n, &hello) != 0)
            abort(); /* dp_hdr_check fixed n */
        dp_hello_encode(&hello, out);
    } else if (op == DP_HELLO_CHALLENGE) {
        dp_challenge ch;
        if (n != DP_CHALLENGE_LEN || dp_challenge_decode(body, n, &ch) != 0)
            abort();
        dp_challenge_encode(&ch, out);
    } else {
        if (op == DP_HELLO_PROOF && n != DP_PROOF_LEN)
            abort();
        return;
    }
    if (memcmp(out, body, n) != 0)
        abort();
    /* One byte short or over never decodes (nothing is read then). */
    dp_hello hello;
    dp_challenge ch;
    if (dp_hello_decode(body, n - 1, &hello) == 0 || dp_hello_decode(body, n + 1, &hello) == 0 ||
        dp_challenge_decode(body, n - 1, &ch) == 0 || dp_challenge_decode(body, n + 1, &ch) == 0)
        abort();
}

/* The most bytes op may carry after a checked header. */
static uint32_t body_limit(const dp_hdr *h)
{
    if (dp_hdr_has_payload(h))
        return DP_MAX_PAYLOAD;
    switch (h->op) {
    case DP_HELLO:
        return DP_HELLO_LEN;
    case DP_HELLO_CHALLENGE:
        return DP_CHALLENGE_LEN;
    case DP_HELLO_PROOF:
        return DP_PROOF_LEN;
    default:
        return DP_DETAIL_MAX;
    }
}

static void check_accepted(const dp_hdr *h, const uint8_t *raw, enum dp_dir dir)
{
    uint8_t again[DP_HDR_LEN];
    dp_hdr_encode(h, again);
    if (memcmp(again, raw, DP_HDR_LEN) != 0)
        abort();
    if (dp_hdr_body_len(h) > body_limit(h))
        abort();
    bool request_op = h->op == DP_HELLO || h->op == DP_HELLO_PROOF || h->op == DP_READ ||
                      h->op == DP_WRITE;
    if ((dir == DP_DIR_REQUEST) != request_op)
        abort();
    if (h->status > 0 || (dir == DP_DIR_REQUEST && h->status != 0))
        abort();
    check_range(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    enum dp_dir dir = (data[0] & 1) ? DP_DIR_REPLY : DP_DIR_REQUEST;
    size_t pos = 1;
    while (size - pos >= DP_HDR_LEN) {
        dp_hdr h;
        dp_hdr_decode(data + pos, &h);
        (void)dp_op_name(h.op);
        if (dp_hdr_check(&h, dir) != 0)
            break; /* the receiver closes the connection here */
        check_accepted(&h, data + pos, dir);
        pos += DP_HDR_LEN;
        uint32_t body = dp_hdr_body_len(&h);
        if (size - pos < body)
            break;
        check_handshake_body(h.op, data + pos, body);
        pos += body;
    }
    return 0;
}
