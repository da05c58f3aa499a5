/*
 * cluster_auth.c - who may become a member: the master's side of the cluster
 * secret.
 *
 * With secret_file (--secret-file) every owner's TCP connection must pass
 * the handshake of net/handshake.h before its first frame, and a Register is
 * accepted only under the node_name that handshake proved (register.c).
 * Without a secret the master serves loopback only: a listen address beyond
 * it is refused at startup, because anyone who reaches the port could then
 * register as an owner, receive values and serve forged ones.
 */
#include "master/master.h"

#include "net/auth_scope.h"

int master_auth_setup(master *m, char *err, size_t errlen)
{
    return auth_scope_setup(m->cfg.secret_file, m->cfg.listen, "--secret-file", "listening on",
                            &m->cluster_key, &m->authenticated, err, errlen);
}
