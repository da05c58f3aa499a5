/*
 * data_address.c - the address of this owner's data plane that peers dial:
 * what Register announces and the master hands to other owners in its plans.
 *
 * It is, in this order: data_advertise when set (port 0: the data plane's
 * bound port); else data_listen's host with the bound port; else, when
 * data_listen is a wildcard (0.0.0.0, [::]) that nobody can dial, the local
 * address of the TCP connection to the master with the bound port: the
 * address this machine uses towards the cluster. The first two are settled at
 * startup (data_advertise is resolved once, blocking, to check it); the third
 * at each connection to the master, before Register.
 *
 * An announced loopback address while the master is not on loopback would
 * make every remote pull and push fail later, so it is a startup error naming
 * data_advertise (the owner exits 2); so is an advertised wildcard, and an
 * IPv4-only wildcard listener when the master is reached over IPv6.
 */
#include "owner/owner.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"
#include "net/addr.h"
#include "owner/dataplane/dataplane.h"

int owner_data_address_init(owner *o, char *err, size_t errlen)
{
    struct sockaddr_storage bound;
    if (dp_engine_address(o->dp, &bound) != 0)
        return cfg_err(err, errlen, "data_listen: the data plane has no bound address");
    int bound_port = addr_port((struct sockaddr *)&bound);
    char host[256];
    int port;
    if (o->cfg.data_advertise) {
        struct sockaddr_storage ss;
        char why[384];
        config_parse_hostport(o->cfg.data_advertise, host, sizeof host, &port); /* validated */
        if (addr_resolve_host(o->loop, host, port, &ss, why, sizeof why) < 0)
            return cfg_err(err, errlen, "data_advertise: %s", why);
        if (addr_is_wildcard((struct sockaddr *)&ss))
            return cfg_err(err, errlen,
                           "data_advertise: '" CFG_QUOTE "' resolves to a wildcard address; "
                           "peers need one they can dial",
                           o->cfg.data_advertise);
        o->data_addr_loopback = addr_is_loopback((struct sockaddr *)&ss);
        if (addr_join(host, port ? port : bound_port, o->data_addr, sizeof o->data_addr) < 0)
            return cfg_err(err, errlen, "data_advertise: '" CFG_QUOTE "' is too long",
                           o->cfg.data_advertise);
        return 0;
    }
    if (addr_is_wildcard((struct sockaddr *)&bound)) {
        o->data_addr_from_link = true; /* settled at the connection to the master */
        return 0;
    }
    o->data_addr_loopback = addr_is_loopback((struct sockaddr *)&bound);
    config_parse_hostport(o->cfg.data_listen, host, sizeof host, &port); /* validated */
    if (addr_join(host, bound_port, o->data_addr, sizeof o->data_addr) < 0)
        return cfg_err(err, errlen, "data_listen: '" CFG_QUOTE "' is too long",
                       o->cfg.data_listen);
    return 0;
}

/* With a wildcard data_listen: the local address of the connection to the
 * master, with the data plane's port. 0 or -1 with the reason in err. */
static int address_from_link(owner *o, net_conn *master, char *err, size_t errlen)
{
    struct sockaddr_storage bound, local;
    char text[ADDR_TEXT_MAX];
    if (dp_engine_address(o->dp, &bound) != 0 || net_conn_local_addr(master, &local) != 0)
        return cfg_err(err, errlen,
                       "data_advertise: missing, and the address of the connection to the "
                       "master cannot be read: set data_advertise");
    const struct in6_addr *a6 = &((const struct sockaddr_in6 *)&local)->sin6_addr;
    if (bound.ss_family == AF_INET && local.ss_family == AF_INET6 && !IN6_IS_ADDR_V4MAPPED(a6))
        return cfg_err(err, errlen,
                       "data_advertise: missing, data_listen '" CFG_QUOTE "' takes IPv4 only "
                       "and the master is reached over IPv6 (from %s): set data_advertise, or "
                       "listen on [::]",
                       o->cfg.data_listen, addr_format((struct sockaddr *)&local, text, sizeof text));
    addr_set_port((struct sockaddr *)&local, addr_port((struct sockaddr *)&bound));
    addr_format((struct sockaddr *)&local, o->data_addr, sizeof o->data_addr);
    o->data_addr_loopback = addr_is_loopback((struct sockaddr *)&local);
    FX_LOG(INFO, "data plane announced as %s (the address towards the master)", o->data_addr);
    return 0;
}

int owner_data_address_for_master(owner *o, net_conn *master, char *err, size_t errlen)
{
    if (o->data_addr_from_link && address_from_link(o, master, err, errlen) < 0)
        return -1;
    struct sockaddr_storage peer;
    if (!o->data_addr_loopback || net_conn_peer_addr(master, &peer) != 0 ||
        addr_is_loopback((struct sockaddr *)&peer))
        return 0;
    char text[ADDR_TEXT_MAX];
    return cfg_err(err, errlen,
                   "data_advertise: the data plane would be announced as %s, a loopback "
                   "address, but the master (%s) is not on loopback, so peers could not dial "
                   "it; set data_advertise%s to an address they reach",
                   o->data_addr, addr_format((struct sockaddr *)&peer, text, sizeof text),
                   o->cfg.data_advertise ? "" : " (or data_listen)");
}
