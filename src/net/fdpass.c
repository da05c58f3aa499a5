/*
 * fdpass.c - SCM_RIGHTS send and receive (see fdpass.h). The descriptor rides
 * with the first chunk of the message; the rest is plain stream data.
 */
#include "net/fdpass.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int wait_fd(int sock, short ev, int timeout_ms)
{
    struct pollfd p = {.fd = sock, .events = ev};
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    return r == 0 ? -ETIMEDOUT : 0;
}

int fdpass_send(int sock, const void *buf, size_t len, int fd, int timeout_ms)
{
    size_t off = 0;
    while (off < len) {
        struct iovec iov = {.iov_base = (char *)buf + off, .iov_len = len - off};
        union {
            char b[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } ctl;
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
        if (off == 0 && fd >= 0) {
            memset(&ctl, 0, sizeof ctl);
            mh.msg_control = ctl.b;
            mh.msg_controllen = sizeof ctl.b;
            struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
            cm->cmsg_level = SOL_SOCKET;
            cm->cmsg_type = SCM_RIGHTS;
            cm->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(cm), &fd, sizeof fd);
        }
        ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                int r = wait_fd(sock, POLLOUT, timeout_ms);
                if (r < 0)
                    return r;
                continue;
            }
            return -errno;
        }
        off += (size_t)n;
    }
    return 0;
}

int fdpass_recv(int sock, void *buf, size_t len, int *fd, int timeout_ms)
{
    size_t off = 0;
    *fd = -1;
    while (off < len) {
        int r = wait_fd(sock, POLLIN, timeout_ms);
        if (r < 0)
            goto fail_r;
        struct iovec iov = {.iov_base = (char *)buf + off, .iov_len = len - off};
        union {
            char b[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } ctl;
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                            .msg_controllen = sizeof ctl.b};
        ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            r = -errno;
            goto fail_r;
        }
        if (n == 0) {
            r = -ECONNRESET;
            goto fail_r;
        }
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
                int got;
                memcpy(&got, CMSG_DATA(cm), sizeof got);
                if (*fd < 0)
                    *fd = got;
                else
                    close(got);
            }
        }
        off += (size_t)n;
        continue;
    fail_r:
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        return r;
    }
    return 0;
}
