/*
 * netio.h - blocking TCP helpers shared by the memcached and redis adapters
 * of the pressure benchmark.
 *
 * Both adapters speak a line-oriented text protocol over one blocking TCP
 * connection per worker thread: a request goes out with netio_send(), the
 * reply's header line comes back through netio_read_line() and its payload
 * through netio_read_exact() into a growable buffer the connection owns.
 * Every call here is bounded: connect, send and receive have timeouts
 * (a receive or send that makes no progress for timeout_ms fails with
 * -ETIMEDOUT), lines have a maximum length, and a buffer never grows past
 * the limit its caller names. Functions return 0 (or a length) on success and
 * a negative errno on failure; they never read or leave a meaning in the
 * global errno. Nothing here is thread-safe: one thread owns one socket and
 * its reader.
 */
#ifndef FX_BENCH_PRESSURE_NETIO_H
#define FX_BENCH_PRESSURE_NETIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Connects to addr ("host:port", "[v6addr]:port") within timeout_ms, sets
 * TCP_NODELAY and send/receive timeouts of io_timeout_ms on the socket, and
 * leaves it blocking. Returns the socket (>= 0; the caller closes it), or a
 * negative errno with a message naming the address in err. */
int netio_connect(const char *addr, int timeout_ms, int io_timeout_ms, char *err, size_t errlen);

/* Sends every byte of the iovcnt buffers in iov, in order, resuming after
 * short writes and EINTR; never raises SIGPIPE. iov is modified (consumed).
 * Returns 0, or -ETIMEDOUT / -EPIPE / another negative errno, after which the
 * stream is out of sync and the socket should be closed. */
int netio_sendv(int fd, struct iovec *iov, int iovcnt);

/* netio_sendv() of one buffer. */
int netio_send(int fd, const void *buf, size_t len);

/* snprintf into err when err is non-NULL and errlen > 0 (the adapters'
 * error-message convention). */
void netio_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A growable byte buffer; owned by whoever embeds it, freed with
 * netio_buf_free(). */
typedef struct netio_buf {
    uint8_t *p;
    size_t cap;
} netio_buf;

/* Makes b hold at least n bytes (contents not kept). Returns 0, -EMSGSIZE
 * when n > limit, or -ENOMEM; b is unchanged on failure. */
int netio_buf_reserve(netio_buf *b, size_t n, size_t limit);
void netio_buf_free(netio_buf *b);

/* A buffered reader over one socket. Bytes received past the current line
 * stay in buf and are handed out first by the next call. */
typedef struct netio_reader {
    int fd;
    uint8_t *buf;
    size_t cap;
    size_t start; /* first unread byte */
    size_t end;   /* one past the last received byte */
} netio_reader;

/* Allocates a cap-byte line buffer for fd (cap also bounds one line).
 * Returns 0 or -ENOMEM / -EINVAL. The reader does not own fd. */
int netio_reader_init(netio_reader *r, int fd, size_t cap);
/* Frees the buffer; NULL-safe, and safe on a zeroed reader. */
void netio_reader_free(netio_reader *r);

/* Reads one CRLF-terminated line of at most max bytes (CRLF excluded; max
 * < r->cap). On success returns the length and points *line at the line,
 * NUL-terminated in place of the CR; the pointer stays valid until the next
 * call on r. Errors: -EMSGSIZE when no CRLF came within max bytes, -EPROTO
 * for a bare LF, -ECONNRESET when the server closed the connection,
 * -ETIMEDOUT, or another negative errno. After an error the stream is out of
 * sync. */
ssize_t netio_read_line(netio_reader *r, size_t max, char **line);

/* Reads exactly n bytes into dst->p[0..n), first from what r has buffered,
 * then straight from the socket; grows dst to n bytes first (-EMSGSIZE when
 * n > limit, -ENOMEM). Returns 0 or a negative errno as netio_read_line(). */
int netio_read_exact(netio_reader *r, netio_buf *dst, size_t n, size_t limit);

#endif
