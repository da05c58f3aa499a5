/*
 * raw_external.h - a test-side external that speaks the owner's Unix-socket
 * protocol directly (blocking), for steps the C API never leaves half done:
 * a put started and never ended, a connection killed mid-put.
 */
#ifndef FX_TESTS_RAW_EXTERNAL_H
#define FX_TESTS_RAW_EXTERNAL_H

#include <stdint.h>

#include "net/msg.h"

/* Connects to the owner's client socket and opens a session (ExternalHello;
 * the segment fd that comes with the answer is not taken). Returns the fd, or
 * -1. */
int raw_external_open(const char *socket_path);
/* raw_external_open that also gives the session's client id. */
int raw_external_open_session(const char *socket_path, uint64_t *client_id);
/* Attaches one more connection to session client_id, asking for a get lane
 * (want_get_lane) when lane_fd is not NULL: *lane_fd is then the lane's fd
 * that came with the answer, or -1 when none came. Returns the connection's
 * fd, or -1 (with *lane_fd -1). */
int raw_external_attach(const char *socket_path, uint64_t client_id, int *lane_fd);
/* One request; returns the decoded response (free with msg_free), or NULL. */
ProtobufCMessage *raw_external_call(int fd, uint16_t type, const ProtobufCMessage *req);
/* ExternalPutStart of len bytes for key; fills *pid. Returns 0, or the status
 * (or FX_ECONN without an answer). */
int raw_external_put_start(int fd, const char *key, uint64_t len, Fx__PutId *pid);

#endif
