/*
 * unix_path.c - taking a Unix socket path for a listener, and giving it back
 * (see unix_path.h).
 *
 * "Stale" is decided by connecting: a socket file nobody listens on refuses
 * the connection (ECONNREFUSED). A listener that accepts, or whose backlog
 * is full (EAGAIN on a non-blocking connect), is alive.
 */
#include "net/unix_path.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int unix_path_claim(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISSOCK(st.st_mode))
        return -EEXIST;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return -ENAMETOOLONG;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int r = connect(fd, (const struct sockaddr *)&sa, sizeof sa);
    int e = r == 0 ? 0 : errno;
    close(fd);
    if (r == 0 || e == EAGAIN || e == EINPROGRESS)
        return -EADDRINUSE;
    if (e != ECONNREFUSED)
        return -e;
    if (unlink(path) < 0 && errno != ENOENT)
        return -errno;
    return 0;
}

const char *unix_path_strerror(int err)
{
    if (err == -EADDRINUSE)
        return "another process (a running owner?) serves it";
    if (err == -EEXIST)
        return "it exists and is not a socket";
    return strerror(-err);
}

unix_path_id unix_path_identify(const char *path)
{
    struct stat st;
    unix_path_id id = {0, 0};
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        id = (unix_path_id){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
    return id;
}

void unix_path_release(const char *path, unix_path_id id)
{
    if (!id.dev && !id.ino)
        return;
    unix_path_id now = unix_path_identify(path);
    if (now.dev == id.dev && now.ino == id.ino)
        unlink(path);
}
