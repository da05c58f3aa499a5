/*
 * etcd_reply.h - the replies of etcd's HTTP/JSON gateway (v3 API), read into
 * C values: one pure function per kind of reply, no network, no state, so
 * that each can be tested with hostile input (tests/unit/test_etcd_json.c).
 *
 * The gateway writes protobuf messages as proto3 JSON: int64 fields are
 * decimal strings ("ID":"7587..."), bytes fields (keys, values) standard
 * base64 with padding, and a field holding its zero value is left out (a
 * failed txn has no "succeeded", a key with no lease no "lease", an empty
 * value no "value"). So an absent scalar reads as zero here, while a field
 * that is present must have the right JSON type and a valid value: an int64
 * that is a JSON number, a string with anything but digits (and a leading
 * minus) or out of int64 range, base64 that does not decode, or a value
 * over ETCD_VALUE_MAX bytes are errors. Every reply must be one JSON object
 * with etcd's "header" object; what a kind needs beyond that (a lease ID, a
 * key that matches the one asked for) is checked below. A gateway error,
 * {"error": "...", "code": N} or a stream's {"error": {"grpc_code": N,
 * "message": "..."}}, turns into a negative code and its message.
 *
 * Every function returns 0, or a negative errno with a sentence in err
 * (never over errlen bytes, text from the network made printable):
 *   -EPROTO   the reply is not what the gateway sends (bad JSON, a missing or
 *             mistyped field, a bad number or base64, a foreign key)
 *   -EMSGSIZE a value over ETCD_VALUE_MAX bytes
 *   -ENOENT   etcd said "not found" (gRPC code 5: no such lease)
 *   -EAGAIN   etcd is unavailable (code 14: no leader, shutting down)
 *   -ETIMEDOUT etcd's own deadline passed (code 4)
 *   -EREMOTEIO any other refusal by etcd
 * Outputs are unspecified after a failure.
 */
#ifndef FX_NET_ETCD_REPLY_H
#define FX_NET_ETCD_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ETCD_KEY_MAX 256    /* bytes of a key this client writes */
#define ETCD_VALUE_MAX 4096 /* bytes of a value this client writes or accepts */
#define ETCD_REPLY_MAX 65536 /* bytes of one reply body */

/* One key as etcd holds it (the key itself is the one asked for). */
typedef struct etcd_kv {
    int64_t create_revision; /* > 0; rises each time the key is created anew */
    int64_t mod_revision;    /* >= create_revision */
    int64_t version;         /* puts since the key was created */
    int64_t lease;           /* 0: the key has no lease */
    size_t value_len;
    uint8_t value[ETCD_VALUE_MAX];
} etcd_kv;

/* A campaign's answer (etcd_client_campaign): won, or the holder. When won
 * the parser knows only the new key's revision (holder.create_revision =
 * holder.mod_revision = the txn's revision, version 1); the caller fills in
 * the value and lease it sent. */
typedef struct etcd_campaign {
    bool won;
    etcd_kv holder; /* the key's holder: us when won */
} etcd_campaign;

/* /v3/lease/grant: *lease_id (> 0) and the granted *ttl seconds (> 0). */
int etcd_reply_grant(const char *body, size_t len, int64_t *lease_id, int64_t *ttl, char *err,
                     size_t errlen);

/* /v3/lease/keepalive for lease_id: *ttl is the seconds left, 0 when the
 * lease is gone (expired or revoked). A reply about another lease is -EPROTO. */
int etcd_reply_keepalive(const char *body, size_t len, int64_t lease_id, int64_t *ttl, char *err,
                         size_t errlen);

/* A reply that carries nothing but its header: /v3/lease/revoke, /v3/kv/put. */
int etcd_reply_ack(const char *body, size_t len, char *err, size_t errlen);

/* /v3/kv/deleterange of one key: *deleted is how many keys went (0 or 1). */
int etcd_reply_delete(const char *body, size_t len, int64_t *deleted, char *err, size_t errlen);

/* /v3/kv/range of one key (key: NUL-terminated): *found, and the key in *kv
 * when found. More than one key, or one that is not key, is -EPROTO. */
int etcd_reply_range(const char *body, size_t len, const char *key, bool *found, etcd_kv *kv,
                     char *err, size_t errlen);

/* /v3/kv/txn "if create_revision(key) == 0 then put else range" (see
 * etcd_request_campaign): won, or lost with the holder (a lost campaign
 * whose range finds no key is -EPROTO: the txn is atomic). */
int etcd_reply_campaign(const char *body, size_t len, const char *key, etcd_campaign *out,
                        char *err, size_t errlen);

/* An HTTP reply with a status other than 200: the gateway's error message
 * and code when the body holds one, else "HTTP <status>". Always returns a
 * negative code (the list above; -EREMOTEIO when the body says nothing). */
int etcd_reply_http_error(long status, const char *body, size_t len, char *err, size_t errlen);

#endif
