/*
 * etcd_request.h - the JSON bodies this client POSTs to etcd's HTTP/JSON
 * gateway (v3 API), built with json-c: int64 fields as decimal strings and
 * keys and values as standard base64 (libsodium), as proto3 JSON wants them.
 * The replies are read by etcd_reply.h.
 *
 * Keys are NUL-terminated, 1..ETCD_KEY_MAX bytes; values are any bytes,
 * 0..ETCD_VALUE_MAX of them. Each function returns 0 with a NUL-terminated
 * body in *out (malloc'd; the caller frees it), or -EINVAL (an empty or
 * over-long key, a negative TTL or lease), -EMSGSIZE (a value over
 * ETCD_VALUE_MAX) or -ENOMEM, with *out NULL. Pure: any thread may call them.
 */
#ifndef FX_NET_ETCD_REQUEST_H
#define FX_NET_ETCD_REQUEST_H

#include <stddef.h>
#include <stdint.h>

/* /v3/lease/grant {"TTL": ttl} (ttl > 0 seconds). */
int etcd_request_grant(int64_t ttl, char **out);

/* /v3/lease/keepalive and /v3/lease/revoke {"ID": lease_id} (> 0). */
int etcd_request_lease(int64_t lease_id, char **out);

/* /v3/kv/range and /v3/kv/deleterange of one key {"key": key}. */
int etcd_request_key(const char *key, char **out);

/* /v3/kv/put {"key", "value", "lease"} (lease 0: none). */
int etcd_request_put(const char *key, const void *value, size_t len, int64_t lease, char **out);

/* /v3/kv/txn: if create_revision(key) == 0 (the key does not exist), put
 * (key, value, lease), else range(key). lease > 0. */
int etcd_request_campaign(const char *key, const void *value, size_t len, int64_t lease,
                          char **out);

#endif
