/*
 * auth_key.h - the cluster's keys and the proofs made with them: loading the
 * cluster secret from its file, fresh nonces, HMAC-SHA256 proofs over a
 * handshake transcript, and keys derived from a key (libsodium does the
 * cryptography; nothing here is hand-written crypto).
 *
 * The secret file holds at least AUTH_SECRET_MIN bytes (fluxon up writes 64
 * hex digits, 32 random bytes); the key is the SHA-256 of its contents with
 * trailing whitespace removed, so a hex file and a raw one both work. A file
 * that group or others may read, or write, is refused, as ssh refuses a
 * private key: the secret is what keeps strangers out of the cluster.
 *
 * A proof is HMAC-SHA256(key, label || transcript). The label says which side
 * made it ("server", "client", ...), so one side's proof can never be
 * replayed as the other's; the transcript holds both sides' nonces and the
 * claimed identities, so a proof is good for one handshake only. Checking a
 * proof takes the same time whatever bytes differ.
 */
#ifndef FX_NET_AUTH_KEY_H
#define FX_NET_AUTH_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_KEY_LEN 32
#define AUTH_NONCE_LEN 32
#define AUTH_PROOF_LEN 32
#define AUTH_SECRET_MIN 32 /* bytes in the secret file, trailing whitespace aside */
#define AUTH_SECRET_MAX 4096

typedef struct auth_key {
    uint8_t bytes[AUTH_KEY_LEN];
} auth_key;

/* Initialises libsodium (idempotent, thread-safe). Returns 0, or -1 when the
 * library cannot start (then nothing here may be used). */
int auth_init(void);

/* Loads the cluster secret from path into *key. Returns 0, or -1 with a
 * sentence naming the file and what is wrong in err (missing, unreadable,
 * readable by group or others, shorter than AUTH_SECRET_MIN bytes). */
int auth_key_load(const char *path, auth_key *key, char *err, size_t errlen);

/* Creates path (mode 0600, which must not exist yet) holding a new secret:
 * 64 hex digits of 32 random bytes and a newline. Returns 0 or -errno. */
int auth_secret_create(const char *path);

/* Fills out with random bytes (nonces, keys). */
void auth_random(void *out, size_t len);

/* proof = HMAC-SHA256(key, label || transcript). */
void auth_proof(const auth_key *key, const char *label, const uint8_t *transcript, size_t len,
                uint8_t proof[AUTH_PROOF_LEN]);
/* True when proof is auth_proof(key, label, transcript), compared in
 * constant time. */
bool auth_proof_ok(const auth_key *key, const char *label, const uint8_t *transcript, size_t len,
                   const uint8_t proof[AUTH_PROOF_LEN]);

/* A key for one purpose derived from key: HMAC-SHA256(key, info). */
void auth_key_derive(const auth_key *key, const uint8_t *info, size_t len, auth_key *out);

/* Sealing: XChaCha20-Poly1305 with a random nonce, for keys that travel
 * inside an authenticated connection (the pair keys of the member table,
 * sealed under the connection's session key). */
#define AUTH_SEAL_OVERHEAD 40 /* 24-byte nonce + 16-byte tag */
/* out (len + AUTH_SEAL_OVERHEAD bytes) = nonce || ciphertext || tag, bound
 * to ad (which is not sent). */
void auth_seal(const auth_key *key, const uint8_t *plain, size_t len, const uint8_t *ad,
               size_t ad_len, uint8_t *out);
/* Opens n sealed bytes into out (n - AUTH_SEAL_OVERHEAD bytes). Returns 0, or
 * -1 when they were not sealed with key and ad, or were changed (out then
 * holds nothing usable). */
int auth_open(const auth_key *key, const uint8_t *sealed, size_t n, const uint8_t *ad,
              size_t ad_len, uint8_t *out);

/* A pair key in a member table entry: sealed under the session key of the
 * recipient's master connection (clusters with a secret), bound to the entry
 * by its node id (u32) and incarnation (u64), little-endian, as the AD. */
#define AUTH_SEALED_KEY_LEN (AUTH_KEY_LEN + AUTH_SEAL_OVERHEAD)
#define AUTH_MEMBER_AD_LEN 12
void auth_member_ad(uint32_t node_id, uint64_t tomb_tag, uint8_t ad[AUTH_MEMBER_AD_LEN]);

/* Overwrites a key that is no longer needed. */
void auth_key_wipe(auth_key *key);

#endif
