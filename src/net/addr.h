/*
 * addr.h - network addresses: a "HOST:PORT" of the config files and flags
 * (a host name, an IPv4 literal or an [IPv6] literal, split by
 * config_parse_hostport) turned into a sockaddr_storage, and back into text.
 *
 * Numeric literals resolve at once, without DNS. A name goes through
 * getaddrinfo on libuv's thread pool: blocking (uv_getaddrinfo with no
 * callback) where the process may wait, at startup; asynchronously
 * (addr_lookup_start) for the connections opened at run time. A name
 * resolves to the first address getaddrinfo returns (AI_ADDRCONFIG: IPv6 only
 * on a machine with a non-loopback IPv6 address, IPv4 likewise), so a
 * listener and a connector that use the same name on one machine agree.
 *
 * The data plane links this module on its own (library fx_addr: libuv and
 * fx_common), the transport (fx_net) and the roles through fx_net. Nothing
 * here keeps state; every function may run on any thread except
 * addr_lookup_start/addr_lookup_cancel (the loop's thread).
 */
#ifndef FX_NET_ADDR_H
#define FX_NET_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <uv.h>

/* Room for any formatted address: "[v6%scope]:65535" and the NUL. */
#define ADDR_TEXT_MAX 80

/* Parses a numeric host (an IPv4 literal or an IPv6 literal with or without
 * brackets) and a port (0..65535) into *out, without DNS. Returns 0,
 * -EAGAIN when host is a name (it needs a lookup), or -EINVAL (empty host,
 * bad port). *out is unchanged on failure. */
int addr_from_numeric(const char *host, int port, struct sockaddr_storage *out);

/* Parses "HOST:PORT" whose host is a numeric literal ("127.0.0.1:80",
 * "[::1]:80"). Returns 0, -EAGAIN for a host name, -EINVAL when hostport is
 * not HOST:PORT. *out is unchanged on failure. */
int addr_parse_numeric(const char *hostport, struct sockaddr_storage *out);

/* True when hostport is "HOST:PORT" with a wildcard literal for HOST
 * ("0.0.0.0:7700", "[::]:0"); false for anything else, names included. */
bool addr_hostport_is_wildcard(const char *hostport);

/* Resolves "HOST:PORT" (name, IPv4 literal or [IPv6] literal), blocking the
 * calling thread while a name is looked up (startup only). Returns 0 with the
 * first address in *out; -EINVAL when hostport is not HOST:PORT; or the
 * lookup's error (a UV_EAI_* code; uv_strerror names it). On failure *out is
 * unchanged and err (may be NULL) gets "'<hostport>': <why>". */
int addr_resolve(uv_loop_t *loop, const char *hostport, struct sockaddr_storage *out, char *err,
                 size_t errlen);

/* The same for a host and a port given apart (host may carry brackets). */
int addr_resolve_host(uv_loop_t *loop, const char *host, int port, struct sockaddr_storage *out,
                      char *err, size_t errlen);

/* One asynchronous lookup of a host name, embedded in its caller's state.
 * data is the caller's; the rest belongs to this module while it runs. */
typedef struct addr_lookup addr_lookup;
/* The lookup's end, on the loop thread: status 0 with the first address in
 * sa (valid during the call), or a UV_EAI_* code (UV_EAI_CANCELED after
 * addr_lookup_cancel) with sa NULL. */
typedef void (*addr_lookup_fn)(addr_lookup *lk, int status, const struct sockaddr *sa);
struct addr_lookup {
    uv_getaddrinfo_t req; /* first: the libuv callback casts back */
    int port;
    addr_lookup_fn cb;
    void *data;
};

/* Starts looking up host (brackets allowed) for port. Returns 0, and cb then
 * runs exactly once, never inside this call; lk must stay valid until it ran.
 * Or returns a negative libuv error, and cb never runs. */
int addr_lookup_start(uv_loop_t *loop, addr_lookup *lk, const char *host, int port,
                      addr_lookup_fn cb);
/* Asks a running lookup to stop. cb still runs: with UV_EAI_CANCELED when
 * the lookup had not started on the pool, else with its result. */
void addr_lookup_cancel(addr_lookup *lk);

/* Formats sa as "1.2.3.4:80" or "[::1]:80" into buf (ADDR_TEXT_MAX bytes
 * hold any). Returns buf; "?" for a family other than IPv4 and IPv6. */
const char *addr_format(const struct sockaddr *sa, char *buf, size_t len);
/* Joins a host as written in a config (a name or a literal, brackets
 * optional) and a port: "host:80", "[::1]:80". Returns 0, or -ENAMETOOLONG
 * when buf is too small (buf then holds a truncated string). */
int addr_join(const char *host, int port, char *buf, size_t len);

/* The port of an IPv4 or IPv6 address, or -1 for another family. */
int addr_port(const struct sockaddr *sa);
/* Sets the port of an IPv4 or IPv6 address (other families: no change). */
void addr_set_port(struct sockaddr *sa, int port);
/* The length of an IPv4 or IPv6 sockaddr, 0 for another family. */
socklen_t addr_len(const struct sockaddr *sa);
/* True for 0.0.0.0 and :: (and ::ffff:0.0.0.0): "every interface". */
bool addr_is_wildcard(const struct sockaddr *sa);
/* True for 127.0.0.0/8 and ::1 (and ::ffff:127.x.y.z). */
bool addr_is_loopback(const struct sockaddr *sa);

#endif
