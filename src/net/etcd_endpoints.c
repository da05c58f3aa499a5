/*
 * etcd_endpoints.c - "http://HOST:PORT,..." into base URLs (see
 * etcd_endpoints.h). The list is split at commas here; each element goes
 * through libcurl's URL API, whose parts are then checked one by one, and
 * the base URL is what libcurl writes back (so an IPv6 zone id survives).
 */
#include "net/etcd_endpoints.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* True when part of u is absent (libcurl answers "no such part"). */
static bool part_absent(CURLU *u, CURLUPart part)
{
    char *text = NULL;
    CURLUcode rc = curl_url_get(u, part, &text, 0);
    curl_free(text);
    return rc != CURLUE_OK;
}

/* Checks the element's scheme before libcurl sees it, so that the error says
 * what is wrong in our words. Returns 0 or -EINVAL with err set. */
static int check_scheme(const char *elem, char *err, size_t errlen)
{
    const char *sep = strstr(elem, "://");
    if (!sep) {
        snprintf(err, errlen, "etcd endpoint '%s' has no scheme: write it as http://HOST:PORT",
                 elem);
        return -EINVAL;
    }
    size_t n = (size_t)(sep - elem);
    if (n != 4 || strncasecmp(elem, "http", 4) != 0) {
        snprintf(err, errlen,
                 "etcd endpoint '%s': scheme '%.*s' is not supported (only http:// endpoints are)",
                 elem, (int)(n < 32 ? n : 32), elem);
        return -EINVAL;
    }
    return 0;
}

/* Checks the parts of a parsed element: a port 1..65535, no user, no path
 * but "/", no query, no fragment. Returns 0 or -EINVAL with err set. */
static int check_parts(CURLU *u, const char *elem, char *err, size_t errlen)
{
    char *port = NULL, *path = NULL;
    int rc = -EINVAL;
    if (curl_url_get(u, CURLUPART_PORT, &port, 0) != CURLUE_OK) {
        snprintf(err, errlen, "etcd endpoint '%s' has no port: write it as http://HOST:PORT", elem);
        goto out;
    }
    long p = strtol(port, NULL, 10);
    if (p < 1 || p > 65535) {
        snprintf(err, errlen, "etcd endpoint '%s': port %s is not in 1..65535", elem, port);
        goto out;
    }
    if (!part_absent(u, CURLUPART_USER) || !part_absent(u, CURLUPART_PASSWORD)) {
        snprintf(err, errlen, "etcd endpoint '%s': a user or password is not supported", elem);
        goto out;
    }
    if (curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK && strcmp(path, "/") != 0 &&
        path[0] != '\0') {
        snprintf(err, errlen, "etcd endpoint '%s': a path (%s) is not supported", elem, path);
        goto out;
    }
    if (!part_absent(u, CURLUPART_QUERY) || !part_absent(u, CURLUPART_FRAGMENT)) {
        snprintf(err, errlen, "etcd endpoint '%s': a query or fragment is not supported", elem);
        goto out;
    }
    rc = 0;
out:
    curl_free(port);
    curl_free(path);
    return rc;
}

/* Parses one element into its base URL (cap bytes). Returns 0 or -EINVAL
 * with err set. */
static int parse_one(const char *elem, char *url, size_t cap, char *err, size_t errlen)
{
    int rc = check_scheme(elem, err, errlen);
    if (rc < 0)
        return rc;
    CURLU *u = curl_url();
    char *full = NULL;
    if (!u) {
        snprintf(err, errlen, "etcd endpoint '%s': out of memory", elem);
        return -ENOMEM;
    }
    rc = -EINVAL;
    CURLUcode cu = curl_url_set(u, CURLUPART_URL, elem, 0);
    if (cu != CURLUE_OK) {
        snprintf(err, errlen, "etcd endpoint '%s' is not a valid URL: %s", elem,
                 curl_url_strerror(cu));
        goto out;
    }
    if (check_parts(u, elem, err, errlen) < 0)
        goto out;
    if (curl_url_set(u, CURLUPART_PATH, NULL, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK) {
        snprintf(err, errlen, "etcd endpoint '%s': cannot form its URL", elem);
        goto out;
    }
    size_t n = strlen(full);
    while (n > 0 && full[n - 1] == '/')
        n--;
    if (n + 1 > cap) {
        snprintf(err, errlen, "etcd endpoint '%s' is too long", elem);
        goto out;
    }
    memcpy(url, full, n);
    url[n] = '\0';
    rc = 0;
out:
    curl_free(full);
    curl_url_cleanup(u);
    return rc;
}

int etcd_endpoints_parse(const char *list, etcd_endpoints *out, char *err, size_t errlen)
{
    out->n = 0;
    if (!list || !*list) {
        snprintf(err, errlen, "the etcd endpoint list is empty: give http://HOST:PORT[,...]");
        return -EINVAL;
    }
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char elem[ETCD_ENDPOINT_TEXT_MAX];
        if (n == 0) {
            snprintf(err, errlen, "etcd endpoint list '%s' has an empty element (element %d)", list,
                     out->n + 1);
            return -EINVAL;
        }
        if (n >= sizeof elem) {
            snprintf(err, errlen, "etcd endpoint %d of the list is over %zu bytes", out->n + 1,
                     sizeof elem - 1);
            return -EINVAL;
        }
        if (out->n == ETCD_ENDPOINTS_MAX) {
            snprintf(err, errlen, "etcd endpoint list has more than %d endpoints",
                     ETCD_ENDPOINTS_MAX);
            return -EINVAL;
        }
        memcpy(elem, p, n);
        elem[n] = '\0';
        int rc = parse_one(elem, out->url[out->n], sizeof out->url[0], err, errlen);
        if (rc < 0)
            return rc;
        out->n++;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}
