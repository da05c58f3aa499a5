/*
 * reserve_lock.c - the machine-wide lock around checking and reserving a
 * segment (see reserve_lock.h).
 */
#include "owner/reserve_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

static uint64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Opens the lock file, creating it readable by everyone when it is missing.
 * Read-only is enough for flock, so other users' owners can share it. Never
 * blocks (a FIFO planted at the path would) and takes only a regular file. */
static int open_lock_file(const char *path)
{
    const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
    int fd = open(path, flags);
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, flags | O_CREAT | O_EXCL, 0644);
        if (fd >= 0)
            fchmod(fd, 0644); /* whatever the umask: others must be able to open it */
        else if (errno == EEXIST)
            fd = open(path, flags); /* another owner created it just now */
    }
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    return fd;
}

int reserve_lock_take(void)
{
    const char *path = getenv("FLUXON_SEGMENT_LOCK");
    if (!path || !*path)
        path = RESERVE_LOCK_PATH;
    int fd = open_lock_file(path);
    if (fd < 0) {
        FX_LOG(WARN, "cannot open %s (%s): reserving the segment without it", path,
               fd == -EINVAL ? "not a regular file" : strerror(-fd));
        return -1;
    }
    uint64_t start = monotonic_ms();
    bool told = false;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK || monotonic_ms() - start >= RESERVE_LOCK_WAIT_MS) {
            FX_LOG(WARN, "cannot lock %s (%s): reserving the segment without it", path,
                   errno == EWOULDBLOCK ? "held too long by another process" : strerror(errno));
            close(fd);
            return -1;
        }
        if (!told)
            FX_LOG(INFO, "waiting for %s: another owner is reserving its segment", path);
        told = true;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    return fd;
}

void reserve_lock_release(int fd)
{
    if (fd >= 0)
        close(fd);
}
