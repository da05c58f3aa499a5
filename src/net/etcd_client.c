/*
 * etcd_client.c - blocking calls to etcd's HTTP/JSON gateway over libcurl
 * (see etcd_client.h). Each call builds its body (etcd_request.c), POSTs it
 * with failover across the endpoints (post() below, the only place that
 * touches the network), and reads the reply (etcd_reply.c). libcurl does all
 * of HTTP: connections, keep-alive between calls, timeouts; this file only
 * sets it up (no proxy from the environment, http only, no redirects) and
 * decides which endpoint to try.
 */
#include "net/etcd_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/etcd_endpoints.h"
#include "net/etcd_request.h"

#define ETCD_ERROR_MAX 1024
#define ETCD_WHY_MAX 512

/* All of it belongs to the one thread that uses the client. */
struct etcd_client {
    etcd_endpoints eps;
    int current; /* the endpoint that answered last: tried first */
    bool curl_started; /* curl_global_init done: one curl_global_cleanup owed */
    CURL *curl;
    struct curl_slist *headers;
    char curl_error[CURL_ERROR_SIZE];
    char error[ETCD_ERROR_MAX];
    size_t reply_len;
    int reply_over; /* the reply went past ETCD_REPLY_MAX and was cut off */
    char reply[ETCD_REPLY_MAX + 1];
};

static void set_error(etcd_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(etcd_client *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
}

/* libcurl's write callback: keeps the reply, refusing more than
 * ETCD_REPLY_MAX bytes (returning short makes libcurl stop). */
static size_t keep_reply(char *p, size_t size, size_t nmemb, void *data)
{
    etcd_client *c = data;
    size_t n = size * nmemb;
    if (n > ETCD_REPLY_MAX - c->reply_len) {
        c->reply_over = 1;
        return 0;
    }
    memcpy(c->reply + c->reply_len, p, n);
    c->reply_len += n;
    return n;
}

/* Sets up the easy handle once: timeouts, no signals (worker threads), no
 * proxy (libcurl would take one from $http_proxy), http only, no redirects,
 * JSON bodies without "Expect: 100-continue". Returns 0 or -ENOMEM/-EINVAL. */
static int configure(etcd_client *c, long connect_ms, long total_ms)
{
    c->headers = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *h = c->headers ? curl_slist_append(c->headers, "Expect:") : NULL;
    if (!h)
        return -ENOMEM;
    c->headers = h;
    CURL *e = c->curl;
    CURLcode cc = curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, total_ms);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(e, CURLOPT_PROXY, "");
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, keep_reply);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->curl_error);
    if (cc == CURLE_OK)
        cc = curl_easy_setopt(e, CURLOPT_POST, 1L);
    return cc == CURLE_OK ? 0 : cc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EINVAL;
}

etcd_client *etcd_client_new(const char *endpoints, const etcd_client_conf *conf, int *code,
                             char *err, size_t errlen)
{
    etcd_client_conf defaults = {0};
    if (!conf)
        conf = &defaults;
    etcd_client *c = NULL;
    int rc = -EINVAL;
    if (conf->connect_timeout_ms < 0 || conf->request_timeout_ms < 0) {
        snprintf(err, errlen, "etcd client: negative timeout (connect %d ms, request %d ms)",
                 conf->connect_timeout_ms, conf->request_timeout_ms);
        goto fail;
    }
    rc = -ENOMEM;
    if (!(c = calloc(1, sizeof *c))) {
        snprintf(err, errlen, "etcd client: out of memory");
        goto fail;
    }
    if ((rc = etcd_endpoints_parse(endpoints, &c->eps, err, errlen)) < 0)
        goto fail;
    rc = -ENOMEM;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "etcd client: libcurl could not start");
        goto fail;
    }
    c->curl_started = true;
    long connect_ms = conf->connect_timeout_ms ? conf->connect_timeout_ms : ETCD_TIMEOUT_DEFAULT_MS;
    long total_ms = conf->request_timeout_ms ? conf->request_timeout_ms : ETCD_TIMEOUT_DEFAULT_MS;
    c->curl = curl_easy_init();
    if (!c->curl || (rc = configure(c, connect_ms, total_ms)) < 0) {
        snprintf(err, errlen, "etcd client: cannot set up libcurl (%s)",
                 rc == -ENOMEM ? "out of memory" : "an option was refused");
        goto fail;
    }
    *code = 0;
    return c;
fail:
    *code = rc;
    etcd_client_free(c);
    return NULL;
}

void etcd_client_free(etcd_client *c)
{
    if (!c)
        return;
    curl_easy_cleanup(c->curl); /* NULL is fine */
    curl_slist_free_all(c->headers);
    if (c->curl_started)
        curl_global_cleanup(); /* pairs with etcd_client_new's init (counted) */
    free(c);
}

const char *etcd_client_error(const etcd_client *c)
{
    return c->error;
}

const char *etcd_client_endpoint(const etcd_client *c)
{
    return c->eps.url[c->current];
}

/* A transport failure as a negative errno. */
static int transport_errno(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
    case CURLE_COULDNT_RESOLVE_HOST: return -EHOSTUNREACH;
    case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
    default: return -EIO;
    }
}

/* Appends "URL: why" to the list of endpoints that failed (c->error). */
static void add_failure(etcd_client *c, const char *url, const char *why)
{
    size_t used = strlen(c->error);
    snprintf(c->error + used, sizeof c->error - used, "%s%s: %s", used ? "; " : "", url, why);
}

/* POSTs body to path, on the endpoint that answered last and then on the
 * others in turn while an endpoint cannot be reached or is unavailable.
 * Returns 0 with an HTTP 200 reply in c->reply (c->reply_len bytes,
 * NUL-terminated) and c->current set to the endpoint that gave it; or a
 * negative code with c->error naming the call and the endpoint(s). */
static int post(etcd_client *c, const char *call, const char *path, const char *body)
{
    int rc = -EIO;
    int start = c->current;
    c->error[0] = '\0'; /* collects "URL: why" of each endpoint that failed */
    for (int i = 0; i < c->eps.n; i++) {
        int idx = (start + i) % c->eps.n;
        const char *ep = c->eps.url[idx];
        char url[ETCD_ENDPOINT_TEXT_MAX + 32];
        snprintf(url, sizeof url, "%s%s", ep, path);
        c->reply_len = 0;
        c->reply_over = 0;
        c->curl_error[0] = '\0';
        CURLcode cc = curl_easy_setopt(c->curl, CURLOPT_URL, url);
        if (cc == CURLE_OK)
            cc = curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
        if (cc == CURLE_OK)
            cc = curl_easy_perform(c->curl);
        c->reply[c->reply_len] = '\0';
        if (c->reply_over) {
            c->current = idx;
            set_error(c, "etcd %s: %s: reply over %d bytes", call, ep, ETCD_REPLY_MAX);
            return -EPROTO;
        }
        if (cc != CURLE_OK) {
            rc = transport_errno(cc);
            add_failure(c, ep, c->curl_error[0] ? c->curl_error : curl_easy_strerror(cc));
            continue;
        }
        long status = 0;
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
        if (status == 200) {
            c->current = idx;
            c->error[0] = '\0';
            return 0;
        }
        char why[ETCD_WHY_MAX];
        rc = etcd_reply_http_error(status, c->reply, c->reply_len, why, sizeof why);
        if (rc != -EAGAIN) {
            c->current = idx;
            set_error(c, "etcd %s: %s: %s", call, ep, why);
            return rc;
        }
        add_failure(c, ep, why);
    }
    char tried[ETCD_ERROR_MAX];
    snprintf(tried, sizeof tried, "%s", c->error);
    set_error(c, "etcd %s: no endpoint answered: %s", call, tried);
    return rc;
}

/* One call: the body its builder made (built: the builder's result), sent
 * to path. Returns post()'s result, or the builder's error with c->error
 * saying what was wrong with the arguments. Frees body. */
static int exchange(etcd_client *c, const char *call, const char *path, int built, char *body)
{
    int rc = built;
    if (rc == -EMSGSIZE)
        set_error(c, "etcd %s: value over %d bytes", call, ETCD_VALUE_MAX);
    else if (rc == -ENOMEM)
        set_error(c, "etcd %s: out of memory", call);
    else if (rc < 0)
        set_error(c, "etcd %s: bad arguments (a key must be 1..%d bytes; TTLs and leases > 0)",
                  call, ETCD_KEY_MAX);
    else
        rc = post(c, call, path, body);
    free(body);
    return rc;
}

/* The result of reading the reply: on failure c->error names the call, the
 * endpoint and why. Returns rc. */
static int reply_read(etcd_client *c, const char *call, int rc, const char *why)
{
    if (rc < 0)
        set_error(c, "etcd %s: %s: %s", call, c->eps.url[c->current], why);
    return rc;
}

int etcd_client_lease_grant(etcd_client *c, int64_t ttl_s, int64_t *lease_id, int64_t *ttl_out)
{
    char *body, why[ETCD_WHY_MAX];
    int64_t id = 0, ttl = 0;
    int built = etcd_request_grant(ttl_s, &body);
    int rc = exchange(c, "lease grant", "/v3/lease/grant", built, body);
    if (rc == 0)
        rc = reply_read(c, "lease grant",
                        etcd_reply_grant(c->reply, c->reply_len, &id, &ttl, why, sizeof why), why);
    if (rc == 0) {
        *lease_id = id;
        if (ttl_out)
            *ttl_out = ttl;
    }
    return rc;
}

int etcd_client_lease_keepalive(etcd_client *c, int64_t lease_id, int64_t *ttl_left)
{
    char *body, why[ETCD_WHY_MAX];
    int64_t ttl = 0;
    int built = etcd_request_lease(lease_id, &body);
    int rc = exchange(c, "lease keepalive", "/v3/lease/keepalive", built, body);
    if (rc == 0)
        rc = reply_read(
            c, "lease keepalive",
            etcd_reply_keepalive(c->reply, c->reply_len, lease_id, &ttl, why, sizeof why), why);
    if (rc == 0)
        *ttl_left = ttl;
    return rc;
}

int etcd_client_lease_revoke(etcd_client *c, int64_t lease_id)
{
    char *body, why[ETCD_WHY_MAX];
    int built = etcd_request_lease(lease_id, &body);
    int rc = exchange(c, "lease revoke", "/v3/lease/revoke", built, body);
    if (rc == 0)
        rc = reply_read(c, "lease revoke", etcd_reply_ack(c->reply, c->reply_len, why, sizeof why),
                        why);
    return rc;
}

int etcd_client_campaign(etcd_client *c, const char *key, const void *value, size_t len,
                         int64_t lease, etcd_campaign *out)
{
    char *body, why[ETCD_WHY_MAX];
    etcd_campaign got;
    int built = etcd_request_campaign(key, value, len, lease, &body);
    int rc = exchange(c, "campaign", "/v3/kv/txn", built, body);
    if (rc == 0)
        rc = reply_read(c, "campaign",
                        etcd_reply_campaign(c->reply, c->reply_len, key, &got, why, sizeof why),
                        why);
    if (rc < 0)
        return rc;
    if (got.won) {
        got.holder.lease = lease;
        got.holder.value_len = len;
        memcpy(got.holder.value, value, len);
    } else if (got.holder.lease == lease) {
        got.won = true; /* our own earlier put: a retry, or a second campaign */
    }
    *out = got;
    return 0;
}

int etcd_client_get(etcd_client *c, const char *key, bool *found, etcd_kv *kv)
{
    char *body, why[ETCD_WHY_MAX];
    bool there = false;
    etcd_kv got;
    int built = etcd_request_key(key, &body);
    int rc = exchange(c, "get", "/v3/kv/range", built, body);
    if (rc == 0)
        rc = reply_read(
            c, "get", etcd_reply_range(c->reply, c->reply_len, key, &there, &got, why, sizeof why),
            why);
    if (rc == 0) {
        *found = there;
        if (there)
            *kv = got;
    }
    return rc;
}

int etcd_client_put(etcd_client *c, const char *key, const void *value, size_t len, int64_t lease)
{
    char *body, why[ETCD_WHY_MAX];
    int built = etcd_request_put(key, value, len, lease, &body);
    int rc = exchange(c, "put", "/v3/kv/put", built, body);
    if (rc == 0)
        rc = reply_read(c, "put", etcd_reply_ack(c->reply, c->reply_len, why, sizeof why), why);
    return rc;
}

int etcd_client_delete(etcd_client *c, const char *key, int64_t *deleted)
{
    char *body, why[ETCD_WHY_MAX];
    int64_t n = 0;
    int built = etcd_request_key(key, &body);
    int rc = exchange(c, "delete", "/v3/kv/deleterange", built, body);
    if (rc == 0)
        rc = reply_read(c, "delete",
                        etcd_reply_delete(c->reply, c->reply_len, &n, why, sizeof why), why);
    if (rc == 0 && deleted)
        *deleted = n;
    return rc;
}
