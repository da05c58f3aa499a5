/*
 * fileio.c - the file chores of the `fluxon` command (see fileio.h).
 *
 * Values given to `put` may be large, so fio_read_all sizes its buffer from
 * fstat when the input is a regular file and doubles it otherwise (pipes), up
 * to one byte past the caller's limit.
 */
#include "cli/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define READ_CHUNK_MIN (64u * 1024u)

int fio_read_all(int fd, size_t limit, void **buf, size_t *len)
{
    return fio_read_all_cb(fd, limit, buf, len, NULL, NULL);
}

int fio_read_all_cb(int fd, size_t limit, void **buf, size_t *len,
                    void (*on_read)(void *ud, size_t done), void *ud)
{
    struct stat st;
    size_t cap = READ_CHUNK_MIN;
    if (limit >= SIZE_MAX - 1)
        limit = SIZE_MAX - 2;
    /* One byte more than the file size so that EOF is seen without a realloc. */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        if ((uint64_t)st.st_size > limit)
            return -EFBIG;
        cap = (size_t)st.st_size + 1;
    }
    /* Never more than limit + 1 bytes: one past the limit proves the excess. */
    if (cap > limit + 1)
        cap = limit + 1;

    char *data = malloc(cap);
    if (!data)
        return -ENOMEM;
    size_t used = 0;
    for (;;) {
        if (used == cap) {
            if (cap > limit) {
                free(data);
                return -EFBIG;
            }
            size_t next = cap > SIZE_MAX / 2 || cap * 2 > limit + 1 ? limit + 1 : cap * 2;
            char *bigger = realloc(data, next);
            if (!bigger) {
                free(data);
                return -ENOMEM;
            }
            data = bigger;
            cap = next;
        }
        size_t want = cap - used;
        if (want > (size_t)SSIZE_MAX)
            want = (size_t)SSIZE_MAX;
        if (on_read && want > FIO_READ_STEP)
            want = FIO_READ_STEP;
        ssize_t n = read(fd, data + used, want);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(data);
            return -e;
        }
        if (n == 0)
            break;
        used += (size_t)n;
        if (on_read)
            on_read(ud, used);
    }
    *buf = data;
    *len = used;
    return 0;
}

int fio_read_exact_cb(int fd, void *buf, size_t len, void (*on_read)(void *ud, size_t done),
                      void *ud)
{
    char *p = buf;
    size_t used = 0;
    while (used < len) {
        size_t want = len - used;
        if (want > FIO_READ_STEP)
            want = FIO_READ_STEP;
        ssize_t n = read(fd, p + used, want);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        used += (size_t)n;
        if (on_read)
            on_read(ud, used);
    }
    return 0;
}

int fio_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        size_t want = len > (size_t)SSIZE_MAX ? (size_t)SSIZE_MAX : len;
        ssize_t n = write(fd, p, want);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int fio_write_atomic(const char *path, const void *buf, size_t len, mode_t mode)
{
    char tmp[PATH_MAX];
    int rc;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return -ENAMETOOLONG;

    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    rc = fio_write_all(fd, buf, len);
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

int fio_read_small(const char *path, char *buf, size_t cap, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t used = 0;
    int rc = 0;
    while (used + 1 < cap) {
        ssize_t n = read(fd, buf + used, cap - 1 - used);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    close(fd);
    if (rc != 0)
        return rc;
    buf[used] = '\0';
    if (len)
        *len = used;
    return 0;
}

void fio_print_tail(FILE *out, const char *path, int lines)
{
    enum { TAIL_BYTES = 16 * 1024 };
    char buf[TAIL_BYTES + 1];

    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(out, "(cannot read %s: %s)\n", path, strerror(errno));
        return;
    }
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > TAIL_BYTES ? size - TAIL_BYTES : 0;
    ssize_t n = size > 0 ? pread(fd, buf, (size_t)(size - from), from) : 0;
    close(fd);
    if (n <= 0) {
        fprintf(out, "(%s is empty)\n", path);
        return;
    }
    buf[n] = '\0';

    /* Walk back over `lines` newlines, not counting the one that ends the file. */
    char *start = buf;
    ssize_t i = n - 1;
    if (buf[i] == '\n')
        i--;
    for (int seen = 0; i >= 0; i--) {
        if (buf[i] == '\n' && ++seen == lines) {
            start = buf + i + 1;
            break;
        }
    }
    fprintf(out, "--- last lines of %s ---\n%s", path, start);
    if (buf[n - 1] != '\n')
        fputc('\n', out);
}
