/*
 * frame.c - encode and parse the 16-byte frame header (see frame.h).
 */
#include "net/frame.h"
#include "common/le.h"

#include <errno.h>
#include <string.h>

void frame_hdr_encode(const frame_hdr *h, uint8_t out[FRAME_HDR_LEN])
{
    le_put(out, h->len, 4);
    le_put(out + 4, h->type, 2);
    le_put(out + 6, h->flags, 2);
    le_put(out + 8, h->req_id, 8);
}

void frame_hdr_decode(const uint8_t in[FRAME_HDR_LEN], frame_hdr *h)
{
    h->len = (uint32_t)le_get(in, 4);
    h->type = (uint16_t)le_get(in + 4, 2);
    h->flags = (uint16_t)le_get(in + 6, 2);
    h->req_id = le_get(in + 8, 8);
}

int frame_hdr_check(const frame_hdr *h, size_t max_body)
{
    if (h->len > max_body)
        return -EMSGSIZE;
    if (h->flags & ~FRAME_KNOWN_FLAGS)
        return -EPROTO;
    return 0;
}

int frame_parse(const uint8_t *buf, size_t n, size_t max_body, frame_hdr *h)
{
    if (n < FRAME_HDR_LEN)
        return 0;
    frame_hdr t;
    frame_hdr_decode(buf, &t);
    int r = frame_hdr_check(&t, max_body);
    if (r < 0)
        return r;
    if (n - FRAME_HDR_LEN < t.len)
        return 0;
    *h = t;
    return 1;
}
