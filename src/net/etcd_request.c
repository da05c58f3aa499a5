/*
 * etcd_request.c - JSON request bodies for etcd's gateway (see
 * etcd_request.h). Each body is a json-c tree written out once; the helpers
 * below add one field each and report a failed allocation, so a body is
 * either whole or not made at all.
 */
#include "net/etcd_request.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/etcd_reply.h"

/* Adds name: v to obj, taking v. Returns 0 or -ENOMEM (obj or v NULL, or
 * the add failed; v is released then), so that a failed allocation higher
 * up simply fails every add below it. */
static int add(json_object *obj, const char *name, json_object *v)
{
    if (!obj || !v || json_object_object_add(obj, name, v) != 0) {
        json_object_put(v);
        return -ENOMEM;
    }
    return 0;
}

/* Adds an int64 as proto3 JSON writes it: a decimal string. */
static int add_int64(json_object *obj, const char *name, int64_t x)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRId64, x);
    return add(obj, name, json_object_new_string(text));
}

/* Adds bytes as standard base64 with padding. */
static int add_bytes(json_object *obj, const char *name, const void *p, size_t n)
{
    size_t cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
    char *b64 = malloc(cap);
    if (!b64)
        return -ENOMEM;
    sodium_bin2base64(b64, cap, p, n, sodium_base64_VARIANT_ORIGINAL);
    int rc = add(obj, name, json_object_new_string(b64));
    free(b64);
    return rc;
}

/* Writes root out into *out and releases it. rc is the building's result so
 * far: on failure nothing is written. */
static int finish(json_object *root, int rc, char **out)
{
    *out = NULL;
    if (rc == 0 && !root)
        rc = -ENOMEM;
    if (rc == 0) {
        const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
        *out = text ? strdup(text) : NULL;
        rc = *out ? 0 : -ENOMEM;
    }
    json_object_put(root);
    return rc;
}

/* Checks a key: 1..ETCD_KEY_MAX bytes. */
static int key_ok(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    return n > 0 && n <= ETCD_KEY_MAX;
}

int etcd_request_grant(int64_t ttl, char **out)
{
    *out = NULL;
    if (ttl <= 0)
        return -EINVAL;
    json_object *root = json_object_new_object();
    return finish(root, add_int64(root, "TTL", ttl), out);
}

int etcd_request_lease(int64_t lease_id, char **out)
{
    *out = NULL;
    if (lease_id <= 0)
        return -EINVAL;
    json_object *root = json_object_new_object();
    return finish(root, add_int64(root, "ID", lease_id), out);
}

int etcd_request_key(const char *key, char **out)
{
    *out = NULL;
    if (!key_ok(key))
        return -EINVAL;
    json_object *root = json_object_new_object();
    return finish(root, add_bytes(root, "key", key, strlen(key)), out);
}

/* The fields of a put (into obj): key, value, and lease when > 0. */
static int put_fields(json_object *obj, const char *key, const void *value, size_t len,
                      int64_t lease)
{
    int rc = add_bytes(obj, "key", key, strlen(key));
    if (rc == 0)
        rc = add_bytes(obj, "value", value, len);
    if (rc == 0 && lease > 0)
        rc = add_int64(obj, "lease", lease);
    return rc;
}

/* Checks a put's arguments. Returns 0, -EINVAL or -EMSGSIZE. */
static int put_ok(const char *key, const void *value, size_t len, int64_t lease)
{
    if (!key_ok(key) || lease < 0 || (!value && len))
        return -EINVAL;
    return len > ETCD_VALUE_MAX ? -EMSGSIZE : 0;
}

int etcd_request_put(const char *key, const void *value, size_t len, int64_t lease, char **out)
{
    *out = NULL;
    int rc = put_ok(key, value, len, lease);
    if (rc < 0)
        return rc;
    json_object *root = json_object_new_object();
    return finish(root, put_fields(root, key, value, len, lease), out);
}

/* A new object or array added to parent (an object, under name; or an
 * array, appended when name is NULL): borrowed, parent owns it. NULL when
 * parent is NULL or an allocation failed. */
static json_object *add_child(json_object *parent, const char *name, bool array)
{
    if (!parent)
        return NULL;
    json_object *child = array ? json_object_new_array() : json_object_new_object();
    if (!child)
        return NULL;
    int rc = name ? add(parent, name, child) : json_object_array_add(parent, child);
    if (rc != 0) {
        if (!name)
            json_object_put(child); /* add() released it already */
        return NULL;
    }
    return child;
}

int etcd_request_campaign(const char *key, const void *value, size_t len, int64_t lease,
                          char **out)
{
    *out = NULL;
    int rc = put_ok(key, value, len, lease);
    if (rc < 0)
        return rc;
    if (lease == 0)
        return -EINVAL;
    /* {"compare": [{"target": "CREATE", "key": K, "create_revision": "0"}],
     *  "success": [{"request_put": {"key": K, "value": V, "lease": L}}],
     *  "failure": [{"request_range": {"key": K}}]}: the gateway takes the
     * proto field names; CREATE compares the key's create_revision. */
    json_object *root = json_object_new_object();
    json_object *cmp = add_child(add_child(root, "compare", true), NULL, false);
    json_object *put = add_child(add_child(add_child(root, "success", true), NULL, false),
                                 "request_put", false);
    json_object *range = add_child(add_child(add_child(root, "failure", true), NULL, false),
                                   "request_range", false);
    rc = add(cmp, "target", json_object_new_string("CREATE"));
    if (rc == 0)
        rc = add_bytes(cmp, "key", key, strlen(key));
    if (rc == 0)
        rc = add_int64(cmp, "create_revision", 0);
    if (rc == 0)
        rc = put_fields(put, key, value, len, lease);
    if (rc == 0)
        rc = add_bytes(range, "key", key, strlen(key));
    return finish(root, rc, out);
}
