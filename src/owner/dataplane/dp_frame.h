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
 *   HELLO            len = DP_HELLO_LEN body bytes: u64 client tomb_tag, u32
 *                    client node_id, u32 the server node_id the client means
 *                    to reach, client nonce[DP_NONCE_LEN]; offset 0.
 *   HELLO_CHALLENGE  status 0, offset 0; len = DP_CHALLENGE_LEN: server
 *                    nonce[DP_NONCE_LEN], server proof[DP_PROOF_LEN].
 *   HELLO_PROOF      len = DP_PROOF_LEN: client proof[DP_PROOF_LEN]; offset 0.
 *   HELLO_OK         len 0.
 *   HELLO_REFUSED    status < 0; len <= DP_DETAIL_MAX bytes of detail text
 *                    (the answer to a HELLO or a HELLO_PROOF that failed).
 *   READ             pull [offset, +len) of the server's segment, 1 <= len <=
 *                    DP_MAX_PAYLOAD; nothing follows.
 *   READ_DATA        status 0: len == the READ's len payload bytes follow;
 *                    status < 0: len <= DP_DETAIL_MAX bytes of detail text.
 *   WRITE            len payload bytes follow (1 <= len <= DP_MAX_PAYLOAD), to
 *                    be stored at [offset, +len) of the server's segment.
 *   WRITE_ACK        status 0: len 0; status < 0: len <= DP_DETAIL_MAX detail.
 *
 * A connection starts with a handshake: HELLO, HELLO_CHALLENGE, HELLO_PROOF,
 * HELLO_OK (the proofs are dp_handshake.h's). Only then may READs and WRITEs
 * come; the server answers every request in the order it arrived, so the
 * client matches replies to requests by position (and checks op and id). The
 * functions here are pure (no IO, no allocation, no crypto) so the fuzz
 * target can drive them.
 */
#ifndef FX_OWNER_DATAPLANE_DP_FRAME_H
#define FX_OWNER_DATAPLANE_DP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DP_HDR_LEN 32u
#define DP_MAGIC 0x31445846u /* bytes 'F' 'X' 'D' '1' on the wire */

#define DP_MAX_PAYLOAD (16u << 20) /* the largest chunk a receiver accepts */
#define DP_NONCE_LEN 32u
#define DP_PROOF_LEN 32u
#define DP_HELLO_LEN (8u + 4u + 4u + DP_NONCE_LEN)    /* tomb, node, server node, nonce */
#define DP_CHALLENGE_LEN (DP_NONCE_LEN + DP_PROOF_LEN) /* nonce, proof */
#define DP_DETAIL_MAX 200u /* refusal text in an error reply */

enum dp_op {
    DP_HELLO = 1,
    DP_HELLO_OK = 2,
    DP_HELLO_REFUSED = 3,
    DP_READ = 4,
    DP_READ_DATA = 5,
    DP_WRITE = 6,
    DP_WRITE_ACK = 7,
    DP_HELLO_CHALLENGE = 8,
    DP_HELLO_PROOF = 9,
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
    uint64_t client_tomb;
    uint32_t client_node;
    uint32_t server_node; /* whom the client means to reach */
    uint8_t nonce[DP_NONCE_LEN];
} dp_hello;

typedef struct dp_challenge {
    uint8_t nonce[DP_NONCE_LEN];
    uint8_t proof[DP_PROOF_LEN];
} dp_challenge;

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
 * a READ_DATA with status 0), false when they are a handshake body or detail
 * text. */
bool dp_hdr_has_payload(const dp_hdr *h);

/* Write the HELLO / HELLO_CHALLENGE body (exactly DP_HELLO_LEN /
 * DP_CHALLENGE_LEN bytes). A HELLO_PROOF body is the proof's bytes as they are. */
void dp_hello_encode(const dp_hello *hello, uint8_t out[DP_HELLO_LEN]);
void dp_challenge_encode(const dp_challenge *ch, uint8_t out[DP_CHALLENGE_LEN]);
/* Read a body of n bytes. Return 0, or -EPROTO when n is not the op's length. */
int dp_hello_decode(const uint8_t *body, size_t n, dp_hello *hello);
int dp_challenge_decode(const uint8_t *body, size_t n, dp_challenge *ch);

/* True when [off, off+len) lies inside a segment of size bytes (overflow-safe). */
bool dp_range_ok(uint64_t size, uint64_t off, uint64_t len);
/* "HELLO", "READ", ... or "?" for an unknown op. */
const char *dp_op_name(unsigned op);

#endif
