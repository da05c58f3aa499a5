/*
 * test_unix_path.c - claiming a Unix socket path for a listener and giving it
 * back: a missing path and a stale socket are free (the stale file goes), a
 * socket somebody listens on and a file that is no socket are refused and
 * left as they are, and release removes the path only while it is still the
 * socket that was bound.
 */
#include "net/unix_path.h"
#include "testlib.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A socket bound at path; listening when listen_too. Returns the fd. */
static int bound_socket(const char *path, int listen_too)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0, "socket");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    REQUIRE(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "bind %s: %s", path,
            strerror(errno));
    if (listen_too)
        REQUIRE(listen(fd, 4) == 0, "listen");
    return fd;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int main(void)
{
    char dir[] = "/tmp/fx-unixpath-XXXXXX";
    REQUIRE(mkdtemp(dir), "mkdtemp");
    char sock[256], file[256];
    snprintf(sock, sizeof sock, "%s/s.sock", dir);
    snprintf(file, sizeof file, "%s/plain", dir);

    CHECK(unix_path_claim(sock) == 0, "a missing path is free");

    int live = bound_socket(sock, 1);
    CHECK(unix_path_claim(sock) == -EADDRINUSE, "a socket somebody listens on is refused");
    CHECK(exists(sock), "and left in place");
    close(live); /* the file stays behind: stale */
    CHECK(exists(sock), "a closed listener leaves its file");
    CHECK(unix_path_claim(sock) == 0, "a stale socket is free");
    CHECK(!exists(sock), "and its file is gone");

    int fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    REQUIRE(fd >= 0 && write(fd, "keep", 4) == 4, "plain file");
    close(fd);
    CHECK(unix_path_claim(file) == -EEXIST, "a file that is no socket is refused");
    CHECK(exists(file), "and kept");
    unix_path_id none = unix_path_identify(file);
    CHECK(none.dev == 0 && none.ino == 0, "a plain file has no socket identity");
    unix_path_release(file, none);
    CHECK(exists(file), "releasing without an identity removes nothing");

    /* Release: ours is removed; a socket bound there since is not. */
    int mine = bound_socket(sock, 1);
    unix_path_id id = unix_path_identify(sock);
    CHECK(id.ino != 0, "the bound socket has an identity");
    unix_path_release(sock, id);
    CHECK(!exists(sock), "release removes our own socket");
    close(mine);
    mine = bound_socket(sock, 1);
    unix_path_id old = unix_path_identify(sock);
    /* Our file removed and the path bound by another listener while ours is
     * still open (so its inode cannot be reused for theirs). */
    REQUIRE(unlink(sock) == 0, "unlink");
    int theirs = bound_socket(sock, 1);
    unix_path_release(sock, old);
    CHECK(exists(sock), "release leaves a socket that another listener bound since");
    close(mine);
    close(theirs);

    unlink(sock);
    unlink(file);
    rmdir(dir);
    return test_finish();
}
