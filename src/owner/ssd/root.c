/*
 * root.c - cache root derivation and creation, st_dev de-duplication and the
 * exclusive root lock (see root.h).
 */
#include "owner/ssd/root.h"

#include "common/mkdir_p.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOCK_NAME "lock"

/* Creates the root of one path and records its device. */
static int root_make(const char *base, const char *cluster, const char *instance, ssd_root *r,
                     char *err, size_t errlen)
{
    size_t blen = strlen(base);
    while (blen > 1 && base[blen - 1] == '/')
        blen--;
    char *path = malloc(PATH_MAX);
    if (!path) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int n = snprintf(path, PATH_MAX, "%.*s/%s_cluster_kv_ssd_storage/%s",
                     (int)blen, base, cluster, instance);
    if (n < 0 || n >= PATH_MAX - (int)sizeof("/" LOCK_NAME) - 16) {
        snprintf(err, errlen, "root %.*s/...: path too long", (int)blen, base);
        free(path);
        return -EINVAL;
    }
    int rc = mkdir_p(path, 0755, 0755);
    struct stat st;
    if (rc == 0 && stat(path, &st) != 0)
        rc = -errno;
    if (rc != 0) {
        snprintf(err, errlen, "root %s: cannot create: %s", path, strerror(-rc));
        free(path);
        return rc;
    }
    r->path = path;
    r->dev = st.st_dev;
    r->lock_fd = -1;
    return 0;
}

/* flock(LOCK_EX | LOCK_NB) on <root>/lock; the lock lives as long as the fd. */
static int root_lock(ssd_root *r, char *err, size_t errlen)
{
    char lp[PATH_MAX];
    snprintf(lp, sizeof lp, "%s/" LOCK_NAME, r->path);
    int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        int rc = -errno;
        snprintf(err, errlen, "root %s: cannot open the lock file: %s", r->path, strerror(-rc));
        return rc;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int rc = -errno;
        if (rc == -EWOULDBLOCK)
            snprintf(err, errlen, "root %s: locked by another owner", r->path);
        else
            snprintf(err, errlen, "root %s: cannot lock: %s", r->path, strerror(-rc));
        close(fd);
        return rc;
    }
    r->lock_fd = fd;
    return 0;
}

int root_set_open(const char *cluster, const char *instance, const char *const *paths,
                  const uint64_t *limits, size_t n, ssd_root **out, size_t *n_out, char *err,
                  size_t errlen)
{
    ssd_root *roots = calloc(n ? n : 1, sizeof *roots);
    size_t kept = 0;
    int rc = 0;
    if (!roots) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        ssd_root r = {0};
        rc = root_make(paths[i], cluster, instance, &r, err, errlen);
        if (rc != 0)
            goto fail;
        bool dup = false;
        for (size_t j = 0; j < kept && !dup; j++)
            dup = roots[j].dev == r.dev;
        if (dup) { /* same device as an earlier root: first wins */
            free(r.path);
            continue;
        }
        r.limit = limits[i];
        r.cfg_index = i;
        roots[kept++] = r;
        rc = root_lock(&roots[kept - 1], err, errlen);
        if (rc != 0)
            goto fail;
    }
    *out = roots;
    *n_out = kept;
    return 0;
fail:
    root_set_close(roots, kept);
    return rc;
}

void root_set_close(ssd_root *roots, size_t n)
{
    if (!roots)
        return;
    for (size_t i = 0; i < n; i++) {
        if (roots[i].lock_fd >= 0)
            close(roots[i].lock_fd);
        free(roots[i].path);
    }
    free(roots);
}
