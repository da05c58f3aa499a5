/*
 * fuzz_frame.c - libFuzzer target for the frame parser and the body decoder.
 *
 * The input is a byte stream as a connection would receive it: frames are
 * parsed one after another exactly as net/conn.c does (header checks, maximum
 * body, then msg_decode of the body for its type and direction), and every
 * decoded message is re-encoded and decoded again, which must succeed.
 *
 * A decoded batch of packed keys (BatchKeyInfo, ExternalBatchExists,
 * BatchDelete, ExternalBatchDelete) also
 * goes through the shape check the master and the owner run
 * (net/batch_keys.h): when it passes, walking the keys by their lengths must
 * end exactly at the end of `keys`.
 *
 * An input starting with 'H' (server) or 'h' (client) first runs the control
 * handshake (net/handshake.h) over the bytes after it, as conn.c does on an
 * authenticated connection, then parses what is left as frames.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/batch_keys.h"
#include "net/frame.h"
#include "net/handshake.h"
#include "net/msg.h"

#define FUZZ_MAX_BODY (64u * 1024u)

/* Runs one side of the handshake over data; returns the bytes it consumed. */
static size_t run_handshake(bool server, const uint8_t *data, size_t size)
{
    auth_key key;
    memset(&key, 0x5a, sizeof key);
    handshake hs;
    uint8_t out[HS_OUT_MAX];
    size_t out_len, pos = 0;
    if (server)
        handshake_server_start(&hs, &key);
    else
        handshake_client_start(&hs, &key, HS_ROLE_OWNER, "fuzz", out, &out_len);
    while (hs.state != HS_DONE && hs.state != HS_FAILED) {
        int r = handshake_step(&hs, data + pos, size - pos, out, &out_len);
        if (out_len > HS_OUT_MAX)
            abort();
        if (r <= 0)
            break;
        pos += (size_t)r;
    }
    return pos;
}

/* The walk a handler does after batch_keys_check passed. */
static void walk_batch(const ProtobufCBinaryData *keys, const uint32_t *klens, size_t n)
{
    char why[160];
    if (batch_keys_check(keys, klens, n, why, sizeof why))
        return;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        if (klens[i] > keys->len - off)
            abort();
        off += klens[i];
        (void)batch_key_len_ok(klens[i]);
    }
    if (off != keys->len)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t pos = 0;
    if (size > 0 && (data[0] == 'H' || data[0] == 'h'))
        pos = 1 + run_handshake(data[0] == 'H', data + 1, size - 1);
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
        if (!resp && (h.type == MSG_BATCH_KEY_INFO || h.type == MSG_EXT_BATCH_EXISTS)) {
            const Fx__BatchKeyInfoReq *b = (const Fx__BatchKeyInfoReq *)m;
            walk_batch(&b->keys, b->klens, b->n_klens);
        }
        if (!resp && (h.type == MSG_BATCH_DELETE || h.type == MSG_EXT_BATCH_DELETE)) {
            const Fx__BatchDeleteReq *b = (const Fx__BatchDeleteReq *)m;
            walk_batch(&b->keys, b->klens, b->n_klens);
        }
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
