/*
 * frame.h - the length-prefixed frame that carries every message.
 *
 * A frame is a 16-byte header {u32 body_len, u16 type, u16 flags, u64 req_id}
 * in little-endian order, followed by body_len bytes of body. A receiver parses
 * the header before trusting anything: a body longer than its maximum, or
 * unknown flag bits, is a protocol error and the connection is dropped.
 */
#ifndef FX_NET_FRAME_H
#define FX_NET_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_HDR_LEN 16u
#define FRAME_MAX_BODY (16u << 20) /* control messages; payload never rides here */

#define FRAME_RESPONSE 0x1u /* the body is the Resp half of the message pair */
#define FRAME_ONEWAY 0x2u   /* a request that gets no response */
#define FRAME_KNOWN_FLAGS (FRAME_RESPONSE | FRAME_ONEWAY)

typedef struct frame_hdr {
    uint32_t len;
    uint16_t type;
    uint16_t flags;
    uint64_t req_id;
} frame_hdr;

/* Writes the 16-byte header. */
void frame_hdr_encode(const frame_hdr *h, uint8_t out[FRAME_HDR_LEN]);

/* Reads a 16-byte header without judging it. */
void frame_hdr_decode(const uint8_t in[FRAME_HDR_LEN], frame_hdr *h);
/* Returns 0, -EMSGSIZE when h->len exceeds max_body, -EPROTO for unknown flags. */
int frame_hdr_check(const frame_hdr *h, size_t max_body);

/* Looks at the first n bytes of a stream. Returns 1 with *h filled when a whole
 * frame (header + body) is present, 0 when more bytes are needed, -EMSGSIZE when
 * the declared body exceeds max_body, -EPROTO for unknown flag bits. */
int frame_parse(const uint8_t *buf, size_t n, size_t max_body, frame_hdr *h);

#endif
