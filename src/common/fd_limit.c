/*
 * fd_limit.c - raising the daemons' open-file limit (see fd_limit.h).
 */
#include "common/fd_limit.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/resource.h>

#include "common/log.h"

long fd_limit_raise(unsigned long wanted)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        goto fail;
    if (rl.rlim_cur != rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            goto fail;
    }
    long now = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > LONG_MAX ? LONG_MAX
                                                                       : (long)rl.rlim_cur;
    if ((unsigned long)now < wanted)
        FX_LOG(WARN,
               "open files are limited to %ld (RLIMIT_NOFILE hard limit); the connection caps "
               "want %lu: connections past the limit fail to be accepted",
               now, wanted);
    else
        FX_LOG(INFO, "open files: up to %ld", now);
    return now;
fail:;
    int e = errno;
    FX_LOG(WARN, "cannot raise the open-file limit (RLIMIT_NOFILE): %s", strerror(e));
    return -e;
}
