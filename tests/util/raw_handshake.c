/*
 * raw_handshake.c - the control handshake's client side on a blocking socket
 * (see raw_handshake.h).
 */
#include "raw_handshake.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "net/handshake.h"

int raw_handshake(int fd, const auth_key *key, const char *identity)
{
    handshake hs;
    uint8_t out[HS_OUT_MAX], in[256];
    size_t out_len, have = 0;
    handshake_client_start(&hs, key, HS_ROLE_OWNER, identity, out, &out_len);
    if (write(fd, out, out_len) != (ssize_t)out_len)
        return -1;
    while (hs.state != HS_DONE) {
        ssize_t r = read(fd, in + have, sizeof in - have);
        if (r <= 0)
            return -1;
        have += (size_t)r;
        int used;
        while (hs.state != HS_DONE && (used = handshake_step(&hs, in, have, out, &out_len)) > 0) {
            if (out_len && write(fd, out, out_len) != (ssize_t)out_len)
                return -1;
            memmove(in, in + used, have - (size_t)used);
            have -= (size_t)used;
        }
        if (hs.state == HS_FAILED)
            return -1;
    }
    return 0;
}

int raw_handshake_file(int fd, const char *secret_file, const char *identity)
{
    auth_key key;
    char err[512];
    if (auth_key_load(secret_file, &key, err, sizeof err) < 0) {
        fprintf(stderr, "raw_handshake: %s\n", err);
        return -1;
    }
    int r = raw_handshake(fd, &key, identity);
    auth_key_wipe(&key);
    if (r < 0)
        fprintf(stderr, "raw_handshake: the master did not accept our proof as '%s'\n", identity);
    return r;
}
