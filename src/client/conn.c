/*
 * conn.c - libfluxon's blocking connections to the owner: opening one
 * (ExternalHello, segment fd on the session connection), the idle pool, and
 * one synchronous request/response with a deadline.
 *
 * Any transport error, timeout or unexpected frame marks the connection
 * broken: it is closed instead of going back to the pool, so a late response
 * can never be read as the answer to a later request.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "net/fdpass.h"

#define POOL_MAX_IDLE 32
#define EXT_PROTOCOL_VERSION 1u

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int write_all(int fd, const uint8_t *buf, size_t len, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int left = (int)(deadline - now_ms());
            if (left <= 0 || poll(&p, 1, left) == 0)
                return FX_ETIMEDOUT;
            continue;
        }
        return FX_ECONN;
    }
    return 0;
}

static int read_all(int fd, uint8_t *buf, size_t len, int64_t deadline)
{
    while (len) {
        ssize_t n = recv(fd, buf, len, 0);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return FX_ECONN;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return FX_ECONN;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int left = deadline < 0 ? -1 : (int)(deadline - now_ms());
        if (deadline >= 0 && left <= 0)
            return FX_ETIMEDOUT;
        int r = poll(&p, 1, left);
        if (r == 0)
            return FX_ETIMEDOUT;
        if (r < 0 && errno != EINTR)
            return FX_ECONN;
    }
    return 0;
}

int client_read_frame(int fd, frame_hdr *h, uint8_t **body, int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    uint8_t hdr[FRAME_HDR_LEN];
    int r = read_all(fd, hdr, sizeof hdr, deadline);
    if (r)
        return r;
    frame_hdr_decode(hdr, h);
    if (frame_hdr_check(h, FRAME_MAX_BODY) < 0)
        return client_fail(FX_EPROTO, "owner sent a malformed frame header");
    uint32_t len = h->len;
    uint8_t *b = malloc(len ? len : 1);
    if (!b)
        return FX_ENOMEM;
    r = read_all(fd, b, len, deadline);
    if (r) {
        free(b);
        return r;
    }
    *body = b;
    return 0;
}

/* Grows buf to at least need bytes (doubling); NULL (buf freed) on failure. */
static uint8_t *grow(uint8_t *buf, size_t *cap, size_t need)
{
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    uint8_t *n = realloc(buf, c);
    if (!n) {
        free(buf);
        return NULL;
    }
    *cap = c;
    return n;
}

static int send_frame(int fd, uint16_t type, uint16_t flags, uint64_t req_id,
                      const ProtobufCMessage *m, int timeout_ms)
{
    size_t len;
    uint8_t *buf = msg_encode(type, flags, req_id, m, &len);
    if (!buf)
        return client_fail(FX_EINVAL, "cannot encode %s (too large?)", msg_name(type));
    int r = write_all(fd, buf, len, timeout_ms);
    free(buf);
    return r;
}

int client_call(fx_client *c, xconn *x, uint16_t type, const ProtobufCMessage *req,
                ProtobufCMessage **resp)
{
    uint64_t id = x->next_req_id++;
    int r = send_frame(x->fd, type, 0, id, req, c->timeout_ms);
    if (r)
        return client_fail(r, "sending %s to the owner failed", msg_name(type));
    frame_hdr h;
    uint8_t *body;
    r = client_read_frame(x->fd, &h, &body, c->timeout_ms);
    if (r)
        return client_fail(r, "%s: no response from the owner at %s", msg_name(type), c->path);
    if (h.type != type || !(h.flags & FRAME_RESPONSE) || h.req_id != id) {
        free(body);
        return client_fail(FX_EPROTO, "%s: unexpected response (type %u, req %llu)",
                           msg_name(type), h.type, (unsigned long long)h.req_id);
    }
    *resp = msg_decode(type, true, body, h.len);
    free(body);
    if (!*resp)
        return client_fail(FX_EPROTO, "%s: malformed response", msg_name(type));
    return 0;
}

int client_call_many(fx_client *c, xconn *x, uint16_t type, size_t n,
                     const ProtobufCMessage *const *reqs, ProtobufCMessage **resps)
{
    for (size_t i = 0; i < n; i++)
        resps[i] = NULL;
    if (n == 0)
        return 0;
    /* Every request in one buffer, one write: the owner works on all of them
     * at once and answers each as it completes. */
    uint64_t base_id = x->next_req_id;
    x->next_req_id += n;
    size_t cap = 0, used = 0;
    uint8_t *out = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        uint8_t *f = msg_encode(type, 0, base_id + i, reqs[i], &len);
        if (!f || (used + len > cap && !(out = grow(out, &cap, used + len)))) {
            free(f);
            free(out);
            return client_fail(f ? FX_ENOMEM : FX_EINVAL, "cannot encode %s", msg_name(type));
        }
        memcpy(out + used, f, len);
        used += len;
        free(f);
    }
    int r = write_all(x->fd, out, used, c->timeout_ms);
    free(out);
    if (r)
        return client_fail(r, "sending %zu %s requests to the owner failed", n, msg_name(type));
    for (size_t got = 0; got < n; got++) {
        frame_hdr h;
        uint8_t *body;
        r = client_read_frame(x->fd, &h, &body, c->timeout_ms);
        if (r)
            return client_fail(r, "%s: no response from the owner at %s", msg_name(type), c->path);
        uint64_t i = h.req_id - base_id;
        if (h.type != type || !(h.flags & FRAME_RESPONSE) || h.req_id < base_id || i >= n ||
            resps[i]) {
            free(body);
            return client_fail(FX_EPROTO, "%s: unexpected response (type %u, req %llu)",
                               msg_name(type), h.type, (unsigned long long)h.req_id);
        }
        resps[i] = msg_decode(type, true, body, h.len);
        free(body);
        if (!resps[i])
            return client_fail(FX_EPROTO, "%s: malformed response", msg_name(type));
    }
    return 0;
}

int client_request(fx_client *c, uint16_t type, const ProtobufCMessage *req,
                   ProtobufCMessage **resp)
{
    int err = 0;
    *resp = NULL;
    xconn *x = client_conn_get(c, &err);
    if (!x)
        return err;
    err = client_call(c, x, type, req, resp);
    client_conn_put(c, x, err != 0);
    return err ? err : client_answer_status(*resp);
}

int client_answer_status(const ProtobufCMessage *resp)
{
    int st = msg_status(resp);
    if (st)
        client_fail(st, "%s", msg_detail(resp));
    return st;
}

int client_notify(fx_client *c, xconn *x, uint16_t type, const ProtobufCMessage *req)
{
    return send_frame(x->fd, type, FRAME_ONEWAY, x->next_req_id++, req, c->timeout_ms);
}

int client_open(fx_client *c, uint64_t client_id, int *out_fd, Fx__ExternalHelloResp **hello,
                int *seg_fd, int *lane_fd)
{
    bool takes_fd = seg_fd || lane_fd;
    /* Non-blocking, so that every wait goes through poll with the call's
     * deadline (FLUXON_TIMEOUT_MS) and a stuck owner cannot hang a caller. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return client_fail(FX_ECONN, "socket: %s", strerror(errno));
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, c->path, sizeof sa.sun_path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(fd);
        return client_fail(FX_ECONN, "cannot connect to owner socket %s: %s", c->path, strerror(e));
    }
    Fx__ExternalHelloReq req = FX__EXTERNAL_HELLO_REQ__INIT;
    req.version = EXT_PROTOCOL_VERSION;
    req.client_id = client_id;
    req.want_get_lane = lane_fd != NULL;
    int r = send_frame(fd, MSG_EXT_HELLO, 0, 0, &req.base, c->timeout_ms);
    if (r) {
        close(fd);
        return client_fail(r, "ExternalHello: cannot send to %s", c->path);
    }
    uint8_t hdr[FRAME_HDR_LEN];
    int passed = -1;
    frame_hdr h;
    uint8_t *body = NULL;
    if (takes_fd) {
        /* A passed fd arrives with the first byte of the response. */
        r = fdpass_recv(fd, hdr, sizeof hdr, &passed, c->timeout_ms);
        if (r == -ETIMEDOUT) {
            close(fd);
            return client_fail(FX_ETIMEDOUT, "ExternalHello: no response from %s within %d ms",
                               c->path, c->timeout_ms);
        }
        if (r < 0) {
            close(fd);
            return client_fail(FX_ECONN, "ExternalHello: no response from %s: %s", c->path,
                               strerror(-r));
        }
        frame_hdr_decode(hdr, &h);
        if (frame_hdr_check(&h, FRAME_MAX_BODY) < 0) {
            r = client_fail(FX_EPROTO, "ExternalHello: malformed response");
            goto fail;
        }
        body = malloc(h.len ? h.len : 1);
        if (!body) {
            r = FX_ENOMEM;
            goto fail;
        }
        r = read_all(fd, body, h.len, now_ms() + c->timeout_ms);
        if (r)
            goto fail;
    } else {
        r = client_read_frame(fd, &h, &body, c->timeout_ms);
        if (r)
            goto fail;
    }
    if (h.type != MSG_EXT_HELLO) {
        r = client_fail(FX_EPROTO, "ExternalHello: unexpected response type %u", h.type);
        goto fail;
    }
    *hello = (Fx__ExternalHelloResp *)msg_decode(MSG_EXT_HELLO, true, body, h.len);
    free(body);
    body = NULL;
    if (!*hello) {
        r = client_fail(FX_EPROTO, "ExternalHello: malformed response");
        goto fail;
    }
    if ((*hello)->status) {
        r = client_fail((*hello)->status, "ExternalHello refused: %s", (*hello)->detail);
        msg_free(&(*hello)->base);
        *hello = NULL;
        goto fail;
    }
    if (seg_fd) {
        if (passed < 0) {
            msg_free(&(*hello)->base);
            *hello = NULL;
            r = client_fail(FX_EPROTO, "ExternalHello: the owner sent no segment");
            goto fail;
        }
        *seg_fd = passed;
    }
    if (lane_fd) {
        /* Every wait goes through poll, as on fd. */
        if (passed >= 0 && fcntl(passed, F_SETFL, fcntl(passed, F_GETFL) | O_NONBLOCK) < 0) {
            close(passed);
            passed = -1;
        }
        *lane_fd = passed;
    }
    *out_fd = fd;
    return 0;
fail:
    free(body);
    if (passed >= 0)
        close(passed);
    close(fd);
    return r;
}

xconn *client_conn_get(fx_client *c, int *err)
{
    pthread_mutex_lock(&c->pool_lock);
    xconn *x = c->idle;
    if (x) {
        c->idle = x->next;
        c->n_idle--;
    }
    pthread_mutex_unlock(&c->pool_lock);
    if (x)
        return x;
    if (atomic_load(&c->dead)) {
        *err = client_fail(FX_ECONN, "the owner closed this client's session");
        return NULL;
    }
    x = calloc(1, sizeof *x);
    if (!x) {
        *err = FX_ENOMEM;
        return NULL;
    }
    Fx__ExternalHelloResp *hello = NULL;
    int lane_fd = -1;
    int r = client_open(c, c->client_id, &x->fd, &hello, NULL, &lane_fd);
    if (r) {
        free(x);
        *err = r;
        return NULL;
    }
    msg_free(&hello->base);
    x->next_req_id = 1;
    if (lane_fd >= 0) {
        x->lane = calloc(1, sizeof *x->lane);
        if (x->lane) {
            x->lane->fd = lane_fd;
            x->lane->next_req_id = 1;
        } else {
            close(lane_fd); /* the connection serves gets itself */
        }
    }
    return x;
}

xconn *client_release_conn(xconn *x, bool via_lane)
{
    return via_lane && x->lane ? x->lane : x;
}

void client_conn_close(xconn *x)
{
    if (!x)
        return;
    if (x->lane)
        client_conn_close(x->lane);
    close(x->fd);
    free(x);
}

void client_conn_put(fx_client *c, xconn *x, bool broken)
{
    if (!broken) {
        pthread_mutex_lock(&c->pool_lock);
        if (c->n_idle < POOL_MAX_IDLE) {
            x->next = c->idle;
            c->idle = x;
            c->n_idle++;
            x = NULL;
        }
        pthread_mutex_unlock(&c->pool_lock);
    }
    client_conn_close(x);
}
