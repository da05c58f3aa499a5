/*
 * cluster_auth.c - the owner's side of the cluster secret.
 *
 * With cluster_secret_file the owner proves the secret to the master in the
 * handshake of net/handshake.h, claiming its node_name, before it registers
 * (master_link.c); a master that refuses the proof, or cannot prove the
 * secret itself, stops the owner with exit 2 and "authentication failed".
 * Without a secret the owner stays on loopback: a data_listen beyond it is
 * refused at startup.
 */
#include "owner/owner.h"

#include "net/auth_scope.h"

int owner_auth_setup(owner *o, char *err, size_t errlen)
{
    return auth_scope_setup(o->cfg.cluster_secret_file, o->cfg.data_listen,
                            "cluster_secret_file", "data_listen", &o->cluster_key,
                            &o->authenticated, err, errlen);
}
