/*
 * raw_external.c - a blocking test-side external (see raw_external.h).
 */
#include "raw_external.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fluxon/fluxon.h"
#include "net/fdpass.h"

ProtobufCMessage *raw_external_call(int fd, uint16_t type, const ProtobufCMessage *req)
{
    static uint64_t id = 1;
    uint64_t my_id = __atomic_fetch_add(&id, 1, __ATOMIC_RELAXED);
    size_t len;
    uint8_t *buf = msg_encode(type, 0, my_id, req, &len);
    if (!buf || send(fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len) {
        free(buf);
        return NULL;
    }
    free(buf);
    /* The owner may push messages of its own at any time (weak-index
     * invalidations of keys another client overwrote): skip every frame that
     * is not the answer to this request. */
    for (;;) {
        uint8_t hdr[FRAME_HDR_LEN];
        if (recv(fd, hdr, sizeof hdr, MSG_WAITALL) != (ssize_t)sizeof hdr)
            return NULL;
        frame_hdr h;
        frame_hdr_decode(hdr, &h);
        if (h.len > FRAME_MAX_BODY)
            return NULL;
        uint8_t *body = malloc(h.len + 1);
        if (!body || (h.len && recv(fd, body, h.len, MSG_WAITALL) != (ssize_t)h.len)) {
            free(body);
            return NULL;
        }
        if (!(h.flags & FRAME_RESPONSE) || h.req_id != my_id) {
            free(body);
            continue;
        }
        ProtobufCMessage *m = msg_decode(h.type, true, body, h.len);
        free(body);
        return m;
    }
}

static int connect_unix(const char *socket_path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(socket_path) >= sizeof sa.sun_path)
        return -1;
    memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int raw_external_open_session(const char *socket_path, uint64_t *client_id)
{
    int fd = connect_unix(socket_path);
    if (fd < 0)
        return -1;
    Fx__ExternalHelloReq hello = FX__EXTERNAL_HELLO_REQ__INIT;
    hello.version = 1;
    ProtobufCMessage *m = raw_external_call(fd, MSG_EXT_HELLO, &hello.base);
    int ok = m && msg_status(m) == 0;
    if (ok && client_id)
        *client_id = ((Fx__ExternalHelloResp *)m)->client_id;
    msg_free(m);
    if (!ok) {
        close(fd);
        return -1;
    }
    return fd;
}

int raw_external_open(const char *socket_path)
{
    return raw_external_open_session(socket_path, NULL);
}

int raw_external_attach(const char *socket_path, uint64_t client_id, int *lane_fd)
{
    if (lane_fd)
        *lane_fd = -1;
    int fd = connect_unix(socket_path);
    if (fd < 0)
        return -1;
    Fx__ExternalHelloReq hello = FX__EXTERNAL_HELLO_REQ__INIT;
    hello.version = 1;
    hello.client_id = client_id;
    hello.want_get_lane = lane_fd != NULL;
    size_t len;
    uint8_t *buf = msg_encode(MSG_EXT_HELLO, 0, 1, &hello.base, &len);
    int passed = -1;
    uint8_t hdr[FRAME_HDR_LEN];
    frame_hdr h;
    uint8_t *body = NULL;
    ProtobufCMessage *m = NULL;
    bool sent = buf && send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len;
    free(buf);
    /* A passed fd arrives with the first byte of the answer. */
    if (sent && fdpass_recv(fd, hdr, sizeof hdr, &passed, 5000) == 0) {
        frame_hdr_decode(hdr, &h);
        body = h.len <= FRAME_MAX_BODY ? malloc(h.len + 1) : NULL;
        if (body && (!h.len || recv(fd, body, h.len, MSG_WAITALL) == (ssize_t)h.len))
            m = msg_decode(h.type, true, body, h.len);
    }
    free(body);
    int ok = m && msg_status(m) == 0;
    msg_free(m);
    if (!ok) {
        if (passed >= 0)
            close(passed);
        close(fd);
        return -1;
    }
    if (lane_fd)
        *lane_fd = passed;
    else if (passed >= 0)
        close(passed);
    return fd;
}

int raw_external_put_start(int fd, const char *key, uint64_t len, Fx__PutId *pid)
{
    Fx__ExternalPutStartReq ps = FX__EXTERNAL_PUT_START_REQ__INIT;
    ps.key = (ProtobufCBinaryData){.len = strlen(key), .data = (uint8_t *)key};
    ps.len = len;
    ProtobufCMessage *m = raw_external_call(fd, MSG_EXT_PUT_START, &ps.base);
    if (!m)
        return FX_ECONN;
    int st = msg_status(m);
    Fx__ExternalPutStartResp *r = (Fx__ExternalPutStartResp *)m;
    if (!st && !r->put_id)
        st = FX_EPROTO;
    if (!st) {
        *pid = *r->put_id;
        pid->base.descriptor = &fx__put_id__descriptor;
        pid->base.unknown_fields = NULL;
        pid->base.n_unknown_fields = 0;
    }
    msg_free(m);
    return st;
}
