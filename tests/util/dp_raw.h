/*
 * dp_raw.h - a blocking test-side client of the owner-to-owner data plane
 * that writes the wire format (owner/dataplane/dp_frame.h) byte by byte.
 *
 * Tests use it to send what a well-behaved dp_client never would (requests
 * before HELLO, wrong tokens, ranges past the segment's end, garbage) and to
 * read the refusals. The caller opens the socket, with SO_RCVTIMEO set so a
 * server that never answers ends every receive here with a timeout. Nothing
 * here asserts: each helper reports what happened and the test judges it.
 */
#ifndef FX_TESTS_DP_RAW_H
#define FX_TESTS_DP_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "owner/dataplane/dp_frame.h"

/* Sends all n bytes; false when the peer is gone or send fails. */
bool dp_raw_send_all(int fd, const void *p, size_t n);
/* Reads exactly n bytes; false on EOF, error or timeout. */
bool dp_raw_recv_all(int fd, void *p, size_t n);
/* True when the server hangs up (EOF or reset) before the receive timeout,
 * discarding anything it still sends; false on a timeout. */
bool dp_raw_hung_up(int fd);
/* Sends one request header (flags, status 0); a failed send is ignored, the
 * reply (or its absence) tells. */
void dp_raw_send_hdr(int fd, uint8_t op, uint64_t id, uint64_t off, uint32_t len);
/* Sends a HELLO with id 42 and the given identity. Returns the body length;
 * 0 when the body does not encode (token too long), and then nothing is sent. */
size_t dp_raw_send_hello(int fd, uint32_t node, uint64_t tomb, const uint8_t *tok,
                         size_t toklen);
/* Reads one reply header into *h (it must pass dp_hdr_check as a reply) and,
 * for an error with a body, its detail text into detail (NUL-terminated, at
 * most cap - 1 bytes). detail is "" for any other reply. Returns false on EOF,
 * timeout, a header that is not a reply, or a detail that does not fit. */
bool dp_raw_recv_reply(int fd, dp_hdr *h, char *detail, size_t cap);

#endif
