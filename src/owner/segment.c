/*
 * segment.c - memfd segment creation and bounds checks (see segment.h).
 */
#include "owner/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "common/mem_avail.h"
#include "common/size.h"
#include "owner/reserve_lock.h"

typedef struct touch_job {
    volatile uint8_t *base;
    uint64_t from, to;
} touch_job;

static void *touch_range(void *arg)
{
    touch_job *j = arg;
    for (uint64_t off = j->from; off < j->to; off += 4096)
        j->base[off] = 0;
    return NULL;
}

/* Writes one byte per page from several threads. fallocate gives the guest
 * its pages, but on these virtual machines the host still backs them lazily:
 * measured here, the first copy into a fallocated, populated memfd runs at
 * 0.9 GB/s and every later one at 20+ GB/s, while one written byte per page
 * moves that cost to startup. */
static void touch_pages(uint8_t *base, uint64_t size)
{
    enum { MAX_THREADS = 8 };
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : (int)cpus;
    pthread_t th[MAX_THREADS];
    touch_job jobs[MAX_THREADS];
    uint64_t pages = (size + 4095) / 4096, per = (pages + (uint64_t)n - 1) / (uint64_t)n;
    int started = 0;
    for (int i = 0; i < n; i++) {
        uint64_t from = (uint64_t)i * per * 4096, to = from + per * 4096;
        jobs[i] = (touch_job){base, from < size ? from : size, to < size ? to : size};
        if (i > 0 && pthread_create(&th[i], NULL, touch_range, &jobs[i]) == 0)
            started |= 1 << i;
        else if (i > 0)
            touch_range(&jobs[i]);
    }
    touch_range(&jobs[0]);
    for (int i = 1; i < n; i++)
        if (started & (1 << i))
            pthread_join(th[i], NULL);
}

#define HUGE_PAGE (2ull << 20)

/* The seals a segment carries before its fd is passed to any client: its size
 * can never change (a client's ftruncate would turn every value into zeros for
 * every reader, or SIGBUS them), and no one can lift that. */
#define SEGMENT_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

/* Creates, sizes and seals the memfd (and reserves its pages when asked). */
static int make_memfd(uint64_t size, bool huge, bool reserve, int *out)
{
    int fd = memfd_create("fluxon-segment",
                          MFD_CLOEXEC | MFD_ALLOW_SEALING | (huge ? MFD_HUGETLB : 0));
    if (fd < 0)
        return -errno;
    int r = 0;
    if (ftruncate(fd, (off_t)size) < 0 || (reserve && fallocate(fd, 0, 0, (off_t)size) < 0) ||
        fcntl(fd, F_ADD_SEALS, SEGMENT_SEALS) < 0) {
        r = -errno;
        close(fd);
        return r;
    }
    *out = fd;
    return 0;
}

/* What a 4 KiB-page segment must leave to the rest of the machine. */
static uint64_t headroom(uint64_t avail)
{
    uint64_t h = avail / 32;
    return h > SEGMENT_MIN_HEADROOM ? h : SEGMENT_MIN_HEADROOM;
}

/* -ENOMEM with the reason in err when size bytes of ordinary memory would not
 * leave the machine its headroom; 0 when they fit or the figure is unknown. */
static int check_fits(uint64_t size, char *err, size_t errlen)
{
    uint64_t avail;
    if (mem_available(&avail) < 0)
        return 0;
    uint64_t keep = headroom(avail);
    if (avail > keep && size <= avail - keep)
        return 0;
    char want[32], have[32], left[32];
    size_format(size, want, sizeof want);
    size_format(avail, have, sizeof have);
    size_format(keep, left, sizeof left);
    snprintf(err, errlen,
             "%s is more than this machine can give: %s of memory is available "
             "(MemAvailable, or the cgroup's limit) and %s must stay free",
             want, have, left);
    return -ENOMEM;
}

int segment_create(segment *s, uint64_t size, bool prefault, bool try_huge, char *err,
                   size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    snprintf(err, errlen, "%s", "");
    if (size == 0 || size > (uint64_t)SIZE_MAX / 2) {
        snprintf(err, errlen, "a size of %llu bytes is out of range", (unsigned long long)size);
        return -EINVAL;
    }
    int fd = -1, r = -1;
    uint64_t huge_size = size & ~(HUGE_PAGE - 1);
    if (try_huge && huge_size) {
        /* hugetlb pages are always reserved up front: fallocate fails cleanly
         * when too few are free. */
        r = make_memfd(huge_size, true, true, &fd);
        if (r == 0) {
            size = huge_size;
            s->huge = true;
        } else {
            FX_LOG(INFO, "no %llu bytes of reserved huge pages (%s); using 4 KiB pages",
                   (unsigned long long)huge_size, strerror(-r));
        }
    }
    if (fd < 0) {
        /* Without prefault nothing is reserved here, so there is nothing
         * for later owners to see: no need to wait for them. */
        int lock = prefault ? reserve_lock_take() : -1;
        r = check_fits(size, err, errlen);
        if (r == 0)
            r = make_memfd(size, false, prefault, &fd);
        reserve_lock_release(lock); /* with prefault the pages are taken: later owners see it */
        if (r < 0) {
            if (!err[0])
                snprintf(err, errlen, "cannot reserve %llu bytes of shared memory: %s",
                         (unsigned long long)size, strerror(-r));
            return r;
        }
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        r = -errno;
        snprintf(err, errlen, "cannot map the segment: %s", strerror(-r));
        close(fd);
        return r;
    }
    if (prefault)
        touch_pages(p, size);
    s->fd = fd;
    s->base = p;
    s->size = size;
    FX_LOG(INFO, "segment: %llu bytes on %s pages", (unsigned long long)size,
           s->huge ? "2 MiB huge" : "4 KiB");
    return 0;
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
