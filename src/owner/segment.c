/*
 * segment.c - memfd segment creation and bounds checks (see segment.h).
 */
#include "owner/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"

int segment_create(segment *s, uint64_t size, bool prefault)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    if (size == 0 || size > (uint64_t)SIZE_MAX / 2)
        return -EINVAL;
    int fd = memfd_create("fluxon-segment", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r = 0;
    if (ftruncate(fd, (off_t)size) < 0) {
        r = -errno;
        goto fail;
    }
    if (prefault && fallocate(fd, 0, 0, (off_t)size) < 0) {
        r = -errno;
        FX_LOG(ERROR, "cannot reserve %llu bytes of shared memory: %s", (unsigned long long)size,
               strerror(errno));
        goto fail;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | (prefault ? MAP_POPULATE : 0),
                   fd, 0);
    if (p == MAP_FAILED) {
        r = -errno;
        goto fail;
    }
    madvise(p, size, MADV_HUGEPAGE); /* effective only where shmem THP is enabled */
    s->fd = fd;
    s->base = p;
    s->size = size;
    return 0;
fail:
    close(fd);
    return r;
}

void segment_destroy(segment *s)
{
    if (s->base)
        munmap(s->base, s->size);
    if (s->fd >= 0)
        close(s->fd);
    s->base = NULL;
    s->fd = -1;
}

bool segment_contains(const segment *s, uint64_t off, uint64_t len)
{
    return off <= s->size && len <= s->size - off;
}
