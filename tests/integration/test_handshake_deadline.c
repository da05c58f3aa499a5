/*
 * test_handshake_deadline.c - a connection that never introduces itself is
 * closed after the handshake deadline, on each of the three listeners, and
 * one that did is not.
 *
 * One master (--handshake-timeout 500ms, --heartbeat-timeout 600s) and one
 * owner (handshake_timeout: 500ms). Silent TCP connections to the master's port and to the owner's
 * data plane, and a silent connection to the owner's client socket, must
 * each be closed between 0.4 s and 3 s after they connected, with nothing
 * sent to them. A data-plane connection cut off inside its HELLO is closed
 * the same way. Without the deadline they stay open (they did for 65 s and
 * more). Connections that completed their handshake at once (a registered
 * member, a data-plane peer whose HELLO passed, a client after its
 * ExternalHello) are still open and served 1.5 s later, three deadlines on.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "cluster.h"
#include "dp_raw.h"
#include "fluxon/fluxon.h"
#include "raw_member.h"
#include "sock_probe.h"
#include "testlib.h"

#define SEG (64ull << 20)
#define DEADLINE_MS 500

/* On the connection fd, sends n bytes (if any) and expects the server to
 * hang up between 0.8 and 6 deadlines later without sending a byte. */
static void expect_cut_off(const char *what, int fd, const void *bytes, size_t n)
{
    REQUIRE(fd >= 0, "%s: connect: %s", what, strerror(-fd));
    uint64_t t0 = probe_now_ms();
    if (n)
        CHECK(send(fd, bytes, n, MSG_NOSIGNAL) == (ssize_t)n, "%s: send", what);
    size_t got = 0;
    bool closed = probe_wait_closed(fd, 6 * DEADLINE_MS, &got);
    uint64_t took = probe_now_ms() - t0;
    CHECK(closed, "%s: still open %llu ms after connecting", what, (unsigned long long)took);
    CHECK(!closed || took >= DEADLINE_MS * 8 / 10, "%s: closed after %llu ms, before the deadline",
          what, (unsigned long long)took);
    CHECK(got == 0, "%s: %zu bytes were sent to it", what, got);
    printf("%s: closed after %llu ms\n", what, (unsigned long long)took);
    close(fd);
}

int main(void)
{
    static test_cluster tc;
    /* A long heartbeat timeout: the test's member stays silent for seconds. */
    const char *margs[] = {"--handshake-timeout", "500ms", "--heartbeat-timeout", "600s", NULL};
    REQUIRE(cluster_start_yaml(&tc, 1, SEG, margs, "handshake_timeout: 500ms\n") == 0,
            "cluster starts");

    /* Who completes the handshake at once, to be checked later. */
    raw_member rm;
    REQUIRE(raw_member_register(&rm, tc.master_addr, "test", "deadline-prober", 1) == 0,
            "a member registers");
    char dp_addr[64];
    REQUIRE(probe_owner_data_addr(&tc, 0, &rm, dp_addr, sizeof dp_addr) == 0,
            "owner0's data-plane address");
    int peer = -1;
    for (int t = 0; t < 100 && peer < 0; t++) { /* until the owner knows the member */
        peer = probe_tcp(dp_addr);
        REQUIRE(peer >= 0, "connect to the data plane");
        struct timeval tv = {.tv_sec = 5};
        setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        raw_member_poll(&rm, 20); /* the member table with the owner's pair key */
        uint32_t owner_node = 0;
        for (size_t i = 0; rm.members && i < rm.members->n_members; i++)
            if (strcmp(rm.members->members[i]->data_addr, dp_addr) == 0)
                owner_node = rm.members->members[i]->node_id;
        dp_handshake claim = {.client_node = rm.node_id, .client_tomb = rm.tomb_tag,
                              .server_node = owner_node};
        auth_key k;
        dp_raw_outcome o;
        if (!raw_member_pair_key(&rm, owner_node, &claim.server_tomb, &k) ||
            dp_raw_handshake(peer, &claim, &k, &o) != DP_RAW_ACCEPTED) {
            close(peer);
            peer = -1;
            usleep(50 * 1000);
        }
    }
    REQUIRE(peer >= 0, "a data-plane handshake as the member passes");
    int err = 0;
    fx_client *client = fx_connect(tc.socket, &err);
    REQUIRE(client, "fx_connect: %s", fx_strerror(err));

    /* Strangers, all at once: each is cut off by its own deadline. */
    expect_cut_off("master: silent TCP connection", probe_tcp(tc.master_addr), NULL, 0);
    expect_cut_off("data plane: silent TCP connection", probe_tcp(dp_addr), NULL, 0);
    expect_cut_off("client socket: silent connection", probe_unix(tc.socket), NULL, 0);
    uint8_t half_hello[DP_HDR_LEN / 2] = {0};
    expect_cut_off("data plane: half a HELLO header", probe_tcp(dp_addr), half_hello,
                   sizeof half_hello);

    /* Those that introduced themselves are served long after. */
    usleep(1500 * 1000);
    CHECK(raw_member_heartbeat(&rm) == 0, "the registered member is still served");
    CHECK(probe_is_open(peer), "the data-plane peer whose handshake passed is still connected");
    dp_raw_send_hdr(peer, DP_READ, 7, 0, 16);
    dp_hdr h;
    char detail[DP_DETAIL_MAX + 1];
    uint8_t data[16];
    CHECK(dp_raw_recv_reply(peer, &h, detail, sizeof detail) && h.op == DP_READ_DATA &&
              h.status == 0 && dp_raw_recv_all(peer, data, sizeof data),
          "and its READ is answered");
    CHECK(fx_ping(client) == 0, "the client after its ExternalHello is still served");

    close(peer);
    fx_close(client);
    raw_member_close(&rm);
    CHECK(cluster_stop(&tc) == 0, "cluster stops cleanly");
    return test_finish();
}
