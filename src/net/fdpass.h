/*
 * fdpass.h - passing a file descriptor over a Unix socket (SCM_RIGHTS).
 *
 * The owner hands its memfd segment to each external with the response to the
 * session's ExternalHello; the external maps it. Both calls move exactly len
 * bytes of ordinary data alongside the descriptor.
 */
#ifndef FX_NET_FDPASS_H
#define FX_NET_FDPASS_H

#include <stddef.h>

/* Sends buf (len bytes) and fd over the socket sock (blocking or not: waits in
 * poll for room, up to timeout_ms). Returns 0 or a negative errno. */
int fdpass_send(int sock, const void *buf, size_t len, int fd, int timeout_ms);

/* Receives exactly len bytes into buf and the descriptor that came with the
 * first byte (*fd = -1 when none came). Returns 0 or a negative errno; on error
 * any received descriptor is closed. */
int fdpass_recv(int sock, void *buf, size_t len, int *fd, int timeout_ms);

#endif
