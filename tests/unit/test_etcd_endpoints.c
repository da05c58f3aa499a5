/*
 * test_etcd_endpoints.c - the etcd endpoint list of a master's --etcd flag
 * (src/net/etcd_endpoints.c): well-formed lists become base URLs in order
 * (IPv4, [IPv6], names, a trailing "/" dropped, the scheme's case ignored);
 * every malformed list is refused with -EINVAL and a message that names the
 * element and what is wrong with it: an empty list or element, https and
 * other schemes, no scheme, no port or a port out of range, a path, a user,
 * a query, a fragment, a space, too many or over-long elements. The client
 * constructor refuses the same lists and bad timeouts (no etcd needed).
 */
#include "net/etcd_client.h"
#include "net/etcd_endpoints.h"
#include "testlib.h"

#include <errno.h>
#include <string.h>

static void test_good_lists(void)
{
    etcd_endpoints eps;
    char err[512] = "";
    CHECK(etcd_endpoints_parse("http://127.0.0.1:2379", &eps, err, sizeof err) == 0, "one: %s",
          err);
    CHECK(eps.n == 1 && strcmp(eps.url[0], "http://127.0.0.1:2379") == 0, "one: %d %s", eps.n,
          eps.url[0]);

    CHECK(etcd_endpoints_parse("http://127.0.0.1:2379/,http://[::1]:22379,HTTP://localhost:3",
                               &eps, err, sizeof err) == 0,
          "three: %s", err);
    CHECK(eps.n == 3, "three endpoints, got %d", eps.n);
    CHECK(strcmp(eps.url[0], "http://127.0.0.1:2379") == 0, "trailing / dropped: %s", eps.url[0]);
    CHECK(strcmp(eps.url[1], "http://[::1]:22379") == 0, "IPv6 kept in brackets: %s", eps.url[1]);
    CHECK(strcmp(eps.url[2], "http://localhost:3") == 0, "scheme case ignored: %s", eps.url[2]);
}

/* list must be refused with a message holding needle (and, when given,
 * also needle2). */
static void refused(const char *list, const char *needle, const char *needle2)
{
    etcd_endpoints eps;
    char err[512] = "";
    int rc = etcd_endpoints_parse(list, &eps, err, sizeof err);
    CHECK(rc == -EINVAL, "'%s' refused, got %d", list, rc);
    CHECK(strstr(err, needle) != NULL, "'%s': the message names '%s': %s", list, needle, err);
    if (needle2)
        CHECK(strstr(err, needle2) != NULL, "'%s': the message says '%s': %s", list, needle2, err);
}

static void test_bad_lists(void)
{
    refused("", "empty", NULL);
    refused(",", "empty element", NULL);
    refused("http://127.0.0.1:2379,", "empty element", NULL);
    refused("http://127.0.0.1:2379,,http://127.0.0.1:2380", "empty element", NULL);
    refused("https://127.0.0.1:2379", "https://127.0.0.1:2379", "only http://");
    refused("http://127.0.0.1:1,etcd://127.0.0.1:2379", "etcd://127.0.0.1:2379", "scheme 'etcd'");
    refused("127.0.0.1:2379", "127.0.0.1:2379", "no scheme");
    refused("http://127.0.0.1", "http://127.0.0.1", "no port");
    refused("http://127.0.0.1:0", "http://127.0.0.1:0", "port 0");
    refused("http://127.0.0.1:65536", "http://127.0.0.1:65536", NULL);
    refused("http://127.0.0.1:2379/v3", "http://127.0.0.1:2379/v3", "path");
    refused("http://user:pw@127.0.0.1:2379", "user:pw@", "user");
    refused("http://127.0.0.1:2379?x=1", "?x=1", "query");
    refused("http://127.0.0.1:2379#top", "#top", "fragment");
    refused("http://:2379", "http://:2379", NULL);
    refused("http:// 127.0.0.1:2379", "http:// 127.0.0.1:2379", NULL);

    char many[32 * (ETCD_ENDPOINTS_MAX + 1)] = "";
    for (int i = 0; i <= ETCD_ENDPOINTS_MAX; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%shttp://127.0.0.1:%d",
                 i ? "," : "", 2000 + i);
    refused(many, "more than 16", NULL);

    char longer[ETCD_ENDPOINT_TEXT_MAX + 40];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    memcpy(longer, "http://", 7);
    refused(longer, "over 255 bytes", NULL);
}

static void test_client_refuses(void)
{
    int code = 0;
    char err[512] = "";
    etcd_client *c = etcd_client_new("https://127.0.0.1:2379", NULL, &code, err, sizeof err);
    CHECK(!c && code == -EINVAL && strstr(err, "only http://"), "https refused: %d %s", code, err);
    etcd_client_free(c);

    etcd_client_conf bad = {.connect_timeout_ms = -1};
    c = etcd_client_new("http://127.0.0.1:2379", &bad, &code, err, sizeof err);
    CHECK(!c && code == -EINVAL && strstr(err, "negative timeout"), "bad timeout: %d %s", code,
          err);
    etcd_client_free(c);

    c = etcd_client_new("http://127.0.0.1:2379,http://127.0.0.1:22379", NULL, &code, err,
                        sizeof err);
    CHECK(c && code == 0, "a good list makes a client: %s", err);
    CHECK(c && strcmp(etcd_client_endpoint(c), "http://127.0.0.1:2379") == 0,
          "the first endpoint is tried first");
    etcd_client_free(c);
}

int main(void)
{
    test_good_lists();
    test_bad_lists();
    test_client_refuses();
    return test_finish();
}
