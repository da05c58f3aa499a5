/*
 * test_inflight_ttl.c - a put that never ends does not leak its range: when
 * the external's connection closes, the owner revokes the put at once; when
 * the connection stays but the put is abandoned, the master's in-flight TTL
 * (--inflight-ttl) frees it, and the late end is refused as stale.
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

/* One request on a raw external connection; returns the decoded response. */
static ProtobufCMessage *raw_call(int fd, uint16_t type, const ProtobufCMessage *req)
{
    static uint64_t id = 1;
    size_t len;
    uint8_t *buf = msg_encode(type, 0, id++, req, &len);
    if (!buf || send(fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len) {
        free(buf);
        return NULL;
    }
    free(buf);
    uint8_t hdr[FRAME_HDR_LEN];
    if (recv(fd, hdr, sizeof hdr, MSG_WAITALL) != (ssize_t)sizeof hdr)
        return NULL;
    frame_hdr h;
    frame_hdr_decode(hdr, &h);
    uint8_t *body = malloc(h.len + 1);
    if (h.len && recv(fd, body, h.len, MSG_WAITALL) != (ssize_t)h.len) {
        free(body);
        return NULL;
    }
    ProtobufCMessage *m = msg_decode(h.type, true, body, h.len);
    free(body);
    return m;
}

/* A raw external session: hello, then ExternalPutStart of len bytes. */
static int start_put(const char *key, uint64_t len, Fx__PutId *pid)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    REQUIRE(strlen(tc.socket) < sizeof sa.sun_path, "socket path too long");
    memcpy(sa.sun_path, tc.socket, strlen(tc.socket) + 1);
    REQUIRE(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect");
    Fx__ExternalHelloReq hello = FX__EXTERNAL_HELLO_REQ__INIT;
    hello.version = 1;
    ProtobufCMessage *m = raw_call(fd, MSG_EXT_HELLO, &hello.base);
    REQUIRE(m && msg_status(m) == 0, "hello");
    msg_free(m);
    Fx__ExternalPutStartReq ps = FX__EXTERNAL_PUT_START_REQ__INIT;
    ps.key = (ProtobufCBinaryData){.len = strlen(key), .data = (uint8_t *)key};
    ps.len = len;
    m = raw_call(fd, MSG_EXT_PUT_START, &ps.base);
    REQUIRE(m && msg_status(m) == 0, "put start: %s", m ? msg_detail(m) : "no answer");
    *pid = *((Fx__ExternalPutStartResp *)m)->put_id;
    pid->base.descriptor = &fx__put_id__descriptor;
    msg_free(m);
    return fd;
}

int main(void)
{
    const char *args[] = {"--inflight-ttl", "400ms", NULL};
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
    ProtobufCMessage *m = raw_call(fd, MSG_EXT_PUT_TRANSFER_END, &end.base);
    CHECK(m && msg_status(m) == FX_ESTALE, "a put ended after its TTL is refused as stale (%d)",
          m ? msg_status(m) : 0);
    msg_free(m);
    fx_holder *h;
    CHECK(fx_get(c, "abandoned", 9, &h) == FX_ENOTFOUND, "the expired put published nothing");
    close(fd);

    fx_close(c);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
    return test_finish();
}
