/*
 * fuzz_frame.c - libFuzzer target for the frame parser and the body decoder.
 *
 * The input is a byte stream as a connection would receive it: frames are
 * parsed one after another exactly as net/conn.c does (header checks, maximum
 * body, then msg_decode of the body for its type and direction), and every
 * decoded message is re-encoded and decoded again, which must succeed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/frame.h"
#include "net/msg.h"

#define FUZZ_MAX_BODY (64u * 1024u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t pos = 0;
    while (pos < size) {
        frame_hdr h;
        int r = frame_parse(data + pos, size - pos, FUZZ_MAX_BODY, &h);
        if (r <= 0)
            break;
        const uint8_t *body = data + pos + FRAME_HDR_LEN;
        bool resp = h.flags & FRAME_RESPONSE;
        ProtobufCMessage *m = msg_decode(h.type, resp, body, h.len);
        if (!m)
            break;
        (void)msg_status(m);
        (void)msg_detail(m);
        size_t len;
        uint8_t *enc = msg_encode(h.type, h.flags, h.req_id, m, &len);
        if (!enc)
            abort();
        frame_hdr h2;
        if (frame_parse(enc, len, FRAME_MAX_BODY, &h2) != 1 || h2.type != h.type)
            abort();
        ProtobufCMessage *m2 = msg_decode(h2.type, resp, enc + FRAME_HDR_LEN, h2.len);
        if (!m2)
            abort();
        msg_free(m2);
        free(enc);
        msg_free(m);
        pos += FRAME_HDR_LEN + h.len;
    }
    return 0;
}
