/*
 * dp_handshake.h - what the two ends of a data-plane connection prove to each
 * other: the transcript of one handshake and the proofs made over it with the
 * pair key the master derived for the two members (MemberInfo.pair_key).
 *
 * Transcript T = "fluxon-dp-v1" || client node u32 || client tomb u64 ||
 * server node u32 || server tomb u64 || client nonce || server nonce
 * (integers little-endian, the label without its NUL). The server proves
 * first, auth_proof(K, "dp-server", T) in its HELLO_CHALLENGE, so a client
 * sends neither its proof nor any request to a data plane that does not hold
 * K; the client answers with auth_proof(K, "dp-client", T) in HELLO_PROOF.
 * Both nonces are fresh for each connection, so a proof seen on one connection
 * is worthless on another; the incarnations are in T, so a proof made for one
 * pair of incarnations proves nothing for another; and the labels differ, so
 * one side's proof cannot be reflected back as the other's.
 */
#ifndef FX_OWNER_DATAPLANE_DP_HANDSHAKE_H
#define FX_OWNER_DATAPLANE_DP_HANDSHAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "net/auth_key.h"
#include "owner/dataplane/dp_frame.h"

#define DP_TRANSCRIPT_LABEL "fluxon-dp-v1"
#define DP_TRANSCRIPT_LEN (sizeof DP_TRANSCRIPT_LABEL - 1 + 2 * (4 + 8) + 2 * DP_NONCE_LEN)

/* Who made a proof. */
enum dp_side { DP_SIDE_SERVER, DP_SIDE_CLIENT };

/* One handshake as both ends see it once the challenge is out. */
typedef struct dp_handshake {
    uint32_t client_node;
    uint64_t client_tomb;
    uint32_t server_node;
    uint64_t server_tomb;
    uint8_t client_nonce[DP_NONCE_LEN];
    uint8_t server_nonce[DP_NONCE_LEN];
} dp_handshake;

/* Writes T (DP_TRANSCRIPT_LEN bytes). */
void dp_transcript(const dp_handshake *hs, uint8_t out[DP_TRANSCRIPT_LEN]);
/* proof = the side's proof of hs under key. */
void dp_handshake_prove(const auth_key *key, enum dp_side side, const dp_handshake *hs,
                        uint8_t proof[DP_PROOF_LEN]);
/* True when proof is the side's proof of hs under key (constant time). */
bool dp_handshake_check(const auth_key *key, enum dp_side side, const dp_handshake *hs,
                        const uint8_t proof[DP_PROOF_LEN]);

#endif
