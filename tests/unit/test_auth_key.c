/*
 * test_auth_key.c - the cluster secret and the proofs made with it: a secret
 * file is refused when missing, open to group or others, or too short, and
 * accepted as hex or raw bytes; the same contents give the same key, other
 * contents another; fluxon up's new secret is 0600 and never overwrites a
 * file; a proof checks only with the same key, label and transcript.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/auth_key.h"
#include "testlib.h"

static void write_file(const char *path, const char *text, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    REQUIRE(fd >= 0, "create %s: %s", path, strerror(errno));
    REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write %s", path);
    fchmod(fd, mode);
    close(fd);
}

static bool loads(const char *path, auth_key *k, char *err, size_t errlen)
{
    return auth_key_load(path, k, err, errlen) == 0;
}

int main(void)
{
    REQUIRE(auth_init() == 0, "libsodium starts");
    char dir[] = "/tmp/fx-auth-XXXXXX";
    REQUIRE(mkdtemp(dir), "mkdtemp");
    char path[256], other[256], created[256], err[512];
    snprintf(path, sizeof path, "%s/secret", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    snprintf(created, sizeof created, "%s/cluster.secret", dir);
    auth_key a, b, c;

    CHECK(!loads(path, &a, err, sizeof err) && strstr(err, path), "missing file: %s", err);
    const char *hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
    write_file(path, hex, 0644);
    CHECK(!loads(path, &a, err, sizeof err) && strstr(err, "chmod 600") && strstr(err, "0644"),
          "a group-readable file is refused: %s", err);
    write_file(path, "too short\n", 0600);
    CHECK(!loads(path, &a, err, sizeof err) && strstr(err, "at least 32"),
          "a short secret is refused: %s", err);
    write_file(path, hex, 0600);
    CHECK(loads(path, &a, err, sizeof err), "hex secret: %s", err);
    write_file(other, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 0400);
    CHECK(loads(other, &b, err, sizeof err) && memcmp(a.bytes, b.bytes, AUTH_KEY_LEN) == 0,
          "a trailing newline does not change the key");
    write_file(other, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeefe\n", 0600);
    CHECK(loads(other, &b, err, sizeof err) && memcmp(a.bytes, b.bytes, AUTH_KEY_LEN) != 0,
          "one digit off gives another key");

    CHECK(auth_secret_create(created) == 0, "create a secret");
    struct stat st;
    CHECK(stat(created, &st) == 0 && (st.st_mode & 0777) == 0600, "new secret is 0600 (%o)",
          (unsigned)(st.st_mode & 0777));
    CHECK(loads(created, &c, err, sizeof err), "the new secret loads: %s", err);
    CHECK(auth_secret_create(created) == -EEXIST, "an existing secret is never overwritten");

    const uint8_t t[] = "nonce-a|nonce-b|owner|node-1";
    uint8_t p[AUTH_PROOF_LEN];
    auth_proof(&a, "server", t, sizeof t, p);
    CHECK(auth_proof_ok(&a, "server", t, sizeof t, p), "a proof checks with its own inputs");
    CHECK(!auth_proof_ok(&a, "client", t, sizeof t, p), "the server's proof is not the client's");
    CHECK(!auth_proof_ok(&b, "server", t, sizeof t, p), "another key does not check");
    uint8_t t2[sizeof t];
    memcpy(t2, t, sizeof t);
    t2[3] ^= 1;
    CHECK(!auth_proof_ok(&a, "server", t2, sizeof t2, p), "another transcript does not check");
    auth_key d1, d2;
    auth_key_derive(&a, t, 8, &d1);
    auth_key_derive(&a, t, 9, &d2);
    CHECK(memcmp(d1.bytes, d2.bytes, AUTH_KEY_LEN) != 0 &&
              memcmp(d1.bytes, a.bytes, AUTH_KEY_LEN) != 0,
          "derived keys differ by their info and from the key");

    /* Sealed keys: open only with the same key and entry, and untouched. */
    uint8_t ad[AUTH_MEMBER_AD_LEN], ad2[AUTH_MEMBER_AD_LEN];
    auth_member_ad(3, 77, ad);
    auth_member_ad(3, 78, ad2);
    uint8_t sealed[AUTH_SEALED_KEY_LEN], sealed2[AUTH_SEALED_KEY_LEN], opened[AUTH_KEY_LEN];
    auth_seal(&a, d1.bytes, AUTH_KEY_LEN, ad, sizeof ad, sealed);
    auth_seal(&a, d1.bytes, AUTH_KEY_LEN, ad, sizeof ad, sealed2);
    CHECK(memcmp(sealed, sealed2, sizeof sealed) != 0, "two seals of one key differ (nonces)");
    CHECK(memmem(sealed, sizeof sealed, d1.bytes, AUTH_KEY_LEN) == NULL,
          "the sealed bytes do not hold the key");
    CHECK(auth_open(&a, sealed, sizeof sealed, ad, sizeof ad, opened) == 0 &&
              memcmp(opened, d1.bytes, AUTH_KEY_LEN) == 0,
          "a sealed key opens with its key and entry");
    CHECK(auth_open(&b, sealed, sizeof sealed, ad, sizeof ad, opened) < 0,
          "another session key does not open it");
    CHECK(auth_open(&a, sealed, sizeof sealed, ad2, sizeof ad2, opened) < 0,
          "the key of another incarnation's entry does not open");
    sealed[30] ^= 1;
    CHECK(auth_open(&a, sealed, sizeof sealed, ad, sizeof ad, opened) < 0,
          "a changed byte is caught");
    CHECK(auth_open(&a, sealed, AUTH_SEAL_OVERHEAD - 1, ad, sizeof ad, opened) < 0,
          "too short to be sealed");

    unlink(path);
    unlink(other);
    unlink(created);
    rmdir(dir);
    return test_finish();
}
