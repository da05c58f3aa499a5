/*
 * addr.c - HOST:PORT to sockaddr and back (see addr.h).
 *
 * Every path ends in getaddrinfo: with AI_NUMERICHOST for literals (no DNS,
 * so it may run on the loop thread; it also takes IPv6 scope ids such as
 * "fe80::1%eth0"), through uv_getaddrinfo for names. Brackets around an IPv6
 * literal are dropped first, so a host may come straight from a config
 * ("[::1]") or from config_parse_hostport ("::1").
 */
#include "net/addr.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "common/config.h"

#define HOST_MAX 256 /* a host of config_parse_hostport and its NUL */

/* Copies host without the brackets of "[v6]". Returns 0 or -EINVAL (empty,
 * too long). */
static int unbracket(const char *host, char *out, size_t len)
{
    size_t n = host ? strlen(host) : 0;
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
        host++;
        n -= 2;
    }
    if (n == 0 || n >= len)
        return -EINVAL;
    memcpy(out, host, n);
    out[n] = '\0';
    return 0;
}

/* The first address of res with port, into *out. Returns 0 or -EAFNOSUPPORT
 * when res holds no IPv4 or IPv6 address. */
static int first_address(const struct addrinfo *res, int port, struct sockaddr_storage *out)
{
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        socklen_t n = addr_len(ai->ai_addr);
        if (n == 0 || ai->ai_addrlen < n)
            continue;
        memset(out, 0, sizeof *out);
        memcpy(out, ai->ai_addr, n);
        addr_set_port((struct sockaddr *)out, port);
        return 0;
    }
    return -EAFNOSUPPORT;
}

static struct addrinfo lookup_hints(int flags)
{
    return (struct addrinfo){.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = flags};
}

int addr_from_numeric(const char *host, int port, struct sockaddr_storage *out)
{
    char h[HOST_MAX];
    if (port < 0 || port > 65535 || unbracket(host, h, sizeof h) < 0)
        return -EINVAL;
    struct addrinfo hints = lookup_hints(AI_NUMERICHOST), *res = NULL;
    if (getaddrinfo(h, NULL, &hints, &res) != 0)
        return -EAGAIN; /* not a literal: a name */
    int r = first_address(res, port, out);
    freeaddrinfo(res);
    return r;
}

int addr_parse_numeric(const char *hostport, struct sockaddr_storage *out)
{
    char host[HOST_MAX];
    int port;
    if (config_parse_hostport(hostport, host, sizeof host, &port) < 0)
        return -EINVAL;
    return addr_from_numeric(host, port, out);
}

bool addr_hostport_is_wildcard(const char *hostport)
{
    struct sockaddr_storage ss;
    return addr_parse_numeric(hostport, &ss) == 0 && addr_is_wildcard((struct sockaddr *)&ss);
}

/* Resolves host (no brackets) for port: at once for a literal, else through
 * a blocking uv_getaddrinfo. Returns 0 or the error; *out unchanged on
 * failure. */
static int resolve_blocking(uv_loop_t *loop, const char *host, int port,
                            struct sockaddr_storage *out)
{
    int r = addr_from_numeric(host, port, out);
    if (r != -EAGAIN)
        return r;
    uv_getaddrinfo_t req;
    struct addrinfo hints = lookup_hints(AI_ADDRCONFIG);
    r = uv_getaddrinfo(loop, &req, NULL, host, NULL, &hints); /* no callback: blocks */
    if (r < 0)
        return r;
    struct sockaddr_storage ss;
    r = first_address(req.addrinfo, port, &ss);
    if (r == 0)
        *out = ss;
    uv_freeaddrinfo(req.addrinfo);
    return r;
}

int addr_resolve_host(uv_loop_t *loop, const char *host, int port, struct sockaddr_storage *out,
                      char *err, size_t errlen)
{
    char h[HOST_MAX];
    int r = port < 0 || port > 65535 ? -EINVAL : unbracket(host, h, sizeof h);
    if (r == 0)
        r = resolve_blocking(loop, h, port, out);
    if (r < 0 && err && errlen)
        snprintf(err, errlen, "'%.80s' port %d: %s%s", host ? host : "", port,
                 r == -EINVAL ? "not a host and a port 0..65535" : "cannot resolve: ",
                 r == -EINVAL ? "" : uv_strerror(r));
    return r;
}

int addr_resolve(uv_loop_t *loop, const char *hostport, struct sockaddr_storage *out, char *err,
                 size_t errlen)
{
    char host[HOST_MAX];
    int port;
    int r = config_parse_hostport(hostport, host, sizeof host, &port) < 0 ? -EINVAL : 0;
    if (r == 0)
        r = resolve_blocking(loop, host, port, out);
    if (r < 0 && err && errlen)
        snprintf(err, errlen, "'%.80s': %s%s", hostport ? hostport : "",
                 r == -EINVAL ? "not HOST:PORT (a name, an IPv4 address or an [IPv6] address, "
                                "port 0..65535)"
                              : "cannot resolve: ",
                 r == -EINVAL ? "" : uv_strerror(r));
    return r;
}

static void on_lookup(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    addr_lookup *lk = (addr_lookup *)req;
    struct sockaddr_storage ss;
    if (status == 0)
        status = first_address(res, lk->port, &ss);
    uv_freeaddrinfo(res);
    lk->cb(lk, status, status == 0 ? (const struct sockaddr *)&ss : NULL);
}

int addr_lookup_start(uv_loop_t *loop, addr_lookup *lk, const char *host, int port,
                      addr_lookup_fn cb)
{
    char h[HOST_MAX];
    if (port < 0 || port > 65535 || unbracket(host, h, sizeof h) < 0)
        return -EINVAL;
    lk->port = port;
    lk->cb = cb;
    struct addrinfo hints = lookup_hints(AI_ADDRCONFIG);
    return uv_getaddrinfo(loop, &lk->req, on_lookup, h, NULL, &hints);
}

void addr_lookup_cancel(addr_lookup *lk)
{
    uv_cancel((uv_req_t *)&lk->req); /* UV_EBUSY when already running: it ends by itself */
}

const char *addr_format(const struct sockaddr *sa, char *buf, size_t len)
{
    char host[NI_MAXHOST];
    socklen_t n = sa ? addr_len(sa) : 0;
    if (n == 0 || getnameinfo(sa, n, host, sizeof host, NULL, 0, NI_NUMERICHOST) != 0) {
        snprintf(buf, len, "?");
        return buf;
    }
    addr_join(host, addr_port(sa), buf, len);
    return buf;
}

int addr_join(const char *host, int port, char *buf, size_t len)
{
    bool bracket = strchr(host, ':') != NULL && host[0] != '[';
    int n = snprintf(buf, len, bracket ? "[%s]:%d" : "%s:%d", host, port);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int addr_port(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)sa)->sin_port);
    if (sa->sa_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    return -1;
}

void addr_set_port(struct sockaddr *sa, int port)
{
    if (sa->sa_family == AF_INET)
        ((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
    else if (sa->sa_family == AF_INET6)
        ((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
}

socklen_t addr_len(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return sizeof(struct sockaddr_in);
    if (sa->sa_family == AF_INET6)
        return sizeof(struct sockaddr_in6);
    return 0;
}

/* The IPv4 address in host order of an IPv4 or v4-mapped IPv6 address. */
static bool ipv4_of(const struct sockaddr *sa, uint32_t *ip)
{
    if (sa->sa_family == AF_INET) {
        *ip = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        return true;
    }
    const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (sa->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(a6)) {
        memcpy(ip, &a6->s6_addr[12], 4);
        *ip = ntohl(*ip);
        return true;
    }
    return false;
}

bool addr_is_wildcard(const struct sockaddr *sa)
{
    uint32_t ip;
    if (ipv4_of(sa, &ip))
        return ip == INADDR_ANY;
    return sa->sa_family == AF_INET6 &&
           IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

bool addr_is_loopback(const struct sockaddr *sa)
{
    uint32_t ip;
    if (ipv4_of(sa, &ip))
        return (ip >> 24) == 127;
    return sa->sa_family == AF_INET6 &&
           IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}
