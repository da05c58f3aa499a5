/*
 * test_etcd_json.c - the JSON bodies of etcd's gateway, both ways, with no
 * etcd (src/net/etcd_request.c, src/net/etcd_reply.c).
 *
 * Requests: each body parses back to the fields the gateway expects (int64
 * as strings, keys and values base64, binary bytes intact, a campaign's
 * compare / success / failure), and bad arguments are refused.
 * Replies: bodies copied from etcd 3.4.23 read right (a grant, keepalives
 * with and without TTL, a won and a lost campaign, a range with a binary
 * value, deletes, gateway errors to -ENOENT / -EAGAIN / -EREMOTEIO), and
 * hostile bodies fail cleanly with -EPROTO or -EMSGSIZE and a message, never
 * a crash: not JSON, trailing bytes, a NUL inside, no header, numbers where
 * strings belong, int64s with signs, spaces, exponents or 20 digits, bad or
 * unpadded base64, values one byte over the limit, another key, two keys,
 * impossible revisions, deep nesting, an over-long body, control characters
 * in etcd's message. ASan (make asan-test) checks that each path frees.
 */
#include "net/etcd_reply.h"
#include "net/etcd_request.h"
#include "testlib.h"

#include <errno.h>
#include <json-c/json.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define HDR "\"header\":{\"cluster_id\":\"13455796455940752355\",\"member_id\":\"1\"," \
            "\"revision\":\"7\",\"raft_term\":\"2\"}"

/* ---- requests -------------------------------------------------------------- */

/* The string at a json-c path of slash-separated names and indexes. */
static const char *at(json_object *root, const char *p1, const char *p2, const char *p3)
{
    const char *path[3] = {p1, p2, p3};
    json_object *o = root;
    for (int i = 0; i < 3 && path[i] && o; i++) {
        if (json_object_is_type(o, json_type_array))
            o = json_object_array_get_idx(o, (size_t)atoi(path[i]));
        else if (!json_object_object_get_ex(o, path[i], &o))
            o = NULL;
    }
    return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

static bool same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static void test_requests(void)
{
    char *body = NULL;
    CHECK(etcd_request_grant(5, &body) == 0 && same(body, "{\"TTL\":\"5\"}"), "grant: %s", body);
    free(body);
    CHECK(etcd_request_lease(4390625086116077829LL, &body) == 0 &&
              same(body, "{\"ID\":\"4390625086116077829\"}"),
          "lease: %s", body);
    free(body);
    CHECK(etcd_request_key("lead", &body) == 0 && same(body, "{\"key\":\"bGVhZA==\"}"), "key: %s",
          body);
    free(body);

    /* A binary value (NUL, 0xff) goes out as base64 and comes back whole. */
    const uint8_t value[] = {'a', 0, 0xff, '\n', 'z'};
    CHECK(etcd_request_campaign("/fx/leader", value, sizeof value, 42, &body) == 0, "campaign");
    json_object *root = body ? json_tokener_parse(body) : NULL;
    CHECK(root != NULL, "campaign body is JSON: %s", body);
    CHECK(same(at(root, "compare", "0", "target"), "CREATE"), "compare target CREATE");
    CHECK(same(at(root, "compare", "0", "create_revision"), "0"), "compare create_revision 0");
    CHECK(same(at(root, "compare", "0", "key"), "L2Z4L2xlYWRlcg=="), "compare key");
    json_object *put = NULL, *range = NULL, *s0 = NULL, *f0 = NULL;
    json_object_object_get_ex(root, "success", &s0);
    json_object_object_get_ex(root, "failure", &f0);
    s0 = s0 ? json_object_array_get_idx(s0, 0) : NULL;
    f0 = f0 ? json_object_array_get_idx(f0, 0) : NULL;
    CHECK(s0 && json_object_object_get_ex(s0, "request_put", &put), "success: request_put");
    CHECK(f0 && json_object_object_get_ex(f0, "request_range", &range), "failure: request_range");
    CHECK(same(at(put, "lease", NULL, NULL), "42"), "put lease as a string");
    CHECK(same(at(range, "key", NULL, NULL), "L2Z4L2xlYWRlcg=="), "range key");
    const char *b64 = at(put, "value", NULL, NULL);
    uint8_t back[16];
    size_t n = 0;
    CHECK(b64 && sodium_base642bin(back, sizeof back, b64, strlen(b64), NULL, &n, NULL,
                                   sodium_base64_VARIANT_ORIGINAL) == 0 &&
              n == sizeof value && memcmp(back, value, n) == 0,
          "value round trip: %s", b64);
    json_object_put(root);
    free(body);

    CHECK(etcd_request_put("k", "", 0, 0, &body) == 0 && same(body, "{\"key\":\"aw==\",\"value\":\"\"}"),
          "put, empty value, no lease: %s", body);
    free(body);

    /* Refused arguments leave *out NULL. */
    char key[ETCD_KEY_MAX + 2];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    static uint8_t big[ETCD_VALUE_MAX + 1];
    CHECK(etcd_request_grant(0, &body) == -EINVAL && !body, "TTL 0 refused");
    CHECK(etcd_request_lease(-1, &body) == -EINVAL && !body, "lease -1 refused");
    CHECK(etcd_request_key("", &body) == -EINVAL && !body, "empty key refused");
    CHECK(etcd_request_key(key, &body) == -EINVAL && !body, "key over ETCD_KEY_MAX refused");
    key[ETCD_KEY_MAX] = '\0';
    CHECK(etcd_request_key(key, &body) == 0 && body, "key of ETCD_KEY_MAX accepted");
    free(body);
    CHECK(etcd_request_put("k", big, sizeof big, 0, &body) == -EMSGSIZE && !body,
          "value over ETCD_VALUE_MAX refused");
    CHECK(etcd_request_put("k", big, ETCD_VALUE_MAX, 0, &body) == 0 && body,
          "value of ETCD_VALUE_MAX accepted");
    free(body);
    CHECK(etcd_request_campaign("k", "v", 1, 0, &body) == -EINVAL && !body,
          "campaign without a lease refused");
}

/* ---- replies from etcd ------------------------------------------------------ */

static int grant(const char *body, int64_t *id, int64_t *ttl, char *err, size_t errlen)
{
    return etcd_reply_grant(body, strlen(body), id, ttl, err, errlen);
}

static void test_real_replies(void)
{
    char err[512] = "";
    int64_t id = 0, ttl = 0;
    CHECK(grant("{" HDR ",\"ID\":\"4390625086116077829\",\"TTL\":\"5\"}", &id, &ttl, err,
                sizeof err) == 0 &&
              id == 4390625086116077829LL && ttl == 5,
          "grant: %s", err);

    const char *ka = "{\"result\":{" HDR ",\"ID\":\"77\",\"TTL\":\"5\"}}\n";
    CHECK(etcd_reply_keepalive(ka, strlen(ka), 77, &ttl, err, sizeof err) == 0 && ttl == 5,
          "keepalive: %s", err);
    const char *gone = "{\"result\":{" HDR ",\"ID\":\"77\"}}";
    CHECK(etcd_reply_keepalive(gone, strlen(gone), 77, &ttl, err, sizeof err) == 0 && ttl == 0,
          "keepalive of a gone lease: TTL 0 (%s)", err);
    CHECK(etcd_reply_keepalive(ka, strlen(ka), 78, &ttl, err, sizeof err) == -EPROTO,
          "keepalive about another lease refused");

    const char *ack = "{" HDR "}";
    CHECK(etcd_reply_ack(ack, strlen(ack), err, sizeof err) == 0, "ack: %s", err);

    int64_t deleted = -1;
    const char *del1 = "{" HDR ",\"deleted\":\"1\"}";
    CHECK(etcd_reply_delete(del1, strlen(del1), &deleted, err, sizeof err) == 0 && deleted == 1,
          "delete 1: %s", err);
    CHECK(etcd_reply_delete(ack, strlen(ack), &deleted, err, sizeof err) == 0 && deleted == 0,
          "delete 0 (field left out): %s", err);

    /* "a\0\xff" is YQD/ */
    static etcd_kv kv;
    bool found = false;
    const char *range = "{" HDR ",\"kvs\":[{\"key\":\"bGVhZA==\",\"create_revision\":\"2\","
                        "\"mod_revision\":\"3\",\"version\":\"2\",\"value\":\"YQD/\","
                        "\"lease\":\"4390625086116077831\"}],\"count\":\"1\"}";
    CHECK(etcd_reply_range(range, strlen(range), "lead", &found, &kv, err, sizeof err) == 0 &&
              found,
          "range: %s", err);
    CHECK(kv.create_revision == 2 && kv.mod_revision == 3 && kv.version == 2 &&
              kv.lease == 4390625086116077831LL && kv.value_len == 3 &&
              memcmp(kv.value, "a\0\xff", 3) == 0,
          "range fields");
    CHECK(etcd_reply_range(ack, strlen(ack), "lead", &found, &kv, err, sizeof err) == 0 && !found,
          "range of no key: not found");
    const char *nolease = "{" HDR ",\"kvs\":[{\"key\":\"bGVhZA==\",\"create_revision\":\"4\","
                          "\"mod_revision\":\"4\",\"version\":\"1\"}],\"count\":\"1\"}";
    CHECK(etcd_reply_range(nolease, strlen(nolease), "lead", &found, &kv, err, sizeof err) == 0 &&
              found && kv.lease == 0 && kv.value_len == 0,
          "a key with no lease and an empty value: %s", err);

    static etcd_campaign cp;
    const char *won = "{" HDR ",\"succeeded\":true,\"responses\":[{\"response_put\":{\"header\":"
                      "{\"revision\":\"7\"}}}]}";
    CHECK(etcd_reply_campaign(won, strlen(won), "lead", &cp, err, sizeof err) == 0 && cp.won &&
              cp.holder.create_revision == 7,
          "won at revision 7: %s", err);
    const char *lost = "{" HDR ",\"responses\":[{\"response_range\":{\"header\":{\"revision\":\"7\"},"
                       "\"kvs\":[{\"key\":\"bGVhZA==\",\"create_revision\":\"2\",\"mod_revision\":"
                       "\"2\",\"version\":\"1\",\"value\":\"YWRkcjox\",\"lease\":\"99\"}],"
                       "\"count\":\"1\"}}]}";
    CHECK(etcd_reply_campaign(lost, strlen(lost), "lead", &cp, err, sizeof err) == 0 && !cp.won &&
              cp.holder.create_revision == 2 && cp.holder.lease == 99 &&
              cp.holder.value_len == 6 && memcmp(cp.holder.value, "addr:1", 6) == 0,
          "lost to the holder of term 2: %s", err);
}

static void test_gateway_errors(void)
{
    char err[512] = "";
    int64_t id, ttl;
    const char *nf = "{\"error\":\"etcdserver: requested lease not found\",\"message\":"
                     "\"etcdserver: requested lease not found\",\"code\":5}";
    CHECK(etcd_reply_ack(nf, strlen(nf), err, sizeof err) == -ENOENT &&
              strstr(err, "requested lease not found"),
          "not found: %s", err);
    CHECK(etcd_reply_http_error(404, nf, strlen(nf), err, sizeof err) == -ENOENT &&
              strstr(err, "HTTP 404") && strstr(err, "lease not found"),
          "HTTP 404 with etcd's error: %s", err);
    const char *stream = "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"no leader\","
                         "\"http_status\":\"Service Unavailable\"}}";
    CHECK(etcd_reply_keepalive(stream, strlen(stream), 1, &ttl, err, sizeof err) == -EAGAIN &&
              strstr(err, "no leader"),
          "a stream's error: %s", err);
    const char *other = "{\"error\":\"bad\",\"code\":3}";
    CHECK(grant(other, &id, &ttl, err, sizeof err) == -EREMOTEIO, "other codes: %s", err);
    const char *grant_err = "{" HDR ",\"ID\":\"5\",\"TTL\":\"5\",\"error\":\"too many leases\"}";
    CHECK(grant(grant_err, &id, &ttl, err, sizeof err) == -EREMOTEIO && strstr(err, "too many"),
          "a grant's own error field: %s", err);
    const char *grant_ok = "{" HDR ",\"ID\":\"5\",\"TTL\":\"5\",\"error\":\"\"}";
    CHECK(grant(grant_ok, &id, &ttl, err, sizeof err) == 0, "an empty error field: %s", err);
    CHECK(etcd_reply_http_error(503, "", 0, err, sizeof err) == -EAGAIN && strstr(err, "HTTP 503"),
          "503 without a body: %s", err);
    CHECK(etcd_reply_http_error(500, "<html>", 6, err, sizeof err) == -EREMOTEIO &&
              strcmp(err, "HTTP 500") == 0,
          "500 with a page: %s", err);
    const char *ctl = "{\"error\":\"a\\u0001b\\nc\\u001b[31m\",\"code\":2}";
    CHECK(grant(ctl, &id, &ttl, err, sizeof err) == -EREMOTEIO && strstr(err, "a?b?c?[31m"),
          "control characters made printable: %s", err);
}

/* ---- hostile replies -------------------------------------------------------- */

/* body (blen bytes) must fail as a grant with rc and a message. */
static void grant_fails(const char *body, size_t blen, int rc, const char *what)
{
    char err[512] = "";
    int64_t id = 0, ttl = 0;
    int got = etcd_reply_grant(body, blen, &id, &ttl, err, sizeof err);
    CHECK(got == rc && (rc == 0 || err[0]), "%s: want %d, got %d (%s)", what, rc, got, err);
}

#define GRANT_FAILS(body, what) grant_fails(body, strlen(body), -EPROTO, what)

static void test_hostile_json(void)
{
    GRANT_FAILS("", "empty");
    GRANT_FAILS("{", "cut short");
    GRANT_FAILS("null", "null");
    GRANT_FAILS("[]", "an array");
    GRANT_FAILS("\"ID\"", "a string");
    GRANT_FAILS("{" HDR ",\"ID\":\"5\",\"TTL\":\"5\"}x", "trailing bytes");
    GRANT_FAILS("{" HDR ",\"ID\":\"5\",\"TTL\":\"5\"}{}", "two objects");
    GRANT_FAILS("{'ID':'5'}", "single quotes");
    GRANT_FAILS("{\"ID\":\"5\",\"TTL\":\"5\"}", "no header");
    GRANT_FAILS("{\"header\":[],\"ID\":\"5\",\"TTL\":\"5\"}", "header not an object");
    GRANT_FAILS("{" HDR ",\"TTL\":\"5\"}", "no ID");
    GRANT_FAILS("{" HDR ",\"ID\":\"0\",\"TTL\":\"5\"}", "ID 0");
    GRANT_FAILS("{" HDR ",\"ID\":\"-5\",\"TTL\":\"5\"}", "negative ID");
    GRANT_FAILS("{" HDR ",\"ID\":5,\"TTL\":\"5\"}", "a number for an int64");
    GRANT_FAILS("{" HDR ",\"ID\":5.5,\"TTL\":\"5\"}", "a double");
    GRANT_FAILS("{" HDR ",\"ID\":true,\"TTL\":\"5\"}", "a bool");
    GRANT_FAILS("{" HDR ",\"ID\":{},\"TTL\":\"5\"}", "an object");
    GRANT_FAILS("{" HDR ",\"ID\":\"\",\"TTL\":\"5\"}", "empty digits");
    GRANT_FAILS("{" HDR ",\"ID\":\"-\",\"TTL\":\"5\"}", "a lone minus");
    GRANT_FAILS("{" HDR ",\"ID\":\"+5\",\"TTL\":\"5\"}", "a plus");
    GRANT_FAILS("{" HDR ",\"ID\":\" 5\",\"TTL\":\"5\"}", "a space");
    GRANT_FAILS("{" HDR ",\"ID\":\"5x\",\"TTL\":\"5\"}", "a letter");
    GRANT_FAILS("{" HDR ",\"ID\":\"1e3\",\"TTL\":\"5\"}", "an exponent");
    GRANT_FAILS("{" HDR ",\"ID\":\"0x10\",\"TTL\":\"5\"}", "hex");
    GRANT_FAILS("{" HDR ",\"ID\":\"9223372036854775808\",\"TTL\":\"5\"}", "INT64_MAX + 1");
    GRANT_FAILS("{" HDR ",\"ID\":\"99999999999999999999\",\"TTL\":\"5\"}", "20 digits");
    GRANT_FAILS("{" HDR ",\"ID\":\"123456789012345678901234567890\",\"TTL\":\"5\"}", "30 digits");
    GRANT_FAILS("{" HDR ",\"ID\":\"5\\u00007\",\"TTL\":\"5\"}", "a NUL inside the digits");
    GRANT_FAILS("{\"header\":{\"revision\":5},\"ID\":\"5\",\"TTL\":\"5\"}", "a numeric revision");

    const char nul[] = "{\"header\":{},\"ID\":\"5\",\"TTL\":\"5\"}\0junk";
    grant_fails(nul, sizeof nul - 1, -EPROTO, "a NUL byte after the object");
    char *deep = malloc(4001);
    memset(deep, '[', 4000);
    deep[4000] = '\0';
    GRANT_FAILS(deep, "4000 levels of nesting");
    free(deep);
    char *huge = malloc(ETCD_REPLY_MAX + 2);
    memset(huge, ' ', ETCD_REPLY_MAX + 1);
    memcpy(huge, "{" HDR ",\"ID\":\"5\",\"TTL\":\"5\"}", strlen("{" HDR ",\"ID\":\"5\",\"TTL\":\"5\"}"));
    huge[ETCD_REPLY_MAX + 1] = '\0';
    GRANT_FAILS(huge, "a body over ETCD_REPLY_MAX");
    free(huge);
    const char ok[] = "{\"header\":{},\"ID\":\"9223372036854775807\",\"TTL\":\"5\"}\r\n";
    grant_fails(ok, sizeof ok - 1, 0, "INT64_MAX and trailing white space are fine");

    const char *ka = "{\"ID\":\"5\",\"TTL\":\"5\"}";
    int64_t ttl = 0;
    char err[256];
    CHECK(etcd_reply_keepalive(ka, strlen(ka), 5, &ttl, err, sizeof err) == -EPROTO,
          "keepalive without its result object");
    const char *ka2 = "{\"result\":\"x\"}";
    CHECK(etcd_reply_keepalive(ka2, strlen(ka2), 5, &ttl, err, sizeof err) == -EPROTO,
          "keepalive result not an object");
    const char *del = "{" HDR ",\"deleted\":\"2\"}";
    int64_t deleted;
    CHECK(etcd_reply_delete(del, strlen(del), &deleted, err, sizeof err) == -EPROTO,
          "two keys deleted for one");
}

/* A range reply of one kv whose fields are given (after the key's). */
static int range_with(const char *key_b64, const char *fields, etcd_kv *kv, char *err,
                      size_t errlen)
{
    static char body[2 * ETCD_VALUE_MAX + 512];
    snprintf(body, sizeof body, "{" HDR ",\"kvs\":[{\"key\":\"%s\"%s}]}", key_b64, fields);
    bool found = false;
    return etcd_reply_range(body, strlen(body), "lead", &found, kv, err, errlen);
}

#define REV "\"create_revision\":\"2\",\"mod_revision\":\"2\""

static void test_hostile_keys(void)
{
    static etcd_kv kv;
    char err[512] = "";
    static char fields[2 * ETCD_VALUE_MAX];
    static uint8_t bytes[ETCD_VALUE_MAX + 2];
    char b64[sodium_base64_ENCODED_LEN(ETCD_VALUE_MAX + 2, sodium_base64_VARIANT_ORIGINAL)];

    CHECK(range_with("bGVhZA==", "," REV ",\"value\":\"YQ==\"", &kv, err, sizeof err) == 0 &&
              kv.value_len == 1,
          "a good one: %s", err);
    CHECK(range_with("bGVhZA", "," REV, &kv, err, sizeof err) == -EPROTO, "key without padding");
    CHECK(range_with("b3RoZXI=", "," REV, &kv, err, sizeof err) == -EPROTO && strstr(err, "lead"),
          "another key: %s", err);
    CHECK(range_with("bGVhZA==", ",\"mod_revision\":\"2\"", &kv, err, sizeof err) == -EPROTO,
          "no create_revision");
    CHECK(range_with("bGVhZA==", ",\"create_revision\":\"3\",\"mod_revision\":\"2\"", &kv, err,
                     sizeof err) == -EPROTO,
          "mod_revision below create_revision");
    CHECK(range_with("bGVhZA==", "," REV ",\"lease\":\"-1\"", &kv, err, sizeof err) == -EPROTO,
          "negative lease");
    CHECK(range_with("bGVhZA==", "," REV ",\"value\":5", &kv, err, sizeof err) == -EPROTO,
          "a number for a value");
    CHECK(range_with("bGVhZA==", "," REV ",\"value\":\"!!!!\"", &kv, err, sizeof err) == -EPROTO,
          "not base64");
    CHECK(range_with("bGVhZA==", "," REV ",\"value\":\"YQ\"", &kv, err, sizeof err) == -EPROTO,
          "unpadded base64");
    CHECK(range_with("bGVhZA==", "," REV ",\"value\":\"YQ==YQ==\"", &kv, err, sizeof err) ==
              -EPROTO,
          "padding in the middle");
    CHECK(range_with("bGVhZA==", "," REV ",\"value\":\"Y Q==\"", &kv, err, sizeof err) == -EPROTO,
          "a space inside base64");

    /* ETCD_VALUE_MAX bytes read; one or two more do not (padded or not). */
    for (size_t extra = 0; extra <= 2; extra++) {
        size_t n = ETCD_VALUE_MAX + extra;
        memset(bytes, 0xab, n);
        sodium_bin2base64(b64, sizeof b64, bytes, n, sodium_base64_VARIANT_ORIGINAL);
        snprintf(fields, sizeof fields, "," REV ",\"value\":\"%s\"", b64);
        int rc = range_with("bGVhZA==", fields, &kv, err, sizeof err);
        if (extra == 0)
            CHECK(rc == 0 && kv.value_len == ETCD_VALUE_MAX, "a value of ETCD_VALUE_MAX: %s", err);
        else
            CHECK(rc == -EMSGSIZE, "a value %zu over ETCD_VALUE_MAX: %d %s", extra, rc, err);
    }
    /* 4098 bytes as 5464 characters without padding: fits the length bound. */
    sodium_bin2base64(b64, sizeof b64, bytes, ETCD_VALUE_MAX + 2,
                      sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
    snprintf(fields, sizeof fields, "," REV ",\"value\":\"%s\"", b64);
    CHECK(range_with("bGVhZA==", fields, &kv, err, sizeof err) == -EMSGSIZE,
          "an unpadded value two bytes over: %s", err);

    const char *two = "{" HDR ",\"kvs\":[{\"key\":\"bGVhZA==\"," REV "},{\"key\":\"bGVhZA==\"," REV
                      "}]}";
    bool found;
    CHECK(etcd_reply_range(two, strlen(two), "lead", &found, &kv, err, sizeof err) == -EPROTO,
          "two keys for one");
    const char *notarr = "{" HDR ",\"kvs\":{}}";
    CHECK(etcd_reply_range(notarr, strlen(notarr), "lead", &found, &kv, err, sizeof err) ==
              -EPROTO,
          "kvs not an array");
    const char *strs = "{" HDR ",\"kvs\":[\"x\"]}";
    CHECK(etcd_reply_range(strs, strlen(strs), "lead", &found, &kv, err, sizeof err) == -EPROTO,
          "kvs of strings");
}

static void test_hostile_campaigns(void)
{
    static etcd_campaign cp;
    char err[512] = "";
    const char *bad[] = {
        "{" HDR ",\"succeeded\":\"true\",\"responses\":[{\"response_put\":{}}]}",
        "{" HDR ",\"succeeded\":true}",
        "{" HDR ",\"succeeded\":true,\"responses\":[]}",
        "{" HDR ",\"succeeded\":true,\"responses\":[{\"response_range\":{}}]}",
        "{" HDR ",\"succeeded\":true,\"responses\":[{\"response_put\":{}},{}]}",
        "{\"header\":{},\"succeeded\":true,\"responses\":[{\"response_put\":{}}]}",
        "{" HDR ",\"responses\":[{\"response_range\":{}}]}",
        "{" HDR ",\"responses\":[{\"response_range\":{\"kvs\":[]}}]}",
        "{" HDR ",\"responses\":[{\"response_put\":{}}]}",
        "{" HDR ",\"responses\":[5]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECK(etcd_reply_campaign(bad[i], strlen(bad[i]), "lead", &cp, err, sizeof err) == -EPROTO,
              "hostile campaign reply %zu refused (%s)", i, err);
}

int main(void)
{
    test_requests();
    test_real_replies();
    test_gateway_errors();
    test_hostile_json();
    test_hostile_keys();
    test_hostile_campaigns();
    return test_finish();
}
