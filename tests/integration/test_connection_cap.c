/*
 * test_connection_cap.c - every listener holds at most its cap of open
 * connections: the one over the cap is accepted and closed at once, while
 * the earlier ones stay open, and once one of those closes, a new one is
 * taken again.
 *
 * One master (--max-connections 50, also the HTTP endpoint's cap) and one
 * owner (max_client_connections: 50, max_peer_connections: 50), all with a
 * 30 s handshake timeout so that the idle connections stay. For the
 * master's TCP port (owner0's registration is one of its 50), its HTTP
 * port, the owner's data plane and its client socket: fill the listener to
 * its cap with silent connections, check that the next one is closed within
 * a second without a byte and that the 50 are all still open, close one
 * and check that a new one stays. The refusals are logged naming the
 * listener (and, for the TCP listeners, the cap). At the end the cluster
 * still serves a put and a get, and /metrics answers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "sock_probe.h"
#include "testlib.h"

#define SEG (64ull << 20)
#define CAP 50

typedef int (*connect_fn)(const char *addr);

/* Fills the listener at addr (already holding `already` connections of the
 * cluster's own) to CAP and checks what the cap does. */
static void check_cap(const char *what, connect_fn conn, const char *addr, int already)
{
    int fds[CAP];
    int n = CAP - already;
    for (int i = 0; i < n; i++) {
        fds[i] = conn(addr);
        REQUIRE(fds[i] >= 0, "%s: connection %d: %s", what, i + 1, strerror(-fds[i]));
    }
    usleep(300 * 1000); /* a server that closed any of them would have by now */
    int open = 0;
    for (int i = 0; i < n; i++)
        open += probe_is_open(fds[i]);
    CHECK(open == n, "%s: %d of the %d connections up to the cap are open", what, open, n);

    int over = conn(addr);
    REQUIRE(over >= 0, "%s: the connection over the cap is accepted: %s", what, strerror(-over));
    size_t got = 0;
    uint64_t t0 = probe_now_ms();
    bool closed = probe_wait_closed(over, 1000, &got);
    CHECK(closed, "%s: the connection over the cap (%d) was not closed within 1 s", what, CAP + 1);
    CHECK(got == 0, "%s: %zu bytes sent to the connection over the cap", what, got);
    printf("%s: connection %d closed after %llu ms\n", what, CAP + 1,
           (unsigned long long)(probe_now_ms() - t0));
    close(over);
    usleep(100 * 1000);
    open = 0;
    for (int i = 0; i < n; i++)
        open += probe_is_open(fds[i]);
    CHECK(open == n, "%s: after the refusal, %d of the %d earlier connections are open", what,
          open, n);

    /* A place freed is taken again. */
    close(fds[0]);
    usleep(200 * 1000);
    fds[0] = conn(addr);
    REQUIRE(fds[0] >= 0, "%s: reconnect", what);
    usleep(300 * 1000);
    CHECK(probe_is_open(fds[0]), "%s: once one closed, a new connection is taken", what);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    usleep(200 * 1000); /* the server sees them go before the next listener's turn */
}

int main(void)
{
    static test_cluster tc;
    char http[64], port[16];
    int hport = probe_free_port();
    REQUIRE(hport > 0, "a free port for HTTP");
    snprintf(port, sizeof port, "%d", CAP);
    snprintf(http, sizeof http, "127.0.0.1:%d", hport);
    const char *margs[] = {"--max-connections", port, "--handshake-timeout", "30s",
                           "--http", http, NULL};
    REQUIRE(cluster_start_yaml(&tc, 1, SEG, margs,
                               "max_client_connections: 50\nmax_peer_connections: 50\n"
                               "handshake_timeout: 30s\n") == 0,
            "cluster starts");
    char dp_addr[64], mlog[512], olog[512];
    REQUIRE(probe_owner_data_addr(&tc, 0, NULL, dp_addr, sizeof dp_addr) == 0,
            "owner0's data-plane address");
    snprintf(mlog, sizeof mlog, "%s/master.log", tc.dir);
    snprintf(olog, sizeof olog, "%s/owner0.log", tc.dir);
    usleep(300 * 1000); /* the probes' connections are gone */

    check_cap("master TCP", probe_tcp, tc.master_addr, 1);
    CHECK(cluster_log_contains(mlog, "master listener: 50 connections open, its cap"),
          "the master logs the refusal naming the listener and the cap");
    check_cap("master HTTP", probe_tcp, http, 0);
    CHECK(cluster_log_contains(mlog, "master HTTP: 50 connections open, its cap (max_connections)"),
          "the master logs the HTTP refusal naming the cap");
    check_cap("data plane", probe_tcp, dp_addr, 0);
    CHECK(cluster_log_contains(olog, "data plane: 50 peer connections open, its cap"),
          "the owner logs the data-plane refusal naming the cap");
    check_cap("client socket", probe_unix, tc.socket, 0);
    CHECK(cluster_log_contains(olog, "client socket: 50 connections open, its cap"),
          "the owner logs the client-socket refusal naming the cap");

    int err = 0;
    fx_client *c = fx_connect(tc.socket, &err);
    CHECK(c, "fx_connect after the caps: %s", fx_strerror(err));
    if (c) {
        CHECK(fx_put(c, "cap-key", 7, "value", 5) == 0, "put after the caps");
        fx_holder *h = NULL;
        CHECK(fx_get(c, "cap-key", 7, &h) == 0 && fx_holder_len(h) == 5, "get after the caps");
        if (h)
            fx_holder_release(h);
        fx_close(c);
    }
    char *body = NULL;
    CHECK(probe_http_get(http, "/metrics", 2000, &body) == 200, "/metrics after the caps");
    free(body);
    CHECK(cluster_stop(&tc) == 0, "cluster stops cleanly");
    return test_finish();
}
