/*
 * dp_raw.h - a blocking test-side client of the owner-to-owner data plane
 * that writes the wire format (owner/dataplane/dp_frame.h) byte by byte.
 *
 * Tests use it to send what a well-behaved dp_client never would (requests
 * before the handshake, claims of another member's identity, proofs made
 * with the wrong key, ranges past the segment's end, garbage) and to read
 * the refusals. The caller opens the socket, with SO_RCVTIMEO set so a
 * server that never answers ends every receive here with a timeout. Nothing
 * here asserts: each helper reports what happened and the test judges it.
 */
#ifndef FX_TESTS_DP_RAW_H
#define FX_TESTS_DP_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "owner/dataplane/dp_frame.h"
#include "owner/dataplane/dp_handshake.h"

#define DP_RAW_HELLO_ID 42u
#define DP_RAW_PROOF_ID 44u

/* Sends all n bytes; false when the peer is gone or send fails. */
bool dp_raw_send_all(int fd, const void *p, size_t n);
/* Reads exactly n bytes; false on EOF, error or timeout. */
bool dp_raw_recv_all(int fd, void *p, size_t n);
/* True when the server hangs up (EOF or reset) before the receive timeout,
 * discarding anything it still sends; false on a timeout. */
bool dp_raw_hung_up(int fd);
/* Sends one request header (flags, status 0); a failed send is ignored, the
 * reply (or its absence) tells. */
void dp_raw_send_hdr(int fd, uint8_t op, uint64_t id, uint64_t off, uint32_t len);
/* Sends a HELLO with id DP_RAW_HELLO_ID. */
void dp_raw_send_hello(int fd, const dp_hello *hello);
/* Reads one reply header into *h (it must pass dp_hdr_check as a reply) and,
 * for an error with a body, its detail text into detail (NUL-terminated, at
 * most cap - 1 bytes). detail is "" for any other reply. Returns false on EOF,
 * timeout, a header that is not a reply, or a detail that does not fit. */
bool dp_raw_recv_reply(int fd, dp_hdr *h, char *detail, size_t cap);

/* How a raw handshake ended. */
enum dp_raw_end {
    DP_RAW_ACCEPTED,      /* HELLO_OK: READs and WRITEs may follow */
    DP_RAW_REFUSED_HELLO, /* HELLO_REFUSED answered the HELLO */
    DP_RAW_REFUSED_PROOF, /* HELLO_REFUSED answered the HELLO_PROOF */
    DP_RAW_BROKEN,        /* no answer, a malformed one or one out of step */
};
typedef struct dp_raw_outcome {
    enum dp_raw_end end;
    int status;         /* the refusal's status, 0 otherwise */
    bool server_proved; /* the challenge's proof checked out under our key */
    char detail[DP_DETAIL_MAX + 1]; /* the refusal's text, "" otherwise */
} dp_raw_outcome;

/* Runs the whole handshake: a HELLO claiming claim->client_node/client_tomb
 * and naming claim->server_node (fresh nonce; claim's nonces are ignored),
 * then, on a HELLO_CHALLENGE, a HELLO_PROOF (id DP_RAW_PROOF_ID) made with
 * key over the transcript that takes claim->server_tomb as the server's
 * incarnation. The proof goes out even
 * when the server's did not check out (a test plays a member that does not
 * care); out->server_proved says whether it did. Returns out->end. */
enum dp_raw_end dp_raw_handshake(int fd, const dp_handshake *claim, const auth_key *key,
                                 dp_raw_outcome *out);

#endif
