/*
 * test_inflight_ttl.c - a put that never ends does not leak its range: when
 * the external's connection closes, the owner revokes the put at once; when
 * the connection stays but the put is abandoned, the master's in-flight TTL
 * (--inflight-ttl) frees it, and the late end is refused as stale. The same
 * holds for a get: a member that runs GetStart and never GetDone holds a
 * target range in its space and one of the route's durable slots until the
 * TTL, which frees both; its late GetDone is refused as stale.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "net/msg.h"
#include "raw_member.h"
#include "raw_external.h"
#include "testlib.h"

static test_cluster tc;
static fx_client *c;

static uint64_t used(void)
{
    fx_owner_stat st[2];
    size_t n = 0;
    return fx_stat(c, st, 2, &n) == 0 && n ? st[0].memory_used : UINT64_MAX;
}

/* Waits up to ms for the segment usage to reach want. */
static uint64_t wait_used(uint64_t want, int ms)
{
    uint64_t u = used();
    for (int t = 0; t < ms && u != want; t += 10) {
        usleep(10000);
        u = used();
    }
    return u;
}

/* memory_used of the owner called name (UINT64_MAX when it is not listed). */
static uint64_t used_by(const char *name)
{
    fx_owner_stat st[8];
    size_t n = 0;
    if (fx_stat(c, st, 8, &n) != 0)
        return UINT64_MAX;
    for (size_t i = 0; i < n && i < 8; i++)
        if (strcmp(st[i].name, name) == 0)
            return st[i].memory_used;
    return UINT64_MAX;
}

/* The route's durable slots in use, asked as member rm (UINT32_MAX on error). */
static uint32_t durable_slots(raw_member *rm, const char *key)
{
    raw_route rt;
    return raw_member_route(rm, key, &rt) == 0 ? rt.durable_slots : UINT32_MAX;
}

/* 3. A get that is started and never done: the TTL frees its target and
 * its durable slot, and the late GetDone is stale. */
static void abandoned_get(void)
{
    const char *key = "get-abandoned", *name = "ttl-getter";
    size_t len = (1u << 20) + 3;
    uint8_t *v = malloc(len);
    memset(v, 0x5a, len);
    /* Put before the member exists: the only replica is on the real owner. */
    int r = fx_put(c, key, strlen(key), v, len);
    free(v);
    REQUIRE(r == 0, "put %s: %s (%s)", key, fx_strerror(r), fx_last_error_detail());
    raw_member rm;
    REQUIRE(raw_member_register(&rm, tc.master_addr, "test", name, 64ull << 20) == 0,
            "raw member registers");
    CHECK(used_by(name) == 0, "%s starts empty (%llu)", name, (unsigned long long)used_by(name));
    CHECK(durable_slots(&rm, key) == 0, "no durable slot in use before the get");

    Fx__GetStartReq gs = FX__GET_START_REQ__INIT;
    gs.key = (ProtobufCBinaryData){.len = strlen(key), .data = (uint8_t *)key};
    ProtobufCMessage *m = raw_member_call(&rm, MSG_GET_START, &gs.base, 5000);
    REQUIRE(m && msg_status(m) == 0, "GetStart: %s", m ? msg_detail(m) : "no answer");
    Fx__GetStartResp *gr = (Fx__GetStartResp *)m;
    uint64_t get_id = gr->get_id;
    CHECK(gr->mode == FX__GET_MODE__DURABLE_REPLICA, "the get takes a durable slot (mode %d)",
          gr->mode);
    CHECK(gr->len == len && gr->src_node_id != rm.node_id, "the source is the real owner");
    msg_free(m);

    uint64_t u = used_by(name);
    CHECK(u != UINT64_MAX && u >= len, "the get target is held in %s's space (%llu bytes)", name,
          (unsigned long long)u);
    CHECK(durable_slots(&rm, key) == 1, "RouteInfo shows the durable slot taken");

    /* No GetDone: after the TTL (400 ms, swept every 100 ms) both go. */
    for (int t = 0; t < 3000 && used_by(name) != 0; t += 10)
        usleep(10000);
    u = used_by(name);
    CHECK(u == 0, "the TTL freed the get target in %s's space (%llu bytes used)", name,
          (unsigned long long)u);
    uint32_t slots = durable_slots(&rm, key);
    CHECK(slots == 0, "the TTL released the durable slot (%u in use)", slots);

    Fx__GetDoneReq gd = FX__GET_DONE_REQ__INIT;
    gd.get_id = get_id;
    m = raw_member_call(&rm, MSG_GET_DONE, &gd.base, 5000);
    CHECK(m && msg_status(m) == FX_ESTALE, "a GetDone after the TTL is refused as stale (%d: %s)",
          m ? msg_status(m) : 0, m ? msg_detail(m) : "no answer");
    msg_free(m);
    CHECK(durable_slots(&rm, key) == 0 && used_by(name) == 0,
          "the late GetDone promoted nothing and took nothing");
    raw_member_close(&rm);
}

/* A raw external session with a started put of len bytes. */
static int start_put(const char *key, uint64_t len, Fx__PutId *pid)
{
    int fd = raw_external_open(tc.socket);
    REQUIRE(fd >= 0, "raw external session");
    int st = raw_external_put_start(fd, key, len, pid);
    REQUIRE(st == 0, "put start: %s", fx_strerror(st));
    return fd;
}

int main(void)
{
    /* The raw member of case 3 sends no heartbeats. */
    const char *args[] = {"--inflight-ttl", "400ms", "--heartbeat-timeout", "600s", NULL};
    REQUIRE(cluster_start_args(&tc, 64ull << 20, args) == 0, "cluster start");
    int err;
    c = fx_connect(tc.socket, &err);
    REQUIRE(c, "connect");
    REQUIRE(used() == 0, "empty at start");

    /* 1. The connection closes mid-put: the owner revokes it. */
    Fx__PutId pid;
    int fd = start_put("closed-mid-put", 1u << 20, &pid);
    CHECK(used() >= (1u << 20), "a started put holds its range");
    close(fd);
    CHECK(wait_used(0, 300) == 0, "range freed as soon as the connection closed");

    /* 2. The connection stays, the put is abandoned: the TTL frees it. */
    fd = start_put("abandoned", 1u << 20, &pid);
    CHECK(used() >= (1u << 20), "a started put holds its range");
    usleep(100 * 1000);
    CHECK(used() >= (1u << 20), "still held before the TTL");
    CHECK(wait_used(0, 2000) == 0, "range freed by the in-flight TTL");
    Fx__ExternalPutTransferEndReq end = FX__EXTERNAL_PUT_TRANSFER_END_REQ__INIT;
    end.key = (ProtobufCBinaryData){.len = 9, .data = (uint8_t *)"abandoned"};
    end.put_id = &pid;
    ProtobufCMessage *m = raw_external_call(fd, MSG_EXT_PUT_TRANSFER_END, &end.base);
    CHECK(m && msg_status(m) == FX_ESTALE, "a put ended after its TTL is refused as stale (%d)",
          m ? msg_status(m) : 0);
    msg_free(m);
    fx_holder *h;
    CHECK(fx_get(c, "abandoned", 9, &h) == FX_ENOTFOUND, "the expired put published nothing");
    close(fd);

    abandoned_get();

    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
    return test_finish();
}
