/*
 * client_access.h - who may use the owner's client socket, checked on each
 * accepted connection with the peer's credentials (SO_PEERCRED).
 *
 * The socket file's mode and group (client_socket_mode, client_socket_group)
 * decide who can connect, but only as long as nobody widens the file: a
 * chmod 0666 after startup, or a copy of the socket passed on, would let
 * anyone in. So the owner checks the peer's credentials itself, by the
 * same rule as the configured file: its own user and root always; the
 * socket's group (client_socket_group, else the owner's own group) when the
 * mode lets the group write (connect needs write permission), counting the
 * peer's effective gid and its supplementary groups; anyone when the mode
 * lets others write. Everyone else is refused, whatever the file says now.
 */
#ifndef FX_OWNER_CLIENT_ACCESS_H
#define FX_OWNER_CLIENT_ACCESS_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct client_access {
    uid_t owner_uid;  /* our effective uid */
    gid_t group;      /* the socket's group */
    bool group_may;   /* client_socket_mode lets the group connect */
    bool others_may;  /* client_socket_mode lets anyone connect */
} client_access;

/* The rule of a socket with permission bits mode whose group is group
 * ((gid_t)-1: the owner's own effective group). */
void client_access_init(client_access *a, unsigned mode, gid_t group);

/* The peer of the connected Unix socket fd, as SO_PEERCRED reports it. */
typedef struct client_peer {
    pid_t pid;
    uid_t uid;
    gid_t gid;
} client_peer;

/* Whether the peer of fd may use the socket. Returns 0 (allowed), -EACCES
 * (refused) or the -errno of reading its credentials (refused too); *peer
 * holds what was read (uid and gid (uid_t)-1, pid 0 when nothing was). */
int client_access_check(const client_access *a, int fd, client_peer *peer);

#endif
