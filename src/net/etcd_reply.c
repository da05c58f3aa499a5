/*
 * etcd_reply.c - the gateway's JSON replies into C values (see etcd_reply.h).
 *
 * json-c parses (strict mode, bounded nesting); libsodium decodes base64.
 * Each reply goes through the same steps: one JSON object and nothing after
 * it but white space, no gateway "error" field, etcd's "header" object; then
 * the fields of its kind, each through a getter that checks the JSON type
 * and the value before anything uses it. Nothing here allocates but json-c's
 * tree, which every function frees on every path.
 */
#include "net/etcd_reply.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_DEPTH_MAX 16   /* etcd's replies nest 6 deep at most */
#define INT64_TEXT_MAX 20   /* "-9223372036854775808" */
#define ETCD_MESSAGE_MAX 200 /* characters of etcd's error message kept */

/* ---- JSON and field getters ------------------------------------------------ */

/* Parses body as one JSON object. Returns 0 with *root (the caller puts it)
 * or -EPROTO. */
static int parse_object(const char *body, size_t len, json_object **root, char *err, size_t errlen)
{
    *root = NULL;
    if (len > ETCD_REPLY_MAX) {
        snprintf(err, errlen, "reply of %zu bytes is over %d", len, ETCD_REPLY_MAX);
        return -EPROTO;
    }
    json_tokener *tok = json_tokener_new_ex(JSON_DEPTH_MAX);
    if (!tok) {
        snprintf(err, errlen, "out of memory parsing the reply");
        return -ENOMEM;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *obj = json_tokener_parse_ex(tok, body, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    int rc = -EPROTO;
    if (jerr == json_tokener_continue || !obj) {
        snprintf(err, errlen, "reply is not JSON: %s",
                 jerr == json_tokener_continue ? "it ends early" : json_tokener_error_desc(jerr));
        goto out;
    }
    if (!json_object_is_type(obj, json_type_object)) {
        snprintf(err, errlen, "reply is JSON but not an object");
        goto out;
    }
    for (size_t i = end; i < len; i++)
        if (body[i] != ' ' && body[i] != '\t' && body[i] != '\r' && body[i] != '\n') {
            snprintf(err, errlen, "reply has bytes after its JSON object (at %zu)", i);
            goto out;
        }
    *root = obj;
    obj = NULL;
    rc = 0;
out:
    json_object_put(obj);
    return rc;
}

/* The child name of obj when it has the JSON type (*v), or NULL when it is
 * absent or null (proto3 JSON leaves out zero values). Returns 0, or -EPROTO
 * when it is there with another type (what: the type expected, in words). */
static int child(json_object *obj, const char *name, json_type type, const char *what,
                 json_object **v, char *err, size_t errlen)
{
    *v = NULL;
    json_object *x = NULL;
    if (!json_object_object_get_ex(obj, name, &x) || json_object_is_type(x, json_type_null))
        return 0;
    if (!json_object_is_type(x, type)) {
        snprintf(err, errlen, "reply field '%s' is not %s", name, what);
        return -EPROTO;
    }
    *v = x;
    return 0;
}

/* The child name of obj when it is an object (*out; NULL when absent and
 * not required). Returns 0 or -EPROTO. */
static int field_object(json_object *obj, const char *name, bool required, json_object **out,
                        char *err, size_t errlen)
{
    int rc = child(obj, name, json_type_object, "an object", out, err, errlen);
    if (rc == 0 && !*out && required) {
        snprintf(err, errlen, "reply has no '%s' object", name);
        rc = -EPROTO;
    }
    return rc;
}

/* An int64 field, which proto3 JSON writes as a decimal string; absent
 * reads 0. Returns 0 or -EPROTO (a number, not digits, out of range). */
static int field_int64(json_object *obj, const char *name, int64_t *out, char *err, size_t errlen)
{
    *out = 0;
    json_object *v;
    int rc = child(obj, name, json_type_string, "an int64 string", &v, err, errlen);
    if (rc < 0 || !v)
        return rc;
    const char *s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    size_t digits = n > 0 && s[0] == '-' ? n - 1 : n;
    bool ok = n > 0 && n <= INT64_TEXT_MAX && digits > 0 && strlen(s) == n;
    for (size_t i = n - digits; ok && i < n; i++)
        ok = s[i] >= '0' && s[i] <= '9';
    if (!ok) {
        snprintf(err, errlen, "reply field '%s' is not a decimal int64", name);
        return -EPROTO;
    }
    errno = 0;
    long long x = strtoll(s, NULL, 10);
    if (errno == ERANGE) {
        snprintf(err, errlen, "reply field '%s' is out of int64 range", name);
        return -EPROTO;
    }
    *out = (int64_t)x;
    return 0;
}

/* A bool field; absent reads false. Returns 0 or -EPROTO. */
static int field_bool(json_object *obj, const char *name, bool *out, char *err, size_t errlen)
{
    json_object *v;
    int rc = child(obj, name, json_type_boolean, "a boolean", &v, err, errlen);
    *out = rc == 0 && v && json_object_get_boolean(v);
    return rc;
}

/* A bytes field (standard base64 with padding) decoded into out (cap
 * bytes), its length in *len; absent reads as no bytes. Returns 0, -EPROTO
 * (not a string, not base64) or -EMSGSIZE (over cap bytes). */
static int field_bytes(json_object *obj, const char *name, uint8_t *out, size_t cap, size_t *len,
                       char *err, size_t errlen)
{
    *len = 0;
    json_object *v;
    int rc = child(obj, name, json_type_string, "a base64 string", &v, err, errlen);
    if (rc < 0 || !v)
        return rc;
    const char *s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    size_t pad = 0;
    while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
        pad++;
    if ((n - pad) / 4 * 3 + (n - pad) % 4 * 6 / 8 > cap) { /* what it would decode to */
        snprintf(err, errlen, "reply field '%s' holds over %zu bytes", name, cap);
        return -EMSGSIZE;
    }
    const char *end = NULL;
    if (sodium_base642bin(out, cap, s, n, NULL, len, &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
        end != s + n) {
        snprintf(err, errlen, "reply field '%s' is not valid base64", name);
        return -EPROTO;
    }
    return 0;
}

/* ---- gateway errors ------------------------------------------------------- */

/* A gRPC status code as a negative errno. */
static int grpc_code_errno(int64_t code)
{
    switch (code) {
    case 4: return -ETIMEDOUT; /* DEADLINE_EXCEEDED */
    case 5: return -ENOENT;    /* NOT_FOUND */
    case 14: return -EAGAIN;   /* UNAVAILABLE */
    default: return -EREMOTEIO;
    }
}

/* Copies a message from the network into out as printable ASCII, at most
 * ETCD_MESSAGE_MAX characters. */
static void printable(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && i < ETCD_MESSAGE_MAX && k + 1 < cap; i++)
        out[k++] = isprint((unsigned char)s[i]) ? s[i] : '?';
    if (cap)
        out[k] = '\0';
}

/* The string child name of obj, or NULL. */
static const char *string_child(json_object *obj, const char *name, size_t *len)
{
    json_object *v = NULL;
    if (!obj || !json_object_object_get_ex(obj, name, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    *len = (size_t)json_object_get_string_len(v);
    return json_object_get_string(v);
}

/* The int child name of obj, or -1. */
static int64_t int_child(json_object *obj, const char *name)
{
    json_object *v = NULL;
    if (!obj || !json_object_object_get_ex(obj, name, &v) || !json_object_is_type(v, json_type_int))
        return -1;
    return json_object_get_int64(v);
}

/* When root is a gateway error ({"error": "...", "code": N} or
 * {"error": {"grpc_code": N, "message": "..."}}, or a grant's non-empty
 * "error"), returns its negative code with the message in err; else 0. */
static int gateway_error(json_object *root, char *err, size_t errlen)
{
    json_object *e = NULL;
    if (!json_object_object_get_ex(root, "error", &e) || json_object_is_type(e, json_type_null))
        return 0;
    json_object *inner = json_object_is_type(e, json_type_object) ? e : NULL;
    size_t n = 0;
    const char *msg = string_child(root, "message", &n);
    if (!msg)
        msg = string_child(inner, "message", &n);
    if (!msg && json_object_is_type(e, json_type_string)) {
        msg = json_object_get_string(e);
        n = (size_t)json_object_get_string_len(e);
        if (n == 0)
            return 0; /* a grant's empty "error" field: no error */
    }
    int64_t code = int_child(root, "code");
    if (code < 0)
        code = int_child(inner, "grpc_code");
    char text[ETCD_MESSAGE_MAX + 1];
    printable(msg ? msg : "(no message)", msg ? n : 12, text, sizeof text);
    snprintf(err, errlen, "etcd refused: %s (code %lld)", text, (long long)code);
    return grpc_code_errno(code);
}

/* Parses body and refuses a gateway error. Returns 0 with *root or a
 * negative code. */
static int open_reply(const char *body, size_t len, json_object **root, char *err, size_t errlen)
{
    int rc = parse_object(body, len, root, err, errlen);
    if (rc == 0 && (rc = gateway_error(*root, err, errlen)) < 0) {
        json_object_put(*root);
        *root = NULL;
    }
    return rc;
}

/* Requires etcd's "header" object in obj, with its revision in *revision
 * (may be NULL; a present revision must be > 0). Returns 0 or -EPROTO. */
static int need_header(json_object *obj, int64_t *revision, char *err, size_t errlen)
{
    json_object *h;
    int64_t rev;
    int rc = field_object(obj, "header", true, &h, err, errlen);
    if (rc == 0)
        rc = field_int64(h, "revision", &rev, err, errlen);
    if (rc == 0 && revision && rev <= 0) {
        snprintf(err, errlen, "reply header has no revision");
        rc = -EPROTO;
    }
    if (rc == 0 && revision)
        *revision = rev;
    return rc;
}

/* ---- keys ------------------------------------------------------------------ */

/* One element of "kvs" into *kv: it must be key, with a create_revision
 * > 0, mod_revision >= create_revision, version and lease >= 0. */
static int parse_kv(json_object *v, const char *key, etcd_kv *kv, char *err, size_t errlen)
{
    if (!json_object_is_type(v, json_type_object)) {
        snprintf(err, errlen, "reply field 'kvs' holds a non-object");
        return -EPROTO;
    }
    uint8_t got[ETCD_KEY_MAX];
    size_t got_len = 0;
    int rc = field_bytes(v, "key", got, sizeof got, &got_len, err, errlen);
    if (rc == -EMSGSIZE || (rc == 0 && (got_len != strlen(key) || memcmp(got, key, got_len)))) {
        snprintf(err, errlen, "reply holds another key than '%s'", key);
        return -EPROTO;
    }
    if (rc == 0)
        rc = field_int64(v, "create_revision", &kv->create_revision, err, errlen);
    if (rc == 0)
        rc = field_int64(v, "mod_revision", &kv->mod_revision, err, errlen);
    if (rc == 0)
        rc = field_int64(v, "version", &kv->version, err, errlen);
    if (rc == 0)
        rc = field_int64(v, "lease", &kv->lease, err, errlen);
    if (rc == 0)
        rc = field_bytes(v, "value", kv->value, sizeof kv->value, &kv->value_len, err, errlen);
    if (rc == 0 && (kv->create_revision <= 0 || kv->mod_revision < kv->create_revision ||
                    kv->version < 0 || kv->lease < 0)) {
        snprintf(err, errlen,
                 "reply key '%s' has impossible revisions (create %lld, mod %lld, version %lld, "
                 "lease %lld)",
                 key, (long long)kv->create_revision, (long long)kv->mod_revision,
                 (long long)kv->version, (long long)kv->lease);
        rc = -EPROTO;
    }
    return rc;
}

/* The "kvs" of a range over one key (obj: the range reply). */
static int parse_kvs(json_object *obj, const char *key, bool *found, etcd_kv *kv, char *err,
                     size_t errlen)
{
    *found = false;
    json_object *kvs;
    int rc = child(obj, "kvs", json_type_array, "an array", &kvs, err, errlen);
    if (rc < 0 || !kvs)
        return rc;
    size_t n = json_object_array_length(kvs);
    if (n == 0)
        return 0;
    if (n > 1) {
        snprintf(err, errlen, "reply holds %zu keys for one key", n);
        return -EPROTO;
    }
    rc = parse_kv(json_object_array_get_idx(kvs, 0), key, kv, err, errlen);
    *found = rc == 0;
    return rc;
}

/* ---- one function per kind -------------------------------------------------- */

int etcd_reply_grant(const char *body, size_t len, int64_t *lease_id, int64_t *ttl, char *err,
                     size_t errlen)
{
    json_object *root;
    int rc = open_reply(body, len, &root, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = need_header(root, NULL, err, errlen)) == 0 &&
        (rc = field_int64(root, "ID", lease_id, err, errlen)) == 0 &&
        (rc = field_int64(root, "TTL", ttl, err, errlen)) == 0 && (*lease_id <= 0 || *ttl <= 0)) {
        snprintf(err, errlen, "lease grant reply has no lease (ID %lld, TTL %lld)",
                 (long long)*lease_id, (long long)*ttl);
        rc = -EPROTO;
    }
    json_object_put(root);
    return rc;
}

int etcd_reply_keepalive(const char *body, size_t len, int64_t lease_id, int64_t *ttl, char *err,
                         size_t errlen)
{
    json_object *root, *result;
    int64_t id = 0;
    int rc = open_reply(body, len, &root, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = field_object(root, "result", true, &result, err, errlen)) == 0 &&
        (rc = need_header(result, NULL, err, errlen)) == 0 &&
        (rc = field_int64(result, "ID", &id, err, errlen)) == 0 &&
        (rc = field_int64(result, "TTL", ttl, err, errlen)) == 0) {
        if (id != lease_id) {
            snprintf(err, errlen, "keepalive reply is about lease %lld, not %lld", (long long)id,
                     (long long)lease_id);
            rc = -EPROTO;
        } else if (*ttl < 0) {
            *ttl = 0; /* not seen from keepalive, but -1 is etcd's "no such lease" elsewhere */
        }
    }
    json_object_put(root);
    return rc;
}

int etcd_reply_ack(const char *body, size_t len, char *err, size_t errlen)
{
    json_object *root;
    int rc = open_reply(body, len, &root, err, errlen);
    if (rc < 0)
        return rc;
    rc = need_header(root, NULL, err, errlen);
    json_object_put(root);
    return rc;
}

int etcd_reply_delete(const char *body, size_t len, int64_t *deleted, char *err, size_t errlen)
{
    json_object *root;
    int rc = open_reply(body, len, &root, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = need_header(root, NULL, err, errlen)) == 0 &&
        (rc = field_int64(root, "deleted", deleted, err, errlen)) == 0 &&
        (*deleted < 0 || *deleted > 1)) {
        snprintf(err, errlen, "delete reply says %lld keys went for one key", (long long)*deleted);
        rc = -EPROTO;
    }
    json_object_put(root);
    return rc;
}

int etcd_reply_range(const char *body, size_t len, const char *key, bool *found, etcd_kv *kv,
                     char *err, size_t errlen)
{
    json_object *root;
    int rc = open_reply(body, len, &root, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = need_header(root, NULL, err, errlen)) == 0)
        rc = parse_kvs(root, key, found, kv, err, errlen);
    json_object_put(root);
    return rc;
}

/* The one response of a campaign's txn: responses[0] (an object) into *op. */
static int only_response(json_object *root, json_object **op, char *err, size_t errlen)
{
    json_object *rs = NULL;
    if (!json_object_object_get_ex(root, "responses", &rs) ||
        !json_object_is_type(rs, json_type_array) || json_object_array_length(rs) != 1 ||
        !json_object_is_type(json_object_array_get_idx(rs, 0), json_type_object)) {
        snprintf(err, errlen, "txn reply has no 'responses' array of one object");
        return -EPROTO;
    }
    *op = json_object_array_get_idx(rs, 0);
    return 0;
}

int etcd_reply_campaign(const char *body, size_t len, const char *key, etcd_campaign *out,
                        char *err, size_t errlen)
{
    json_object *root, *op, *put, *range;
    int64_t revision = 0;
    bool found = false;
    memset(out, 0, sizeof *out);
    int rc = open_reply(body, len, &root, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = need_header(root, &revision, err, errlen)) < 0 ||
        (rc = field_bool(root, "succeeded", &out->won, err, errlen)) < 0 ||
        (rc = only_response(root, &op, err, errlen)) < 0)
        goto out;
    if (out->won) {
        /* The put made the key at this txn's revision: that is its create_revision. */
        if ((rc = field_object(op, "response_put", true, &put, err, errlen)) < 0)
            goto out;
        out->holder.create_revision = out->holder.mod_revision = revision;
        out->holder.version = 1;
        goto out;
    }
    if ((rc = field_object(op, "response_range", true, &range, err, errlen)) < 0 ||
        (rc = parse_kvs(range, key, &found, &out->holder, err, errlen)) < 0)
        goto out;
    if (!found) {
        snprintf(err, errlen, "lost campaign reply holds no key '%s'", key);
        rc = -EPROTO;
    }
out:
    json_object_put(root);
    return rc;
}

int etcd_reply_http_error(long status, const char *body, size_t len, char *err, size_t errlen)
{
    json_object *root = NULL;
    char why[ETCD_MESSAGE_MAX + 64] = "";
    int rc = 0;
    if (len > 0 && parse_object(body, len, &root, why, sizeof why) == 0)
        rc = gateway_error(root, why, sizeof why);
    json_object_put(root);
    if (rc < 0) {
        snprintf(err, errlen, "HTTP %ld: %s", status, why);
        return rc;
    }
    snprintf(err, errlen, "HTTP %ld", status);
    return status == 503 ? -EAGAIN : -EREMOTEIO;
}
