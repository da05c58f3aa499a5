/*
 * test_idle_connections.c - thousands of idle connections on every listener
 * do not stop the cluster: /metrics still answers at once, and a put and a
 * get across two owners still work.
 *
 * One master with HTTP and two owners, all with a 30 s handshake timeout so
 * that the idle connections stay open for the whole check. The test raises
 * its own open-file limit (the daemons inherit it and raise theirs to the
 * hard limit), then opens IDLE connections that send nothing to each of:
 * the master's TCP port, its HTTP port, owner0's data plane and owner0's
 * client socket. With them open, GET /metrics must answer 200 within 1 s
 * (libmicrohttpd in select() mode stopped answering past fd 1023), a put
 * through owner0 and a get of it through owner1 (a pull over owner0's data
 * plane) must work, and every idle connection must still be open (none of
 * the default caps of 4096 was reached). Skips (77) when the hard limit on
 * open files is too low for the connections.
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
#define IDLE 2000
#define LISTENERS 4

typedef int (*connect_fn)(const char *addr);

/* Opens IDLE silent connections to addr into fds. */
static void open_idle(const char *what, connect_fn conn, const char *addr, int *fds)
{
    uint64_t t0 = probe_now_ms();
    for (int i = 0; i < IDLE; i++) {
        fds[i] = conn(addr);
        REQUIRE(fds[i] >= 0, "%s: idle connection %d: %s", what, i + 1, strerror(-fds[i]));
    }
    printf("%s: %d idle connections in %llu ms\n", what, IDLE,
           (unsigned long long)(probe_now_ms() - t0));
}

int main(void)
{
    long nofile = probe_raise_nofile(LISTENERS * IDLE + 512);
    if (nofile < LISTENERS * IDLE + 512) {
        printf("skip: open files are limited to %ld, %d are needed\n", nofile,
               LISTENERS * IDLE + 512);
        return 77;
    }
    static test_cluster tc;
    static int fds[LISTENERS][IDLE];
    char http[64];
    int hport = probe_free_port();
    REQUIRE(hport > 0, "a free port for HTTP");
    snprintf(http, sizeof http, "127.0.0.1:%d", hport);
    const char *margs[] = {"--handshake-timeout", "30s", "--http", http, NULL};
    REQUIRE(cluster_start_yaml(&tc, 2, SEG, margs, "handshake_timeout: 30s\n") == 0,
            "cluster starts");
    char dp_addr[64];
    REQUIRE(probe_owner_data_addr(&tc, 0, NULL, dp_addr, sizeof dp_addr) == 0,
            "owner0's data-plane address");

    open_idle("master TCP", probe_tcp, tc.master_addr, fds[0]);
    open_idle("master HTTP", probe_tcp, http, fds[1]);
    open_idle("owner0 data plane", probe_tcp, dp_addr, fds[2]);
    open_idle("owner0 client socket", probe_unix, tc.socket, fds[3]);

    char *body = NULL;
    uint64_t t0 = probe_now_ms();
    int status = probe_http_get(http, "/metrics", 5000, &body);
    uint64_t took = probe_now_ms() - t0;
    CHECK(status == 200, "GET /metrics with %d idle connections per listener: %d", IDLE, status);
    CHECK(took < 1000, "GET /metrics took %llu ms", (unsigned long long)took);
    CHECK(body && strstr(body, "owner=\"owner0\""), "/metrics lists owner0");
    printf("GET /metrics: %d in %llu ms\n", status, (unsigned long long)took);
    free(body);

    int err = 0;
    fx_client *c0 = fx_connect(tc.sockets[0], &err);
    CHECK(c0, "fx_connect to owner0: %s", fx_strerror(err));
    fx_client *c1 = fx_connect(tc.sockets[1], &err);
    CHECK(c1, "fx_connect to owner1: %s", fx_strerror(err));
    if (c0 && c1) {
        static char value[100000];
        memset(value, 'v', sizeof value);
        CHECK(fx_put(c0, "idle-key", 8, value, sizeof value) == 0, "put through owner0: %s",
              fx_last_error_detail());
        fx_holder *h = NULL;
        int r = fx_get(c1, "idle-key", 8, &h);
        CHECK(r == 0, "get through owner1: %s (%s)", fx_strerror(r), fx_last_error_detail());
        if (r == 0) {
            CHECK(fx_holder_len(h) == sizeof value &&
                      memcmp(fx_holder_data(h), value, sizeof value) == 0,
                  "the value came back whole");
            fx_holder_release(h);
        }
    }
    fx_close(c0);
    fx_close(c1);

    static const char *names[LISTENERS] = {"master TCP", "master HTTP", "owner0 data plane",
                                           "owner0 client socket"};
    for (int l = 0; l < LISTENERS; l++) {
        int open = 0;
        for (int i = 0; i < IDLE; i++) {
            open += probe_is_open(fds[l][i]);
            close(fds[l][i]);
        }
        CHECK(open == IDLE, "%s: %d of %d idle connections still open", names[l], open, IDLE);
    }
    CHECK(cluster_stop(&tc) == 0, "cluster stops cleanly");
    return test_finish();
}
