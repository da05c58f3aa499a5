/*
 * dp_frame.h - the owner-to-owner data-plane wire format: a fixed 32-byte
 * binary header, optionally followed by raw bytes.
 *
 * Not protobuf: a READ_DATA or WRITE carries up to DP_MAX_PAYLOAD bytes of
 * value that must go from one segment onto the socket and off the socket into
 * the other segment untouched, so the header has a fixed size and says exactly
 * how many bytes follow. A receiver reads exactly DP_HDR_LEN bytes, judges
 * them with dp_hdr_check(), and only then reads dp_hdr_body_len() more, into a
 * place it chose (the segment for payload, a small bounded buffer otherwise).
 *
 * Header, little-endian:
 *
 *   0  u32 magic   DP_MAGIC ("FXD1")
 *   4  u8  op      enum dp_op
 *   5  u8  flags   0 (no flags are defined; others are refused)
 *   6  u16 rsvd    0
 *   8  u64 id      chosen by the requester, echoed in the reply
 *  16  u64 offset  READ/WRITE: where in the server's segment; echoed in replies
 *  24  u32 len     see below
 *  28  i32 status  replies: 0 or a negative FX_E* code; requests: 0
 *
 * Ops and what follows the header (requests go client -> server):
 *
 *   HELLO          len = body bytes: u64 tomb_tag, u32 node_id, token[len - 12]
 *                  (DP_HELLO_FIXED <= len <= DP_HELLO_MAX_BODY); offset 0.
 *   HELLO_OK       len 0.
 *   HELLO_REFUSED  status < 0; len <= DP_DETAIL_MAX bytes of detail text.
 *   READ           pull [offset, +len) of the server's segment, 1 <= len <=
 *                  DP_MAX_PAYLOAD; nothing follows.
 *   READ_DATA      status 0: len == the READ's len payload bytes follow;
 *                  status < 0: len <= DP_DETAIL_MAX bytes of detail text.
 *   WRITE          len payload bytes follow (1 <= len <= DP_MAX_PAYLOAD), to be
 *                  stored at [offset, +len) of the server's segment.
 *   WRITE_ACK      status 0: len 0; status < 0: len <= DP_DETAIL_MAX detail.
 *
 * A connection starts with one HELLO; the server answers every request in the
 * order it arrived, so the client matches replies to requests by position
 * (and checks op and id). The functions here are pure (no IO, no allocation)
 * so the fuzz target can drive them.
 */
#ifndef FX_OWNER_DATAPLANE_DP_FRAME_H
#define FX_OWNER_DATAPLANE_DP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DP_HDR_LEN 32u
#define DP_MAGIC 0x31445846u /* bytes 'F' 'X' 'D' '1' on the wire */

#define DP_MAX_PAYLOAD (16u << 20) /* the largest chunk a receiver accepts */
#define DP_TOKEN_MAX 256u
#define DP_HELLO_FIXED 12u /* tomb_tag + node_id */
#define DP_HELLO_MAX_BODY (DP_HELLO_FIXED + DP_TOKEN_MAX)
#define DP_DETAIL_MAX 200u /* refusal text in an error reply */

enum dp_op {
    DP_HELLO = 1,
    DP_HELLO_OK = 2,
    DP_HELLO_REFUSED = 3,
    DP_READ = 4,
    DP_READ_DATA = 5,
    DP_WRITE = 6,
    DP_WRITE_ACK = 7,
};

/* Which side a header travels to: requests reach the server, replies the client. */
enum dp_dir { DP_DIR_REQUEST = 0, DP_DIR_REPLY = 1 };

typedef struct dp_hdr {
    uint32_t magic; /* filled by dp_hdr_decode; dp_hdr_encode always writes DP_MAGIC */
    uint8_t op;
    uint8_t flags;
    uint16_t rsvd;
    uint64_t id;
    uint64_t offset;
    uint32_t len;
    int32_t status;
} dp_hdr;

typedef struct dp_hello {
    uint64_t tomb_tag;
    uint32_t node_id;
    const uint8_t *token; /* points into the body it was decoded from */
    size_t token_len;
} dp_hello;

/* Writes the 32-byte header (magic DP_MAGIC, h->magic is ignored). */
void dp_hdr_encode(const dp_hdr *h, uint8_t out[DP_HDR_LEN]);
/* Reads a 32-byte header without judging it. */
void dp_hdr_decode(const uint8_t in[DP_HDR_LEN], dp_hdr *h);
/* Judges a decoded header travelling in direction dir. Returns 0, -EPROTO
 * (bad magic, unknown op or flags, an op of the other direction, a status
 * that is not 0 or an FX_E* code, fields that must be 0 and are not) or
 * -EMSGSIZE (len outside what the op allows). */
int dp_hdr_check(const dp_hdr *h, enum dp_dir dir);
/* Bytes that follow a checked header on the wire (0 for READ: its len is the
 * amount asked for, not sent). */
uint32_t dp_hdr_body_len(const dp_hdr *h);
/* True when the bytes after a checked header are segment payload (a WRITE, or
 * a READ_DATA with status 0), false when they are a hello or detail text. */
bool dp_hdr_has_payload(const dp_hdr *h);

/* Writes the HELLO body into out (cap bytes). Returns its length, or 0 when
 * the token is longer than DP_TOKEN_MAX or cap is too small. */
size_t dp_hello_encode(const dp_hello *hello, uint8_t *out, size_t cap);
/* Reads a HELLO body of n bytes; hello->token points into body. Returns 0 or
 * -EPROTO when n is outside [DP_HELLO_FIXED, DP_HELLO_MAX_BODY]. */
int dp_hello_decode(const uint8_t *body, size_t n, dp_hello *hello);

/* True when [off, off+len) lies inside a segment of size bytes (overflow-safe). */
bool dp_range_ok(uint64_t size, uint64_t off, uint64_t len);
/* "HELLO", "READ", ... or "?" for an unknown op. */
const char *dp_op_name(unsigned op);

#endif
