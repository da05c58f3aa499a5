/*
 * handshake.h - the mutual challenge-response that opens every authenticated
 * TCP connection of the control plane (owner to master), before any frame.
 *
 * Both sides know the cluster key (auth_key.h). Four fixed messages, each
 * starting with a 4-byte magic so that a peer speaking frames (or nothing we
 * know) is told apart at once:
 *
 *   HELLO      client -> server  "FXH1" u8 role, u8 id_len, u16 0,
 *                                nonce_c[32], identity[id_len]
 *   CHALLENGE  server -> client  "FXH2" u32 0, nonce_s[32], proof_s[32]
 *   PROOF      client -> server  "FXH3" u32 0, proof_c[32]
 *   RESULT     server -> client  "FXH4" u8 status (0 accepted, 1 refused,
 *                                2 this server uses no cluster secret),
 *                                u8 0, u16 0
 *
 * The transcript is "fluxon-auth-v1" || role || id_len || identity || nonce_c
 * || nonce_s; proof_s = HMAC(key, "server" || transcript) and proof_c =
 * HMAC(key, "client" || transcript). The client checks proof_s before it
 * proves anything itself, so a server without the key learns nothing it
 * could replay; fresh nonces on both sides make every proof good for one
 * connection only. The identity (an owner's node_name) is what the server
 * may then hold the peer to: the master accepts a Register only under the
 * name that was proven here.
 *
 * A handshake is a pure state machine over bytes (no IO), so the fuzz target
 * and the unit test drive it directly; conn.c feeds it what the socket gives
 * and sends what it produces.
 */
#ifndef FX_NET_HANDSHAKE_H
#define FX_NET_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/auth_key.h"

#define HS_ID_MAX 255
#define HS_HELLO_FIXED 40u
#define HS_CHALLENGE_LEN 72u
#define HS_PROOF_LEN 40u
#define HS_RESULT_LEN 8u
#define HS_OUT_MAX (HS_HELLO_FIXED + HS_ID_MAX) /* the largest message one step sends */

#define HS_ROLE_OWNER 'O' /* an owner's connection to the master */

enum hs_state {
    HS_CLIENT_WAIT_CHALLENGE,
    HS_CLIENT_WAIT_RESULT,
    HS_SERVER_WAIT_HELLO,
    HS_SERVER_WAIT_PROOF,
    HS_DONE,
    HS_FAILED,
};

typedef struct handshake {
    enum hs_state state;
    auth_key key;
    uint8_t role;
    uint8_t id_len;
    char identity[HS_ID_MAX + 1];
    uint8_t nonce_c[AUTH_NONCE_LEN];
    uint8_t nonce_s[AUTH_NONCE_LEN];
    /* HS_FAILED: why, for the log. not_handshake: the peer's first bytes were
     * not a handshake message at all (e.g. a frame from a peer without the
     * secret), so the caller may answer it in its own protocol. */
    char failure[160];
    bool not_handshake;
} handshake;

/* Starts the client side; out receives the HELLO to send (*out_len bytes,
 * out has HS_OUT_MAX bytes). identity is truncated to HS_ID_MAX bytes. */
void handshake_client_start(handshake *hs, const auth_key *key, uint8_t role,
                            const char *identity, uint8_t *out, size_t *out_len);
/* Starts the server side (nothing to send yet). */
void handshake_server_start(handshake *hs, const auth_key *key);

/* Feeds the first n received bytes. Returns the bytes consumed (> 0: one
 * message, and *out_len bytes of answer to send, possibly 0), 0 when a whole
 * message has not arrived yet, or -1 when the handshake failed (hs->failure
 * says why; *out_len may still hold a refusal to send before closing). After
 * HS_DONE the caller stops feeding: later bytes are frames. */
int handshake_step(handshake *hs, const uint8_t *in, size_t n, uint8_t *out, size_t *out_len);

/* After HS_DONE, on either side: the session key of this connection,
 * HMAC(key, "session" || transcript), known only to the two ends (the pair
 * keys of the member table travel sealed under it). */
void handshake_session_key(const handshake *hs, auth_key *out);

/* True when the first n bytes start a HELLO (a server without a secret uses
 * it to tell such a client why it is turned away). */
bool handshake_is_hello(const uint8_t *in, size_t n);
/* The RESULT a server without a cluster secret sends to a HELLO. */
void handshake_no_secret_result(uint8_t out[HS_RESULT_LEN]);

/* Forgets the key and nonces (the identity stays readable). */
void handshake_wipe(handshake *hs);

#endif
