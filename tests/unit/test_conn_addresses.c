/*
 * test_conn_addresses.c - the framed-connection listener and connector
 * (src/net/conn.c) over every form of HOST:PORT: a listener on "localhost:0"
 * reached by name (the connector looks the name up without blocking the
 * loop), a listener on "[::1]:0" reached as "::1" and "[::1]" with both
 * sides naming the peer "[::1]:PORT" (skipped when this machine has no IPv6
 * loopback), a name that does not resolve failing the listener with an EAI
 * code and the connector through its callback, and a connector closed while
 * its name is looked up ending like a cancelled connect.
 */
#include "net/addr.h"
#include "net/conn.h"
#include "testlib.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct probe {
    int accepted, connected, failed, closed;
    int status;                       /* the last on_connect status */
    char accepted_peer[ADDR_TEXT_MAX]; /* net_conn_peer of the accepted side */
    char local_peer[ADDR_TEXT_MAX];   /* net_conn_peer of the connecting side */
    net_conn *client;
} probe;

static void on_frame(net_conn *c, const frame_hdr *h, ProtobufCMessage *msg)
{
    (void)c;
    (void)h;
    (void)msg;
}

static void on_close(net_conn *c)
{
    probe *p = net_conn_data(c);
    if (p)
        p->closed++;
}

static const net_conn_ops ops = {.on_frame = on_frame, .on_close = on_close};

static void on_accept(net_conn *c, void *ud)
{
    probe *p = ud;
    p->accepted++;
    snprintf(p->accepted_peer, sizeof p->accepted_peer, "%s", net_conn_peer(c));
    net_conn_close(c);
}

static void on_connect(net_conn *c, int status, void *ud)
{
    probe *p = ud;
    p->status = status;
    if (status < 0) {
        p->failed++;
        return;
    }
    p->connected++;
    snprintf(p->local_peer, sizeof p->local_peer, "%s", net_conn_peer(c));
    net_conn_close(c);
}

/* Runs the loop until cond or 5 s. */
#define RUN_UNTIL(loop, cond)                                                                 \
    do {                                                                                      \
        for (int i_ = 0; i_ < 5000 && !(cond); i_++) {                                        \
            uv_run(loop, UV_RUN_NOWAIT);                                                      \
            usleep(1000);                                                                     \
        }                                                                                     \
    } while (0)

static net_conn *dial(uv_loop_t *loop, const char *host, int port, probe *p)
{
    net_conn *c = net_connect_tcp(loop, host, port, &ops, on_connect, p);
    if (c)
        net_conn_set_data(c, p);
    p->client = c;
    return c;
}

/* A listener on addr whose accepted connections p counts; *port is its port. */
static net_listener *listen_on(uv_loop_t *loop, const char *addr, probe *p, int *port)
{
    int err = 0;
    net_listener *l = net_listen(loop, addr, false, &ops, on_accept, p, &err);
    REQUIRE(l, "listen on %s: %s", addr, uv_strerror(err));
    *port = net_listener_port(l);
    CHECK(*port > 0, "%s bound a port (%d)", addr, *port);
    return l;
}

static void test_name(uv_loop_t *loop)
{
    probe p = {0};
    int port;
    net_listener *l = listen_on(loop, "localhost:0", &p, &port);
    REQUIRE(dial(loop, "localhost", port, &p), "connect to localhost");
    CHECK(p.connected == 0 && p.failed == 0, "on_connect never runs inside net_connect_tcp");
    RUN_UNTIL(loop, p.connected + p.failed > 0 && p.accepted > 0);
    CHECK(p.connected == 1 && p.accepted == 1, "localhost:%d connects (status %d)", port,
          p.status);
    char want[ADDR_TEXT_MAX];
    snprintf(want, sizeof want, "localhost:%d", port);
    CHECK(strcmp(p.local_peer, want) == 0, "the connector names its peer %s (%s)", want,
          p.local_peer);
    net_listener_close(l);
    uv_run(loop, UV_RUN_NOWAIT);
}

static void test_ipv6(uv_loop_t *loop)
{
    if (!test_ipv6_loopback()) {
        printf("no IPv6 loopback here: the [::1] listener is not tried\n");
        return;
    }
    probe p = {0};
    int port;
    net_listener *l = listen_on(loop, "[::1]:0", &p, &port);
    static const char *const hosts[] = {"::1", "[::1]"};
    for (int i = 0; i < 2; i++) {
        memset(&p, 0, sizeof p);
        REQUIRE(dial(loop, hosts[i], port, &p), "connect to %s", hosts[i]);
        RUN_UNTIL(loop, p.connected + p.failed > 0 && p.accepted > 0);
        CHECK(p.connected == 1 && p.accepted == 1, "%s port %d connects (status %d)", hosts[i],
              port, p.status);
        char want[ADDR_TEXT_MAX];
        snprintf(want, sizeof want, "[::1]:%d", port);
        CHECK(strcmp(p.local_peer, want) == 0, "the connector names its peer %s (%s)", want,
              p.local_peer);
        CHECK(strncmp(p.accepted_peer, "[::1]:", 6) == 0 && strlen(p.accepted_peer) > 6,
              "the listener names its IPv6 peer [::1]:PORT (%s)", p.accepted_peer);
    }
    net_listener_close(l);
    uv_run(loop, UV_RUN_NOWAIT);
}

static void test_failures(uv_loop_t *loop)
{
    probe p = {0};
    int err = 0;
    CHECK(!net_listen(loop, "nosuch.invalid:0", false, &ops, on_accept, &p, &err) && err < 0 &&
              err != -EINVAL,
          "a listener on a name that does not resolve fails with its lookup error (%d)", err);
    err = 0;
    CHECK(!net_listen(loop, "::1:0", false, &ops, on_accept, &p, &err) && err == -EINVAL,
          "a bare IPv6 address is malformed (%d)", err);
    CHECK(!net_connect_tcp(loop, "", 1, &ops, on_connect, &p), "an empty host is refused");
    CHECK(!net_connect_tcp(loop, "127.0.0.1", 70000, &ops, on_connect, &p), "port 70000");

    REQUIRE(dial(loop, "nosuch.invalid", 1, &p), "a connect to a bad name starts");
    RUN_UNTIL(loop, p.failed > 0 && p.closed > 0);
    CHECK(p.failed == 1 && p.connected == 0 && p.status < 0, "it fails through on_connect (%d)",
          p.status);
    CHECK(p.closed == 1, "and closes once (%d)", p.closed);

    memset(&p, 0, sizeof p);
    REQUIRE(dial(loop, "localhost", 1, &p), "a connect to a name starts");
    net_conn_close(p.client); /* while the name is being looked up */
    RUN_UNTIL(loop, p.failed > 0 && p.closed > 0);
    CHECK(p.failed == 1 && p.status == UV_ECANCELED && p.connected == 0,
          "closed while looking up: on_connect gets ECANCELED (%d)", p.status);
    CHECK(p.closed == 1, "closed once (%d)", p.closed);
}

int main(void)
{
    uv_loop_t loop;
    REQUIRE(uv_loop_init(&loop) == 0, "loop");
    test_name(&loop);
    test_ipv6(&loop);
    test_failures(&loop);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0, "every handle and lookup ended");
    return test_finish();
}
