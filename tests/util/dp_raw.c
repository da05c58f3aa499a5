/*
 * dp_raw.c - a blocking raw data-plane client for tests (see dp_raw.h).
 */
#include "dp_raw.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

bool dp_raw_send_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w <= 0)
            return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

bool dp_raw_recv_all(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    while (n) {
        ssize_t r = recv(fd, b, n, 0);
        if (r <= 0)
            return false;
        b += r;
        n -= (size_t)r;
    }
    return true;
}

bool dp_raw_hung_up(int fd)
{
    uint8_t buf[4096];
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r == 0 || (r < 0 && errno == ECONNRESET))
            return true;
        if (r < 0)
            return false; /* timeout */
    }
}

void dp_raw_send_hdr(int fd, uint8_t op, uint64_t id, uint64_t off, uint32_t len)
{
    uint8_t b[DP_HDR_LEN];
    dp_hdr_encode(&(dp_hdr){.op = op, .id = id, .offset = off, .len = len}, b);
    dp_raw_send_all(fd, b, sizeof b);
}

void dp_raw_send_hello(int fd, const dp_hello *hello)
{
    uint8_t body[DP_HELLO_LEN];
    dp_hello_encode(hello, body);
    dp_raw_send_hdr(fd, DP_HELLO, DP_RAW_HELLO_ID, 0, DP_HELLO_LEN);
    dp_raw_send_all(fd, body, sizeof body);
}

bool dp_raw_recv_reply(int fd, dp_hdr *h, char *detail, size_t cap)
{
    uint8_t b[DP_HDR_LEN];
    detail[0] = 0;
    if (!dp_raw_recv_all(fd, b, sizeof b))
        return false;
    dp_hdr_decode(b, h);
    if (dp_hdr_check(h, DP_DIR_REPLY) != 0)
        return false;
    if (h->status < 0 && h->len) {
        if (h->len >= cap || !dp_raw_recv_all(fd, detail, h->len))
            return false;
        detail[h->len] = 0;
    }
    return true;
}

/* Reads the answer to handshake request id: true for want (its body, if any,
 * into body), false with out filled for anything else. */
static bool handshake_reply(int fd, uint64_t id, uint8_t want, uint8_t *body,
                            enum dp_raw_end refused, dp_raw_outcome *out)
{
    dp_hdr h;
    if (!dp_raw_recv_reply(fd, &h, out->detail, sizeof out->detail) || h.id != id) {
        out->end = DP_RAW_BROKEN;
        return false;
    }
    if (h.op == DP_HELLO_REFUSED) {
        out->end = refused;
        out->status = h.status;
        return false;
    }
    if (h.op != want || (h.len && !dp_raw_recv_all(fd, body, h.len))) {
        out->end = DP_RAW_BROKEN;
        return false;
    }
    return true;
}

enum dp_raw_end dp_raw_handshake(int fd, const dp_handshake *claim, const auth_key *key,
                                 dp_raw_outcome *out)
{
    memset(out, 0, sizeof *out);
    if (auth_init() < 0) {
        out->end = DP_RAW_BROKEN;
        return out->end;
    }
    dp_handshake hs = *claim;
    auth_random(hs.client_nonce, DP_NONCE_LEN);
    dp_hello hello = {.client_tomb = hs.client_tomb, .client_node = hs.client_node,
                      .server_node = hs.server_node};
    memcpy(hello.nonce, hs.client_nonce, DP_NONCE_LEN);
    dp_raw_send_hello(fd, &hello);

    uint8_t chbuf[DP_CHALLENGE_LEN];
    if (!handshake_reply(fd, DP_RAW_HELLO_ID, DP_HELLO_CHALLENGE, chbuf, DP_RAW_REFUSED_HELLO,
                         out))
        return out->end;
    dp_challenge ch;
    dp_challenge_decode(chbuf, sizeof chbuf, &ch);
    memcpy(hs.server_nonce, ch.nonce, DP_NONCE_LEN);
    out->server_proved = dp_handshake_check(key, DP_SIDE_SERVER, &hs, ch.proof);
    uint8_t proof[DP_PROOF_LEN];
    dp_handshake_prove(key, DP_SIDE_CLIENT, &hs, proof);
    dp_raw_send_hdr(fd, DP_HELLO_PROOF, DP_RAW_PROOF_ID, 0, DP_PROOF_LEN);
    dp_raw_send_all(fd, proof, sizeof proof);
    if (!handshake_reply(fd, DP_RAW_PROOF_ID, DP_HELLO_OK, NULL, DP_RAW_REFUSED_PROOF, out))
        return out->end;
    out->end = DP_RAW_ACCEPTED;
    return out->end;
}
