/*
 * raw_handshake.h - the client side of the control handshake
 * (net/handshake.h) over a blocking socket, for test-side members and
 * benchmarks that speak the master protocol by hand.
 */
#ifndef FX_TESTS_RAW_HANDSHAKE_H
#define FX_TESTS_RAW_HANDSHAKE_H

#include "net/auth_key.h"

/* Proves key on fd claiming identity (role owner). Returns 0 when the
 * server accepted the proof, -1 otherwise (refused, closed, or a server that
 * could not prove the key itself). */
int raw_handshake(int fd, const auth_key *key, const char *identity);

/* Loads secret_file and runs raw_handshake. Returns 0 or -1 (after printing
 * why). */
int raw_handshake_file(int fd, const char *secret_file, const char *identity);

#endif
