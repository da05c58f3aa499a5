/*
 * etcd_client.h - a blocking client of etcd's HTTP/JSON gateway (v3 API):
 * leases (grant, one keepalive round, revoke), one key (get, put, delete)
 * and the leader campaign that a standby master will use (issue 20).
 *
 * Threads. Every call blocks its thread for up to one request timeout per
 * endpoint tried, so it belongs on a worker thread (a master's election
 * thread), never on a libuv loop. A client is used by one thread at a time:
 * give each thread its own (it holds one libcurl easy handle and its reply
 * buffer; nothing here is global). The first client also starts libcurl
 * (curl_global_init, thread-safe in Debian's libcurl 7.88).
 *
 * Endpoints and failover. The client holds the list of etcd_endpoints.h and
 * sends each request to the endpoint that answered last (the first at
 * start). When that one cannot be reached (refused, unreachable, no answer
 * within the timeout, connection dropped) or says it is unavailable (HTTP
 * 503), the same request goes to the next endpoint, and so on once round
 * the list; so a call takes at most (endpoints x timeout). Every request
 * has a connect timeout and a total timeout (etcd_client_conf, 2 s each by
 * default). Repeating a request on another member is safe for every call
 * here: reads, keepalive, revoke and delete are idempotent, a put writes the
 * same value again, and a campaign whose first try won reads back a key
 * held by its own lease, which counts as won (see etcd_client_campaign).
 *
 * Errors. A call returns 0 or a negative errno; etcd_client_error() then
 * holds a sentence naming the call, the endpoint(s) and what failed:
 *   -EINVAL      bad arguments (empty or over-long key, TTL <= 0, ...)
 *   -EMSGSIZE    a value over ETCD_VALUE_MAX bytes, sent or received
 *   -ECONNREFUSED, -EHOSTUNREACH, -ETIMEDOUT, -EIO: no endpoint answered
 *                (the code of the last one tried)
 *   -EPROTO      an answer that is not what the gateway sends
 *   -ENOENT, -EAGAIN, -EREMOTEIO: etcd refused (see etcd_reply.h)
 * Values are bytes (base64 on the wire), keys NUL-terminated strings.
 */
#ifndef FX_NET_ETCD_CLIENT_H
#define FX_NET_ETCD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/etcd_reply.h"

#define ETCD_TIMEOUT_DEFAULT_MS 2000

typedef struct etcd_client etcd_client;

typedef struct etcd_client_conf {
    int connect_timeout_ms; /* per endpoint tried; 0: ETCD_TIMEOUT_DEFAULT_MS */
    int request_timeout_ms; /* per endpoint tried, connect included; 0: the default */
} etcd_client_conf;

/* A client for endpoints ("http://HOST:PORT[,...]", etcd_endpoints.h);
 * conf may be NULL (the defaults). Nothing is sent yet. Returns the client
 * (free it with etcd_client_free), or NULL with *code (-EINVAL, -ENOMEM)
 * and a sentence in err saying what is wrong with the list or conf. */
etcd_client *etcd_client_new(const char *endpoints, const etcd_client_conf *conf, int *code,
                             char *err, size_t errlen);

/* Frees c (NULL is fine). Leases it granted stay until their TTL runs out. */
void etcd_client_free(etcd_client *c);

/* The sentence about the last failed call (empty after a success); valid
 * until the next call on c. */
const char *etcd_client_error(const etcd_client *c);

/* The base URL of the endpoint that answered last (or will be tried first). */
const char *etcd_client_endpoint(const etcd_client *c);

/* Grants a lease of ttl_s seconds (> 0): *lease_id (> 0) and, when ttl_out
 * is not NULL, the TTL etcd granted (it may raise a TTL below its minimum). */
int etcd_client_lease_grant(etcd_client *c, int64_t ttl_s, int64_t *lease_id, int64_t *ttl_out);

/* One keepalive round for lease_id: *ttl_left is the seconds the lease now
 * has, or 0 when it is gone (expired or revoked; the call still returns 0). */
int etcd_client_lease_keepalive(etcd_client *c, int64_t lease_id, int64_t *ttl_left);

/* Revokes lease_id; every key attached to it is deleted at once. Returns 0,
 * or -ENOENT when etcd knows no such lease (expired or revoked already). */
int etcd_client_lease_revoke(etcd_client *c, int64_t lease_id);

/* Campaigns for key with lease (> 0): in one txn, if the key does not
 * exist it is put with value and lease (won), else it is read (lost). out
 * gets won and the key's holder: its value, lease and create_revision, the
 * leader's term, which rises strictly each time the key is created anew.
 * When the key is already held by this lease (a retried campaign whose first
 * try went through, or a second campaign by the winner) it counts as won,
 * with the value and term of that first put. A lease that is gone (expired,
 * revoked) is -ENOENT. *out is unchanged on failure. */
int etcd_client_campaign(etcd_client *c, const char *key, const void *value, size_t len,
                         int64_t lease, etcd_campaign *out);

/* Reads key: *found, and when found its value and revisions in *kv (*kv is
 * unchanged when not found or on failure). */
int etcd_client_get(etcd_client *c, const char *key, bool *found, etcd_kv *kv);

/* Puts key = value (len bytes, up to ETCD_VALUE_MAX), attached to lease
 * (0: none; the lease must exist, else -ENOENT). */
int etcd_client_put(etcd_client *c, const char *key, const void *value, size_t len,
                    int64_t lease);

/* Deletes key; *deleted (may be NULL) is 1 when it existed, else 0. */
int etcd_client_delete(etcd_client *c, const char *key, int64_t *deleted);

#endif
