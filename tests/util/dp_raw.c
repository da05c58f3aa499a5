/*
 * dp_raw.c - a blocking raw data-plane client for tests (see dp_raw.h).
 */
#include "dp_raw.h"

#include <errno.h>
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

size_t dp_raw_send_hello(int fd, uint32_t node, uint64_t tomb, const uint8_t *tok,
                         size_t toklen)
{
    uint8_t body[DP_HELLO_MAX_BODY];
    size_t n = dp_hello_encode(&(dp_hello){.tomb_tag = tomb, .node_id = node, .token = tok,
                                           .token_len = toklen},
                               body, sizeof body);
    if (n == 0)
        return 0;
    dp_raw_send_hdr(fd, DP_HELLO, 42, 0, (uint32_t)n);
    dp_raw_send_all(fd, body, n);
    return n;
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
