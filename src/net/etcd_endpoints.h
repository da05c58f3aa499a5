/*
 * etcd_endpoints.h - the list of etcd members a client may talk to, as a
 * master's --etcd flag gives it: "http://HOST:PORT[,http://HOST:PORT...]".
 *
 * Each element is an absolute http:// URL with a host (a name, an IPv4
 * literal or an [IPv6] literal) and an explicit port 1..65535, and nothing
 * else: no user, path (a lone "/" aside), query or fragment. libcurl's URL
 * parser reads each one (nothing here is a hand-written URL parser); this
 * module splits the list, checks the parts and keeps each endpoint as its
 * base URL "http://HOST:PORT", to which the client appends a gateway path.
 * https is refused rather than downgraded: the cluster's etcd traffic is
 * plain HTTP on a trusted network for now (docs/decisions.md).
 *
 * Pure and stateless: any thread may call it.
 */
#ifndef FX_NET_ETCD_ENDPOINTS_H
#define FX_NET_ETCD_ENDPOINTS_H

#include <stddef.h>

#define ETCD_ENDPOINTS_MAX 16
#define ETCD_ENDPOINT_TEXT_MAX 256 /* bytes of one element and of its base URL, NUL included */

typedef struct etcd_endpoints {
    int n;                                              /* 1..ETCD_ENDPOINTS_MAX */
    char url[ETCD_ENDPOINTS_MAX][ETCD_ENDPOINT_TEXT_MAX]; /* "http://HOST:PORT" */
} etcd_endpoints;

/* Parses a comma-separated list into *out, in the list's order. Returns 0,
 * or -EINVAL with a sentence in err naming the element and what is wrong
 * with it (empty list or element, a scheme other than http, no port, a path,
 * a user, too many elements, ...); *out is then unspecified. */
int etcd_endpoints_parse(const char *list, etcd_endpoints *out, char *err, size_t errlen);

#endif
