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
/* One request; returns the decoded response (free with msg_free), or NULL. */
ProtobufCMessage *raw_external_call(int fd, uint16_t type, const ProtobufCMessage *req);
/* ExternalPutStart of len bytes for key; fills *pid. Returns 0, or the status
 * (or FX_ECONN without an answer). */
int raw_external_put_start(int fd, const char *key, uint64_t len, Fx__PutId *pid);

#endif
