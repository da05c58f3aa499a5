/*
 * sock_probe.c - probing a daemon's listeners from outside (see sock_probe.h).
 */
#include "sock_probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fluxon/fluxon.h"
#include "raw_member.h"

uint64_t probe_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int connect_to(int family, const struct sockaddr *sa, socklen_t len)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, sa, len) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

int probe_tcp(const char *addr)
{
    char host[64];
    snprintf(host, sizeof host, "%s", addr);
    char *colon = strrchr(host, ':');
    if (!colon)
        return -EINVAL;
    *colon = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return -EINVAL;
    return connect_to(AF_INET, (struct sockaddr *)&sa, sizeof sa);
}

int probe_unix(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return -ENAMETOOLONG;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    return connect_to(AF_UNIX, (struct sockaddr *)&sa, sizeof sa);
}

bool probe_wait_closed(int fd, int timeout_ms, size_t *got)
{
    uint64_t deadline = probe_now_ms() + (uint64_t)timeout_ms;
    char scratch[4096];
    *got = 0;
    for (;;) {
        uint64_t now = probe_now_ms();
        if (now >= deadline)
            return false;
        struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
        int r = poll(&p, 1, (int)(deadline - now));
        if (r < 0 && errno != EINTR)
            return false;
        if (r <= 0)
            continue;
        ssize_t n = recv(fd, scratch, sizeof scratch, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return true;
        if (n > 0)
            *got += (size_t)n;
        else if (errno != EAGAIN && errno != EINTR)
            return false;
    }
}

bool probe_is_open(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    return poll(&p, 1, 0) == 0;
}

int probe_http_get(const char *addr, const char *path, int timeout_ms, char **body)
{
    *body = NULL;
    int fd = probe_tcp(addr);
    if (fd < 0)
        return fd;
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", path);
    if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
        int e = errno ? -errno : -EIO;
        close(fd);
        return e;
    }
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap);
    int rc = -ENOMEM;
    while (buf) {
        if (len + 1 == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = recv(fd, buf + len, cap - 1 - len, 0);
        if (r > 0) {
            len += (size_t)r;
            continue;
        }
        rc = r == 0 ? 0 : errno == EAGAIN ? -ETIMEDOUT : -errno;
        break;
    }
    close(fd);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[len] = 0;
    int status = 0;
    char *sep = strstr(buf, "\r\n\r\n");
    if (sscanf(buf, "HTTP/%*s %d", &status) != 1 || !sep) {
        free(buf);
        return -EPROTO;
    }
    memmove(buf, sep + 4, len - (size_t)(sep + 4 - buf) + 1);
    *body = buf;
    return status;
}

int probe_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

long probe_raise_nofile(long want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -1;
    if ((long)rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || (long)rl.rlim_max >= want
                          ? (rlim_t)want
                          : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return (long)rl.rlim_cur;
}

long probe_rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

int probe_owner_data_addr(const test_cluster *tc, int i, raw_member *rm, char *out, size_t cap)
{
    char name[32];
    snprintf(name, sizeof name, "owner%d", i);
    int err = 0;
    fx_client *c = fx_connect(tc->sockets[i], &err);
    if (!c) {
        fprintf(stderr, "probe: cannot reach %s: %s\n", name, fx_strerror(err));
        return -1;
    }
    fx_owner_stat st[TEST_CLUSTER_MAX_OWNERS];
    size_t n = 0;
    uint32_t node = 0;
    if (fx_stat(c, st, TEST_CLUSTER_MAX_OWNERS, &n) == 0)
        for (size_t k = 0; k < n && k < TEST_CLUSTER_MAX_OWNERS; k++)
            if (strcmp(st[k].name, name) == 0)
                node = st[k].node_id;
    fx_close(c);
    if (!node) {
        fprintf(stderr, "probe: the master does not list %s\n", name);
        return -1;
    }
    raw_member own;
    /* A segment of 1 byte: never a placement target. */
    if (!rm && raw_member_register(&own, tc->master_addr, "test", "addr-prober", 1) < 0)
        return -1;
    raw_member *reader = rm ? rm : &own;
    for (int t = 0; t < 100 && !*raw_member_data_addr(reader, node); t++)
        raw_member_poll(reader, 50);
    snprintf(out, cap, "%s", raw_member_data_addr(reader, node));
    if (!rm)
        raw_member_close(&own);
    if (!*out) {
        fprintf(stderr, "probe: no data-plane address for %s in the member table\n", name);
        return -1;
    }
    return 0;
}
