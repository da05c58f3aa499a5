/*
 * handshake.c - the control plane's mutual challenge-response as a state
 * machine over bytes (see handshake.h for the messages and the transcript).
 */
#include "net/handshake.h"

#include <stdio.h>
#include <string.h>

static const uint8_t MAGIC_HELLO[4] = {'F', 'X', 'H', '1'};
static const uint8_t MAGIC_CHALLENGE[4] = {'F', 'X', 'H', '2'};
static const uint8_t MAGIC_PROOF[4] = {'F', 'X', 'H', '3'};
static const uint8_t MAGIC_RESULT[4] = {'F', 'X', 'H', '4'};

#define TRANSCRIPT_LABEL "fluxon-auth-v1"
#define TRANSCRIPT_MAX (sizeof TRANSCRIPT_LABEL + 2 + HS_ID_MAX + 2 * AUTH_NONCE_LEN)

/* Writes the transcript into t; returns its length. */
static size_t transcript(const handshake *hs, uint8_t t[TRANSCRIPT_MAX])
{
    size_t n = 0;
    memcpy(t, TRANSCRIPT_LABEL, sizeof TRANSCRIPT_LABEL);
    n += sizeof TRANSCRIPT_LABEL;
    t[n++] = hs->role;
    t[n++] = hs->id_len;
    memcpy(t + n, hs->identity, hs->id_len);
    n += hs->id_len;
    memcpy(t + n, hs->nonce_c, AUTH_NONCE_LEN);
    n += AUTH_NONCE_LEN;
    memcpy(t + n, hs->nonce_s, AUTH_NONCE_LEN);
    return n + AUTH_NONCE_LEN;
}

static void make_proof(const handshake *hs, const char *label, uint8_t proof[AUTH_PROOF_LEN])
{
    uint8_t t[TRANSCRIPT_MAX];
    auth_proof(&hs->key, label, t, transcript(hs, t), proof);
}

static bool proof_ok(const handshake *hs, const char *label, const uint8_t *proof)
{
    uint8_t t[TRANSCRIPT_MAX];
    return auth_proof_ok(&hs->key, label, t, transcript(hs, t), proof);
}

static int fail(handshake *hs, const char *why)
{
    hs->state = HS_FAILED;
    snprintf(hs->failure, sizeof hs->failure, "%s", why);
    return -1;
}

void handshake_client_start(handshake *hs, const auth_key *key, uint8_t role,
                            const char *identity, uint8_t *out, size_t *out_len)
{
    memset(hs, 0, sizeof *hs);
    hs->state = HS_CLIENT_WAIT_CHALLENGE;
    hs->key = *key;
    hs->role = role;
    size_t len = strlen(identity);
    hs->id_len = (uint8_t)(len > HS_ID_MAX ? HS_ID_MAX : len);
    memcpy(hs->identity, identity, hs->id_len);
    auth_random(hs->nonce_c, AUTH_NONCE_LEN);
    memcpy(out, MAGIC_HELLO, 4);
    out[4] = role;
    out[5] = hs->id_len;
    out[6] = out[7] = 0;
    memcpy(out + 8, hs->nonce_c, AUTH_NONCE_LEN);
    memcpy(out + HS_HELLO_FIXED, hs->identity, hs->id_len);
    *out_len = HS_HELLO_FIXED + hs->id_len;
}

void handshake_server_start(handshake *hs, const auth_key *key)
{
    memset(hs, 0, sizeof *hs);
    hs->state = HS_SERVER_WAIT_HELLO;
    hs->key = *key;
}

static bool zeros(const uint8_t *p, size_t n)
{
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++)
        d |= p[i];
    return d == 0;
}

/* A refusal for the client to read before we close. */
static void result(uint8_t *out, size_t *out_len, uint8_t status)
{
    memcpy(out, MAGIC_RESULT, 4);
    out[4] = status;
    out[5] = out[6] = out[7] = 0;
    *out_len = HS_RESULT_LEN;
}

static int server_hello(handshake *hs, const uint8_t *in, size_t n, uint8_t *out, size_t *out_len)
{
    if (n < HS_HELLO_FIXED)
        return 0;
    if (in[6] || in[7])
        return fail(hs, "malformed handshake hello");
    size_t len = HS_HELLO_FIXED + in[5];
    if (n < len)
        return 0;
    if (in[4] != HS_ROLE_OWNER)
        return fail(hs, "a handshake hello with an unknown role");
    hs->role = in[4];
    hs->id_len = in[5];
    memcpy(hs->nonce_c, in + 8, AUTH_NONCE_LEN);
    memcpy(hs->identity, in + HS_HELLO_FIXED, hs->id_len);
    hs->identity[hs->id_len] = 0;
    if (memchr(hs->identity, 0, hs->id_len))
        return fail(hs, "a handshake identity with a NUL byte");
    auth_random(hs->nonce_s, AUTH_NONCE_LEN);
    memcpy(out, MAGIC_CHALLENGE, 4);
    memset(out + 4, 0, 4);
    memcpy(out + 8, hs->nonce_s, AUTH_NONCE_LEN);
    make_proof(hs, "server", out + 8 + AUTH_NONCE_LEN);
    *out_len = HS_CHALLENGE_LEN;
    hs->state = HS_SERVER_WAIT_PROOF;
    return (int)len;
}

static int server_proof(handshake *hs, const uint8_t *in, size_t n, uint8_t *out, size_t *out_len)
{
    if (n < HS_PROOF_LEN)
        return 0;
    if (memcmp(in, MAGIC_PROOF, 4) != 0 || !zeros(in + 4, 4)) {
        result(out, out_len, 1);
        return fail(hs, "malformed handshake proof");
    }
    if (!proof_ok(hs, "client", in + 8)) {
        result(out, out_len, 1);
        return fail(hs, "the peer does not know the cluster secret (wrong proof)");
    }
    result(out, out_len, 0);
    hs->state = HS_DONE;
    return HS_PROOF_LEN;
}

static int client_challenge(handshake *hs, const uint8_t *in, size_t n, uint8_t *out,
                            size_t *out_len)
{
    if (n < 4)
        return 0;
    if (memcmp(in, MAGIC_RESULT, 4) == 0) {
        if (n < HS_RESULT_LEN)
            return 0;
        return fail(hs, in[4] == 2 ? "the server uses no cluster secret (start the master "
                                     "with --secret-file)"
                                   : "the server refused our hello");
    }
    if (memcmp(in, MAGIC_CHALLENGE, 4) != 0) {
        hs->not_handshake = true;
        return fail(hs, "the server does not speak the handshake (has it a cluster secret?)");
    }
    if (n < HS_CHALLENGE_LEN)
        return 0;
    if (!zeros(in + 4, 4))
        return fail(hs, "malformed handshake challenge");
    memcpy(hs->nonce_s, in + 8, AUTH_NONCE_LEN);
    if (!proof_ok(hs, "server", in + 8 + AUTH_NONCE_LEN))
        return fail(hs, "the server does not know the cluster secret (wrong proof)");
    memcpy(out, MAGIC_PROOF, 4);
    memset(out + 4, 0, 4);
    make_proof(hs, "client", out + 8);
    *out_len = HS_PROOF_LEN;
    hs->state = HS_CLIENT_WAIT_RESULT;
    return HS_CHALLENGE_LEN;
}

static int client_result(handshake *hs, const uint8_t *in, size_t n)
{
    if (n < HS_RESULT_LEN)
        return 0;
    if (memcmp(in, MAGIC_RESULT, 4) != 0 || in[5] || in[6] || in[7] || in[4] > 1)
        return fail(hs, "malformed handshake result");
    if (in[4] != 0)
        return fail(hs, "the server refused our proof: its cluster secret is another one");
    hs->state = HS_DONE;
    return HS_RESULT_LEN;
}

int handshake_step(handshake *hs, const uint8_t *in, size_t n, uint8_t *out, size_t *out_len)
{
    *out_len = 0;
    switch (hs->state) {
    case HS_SERVER_WAIT_HELLO:
        if (n >= 4 && memcmp(in, MAGIC_HELLO, 4) != 0) {
            hs->not_handshake = true;
            return fail(hs, "the peer did not start with the handshake (no cluster secret?)");
        }
        return server_hello(hs, in, n, out, out_len);
    case HS_SERVER_WAIT_PROOF:
        return server_proof(hs, in, n, out, out_len);
    case HS_CLIENT_WAIT_CHALLENGE:
        return client_challenge(hs, in, n, out, out_len);
    case HS_CLIENT_WAIT_RESULT:
        return client_result(hs, in, n);
    case HS_DONE:
    case HS_FAILED:
        break;
    }
    return fail(hs, "handshake fed after it ended");
}

void handshake_session_key(const handshake *hs, auth_key *out)
{
    make_proof(hs, "session", out->bytes);
}

bool handshake_is_hello(const uint8_t *in, size_t n)
{
    return n >= 4 && memcmp(in, MAGIC_HELLO, 4) == 0;
}

void handshake_no_secret_result(uint8_t out[HS_RESULT_LEN])
{
    size_t n;
    result(out, &n, 2);
}

void handshake_wipe(handshake *hs)
{
    auth_key_wipe(&hs->key);
    memset(hs->nonce_c, 0, sizeof hs->nonce_c);
    memset(hs->nonce_s, 0, sizeof hs->nonce_s);
}
