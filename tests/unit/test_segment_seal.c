/*
 * test_segment_seal.c - the segment memfd handed to clients cannot change its
 * size: ftruncate to shrink or grow fails with EPERM, and the seals cannot be
 * lifted or added to (F_SEAL_SEAL), on 4 KiB pages and, where huge pages are
 * reserved, on 2 MiB pages. Before the seals, one client's ftruncate made every
 * value read back as zeros and killed other clients with SIGBUS.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "owner/segment.h"
#include "testlib.h"

static void check_sealed(const segment *s, const char *what)
{
    int seals = fcntl(s->fd, F_GET_SEALS);
    int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
    CHECK(seals >= 0 && (seals & want) == want, "%s: seals 0x%x, want 0x%x", what, seals, want);
    errno = 0;
    CHECK(ftruncate(s->fd, (off_t)(s->size / 2)) < 0 && errno == EPERM,
          "%s: shrinking the segment: %s", what, errno ? strerror(errno) : "it worked");
    errno = 0;
    CHECK(ftruncate(s->fd, (off_t)(s->size * 2)) < 0 && errno == EPERM,
          "%s: growing the segment: %s", what, errno ? strerror(errno) : "it worked");
    errno = 0;
    CHECK(fcntl(s->fd, F_ADD_SEALS, F_SEAL_WRITE) < 0 && errno == EPERM,
          "%s: adding a seal after F_SEAL_SEAL: %s", what, errno ? strerror(errno) : "it worked");
    /* The owner's own writes still land: only the size is sealed. */
    s->base[s->size - 1] = 0x5a;
    CHECK(s->base[s->size - 1] == 0x5a, "%s: the last byte is not writable", what);
}

int main(void)
{
    char err[256];
    segment s;
    REQUIRE(segment_create(&s, 8ull << 20, false, false, err, sizeof err) == 0, "create: %s",
            err);
    check_sealed(&s, "4 KiB pages");
    segment_destroy(&s);

    if (segment_create(&s, 4ull << 20, false, true, err, sizeof err) == 0) {
        if (s.huge)
            check_sealed(&s, "2 MiB pages");
        else
            printf("no huge pages reserved: the hugetlb case is not run\n");
        segment_destroy(&s);
    }
    return test_finish();
}
