/*
 * auth_key.c - the cluster secret, nonces and HMAC-SHA256 proofs, on
 * libsodium (see auth_key.h for the rules).
 */
#include "net/auth_key.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int auth_init(void)
{
    return sodium_init() < 0 ? -1 : 0;
}

void auth_random(void *out, size_t len)
{
    randombytes_buf(out, len);
}

/* Reads the whole file (at most AUTH_SECRET_MAX bytes) from an open fd.
 * Returns the length, or -1 with errno set. */
static ssize_t read_secret(int fd, uint8_t *buf, size_t cap)
{
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return (ssize_t)n;
        n += (size_t)r;
    }
    errno = EFBIG;
    return -1;
}

int auth_key_load(const char *path, auth_key *key, char *err, size_t errlen)
{
    if (auth_init() < 0) {
        snprintf(err, errlen, "libsodium could not start");
        return -1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open cluster secret file %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "cluster secret file %s is not a regular file", path);
        close(fd);
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen,
                 "cluster secret file %s is open to group or others (mode %04o); chmod 600 it",
                 path, (unsigned)(st.st_mode & 07777));
        close(fd);
        return -1;
    }
    uint8_t buf[AUTH_SECRET_MAX];
    ssize_t n = read_secret(fd, buf, sizeof buf);
    int saved = errno;
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "cannot read cluster secret file %s: %s", path,
                 saved == EFBIG ? "longer than 4096 bytes" : strerror(saved));
        return -1;
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
                     buf[n - 1] == '\t'))
        n--;
    if (n < AUTH_SECRET_MIN) {
        snprintf(err, errlen,
                 "cluster secret file %s holds %zd bytes; at least %d are needed "
                 "(e.g. openssl rand -hex 32)",
                 path, n, AUTH_SECRET_MIN);
        sodium_memzero(buf, sizeof buf);
        return -1;
    }
    crypto_hash_sha256(key->bytes, buf, (unsigned long long)n);
    sodium_memzero(buf, sizeof buf);
    return 0;
}

int auth_secret_create(const char *path)
{
    if (auth_init() < 0)
        return -EIO;
    uint8_t raw[32];
    char hex[2 * sizeof raw + 2];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(hex, sizeof hex, raw, sizeof raw);
    sodium_memzero(raw, sizeof raw);
    size_t len = strlen(hex);
    hex[len++] = '\n';
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = 0;
    ssize_t written;
    if (fchmod(fd, 0600) < 0)
        rc = -errno;
    else if ((written = write(fd, hex, len)) != (ssize_t)len)
        rc = written < 0 ? -errno : -EIO; /* a short write sets no errno */
    else if (fsync(fd) < 0)
        rc = -errno;
    close(fd);
    sodium_memzero(hex, sizeof hex);
    if (rc < 0)
        unlink(path);
    return rc;
}

void auth_proof(const auth_key *key, const char *label, const uint8_t *transcript, size_t len,
                uint8_t proof[AUTH_PROOF_LEN])
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key->bytes, AUTH_KEY_LEN);
    crypto_auth_hmacsha256_update(&st, (const uint8_t *)label, strlen(label) + 1);
    crypto_auth_hmacsha256_update(&st, transcript, len);
    crypto_auth_hmacsha256_final(&st, proof);
    sodium_memzero(&st, sizeof st);
}

bool auth_proof_ok(const auth_key *key, const char *label, const uint8_t *transcript, size_t len,
                   const uint8_t proof[AUTH_PROOF_LEN])
{
    uint8_t want[AUTH_PROOF_LEN];
    auth_proof(key, label, transcript, len, want);
    bool ok = crypto_verify_32(want, proof) == 0;
    sodium_memzero(want, sizeof want);
    return ok;
}

void auth_key_derive(const auth_key *key, const uint8_t *info, size_t len, auth_key *out)
{
    crypto_auth_hmacsha256(out->bytes, info, len, key->bytes);
}

_Static_assert(AUTH_SEAL_OVERHEAD == crypto_aead_xchacha20poly1305_ietf_NPUBBYTES +
                                         crypto_aead_xchacha20poly1305_ietf_ABYTES,
               "AUTH_SEAL_OVERHEAD is the nonce and the tag");
_Static_assert(AUTH_KEY_LEN == crypto_aead_xchacha20poly1305_ietf_KEYBYTES, "a 32-byte key");

void auth_seal(const auth_key *key, const uint8_t *plain, size_t len, const uint8_t *ad,
               size_t ad_len, uint8_t *out)
{
    uint8_t *nonce = out;
    randombytes_buf(nonce, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
    crypto_aead_xchacha20poly1305_ietf_encrypt(out + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
                                               NULL, plain, len, ad, ad_len, NULL, nonce,
                                               key->bytes);
}

int auth_open(const auth_key *key, const uint8_t *sealed, size_t n, const uint8_t *ad,
              size_t ad_len, uint8_t *out)
{
    if (n < AUTH_SEAL_OVERHEAD)
        return -1;
    const uint8_t *nonce = sealed;
    return crypto_aead_xchacha20poly1305_ietf_decrypt(
               out, NULL, NULL, sealed + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
               n - crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, ad, ad_len, nonce, key->bytes) == 0
               ? 0
               : -1;
}

void auth_member_ad(uint32_t node_id, uint64_t tomb_tag, uint8_t ad[AUTH_MEMBER_AD_LEN])
{
    for (int i = 0; i < 4; i++)
        ad[i] = (uint8_t)(node_id >> (8 * i));
    for (int i = 0; i < 8; i++)
        ad[4 + i] = (uint8_t)(tomb_tag >> (8 * i));
}

void auth_key_wipe(auth_key *key)
{
    sodium_memzero(key, sizeof *key);
}
