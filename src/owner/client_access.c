/*
 * client_access.c - the peer-credential check of the client socket (see
 * client_access.h).
 *
 * The peer's supplementary groups come from SO_PEERGROUPS (Linux 4.13+):
 * those of the connecting process, as the file permission check saw them.
 * On an older kernel the groups of the peer's user from the group database
 * (getgrouplist) stand in.
 */
#include "owner/client_access.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_PEER_GROUPS 1024

void client_access_init(client_access *a, unsigned mode, gid_t group)
{
    a->owner_uid = geteuid();
    a->group = group == (gid_t)-1 ? getegid() : group;
    a->group_may = (mode & 0020) != 0;
    a->others_may = (mode & 0002) != 0;
}

/* The peer's supplementary groups into groups (cap entries); returns how
 * many, or -1 when neither source answers. */
static int peer_groups(int fd, uid_t uid, gid_t *groups, int cap)
{
    socklen_t len = (socklen_t)(cap * (int)sizeof *groups);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0)
        return (int)(len / sizeof *groups);
    struct passwd pw, *found = NULL;
    char buf[4096];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) != 0 || !found)
        return -1;
    int n = cap;
    if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) < 0)
        return -1;
    return n;
}

static bool in_group(const client_access *a, int fd, const client_peer *p)
{
    if (p->gid == a->group)
        return true;
    gid_t *groups = malloc(MAX_PEER_GROUPS * sizeof *groups);
    if (!groups)
        return false;
    int n = peer_groups(fd, p->uid, groups, MAX_PEER_GROUPS);
    bool found = false;
    for (int i = 0; i < n && !found; i++)
        found = groups[i] == a->group;
    free(groups);
    return found;
}

int client_access_check(const client_access *a, int fd, client_peer *peer)
{
    peer->pid = 0;
    peer->uid = (uid_t)-1;
    peer->gid = (gid_t)-1;
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (fd < 0)
        return -EBADF;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
        return -errno;
    peer->pid = cred.pid;
    peer->uid = cred.uid;
    peer->gid = cred.gid;
    if (cred.uid == 0 || cred.uid == a->owner_uid || a->others_may)
        return 0;
    if (a->group_may && in_group(a, fd, peer))
        return 0;
    return -EACCES;
}
