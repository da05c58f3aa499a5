/*
 * test_write_scope.c - write scopes (net_write_scope_new, src/net/conn.c):
 * what the frames of one read make a handler write on *another* connection of
 * the scope is gathered and written once when that read's frames are handled,
 * as an owner's PutDones to the master are when a client's batch of
 * ExternalPuts arrives in one read.
 *
 * A server loop holds two accepted connections: a trigger and a sink. Each
 * ExternalPing on the trigger makes the handler send FANOUT one-way frames on
 * the sink. With the scope, the sink's write count grows by one per trigger
 * read and every frame arrives, in order; on connections without a scope it
 * grows by FANOUT (the behaviour the scope replaces, so the test tells the two
 * apart). A frame sent outside any dispatch (from the test's own code, as a
 * timer would) is written at once, scope or not.
 */
#include "net/conn.h"
#include "testlib.h"

#include <string.h>
#include <unistd.h>

#define FANOUT 32u

typedef struct server {
    net_conn *trigger, *sink; /* the accepted sides, by their first frame's req_id */
    int accepted;
    uint64_t next_id; /* of the frames sent to the sink */
} server;

typedef struct sink_client {
    uint64_t next_req_id; /* the req_id the next frame must carry */
    unsigned got;
    bool out_of_order;
} sink_client;

static void server_on_frame(net_conn *c, const frame_hdr *h, ProtobufCMessage *msg)
{
    (void)msg;
    server *s = net_conn_data(c);
    if (h->req_id == 1) { /* a hello: the sink introduces itself */
        s->sink = c;
        return;
    }
    if (h->req_id == 2) {
        s->trigger = c;
        return;
    }
    Fx__ExternalPingReq ping = FX__EXTERNAL_PING_REQ__INIT;
    for (unsigned i = 0; i < FANOUT && s->sink; i++)
        net_send(s->sink, MSG_EXT_PING, FRAME_ONEWAY, s->next_id++, &ping.base);
}

static void no_close(net_conn *c)
{
    (void)c;
}

static const net_conn_ops server_ops = {.on_frame = server_on_frame, .on_close = no_close};

static void on_accept(net_conn *c, void *ud)
{
    server *s = ud;
    s->accepted++;
    net_conn_set_data(c, s);
}

static void sink_on_frame(net_conn *c, const frame_hdr *h, ProtobufCMessage *msg)
{
    (void)msg;
    sink_client *k = net_conn_data(c);
    if (h->req_id != k->next_req_id)
        k->out_of_order = true;
    k->next_req_id = h->req_id + 1;
    k->got++;
}

static const net_conn_ops sink_ops = {.on_frame = sink_on_frame, .on_close = no_close};
static const net_conn_ops trigger_ops = {.on_frame = server_on_frame, .on_close = no_close};

static void on_connect(net_conn *c, int status, void *ud)
{
    (void)c;
    *(int *)ud = status < 0 ? status : 1;
}

#define RUN_UNTIL(cond)                                                                       \
    do {                                                                                      \
        for (int i_ = 0; i_ < 5000 && !(cond); i_++) {                                        \
            uv_run(&server_loop, UV_RUN_NOWAIT);                                              \
            uv_run(&client_loop, UV_RUN_NOWAIT);                                              \
            usleep(1000);                                                                     \
        }                                                                                     \
    } while (0)

/* One round: a server loop (with a write scope when scoped) and a client
 * loop; rounds trigger reads of one ping each. Returns the sink's writes per
 * trigger read. */
static double run_round(bool scoped, int rounds)
{
    uv_loop_t server_loop, client_loop;
    REQUIRE(uv_loop_init(&server_loop) == 0 && uv_loop_init(&client_loop) == 0, "loops");
    net_write_scope *scope = NULL;
    if (scoped)
        REQUIRE((scope = net_write_scope_new()), "a write scope");
    server s = {.next_id = 1000};
    int err = 0;
    net_listener *l = net_listen(&server_loop, "127.0.0.1:0", false, &server_ops, on_accept, &s,
                                 &err);
    REQUIRE(l, "listen: %s", uv_strerror(err));
    net_listener_set_write_scope(l, scope);
    int port = net_listener_port(l);
    int sink_up = 0, trigger_up = 0;
    sink_client k = {.next_req_id = 1000};
    net_conn *sink = net_connect_tcp(&client_loop, "127.0.0.1", port, &sink_ops, on_connect,
                                     &sink_up);
    net_conn *trigger = net_connect_tcp(&client_loop, "127.0.0.1", port, &trigger_ops,
                                        on_connect, &trigger_up);
    REQUIRE(sink && trigger, "connect");
    net_conn_set_data(sink, &k);
    RUN_UNTIL(sink_up && trigger_up && s.accepted == 2);
    REQUIRE(sink_up == 1 && trigger_up == 1, "both clients connected (%d, %d)", sink_up,
            trigger_up);
    Fx__ExternalPingReq ping = FX__EXTERNAL_PING_REQ__INIT;
    net_send(sink, MSG_EXT_PING, FRAME_ONEWAY, 1, &ping.base);
    net_send(trigger, MSG_EXT_PING, FRAME_ONEWAY, 2, &ping.base);
    RUN_UNTIL(s.sink && s.trigger);
    REQUIRE(s.sink && s.trigger, "the server knows the sink and the trigger");

    uint64_t before = net_conn_write_count(s.sink);
    for (int r = 0; r < rounds; r++) {
        unsigned want = k.got + FANOUT;
        net_send(trigger, MSG_EXT_PING, FRAME_ONEWAY, 3, &ping.base);
        RUN_UNTIL(k.got >= want);
        CHECK(k.got == want, "round %d: the sink got %u frames (want %u)", r, k.got, want);
    }
    uint64_t writes = net_conn_write_count(s.sink) - before;
    CHECK(!k.out_of_order, "the sink's frames arrived in the order they were sent");

    /* Outside any dispatch a send is written at once. */
    uint64_t at = net_conn_write_count(s.sink);
    net_send(s.sink, MSG_EXT_PING, FRAME_ONEWAY, s.next_id++, &ping.base);
    CHECK(net_conn_write_count(s.sink) == at + 1,
          "a send outside a dispatch is written before the loop runs again (%s)",
          scoped ? "scoped loop" : "no scope");
    unsigned want = k.got + 1;
    RUN_UNTIL(k.got >= want);
    CHECK(k.got == want, "and arrives");

    net_conn_close(sink);
    net_conn_close(trigger);
    net_listener_close(l);
    for (int i = 0; i < 20; i++) {
        uv_run(&server_loop, UV_RUN_NOWAIT);
        uv_run(&client_loop, UV_RUN_NOWAIT);
    }
    CHECK(uv_loop_close(&client_loop) == 0, "client loop closed cleanly");
    CHECK(uv_loop_close(&server_loop) == 0, "server loop closed cleanly");
    net_write_scope_free(scope);
    return (double)writes / rounds;
}

int main(void)
{
    const int rounds = 20;
    double scoped = run_round(true, rounds);
    double plain = run_round(false, rounds);
    printf("writes on the sink per trigger read: %.2f with a scope, %.2f without\n", scoped,
           plain);
    CHECK(scoped == 1.0, "with a scope, the %u frames of one trigger read go out in one write "
                         "(%.2f writes)", FANOUT, scoped);
    CHECK(plain >= FANOUT, "without a scope each frame is its own write (%.2f writes)", plain);
    return test_finish();
}
