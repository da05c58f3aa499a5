/*
 * test_addr.c - HOST:PORT to sockaddr and back (src/net/addr.c): a name
 * ("localhost:80"), an IPv4 literal ("127.0.0.1:0") and an [IPv6] literal
 * ("[::1]:80") resolve to the right family, address and port; malformed
 * inputs and names that do not exist fail with a message naming the address;
 * literals parse without DNS and names say so (-EAGAIN); the wildcard and
 * loopback predicates (v4-mapped addresses included); "ip:port" / "[v6]:port"
 * formatting; the asynchronous lookup delivers once, also when cancelled.
 */
#include "net/addr.h"
#include "testlib.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

static void test_resolve(uv_loop_t *loop)
{
    struct sockaddr_storage ss;
    const struct sockaddr *sa = (const struct sockaddr *)&ss;
    char err[256] = "", text[ADDR_TEXT_MAX];

    CHECK(addr_resolve(loop, "localhost:80", &ss, err, sizeof err) == 0, "localhost:80: %s", err);
    CHECK(addr_port(sa) == 80 && addr_is_loopback(sa) && !addr_is_wildcard(sa),
          "localhost:80 is a loopback address with port 80 (%s)",
          addr_format(sa, text, sizeof text));

    CHECK(addr_resolve(loop, "[::1]:80", &ss, err, sizeof err) == 0, "[::1]:80: %s", err);
    CHECK(ss.ss_family == AF_INET6 && addr_port(sa) == 80 && addr_is_loopback(sa),
          "[::1]:80 is IPv6 loopback port 80");
    CHECK(strcmp(addr_format(sa, text, sizeof text), "[::1]:80") == 0, "formatted as %s", text);
    CHECK(addr_len(sa) == sizeof(struct sockaddr_in6), "IPv6 length");

    CHECK(addr_resolve(loop, "127.0.0.1:0", &ss, err, sizeof err) == 0, "127.0.0.1:0: %s", err);
    CHECK(ss.ss_family == AF_INET && addr_port(sa) == 0 && addr_is_loopback(sa),
          "127.0.0.1:0 is IPv4 loopback port 0");
    CHECK(strcmp(addr_format(sa, text, sizeof text), "127.0.0.1:0") == 0, "formatted as %s", text);
    CHECK(addr_len(sa) == sizeof(struct sockaddr_in), "IPv4 length");

    CHECK(addr_resolve_host(loop, "[::1]", 7, &ss, err, sizeof err) == 0 &&
              ss.ss_family == AF_INET6 && addr_port(sa) == 7,
          "a bracketed host given apart: %s", err);
    CHECK(addr_resolve_host(loop, "::1", 8, &ss, err, sizeof err) == 0 && addr_port(sa) == 8,
          "an unbracketed IPv6 host given apart: %s", err);
}

static void test_bad_inputs(uv_loop_t *loop)
{
    static const char *const malformed[] = {
        "localhost", "::1:80", "[::1:80", "127.0.0.1:65536", "127.0.0.1:", ":80",
        "127.0.0.1:-1", "[]:80", "a b:80", "",
    };
    struct sockaddr_storage ss, before;
    memset(&ss, 0xab, sizeof ss);
    before = ss;
    char err[256];
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        err[0] = 0;
        CHECK(addr_resolve(loop, malformed[i], &ss, err, sizeof err) == -EINVAL,
              "'%s' is refused with -EINVAL", malformed[i]);
        CHECK(strstr(err, malformed[i]) != NULL && strstr(err, "HOST:PORT") != NULL,
              "the message names '%s' and the form: %s", malformed[i], err);
        CHECK(memcmp(&ss, &before, sizeof ss) == 0, "'%s' leaves the output alone", malformed[i]);
        CHECK(addr_parse_numeric(malformed[i], &ss) == -EINVAL, "'%s' is no numeric address",
              malformed[i]);
    }
    CHECK(addr_resolve(loop, NULL, &ss, NULL, 0) == -EINVAL, "NULL is refused");

    err[0] = 0;
    int r = addr_resolve(loop, "nosuch.invalid:80", &ss, err, sizeof err);
    CHECK(r < 0 && r != -EINVAL, "a name that does not exist fails its lookup (%d)", r);
    CHECK(strstr(err, "nosuch.invalid:80") && strstr(err, "cannot resolve"),
          "the message names the address: %s", err);
    CHECK(memcmp(&ss, &before, sizeof ss) == 0, "a failed lookup leaves the output alone");

    CHECK(addr_resolve_host(loop, "127.0.0.1", 65536, &ss, err, sizeof err) == -EINVAL,
          "a port over 65535 apart");
    CHECK(addr_resolve_host(loop, "", 1, &ss, err, sizeof err) == -EINVAL, "an empty host apart");
    CHECK(addr_from_numeric("127.0.0.1", -1, &ss) == -EINVAL, "a negative port");
}

static void test_numeric(void)
{
    struct sockaddr_storage ss;
    const struct sockaddr *sa = (const struct sockaddr *)&ss;
    CHECK(addr_parse_numeric("localhost:80", &ss) == -EAGAIN, "a name needs a lookup");
    CHECK(addr_from_numeric("example.invalid", 1, &ss) == -EAGAIN, "a name apart needs a lookup");

    struct {
        const char *hostport;
        bool wildcard, loopback;
    } cases[] = {
        {"0.0.0.0:1", true, false},        {"[::]:1", true, false},
        {"[::ffff:0.0.0.0]:1", true, false}, {"127.0.0.1:1", false, true},
        {"127.5.6.7:1", false, true},      {"[::1]:1", false, true},
        {"[::ffff:127.0.0.1]:1", false, true}, {"192.0.2.1:1", false, false},
        {"[fd00::1]:1", false, false},     {"128.0.0.1:1", false, false},
        {"[::2]:1", false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int r = addr_parse_numeric(cases[i].hostport, &ss);
        CHECK(r == 0, "%s parses without DNS (%d)", cases[i].hostport, r);
        if (r != 0)
            continue;
        CHECK(addr_is_wildcard(sa) == cases[i].wildcard, "%s: wildcard is %d", cases[i].hostport,
              cases[i].wildcard);
        CHECK(addr_is_loopback(sa) == cases[i].loopback, "%s: loopback is %d", cases[i].hostport,
              cases[i].loopback);
        CHECK(addr_port(sa) == 1, "%s: port 1", cases[i].hostport);
        CHECK(addr_hostport_is_wildcard(cases[i].hostport) == cases[i].wildcard,
              "%s: the text is a wildcard: %d", cases[i].hostport, cases[i].wildcard);
    }
    CHECK(!addr_hostport_is_wildcard("localhost:1") && !addr_hostport_is_wildcard("0.0.0.0") &&
              !addr_hostport_is_wildcard(NULL),
          "a name, a malformed address and NULL are no wildcard");
}

static void test_format(void)
{
    char buf[ADDR_TEXT_MAX];
    struct sockaddr_storage ss;
    const struct sockaddr *sa = (const struct sockaddr *)&ss;
    static const char *const round_trip[] = {"10.1.2.3:65535", "[fd00::2]:7700", "[::]:0",
                                             "0.0.0.0:9"};
    for (size_t i = 0; i < sizeof round_trip / sizeof round_trip[0]; i++) {
        CHECK(addr_parse_numeric(round_trip[i], &ss) == 0, "%s parses", round_trip[i]);
        CHECK(strcmp(addr_format(sa, buf, sizeof buf), round_trip[i]) == 0,
              "%s formats back (%s)", round_trip[i], buf);
    }
    CHECK(addr_parse_numeric("[::ffff:10.0.0.1]:5", &ss) == 0 &&
              strcmp(addr_format(sa, buf, sizeof buf), "[::ffff:10.0.0.1]:5") == 0,
          "a v4-mapped address keeps its brackets (%s)", buf);
    addr_set_port((struct sockaddr *)&ss, 4242);
    CHECK(addr_port(sa) == 4242, "set_port");

    struct sockaddr_un un = {.sun_family = AF_UNIX};
    CHECK(strcmp(addr_format((struct sockaddr *)&un, buf, sizeof buf), "?") == 0,
          "a Unix address formats as ?");
    CHECK(addr_port((struct sockaddr *)&un) == -1 && addr_len((struct sockaddr *)&un) == 0,
          "a Unix address has no port and no IP length");
    CHECK(!addr_is_wildcard((struct sockaddr *)&un) && !addr_is_loopback((struct sockaddr *)&un),
          "a Unix address is neither wildcard nor loopback");

    CHECK(addr_join("::1", 80, buf, sizeof buf) == 0 && strcmp(buf, "[::1]:80") == 0,
          "join brackets an IPv6 literal: %s", buf);
    CHECK(addr_join("[::1]", 80, buf, sizeof buf) == 0 && strcmp(buf, "[::1]:80") == 0,
          "join keeps given brackets: %s", buf);
    CHECK(addr_join("example.com", 7, buf, sizeof buf) == 0 && strcmp(buf, "example.com:7") == 0,
          "join leaves a name alone: %s", buf);
    CHECK(addr_join("10.0.0.1", 7, buf, sizeof buf) == 0 && strcmp(buf, "10.0.0.1:7") == 0,
          "join leaves IPv4 alone: %s", buf);
    char small[8];
    CHECK(addr_join("example.com", 7, small, sizeof small) == -ENAMETOOLONG,
          "join says when the buffer is too small");
}

typedef struct lookup_result {
    addr_lookup lk;
    int calls;
    int status;
    struct sockaddr_storage ss;
} lookup_result;

static void on_looked_up(addr_lookup *lk, int status, const struct sockaddr *sa)
{
    lookup_result *res = lk->data;
    res->calls++;
    res->status = status;
    if (status == 0)
        memcpy(&res->ss, sa, addr_len(sa));
    else
        CHECK(sa == NULL, "no address with a failure");
}

static void test_async(uv_loop_t *loop)
{
    lookup_result a = {.status = 1};
    a.lk.data = &a;
    CHECK(addr_lookup_start(loop, &a.lk, "localhost", 81, on_looked_up) == 0, "lookup starts");
    CHECK(a.calls == 0, "the callback never runs inside addr_lookup_start");
    uv_run(loop, UV_RUN_DEFAULT);
    CHECK(a.calls == 1 && a.status == 0, "the lookup ends once, with 0 (%d calls, %d)", a.calls,
          a.status);
    CHECK(addr_is_loopback((struct sockaddr *)&a.ss) && addr_port((struct sockaddr *)&a.ss) == 81,
          "localhost resolves to loopback port 81");

    lookup_result b = {.status = 1};
    b.lk.data = &b;
    CHECK(addr_lookup_start(loop, &b.lk, "[::1]", 82, on_looked_up) == 0, "a literal too");
    addr_lookup_cancel(&b.lk);
    uv_run(loop, UV_RUN_DEFAULT);
    CHECK(b.calls == 1, "a cancelled lookup still calls back once (%d)", b.calls);
    CHECK(b.status == 0 || b.status == UV_EAI_CANCELED, "with its result or EAI_CANCELED (%d)",
          b.status);

    lookup_result c = {.status = 1};
    c.lk.data = &c;
    CHECK(addr_lookup_start(loop, &c.lk, "nosuch.invalid", 1, on_looked_up) == 0, "bad name starts");
    uv_run(loop, UV_RUN_DEFAULT);
    CHECK(c.calls == 1 && c.status < 0, "a name that does not exist fails (%d)", c.status);

    lookup_result d = {.status = 1};
    d.lk.data = &d;
    CHECK(addr_lookup_start(loop, &d.lk, "", 1, on_looked_up) == -EINVAL, "empty host refused");
    CHECK(addr_lookup_start(loop, &d.lk, "localhost", 70000, on_looked_up) == -EINVAL,
          "bad port refused");
    uv_run(loop, UV_RUN_DEFAULT);
    CHECK(d.calls == 0, "a refused lookup never calls back");
}

int main(void)
{
    uv_loop_t loop;
    REQUIRE(uv_loop_init(&loop) == 0, "loop");
    test_resolve(&loop);
    test_bad_inputs(&loop);
    test_numeric();
    test_format();
    test_async(&loop);
    CHECK(uv_loop_close(&loop) == 0, "nothing left on the loop");
    return test_finish();
}
