/*
 * dp_handshake.c - the data-plane handshake's transcript and proofs (see
 * dp_handshake.h), on auth_key's HMAC-SHA256: the only cryptography here is
 * libsodium's.
 */
#include "owner/dataplane/dp_handshake.h"

#include <string.h>

#include "common/le.h"

_Static_assert(DP_NONCE_LEN == AUTH_NONCE_LEN, "the wire carries auth_key nonces");
_Static_assert(DP_PROOF_LEN == AUTH_PROOF_LEN, "the wire carries auth_key proofs");

void dp_transcript(const dp_handshake *hs, uint8_t out[DP_TRANSCRIPT_LEN])
{
    size_t n = sizeof DP_TRANSCRIPT_LABEL - 1;
    memcpy(out, DP_TRANSCRIPT_LABEL, n);
    le_put(out + n, hs->client_node, 4);
    le_put(out + n + 4, hs->client_tomb, 8);
    le_put(out + n + 12, hs->server_node, 4);
    le_put(out + n + 16, hs->server_tomb, 8);
    n += 24;
    memcpy(out + n, hs->client_nonce, DP_NONCE_LEN);
    memcpy(out + n + DP_NONCE_LEN, hs->server_nonce, DP_NONCE_LEN);
}

static const char *side_label(enum dp_side side)
{
    return side == DP_SIDE_SERVER ? "dp-server" : "dp-client";
}

void dp_handshake_prove(const auth_key *key, enum dp_side side, const dp_handshake *hs,
                        uint8_t proof[DP_PROOF_LEN])
{
    uint8_t t[DP_TRANSCRIPT_LEN];
    dp_transcript(hs, t);
    auth_proof(key, side_label(side), t, sizeof t, proof);
}

bool dp_handshake_check(const auth_key *key, enum dp_side side, const dp_handshake *hs,
                        const uint8_t proof[DP_PROOF_LEN])
{
    uint8_t t[DP_TRANSCRIPT_LEN];
    dp_transcript(hs, t);
    return auth_proof_ok(key, side_label(side), t, sizeof t, proof);
}
