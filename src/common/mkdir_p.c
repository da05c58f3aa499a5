/*
 * mkdir_p.c - a directory and its missing parents (see mkdir_p.h).
 */
#include "common/mkdir_p.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

/* mkdir that accepts an existing directory (and only a directory). */
static int mkdir_one(const char *path, mode_t mode)
{
    if (mkdir(path, mode) == 0)
        return 0;
    int e = errno;
    struct stat st;
    if (e == EEXIST) {
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            return 0;
        return -ENOTDIR;
    }
    return -e;
}

int mkdir_p(const char *path, mode_t parent_mode, mode_t leaf_mode)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0)
        return -EINVAL;
    if (n >= sizeof buf)
        return -ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    while (n > 1 && buf[n - 1] == '/')
        buf[--n] = '\0';

    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir_one(buf, parent_mode);
        *p = '/';
        if (rc != 0)
            return rc;
    }
    return mkdir_one(buf, leaf_mode);
}

int mkdir_p_parent(const char *file_path, mode_t mode)
{
    char buf[PATH_MAX];
    size_t n = strlen(file_path);
    if (n >= sizeof buf)
        return -ENAMETOOLONG;
    memcpy(buf, file_path, n + 1);
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf)
        return 0;
    *slash = '\0';
    return mkdir_p(buf, mode, mode);
}
