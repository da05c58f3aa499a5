/*
 * auth_scope.h - the rule that decides when the cluster secret is required:
 * nothing listens beyond loopback without it (DESIGN §11).
 *
 * An address is "beyond loopback" when its host is a wildcard (0.0.0.0, ::,
 * an empty host) or resolves to any address outside 127.0.0.0/8 and ::1. A
 * daemon asked to listen there without a secret refuses to start (exit 2),
 * naming the setting that supplies one.
 */
#ifndef FX_NET_AUTH_SCOPE_H
#define FX_NET_AUTH_SCOPE_H

#include <stdbool.h>
#include <stddef.h>

#include "net/auth_key.h"

/* True when "host:port" (or "[v6]:port") listens or points beyond loopback;
 * a host that does not resolve counts as beyond (the safe answer). */
bool auth_scope_beyond_loopback(const char *hostport);

/* A daemon's start: with secret_file, loads it into *key and sets
 * *authenticated; without one, refuses a listen address beyond loopback.
 * setting names the option that gives the secret ("--secret-file",
 * "cluster_secret_file") and what ("listening on", "data_listen") the
 * address. Returns 0, or -1 with a sentence starting with setting in err. */
int auth_scope_setup(const char *secret_file, const char *listen, const char *setting,
                     const char *what, auth_key *key, bool *authenticated, char *err,
                     size_t errlen);

#endif
