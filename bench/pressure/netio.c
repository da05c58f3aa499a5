/*
 * netio.c - blocking TCP helpers shared by the memcached and redis adapters
 * of the pressure benchmark (see netio.h).
 *
 * The socket is connected non-blocking so the connect can be bounded with
 * poll(), then switched back to blocking with SO_SNDTIMEO / SO_RCVTIMEO set:
 * a send or receive that makes no progress for the timeout fails with EAGAIN,
 * reported as -ETIMEDOUT. Sends use sendmsg(MSG_NOSIGNAL) so a peer that
 * went away is -EPIPE, not a signal. The reader keeps a fixed line buffer;
 * payloads bigger than what is already buffered are received straight into
 * the caller's buffer, so a 16 MiB value is copied once, not twice.
 */
#include "netio.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NETIO_HOST_MAX 255
#define NETIO_PORT_MAX 15

void netio_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Splits "host:port" or "[v6]:port" into NUL-terminated host and port. */
static int split_addr(const char *addr, char *host, char *port)
{
    const char *colon;
    const char *h = addr;
    size_t hlen;
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        if (!close || close[1] != ':')
            return -EINVAL;
        h = addr + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon || memchr(addr, ':', (size_t)(colon - addr)))
            return -EINVAL; /* no port, or an unbracketed IPv6 address */
        hlen = (size_t)(colon - addr);
    }
    size_t plen = strlen(colon + 1);
    if (hlen == 0 || hlen > NETIO_HOST_MAX || plen == 0 || plen > NETIO_PORT_MAX ||
        strspn(colon + 1, "0123456789") != plen)
        return -EINVAL;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    memcpy(port, colon + 1, plen + 1);
    return 0;
}

/* One connect attempt to ai before deadline; returns the blocking socket or
 * a negative errno. */
static int connect_one(const struct addrinfo *ai, int64_t deadline, int io_timeout_ms)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS && errno != EINTR) {
            rc = -errno;
            goto fail;
        }
        /* EINTR leaves the connect running asynchronously, like EINPROGRESS. */
        for (;;) {
            int64_t left = deadline - now_ms();
            if (left <= 0) {
                rc = -ETIMEDOUT;
                goto fail;
            }
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            int n = poll(&pfd, 1, (int)left);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                rc = -errno;
                goto fail;
            }
            if (n > 0)
                break;
        }
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
            rc = -errno;
            goto fail;
        }
        if (soerr) {
            rc = -soerr;
            goto fail;
        }
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        rc = -errno;
        goto fail;
    }
    int one = 1;
    struct timeval tv = {.tv_sec = io_timeout_ms / 1000,
                         .tv_usec = (io_timeout_ms % 1000) * 1000};
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0) {
        rc = -errno;
        goto fail;
    }
    return fd;
fail:
    close(fd);
    return rc;
}

int netio_connect(const char *addr, int timeout_ms, int io_timeout_ms, char *err, size_t errlen)
{
    char host[NETIO_HOST_MAX + 1], port[NETIO_PORT_MAX + 1];
    if (!addr || timeout_ms <= 0 || io_timeout_ms <= 0 || split_addr(addr, host, port) < 0) {
        netio_errf(err, errlen, "bad address '%s' (want host:port)", addr ? addr : "(null)");
        return -EINVAL;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        netio_errf(err, errlen, "resolve %s: %s", addr, gai_strerror(gai));
        return -EHOSTUNREACH;
    }
    int64_t deadline = now_ms() + timeout_ms;
    int rc = -EHOSTUNREACH;
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        rc = connect_one(ai, deadline, io_timeout_ms);
        if (rc >= 0 || rc == -ETIMEDOUT)
            break;
    }
    freeaddrinfo(res);
    if (rc < 0)
        netio_errf(err, errlen, "connect %s: %s", addr, strerror(-rc));
    return rc;
}

int netio_sendv(int fd, struct iovec *iov, int iovcnt)
{
    while (iovcnt > 0) {
        if (iov->iov_len == 0) {
            iov++;
            iovcnt--;
            continue;
        }
        struct msghdr msg;
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = iov;
        msg.msg_iovlen = (size_t)iovcnt;
        ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
        }
        size_t left = (size_t)n;
        while (iovcnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (left) { /* a short write stopped inside this iovec */
            iov->iov_base = (uint8_t *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

int netio_send(int fd, const void *buf, size_t len)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return netio_sendv(fd, &iov, 1);
}

int netio_buf_reserve(netio_buf *b, size_t n, size_t limit)
{
    if (n <= b->cap)
        return 0;
    if (n > limit)
        return -EMSGSIZE;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < n)
        cap = cap > limit / 2 ? limit : cap * 2;
    /* The old contents are not needed, so no realloc copy. */
    uint8_t *p = malloc(cap);
    if (!p)
        return -ENOMEM;
    free(b->p);
    b->p = p;
    b->cap = cap;
    return 0;
}

void netio_buf_free(netio_buf *b)
{
    if (!b)
        return;
    free(b->p);
    b->p = NULL;
    b->cap = 0;
}

int netio_reader_init(netio_reader *r, int fd, size_t cap)
{
    memset(r, 0, sizeof *r);
    if (cap < 16)
        return -EINVAL;
    r->buf = malloc(cap);
    if (!r->buf)
        return -ENOMEM;
    r->fd = fd;
    r->cap = cap;
    return 0;
}

void netio_reader_free(netio_reader *r)
{
    if (!r)
        return;
    free(r->buf);
    r->buf = NULL;
    r->cap = r->start = r->end = 0;
}

/* One recv() into p; returns the count (> 0) or a negative errno. */
static ssize_t recv_some(int fd, void *p, size_t n)
{
    for (;;) {
        ssize_t got = recv(fd, p, n, 0);
        if (got > 0)
            return got;
        if (got == 0)
            return -ECONNRESET; /* the server closed the connection */
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
    }
}

ssize_t netio_read_line(netio_reader *r, size_t max, char **line)
{
    if (max + 2 > r->cap)
        return -EINVAL;
    size_t scanned = 0; /* bytes from start already known to hold no LF */
    for (;;) {
        size_t have = r->end - r->start;
        uint8_t *lf = memchr(r->buf + r->start + scanned, '\n', have - scanned);
        if (lf) {
            size_t len = (size_t)(lf - (r->buf + r->start)); /* includes the CR */
            if (len == 0 || lf[-1] != '\r')
                return -EPROTO;
            if (len - 1 > max)
                return -EMSGSIZE;
            lf[-1] = '\0';
            *line = (char *)r->buf + r->start;
            r->start += len + 1;
            return (ssize_t)(len - 1);
        }
        scanned = have;
        if (have >= max + 2)
            return -EMSGSIZE;
        if (r->start > 0) { /* make room: at most cap bytes move */
            memmove(r->buf, r->buf + r->start, have);
            r->start = 0;
            r->end = have;
        }
        ssize_t got = recv_some(r->fd, r->buf + r->end, r->cap - r->end);
        if (got < 0)
            return got;
        r->end += (size_t)got;
    }
}

int netio_read_exact(netio_reader *r, netio_buf *dst, size_t n, size_t limit)
{
    int rc = netio_buf_reserve(dst, n, limit);
    if (rc < 0)
        return rc;
    size_t have = r->end - r->start;
    size_t got = have < n ? have : n;
    if (got) {
        memcpy(dst->p, r->buf + r->start, got);
        r->start += got;
    }
    if (r->start == r->end)
        r->start = r->end = 0;
    while (got < n) {
        ssize_t k = recv_some(r->fd, dst->p + got, n - got);
        if (k < 0)
            return (int)k;
        got += (size_t)k;
    }
    return 0;
}
