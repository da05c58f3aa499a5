/*
 * fuzz_dataplane.c - libFuzzer target for the data-plane wire codec
 * (src/owner/dataplane/dp_frame.c).
 *
 * The first input byte picks the direction (even: requests as the server
 * receives them, odd: replies as the client does); the rest is a byte stream
 * walked exactly as the receivers walk it: a 32-byte header, dp_hdr_check(),
 * then dp_hdr_body_len() bytes. Every accepted header must re-encode to the
 * same bytes and keep its bounds (body within what its op allows); every
 * HELLO body must decode and re-encode to the same bytes; dp_range_ok() must
 * agree with wide arithmetic on the header's offset and length.
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

static void check_hello(const uint8_t *body, size_t n)
{
    dp_hello hello;
    if (dp_hello_decode(body, n, &hello) != 0)
        abort(); /* dp_hdr_check bounded n */
    uint8_t out[DP_HELLO_MAX_BODY];
    size_t m = dp_hello_encode(&hello, out, sizeof out);
    if (m != n || memcmp(out, body, n) != 0)
        abort();
}

static void check_accepted(const dp_hdr *h, const uint8_t *raw, enum dp_dir dir)
{
    uint8_t again[DP_HDR_LEN];
    dp_hdr_encode(h, again);
    if (memcmp(again, raw, DP_HDR_LEN) != 0)
        abort();
    uint32_t body = dp_hdr_body_len(h);
    uint32_t limit = dp_hdr_has_payload(h) ? DP_MAX_PAYLOAD
                     : h->op == DP_HELLO  ? DP_HELLO_MAX_BODY
                                          : DP_DETAIL_MAX;
    if (body > limit)
        abort();
    if ((dir == DP_DIR_REQUEST) != (h->op == DP_HELLO || h->op == DP_READ || h->op == DP_WRITE))
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
        if (h.op == DP_HELLO)
            check_hello(data + pos, body);
        pos += body;
    }
    return 0;
}
