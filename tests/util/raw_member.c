/*
 * raw_member.c - a blocking test-side cluster member (see raw_member.h).
 */
#include "raw_member.h"
#include "raw_handshake.h"
#include "testlib.h"

#include "common/config.h"
#include "fluxon/fluxon.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Connects to "HOST:PORT" (a name, IPv4 or [IPv6]) at the first address
 * getaddrinfo gives, as the daemons do. Returns the socket or -1. */
static int tcp_connect(const char *addr)
{
    char host[256], port_text[8];
    int port;
    if (config_parse_hostport(addr, host, sizeof host, &port) < 0)
        return -1;
    snprintf(port_text, sizeof port_text, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_ADDRCONFIG},
                    *res = NULL;
    if (getaddrinfo(host, port_text, &hints, &res) != 0)
        return -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

/* Reads exactly n bytes before deadline; 0 or -1. */
static int read_exact(int fd, uint8_t *buf, size_t n, uint64_t deadline)
{
    size_t got = 0;
    while (got < n) {
        uint64_t now = test_now_ms();
        if (now >= deadline)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)(deadline - now));
        if (r <= 0)
            continue;
        ssize_t k = recv(fd, buf + got, n - got, 0);
        if (k <= 0) {
            if (k < 0 && errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)k;
    }
    return 0;
}

/* Reads one frame; *msg is the decoded body (NULL if it does not decode). */
static int read_frame(int fd, frame_hdr *h, ProtobufCMessage **msg, uint64_t deadline)
{
    uint8_t hdr[FRAME_HDR_LEN];
    if (read_exact(fd, hdr, sizeof hdr, deadline) < 0)
        return -1;
    frame_hdr_decode(hdr, h);
    if (h->len > FRAME_MAX_BODY)
        return -1;
    uint8_t *body = malloc(h->len ? h->len : 1);
    if (!body || (h->len && read_exact(fd, body, h->len, deadline) < 0)) {
        free(body);
        return -1;
    }
    *msg = msg_decode(h->type, h->flags & FRAME_RESPONSE, body, h->len);
    free(body);
    return 0;
}

static void take_push(raw_member *rm, const frame_hdr *h, ProtobufCMessage *m)
{
    if (h->type == MSG_MEMBER_TABLE && !(h->flags & FRAME_RESPONSE) && m) {
        if (rm->members)
            msg_free(&rm->members->base);
        rm->members = (Fx__MemberTableReq *)m;
        return;
    }
    msg_free(m);
}

ProtobufCMessage *raw_member_call(raw_member *rm, uint16_t type, const ProtobufCMessage *req,
                                  int timeout_ms)
{
    uint64_t id = ++rm->next_req;
    size_t len;
    uint8_t *buf = msg_encode(type, 0, id, req, &len);
    if (!buf || send(rm->fd, buf, len, MSG_NOSIGNAL) != (ssize_t)len) {
        free(buf);
        return NULL;
    }
    free(buf);
    uint64_t deadline = test_now_ms() + (uint64_t)timeout_ms;
    for (;;) {
        frame_hdr h;
        ProtobufCMessage *m = NULL;
        if (read_frame(rm->fd, &h, &m, deadline) < 0)
            return NULL;
        if ((h.flags & FRAME_RESPONSE) && h.req_id == id)
            return m;
        take_push(rm, &h, m);
    }
}

void raw_member_poll(raw_member *rm, int ms)
{
    uint64_t deadline = test_now_ms() + (uint64_t)ms;
    for (;;) {
        uint64_t now = test_now_ms();
        if (now >= deadline)
            return;
        struct pollfd p = {.fd = rm->fd, .events = POLLIN};
        if (poll(&p, 1, (int)(deadline - now)) <= 0)
            continue;
        frame_hdr h;
        ProtobufCMessage *m = NULL;
        if (read_frame(rm->fd, &h, &m, deadline) < 0)
            return;
        take_push(rm, &h, m);
    }
}

int raw_member_register(raw_member *rm, const char *master_addr, const char *cluster_name,
                        const char *name, uint64_t segment_size)
{
    return raw_member_register_secret(rm, master_addr, cluster_name, name, segment_size, NULL);
}

int raw_member_register_secret(raw_member *rm, const char *master_addr, const char *cluster_name,
                               const char *name, uint64_t segment_size, const char *secret_file)
{
    memset(rm, 0, sizeof *rm);
    rm->fd = tcp_connect(master_addr);
    if (rm->fd < 0) {
        fprintf(stderr, "raw_member: cannot connect to %s\n", master_addr);
        return -1;
    }
    if (secret_file && secret_file[0] && raw_handshake_file(rm->fd, secret_file, name) < 0) {
        close(rm->fd);
        rm->fd = -1;
        return -1;
    }
    Fx__RegisterReq req = FX__REGISTER_REQ__INIT;
    req.cluster_name = (char *)cluster_name;
    req.node_name = (char *)name;
    req.segment_size = segment_size;
    req.data_addr = "127.0.0.1:1";
    ProtobufCMessage *m = raw_member_call(rm, MSG_REGISTER, &req.base, 5000);
    if (!m || msg_status(m)) {
        fprintf(stderr, "raw_member: Register failed: %s\n", m ? msg_detail(m) : "no answer");
        msg_free(m);
        close(rm->fd);
        rm->fd = -1;
        return -1;
    }
    Fx__RegisterResp *r = (Fx__RegisterResp *)m;
    rm->node_id = r->node_id;
    rm->tomb_tag = r->tomb_tag;
    msg_free(m);
    /* Every member reports after Register (no replicas, no pins here);
     * the master serves nothing else before. */
    Fx__RecoveryReportReq rep = FX__RECOVERY_REPORT_REQ__INIT;
    rep.last = true;
    m = raw_member_call(rm, MSG_RECOVERY_REPORT, &rep.base, 15000);
    if (!m || msg_status(m)) {
        fprintf(stderr, "raw_member: RecoveryReport failed: %s\n", m ? msg_detail(m) : "no answer");
        msg_free(m);
        close(rm->fd);
        rm->fd = -1;
        return -1;
    }
    msg_free(m);
    raw_member_poll(rm, 50);
    return 0;
}

int raw_member_route(raw_member *rm, const char *key, raw_route *out)
{
    memset(out, 0, sizeof *out);
    Fx__RouteInfoReq req = FX__ROUTE_INFO_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = strlen(key), .data = (uint8_t *)key};
    ProtobufCMessage *m = raw_member_call(rm, MSG_ROUTE_INFO, &req.base, 5000);
    if (!m)
        return FX_ECONN;
    int status = msg_status(m);
    if (status == 0) {
        Fx__RouteInfoResp *r = (Fx__RouteInfoResp *)m;
        out->found = true;
        out->len = r->len;
        if (r->put_id) {
            out->pid_time = r->put_id->time_ms;
            out->pid_version = r->put_id->version;
        }
        for (size_t i = 0; i < r->n_replicas; i++) {
            uint32_t node = r->replicas[i]->node_id;
            if (node >= 64)
                continue;
            if (r->replicas[i]->memory)
                out->mem |= 1ull << node;
            if (r->replicas[i]->ssd)
                out->ssd |= 1ull << node;
        }
        out->durable_slots = r->durable_slots_used;
    }
    msg_free(m);
    return status;
}

/* node_id's entry in the last member table, or NULL. */
static const Fx__MemberInfo *table_entry(const raw_member *rm, uint32_t node_id)
{
    for (size_t i = 0; rm->members && i < rm->members->n_members; i++)
        if (rm->members->members[i]->node_id == node_id)
            return rm->members->members[i];
    return NULL;
}

const char *raw_member_data_addr(raw_member *rm, uint32_t node_id)
{
    const Fx__MemberInfo *m = table_entry(rm, node_id);
    return m ? m->data_addr : "";
}

bool raw_member_pair_key(const raw_member *rm, uint32_t node_id, uint64_t *tomb_tag,
                         auth_key *key)
{
    const Fx__MemberInfo *m = table_entry(rm, node_id);
    if (!m || m->pair_key.len != AUTH_KEY_LEN)
        return false;
    *tomb_tag = m->tomb_tag;
    memcpy(key->bytes, m->pair_key.data, AUTH_KEY_LEN);
    return true;
}

int raw_member_heartbeat(raw_member *rm)
{
    Fx__HeartbeatReq req = FX__HEARTBEAT_REQ__INIT;
    ProtobufCMessage *m = raw_member_call(rm, MSG_HEARTBEAT, &req.base, 5000);
    int r = m && msg_status(m) == 0 ? 0 : -1;
    msg_free(m);
    return r;
}

void raw_member_close(raw_member *rm)
{
    if (rm->fd >= 0)
        close(rm->fd);
    rm->fd = -1;
    if (rm->members)
        msg_free(&rm->members->base);
    rm->members = NULL;
}
