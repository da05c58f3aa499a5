/*
 * test_handshake.c - the control handshake's state machine (net/handshake.h):
 * two sides with the same key finish and the server learns the proven
 * identity; a server with another key is caught by the client before it
 * proves anything; a wrong client proof is refused with a RESULT to send; a
 * frame where the HELLO belongs is told apart (not_handshake); messages split
 * into single bytes still complete; a proof cannot be replayed on a new
 * handshake (fresh nonces).
 */
#include <string.h>

#include "net/handshake.h"
#include "testlib.h"

static auth_key key_of(uint8_t fill)
{
    auth_key k;
    memset(&k, fill, sizeof k);
    return k;
}

/* Delivers msg to hs one byte at a time when split, else at once. Returns the
 * last step's result; out gets the answer. */
static int deliver(handshake *hs, const uint8_t *msg, size_t n, bool split, uint8_t *out,
                   size_t *out_len)
{
    if (!split)
        return handshake_step(hs, msg, n, out, out_len);
    int r = 0;
    for (size_t i = 1; i <= n && r == 0; i++)
        r = handshake_step(hs, msg, i, out, out_len);
    return r;
}

static void full_exchange(bool split)
{
    auth_key k = key_of(7);
    handshake c, s;
    uint8_t m1[HS_OUT_MAX], m2[HS_OUT_MAX], m3[HS_OUT_MAX], m4[HS_OUT_MAX];
    size_t n1, n2, n3, n4;
    handshake_client_start(&c, &k, HS_ROLE_OWNER, "owner-a", m1, &n1);
    handshake_server_start(&s, &k);
    CHECK(deliver(&s, m1, n1, split, m2, &n2) == (int)n1 && n2 == HS_CHALLENGE_LEN,
          "server answers the hello with a challenge (split %d)", split);
    CHECK(deliver(&c, m2, n2, split, m3, &n3) == (int)n2 && n3 == HS_PROOF_LEN,
          "client checks the challenge and proves (split %d)", split);
    CHECK(deliver(&s, m3, n3, split, m4, &n4) == (int)n3 && n4 == HS_RESULT_LEN &&
              s.state == HS_DONE,
          "server accepts the proof (split %d)", split);
    CHECK(strcmp(s.identity, "owner-a") == 0 && s.role == HS_ROLE_OWNER,
          "server knows the proven identity '%s'", s.identity);
    size_t n5;
    uint8_t m5[HS_OUT_MAX];
    CHECK(deliver(&c, m4, n4, split, m5, &n5) == (int)n4 && c.state == HS_DONE,
          "client reads the acceptance (split %d)", split);
    auth_key kc, ks;
    handshake_session_key(&c, &kc);
    handshake_session_key(&s, &ks);
    CHECK(memcmp(kc.bytes, ks.bytes, AUTH_KEY_LEN) == 0 &&
              memcmp(kc.bytes, k.bytes, AUTH_KEY_LEN) != 0,
          "both ends hold the same session key, not the cluster key");

    /* The same PROOF on a new handshake (new server nonce) is refused. */
    handshake s2;
    handshake_server_start(&s2, &k);
    handshake_step(&s2, m1, n1, m2, &n2);
    auth_key k2;
    handshake_session_key(&s2, &k2);
    CHECK(memcmp(k2.bytes, ks.bytes, AUTH_KEY_LEN) != 0,
          "another connection has another session key (fresh nonces)");
    CHECK(handshake_step(&s2, m3, n3, m4, &n4) == -1 && n4 == HS_RESULT_LEN && m4[4] == 1,
          "a replayed proof is refused, with a refusal to send");
}

static void wrong_keys(void)
{
    auth_key k = key_of(7), other = key_of(8);
    handshake c, s;
    uint8_t m1[HS_OUT_MAX], m2[HS_OUT_MAX], m3[HS_OUT_MAX];
    size_t n1, n2, n3;
    handshake_client_start(&c, &k, HS_ROLE_OWNER, "owner-a", m1, &n1);
    handshake_server_start(&s, &other);
    handshake_step(&s, m1, n1, m2, &n2);
    CHECK(handshake_step(&c, m2, n2, m3, &n3) == -1 && n3 == 0 && c.state == HS_FAILED,
          "a server with another key is caught, and the client proves nothing");
    CHECK(strstr(c.failure, "does not know the cluster secret") != NULL, "why: %s", c.failure);

    /* A client proof made with another key. */
    handshake_server_start(&s, &k);
    handshake_step(&s, m1, n1, m2, &n2);
    uint8_t bad[HS_PROOF_LEN] = {'F', 'X', 'H', '3'};
    CHECK(handshake_step(&s, bad, sizeof bad, m3, &n3) == -1 && n3 == HS_RESULT_LEN &&
              m3[4] == 1,
          "a wrong proof is refused with a RESULT");
    CHECK(strstr(s.failure, "wrong proof") != NULL, "why: %s", s.failure);
}

static void not_a_handshake(void)
{
    auth_key k = key_of(7);
    handshake s;
    handshake_server_start(&s, &k);
    uint8_t frame[16] = {20, 0, 0, 0, 1, 0, 0, 0};
    uint8_t out[HS_OUT_MAX];
    size_t n;
    CHECK(handshake_step(&s, frame, sizeof frame, out, &n) == -1 && s.not_handshake,
          "a frame instead of a hello is told apart");
    handshake_server_start(&s, &k);
    CHECK(handshake_step(&s, (const uint8_t *)"FX", 2, out, &n) == 0 && s.state != HS_FAILED,
          "two bytes of a hello: wait for more");

    char long_name[400];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    handshake c;
    handshake_client_start(&c, &k, HS_ROLE_OWNER, long_name, out, &n);
    CHECK(n == HS_HELLO_FIXED + HS_ID_MAX && c.id_len == HS_ID_MAX,
          "an identity is cut at %d bytes", HS_ID_MAX);
}

int main(void)
{
    REQUIRE(auth_init() == 0, "libsodium");
    full_exchange(false);
    full_exchange(true);
    wrong_keys();
    not_a_handshake();
    return test_finish();
}
