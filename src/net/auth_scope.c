/*
 * auth_scope.c - is an address beyond loopback (see auth_scope.h)?
 */
#include "net/auth_scope.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/config.h"
#include "net/addr.h"

bool auth_scope_beyond_loopback(const char *hostport)
{
    char host[256];
    int port;
    if (!hostport || config_parse_hostport(hostport, host, sizeof host, &port) < 0 || !host[0])
        return true;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
        return true;
    bool beyond = false;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
        if (!addr_is_loopback(ai->ai_addr))
            beyond = true; /* wildcards land here too: 0.0.0.0 and :: are not loopback */
    freeaddrinfo(res);
    return beyond;
}

int auth_scope_setup(const char *secret_file, const char *listen, const char *setting,
                     const char *what, auth_key *key, bool *authenticated, char *err,
                     size_t errlen)
{
    *authenticated = false;
    if (secret_file) {
        char why[400];
        if (auth_key_load(secret_file, key, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s: %s", setting, why);
            return -1;
        }
        *authenticated = true;
        return 0;
    }
    if (auth_scope_beyond_loopback(listen)) {
        snprintf(err, errlen,
                 "%s: %s %s reaches beyond loopback; give the cluster secret (%s PATH) so "
                 "that only the cluster's members can use it",
                 setting, what, listen, setting);
        return -1;
    }
    return 0;
}
