/* loopback.c - one loopback TCP stream as the data-plane baseline (see loopback.h). */
#include "loopback.h"
#include "benchutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SOCK_BUF (4 << 20) /* as the data plane's DP_SOCK_BUF */

/* The data plane's socket settings (src/owner/dataplane: dp_tune_socket).
 * cc receives the congestion control the socket ended up with. */
static void tune_socket(int fd, char *cc, size_t cap)
{
    int one = 1, sz = SOCK_BUF;
    static const char reno[] = "reno";
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, reno, sizeof reno - 1); /* may be refused */
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    if (cc) {
        socklen_t len = (socklen_t)cap - 1;
        if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &len) < 0)
            snprintf(cc, cap, "?");
        else
            cc[len < cap ? len : cap - 1] = 0;
    }
}

/* A connected 127.0.0.1 pair: *snd connects, *rcv is accepted. Both are
 * tuned before the handshake (so the window scale fits the buffers). Returns
 * 0 or -1 after printing why. */
static int tcp_pair(int *snd, int *rcv, char *cc, size_t cap)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), s = -1, r = -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (l < 0)
        goto fail;
    tune_socket(l, NULL, 0);
    if (bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &alen) < 0)
        goto fail;
    s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        goto fail;
    tune_socket(s, cc, cap);
    if (connect(s, (struct sockaddr *)&a, sizeof a) < 0)
        goto fail;
    r = accept(l, NULL, NULL);
    if (r < 0)
        goto fail;
    tune_socket(r, NULL, 0);
    close(l);
    *snd = s;
    *rcv = r;
    return 0;
fail:
    fprintf(stderr, "loopback: pair: %s\n", strerror(errno));
    if (l >= 0)
        close(l);
    if (s >= 0)
        close(s);
    return -1;
}

typedef struct lb_sender {
    int fd;
    const lb_bufs *lb;
    atomic_bool stop;
    int err;
} lb_sender;

static void *send_main(void *arg)
{
    lb_sender *s = arg;
    size_t off = 0;
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
        for (size_t done = 0; done < LB_CHUNK;) {
            ssize_t n = send(s->fd, s->lb->src + off + done, LB_CHUNK - done, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                s->err = n < 0 ? errno : EPIPE;
                return NULL;
            }
            done += (size_t)n;
        }
        off += LB_CHUNK;
        if (off + LB_CHUNK > s->lb->src_len)
            off = 0;
    }
    shutdown(s->fd, SHUT_WR);
    return NULL;
}

/* Reads exactly len bytes; 0, or an errno (EPIPE at end of stream). */
static int recv_full(int fd, uint8_t *to, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = recv(fd, to + done, len - done, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EPIPE;
        done += (size_t)n;
    }
    return 0;
}

int lb_stream(const lb_bufs *lb, uint64_t warm_ns, uint64_t run_ns, uint64_t *chunks,
              double *secs, hist *h, char *cc, size_t cap)
{
    lb_sender s = {.lb = lb};
    int rfd;
    *chunks = 0;
    *secs = 0;
    if (lb->src_len < LB_CHUNK || lb->ring_len < LB_CHUNK) {
        fprintf(stderr, "loopback: buffers of %zu and %zu bytes (at least %u each)\n",
                lb->src_len, lb->ring_len, LB_CHUNK);
        return -1;
    }
    if (tcp_pair(&s.fd, &rfd, cc, cap) < 0)
        return -1;
    pthread_t th;
    if (pthread_create(&th, NULL, send_main, &s) != 0) {
        fprintf(stderr, "loopback: cannot start the sender thread\n");
        close(s.fd);
        close(rfd);
        return -1;
    }
    size_t off = 0;
    int err = 0;
    uint64_t t0 = now_ns(), start = t0 + warm_ns, end = start + run_ns, ops = 0, t = t0;
    while (!err && t < end) {
        uint64_t c0 = now_ns();
        err = recv_full(rfd, lb->ring + off, LB_CHUNK);
        t = now_ns();
        off += LB_CHUNK;
        if (off + LB_CHUNK > lb->ring_len)
            off = 0;
        if (c0 >= start && !err) {
            if (h)
                hist_add(h, t - c0);
            ops++;
        }
    }
    atomic_store(&s.stop, true);
    /* Drain until the sender's shutdown, so it never blocks in send. */
    while (!err && recv(rfd, lb->ring, LB_CHUNK, 0) > 0)
        ;
    pthread_join(th, NULL);
    close(s.fd);
    close(rfd);
    if (err || s.err) {
        fprintf(stderr, "loopback: stream: %s\n", strerror(err ? err : s.err));
        return -1;
    }
    *chunks = ops;
    *secs = (double)(t - (start > t0 ? start : t0)) / 1e9;
    return 0;
}

uint8_t *lb_huge_alloc(size_t len, int seed, unsigned long long *huge_kib)
{
    size_t align = 2u << 20;
    uint8_t *p = mmap(NULL, len + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                      0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "loopback: cannot map %zu bytes: %s\n", len, strerror(errno));
        return NULL;
    }
    uint8_t *a = (uint8_t *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
    if (a > p)
        munmap(p, (size_t)(a - p));
    munmap(a + len, (size_t)(p + align - a));
    madvise(a, len, MADV_HUGEPAGE); /* a hint: 4 KiB pages when refused */
    memset(a, 0x5a ^ seed, len);
    *huge_kib = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    bool inside = false;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, kib;
        if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2)
            inside = (uintptr_t)a >= lo && (uintptr_t)a < hi;
        else if (inside && sscanf(line, "AnonHugePages: %llu kB", &kib) == 1)
            *huge_kib = kib;
    }
    if (f)
        fclose(f);
    return a;
}
