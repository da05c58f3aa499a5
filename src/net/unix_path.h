/*
 * unix_path.h - taking a Unix socket path for a listener, and giving it back,
 * without harming anyone else who uses that path.
 *
 * A listener may replace only a stale socket file, one that nothing accepts
 * on any more (its process died without removing it). A live socket belongs
 * to another process (a second owner started with the same client_socket),
 * and anything that is not a socket is some file the user named by mistake:
 * both are refused. At close, the path is removed only while it still is the
 * socket this listener bound (the same inode), so a listener never removes a
 * socket that another process bound there since.
 */
#ifndef FX_NET_UNIX_PATH_H
#define FX_NET_UNIX_PATH_H

#include <stdint.h>

typedef struct unix_path_id {
    uint64_t dev, ino; /* 0, 0: unknown (nothing is removed) */
} unix_path_id;

/* Makes path free for bind(): 0 when nothing is there or a stale socket was
 * removed; -EADDRINUSE when a process accepts connections on it; -EEXIST
 * when it is not a socket; another negative errno when it cannot be checked. */
int unix_path_claim(const char *path);
/* Says what a unix_path_claim() error means ("another process (a running
 * owner?) serves it", "it exists and is not a socket", else strerror). */
const char *unix_path_strerror(int err);
/* The identity of the socket file now at path (after bind), or {0, 0}. */
unix_path_id unix_path_identify(const char *path);
/* Removes path if it still is the socket file `id` names. */
void unix_path_release(const char *path, unix_path_id id);

#endif
