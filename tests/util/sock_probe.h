/*
 * sock_probe.h - blocking test-side sockets that probe a daemon's listeners
 * from outside: connect and stay silent, see whether and when the server
 * hangs up, fetch an HTTP page, and what the probes need around them (a free
 * port, a higher open-file limit, a process's resident memory, an owner's
 * data-plane address).
 *
 * Nothing here asserts: each helper reports what happened and the test
 * judges it. Times are CLOCK_MONOTONIC milliseconds.
 */
#ifndef FX_TESTS_SOCK_PROBE_H
#define FX_TESTS_SOCK_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cluster.h"
#include "raw_member.h"

uint64_t probe_now_ms(void);

/* Connects to "a.b.c.d:port" over TCP, or to a Unix socket path. Returns the
 * fd (blocking, close-on-exec) or a negative errno. */
int probe_tcp(const char *addr);
int probe_unix(const char *path);

/* Waits up to timeout_ms for the server to hang up (EOF or reset), counting
 * what it sent meanwhile in *got. Returns true when it hung up. */
bool probe_wait_closed(int fd, int timeout_ms, size_t *got);
/* True when the server has neither sent anything nor hung up (yet). */
bool probe_is_open(int fd);

/* GET path from the HTTP server at "host:port" (HTTP/1.0) within
 * timeout_ms. Returns the status code with the body in *body (malloc'd,
 * NUL-terminated; the caller frees it), or a negative errno (*body NULL). */
int probe_http_get(const char *addr, const char *path, int timeout_ms, char **body);

/* A TCP port on 127.0.0.1 that was free a moment ago, or -1. */
int probe_free_port(void);
/* Raises this process's soft RLIMIT_NOFILE to at least want (up to the hard
 * limit; children inherit it). Returns the soft limit now in force. */
long probe_raise_nofile(long want);
/* VmRSS of process pid in KiB, or -1. */
long probe_rss_kib(pid_t pid);

/* The data-plane address ("host:port") of owner i (named owner<i>) of tc,
 * read from the member table the master pushes to rm (a member registered
 * with it), or to a throwaway member when rm is NULL. Returns 0, or -1 after
 * saying why. */
int probe_owner_data_addr(const test_cluster *tc, int i, raw_member *rm, char *out,
                          size_t cap);

#endif
