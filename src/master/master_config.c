/*
 * master_config.c - the keys of fluxon-master's YAML file and flags, and the
 * rules that span them.
 *
 * The table below is the whole description of the master's keys (dotted
 * path, kind, field offset); the table-driven engine in common/config.c walks
 * the YAML file, applies flags, deep-copies and frees by it. What only the
 * master has lives here: the `placement` names, the default
 * heartbeat_timeout that follows 3 x heartbeat_interval until it is given
 * itself (the schema's applied() hook), and master_config_validate() (with
 * the rule that the address told to others is never a wildcard).
 */
#include "master/master_config.h"


#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "net/addr.h"
#include "net/etcd_endpoints.h"

#define MASTER_F(f) offsetof(master_config, f)

/* Indexed by enum placement_policy_kind. */
static const char *const placement_names[] = {"random", "local", "remote", NULL};

static const struct cfg_key master_keys[] = {
    {"cluster_name", CK_STR, MASTER_F(cluster_name), 0, 0, NULL},
    {"listen", CK_HOSTPORT, MASTER_F(listen), 0, 0, NULL},
    {"http", CK_HOSTPORT_OPT, MASTER_F(http), 0, 0, NULL},
    {"advertise", CK_HOSTPORT_OPT, MASTER_F(advertise), 0, 0, NULL},
    {"inflight_ttl", CK_DURATION, MASTER_F(inflight_ttl_ms), 0, 1, NULL},
    {"heartbeat_interval", CK_DURATION, MASTER_F(heartbeat_interval_ms), 0, 1, NULL},
    {"heartbeat_timeout", CK_DURATION, MASTER_F(heartbeat_timeout_ms), 0, 1, NULL},
    {"placement", CK_ENUM, MASTER_F(placement), 0, 0, placement_names},
    {"cache_budget", CK_PERCENT, MASTER_F(cache_budget_pct), 0, 1, NULL},
    {"max_connections", CK_COUNT, MASTER_F(max_connections), 0, 1, NULL},
    {"handshake_timeout", CK_DURATION, MASTER_F(handshake_timeout_ms), 0, 1, NULL},
    {"receive_buffer_budget", CK_SIZE, MASTER_F(receive_buffer_budget), 0, 1, NULL},
    {"log_level", CK_LOGLEVEL, MASTER_F(log_level), 0, 0, NULL},
    {"secret_file", CK_STR_OPT, MASTER_F(secret_file), 0, 0, NULL},
    {"etcd", CK_STR_OPT, MASTER_F(etcd), 0, 0, NULL},
    {"etcd_lease_ttl", CK_DURATION, MASTER_F(etcd_lease_ttl_ms), 0, 1000, NULL},
};

/* heartbeat_timeout follows 3 x heartbeat_interval until it is given itself. */
static void master_applied(void *cfg, const struct cfg_key *k)
{
    master_config *c = cfg;
    if (k->off == MASTER_F(heartbeat_timeout_ms))
        c->heartbeat_timeout_set = true;
    if (!c->heartbeat_timeout_set)
        c->heartbeat_timeout_ms = c->heartbeat_interval_ms > UINT64_MAX / 3
                                      ? UINT64_MAX
                                      : 3 * c->heartbeat_interval_ms;
}

static const struct cfg_schema master_schema = {master_keys, CFG_NKEYS(master_keys),
                                                sizeof(master_config), master_applied};

void master_config_init(master_config *c)
{
    memset(c, 0, sizeof *c);
    c->cluster_name = strdup("fluxon");
    c->listen = strdup("127.0.0.1:7700");
    c->inflight_ttl_ms = 60000;
    c->heartbeat_interval_ms = 1000;
    c->heartbeat_timeout_ms = 3 * c->heartbeat_interval_ms;
    c->heartbeat_timeout_set = false;
    c->placement = PLACEMENT_RANDOM;
    c->cache_budget_pct = 80;
    c->etcd_lease_ttl_ms = 2000;
    c->max_connections = 4096;
    c->handshake_timeout_ms = 5000;
    c->receive_buffer_budget = 256ull << 20;
    c->log_level = -1;
}

int master_config_load(master_config *c, const char *path, char *err, size_t errlen)
{
    return cfg_load(c, &master_schema, path, err, errlen);
}

int master_config_set(master_config *c, const char *key, const char *value, char *err,
                      size_t errlen)
{
    return cfg_set(c, &master_schema, key, value, err, errlen);
}

/* The address told to others is never a wildcard: neither advertise itself
 * nor, without it, listen. */
static int check_advertise(const master_config *c, char *err, size_t errlen)
{
    if (c->advertise && addr_hostport_is_wildcard(c->advertise))
        return cfg_err(err, errlen,
                       "advertise: '" CFG_QUOTE "' is a wildcard address; give one that owners "
                       "can dial",
                       c->advertise);
    if (!c->advertise && addr_hostport_is_wildcard(c->listen))
        return cfg_err(err, errlen,
                       "advertise: missing: listen '" CFG_QUOTE "' is a wildcard address, which "
                       "nobody can dial; give --advertise HOST:PORT (the address written to "
                       "the port file; port 0: the bound port)",
                       c->listen);
    return 0;
}

int master_config_validate(const master_config *c, char *err, size_t errlen)
{
    if (!c)
        return cfg_err(err, errlen, "config: missing");
    if (cfg_check_name("cluster_name", c->cluster_name, true, err, errlen) < 0 ||
        cfg_check_hostport("listen", c->listen, true, err, errlen) < 0 ||
        cfg_check_hostport("http", c->http, false, err, errlen) < 0 ||
        cfg_check_hostport("advertise", c->advertise, false, err, errlen) < 0 ||
        cfg_check_log_level(c->log_level, err, errlen) < 0)
        return -1;
    if (check_advertise(c, err, errlen) < 0)
        return -1;
    if (c->inflight_ttl_ms == 0)
        return cfg_err(err, errlen, "inflight_ttl: must be > 0");
    if (c->heartbeat_interval_ms == 0)
        return cfg_err(err, errlen, "heartbeat_interval: must be > 0");
    if (c->heartbeat_timeout_ms == 0)
        return cfg_err(err, errlen, "heartbeat_timeout: must be > 0");
    if (c->heartbeat_timeout_ms <= c->heartbeat_interval_ms)
        return cfg_err(err, errlen,
                       "heartbeat_timeout: %" PRIu64 " ms must be > heartbeat_interval (%" PRIu64
                       " ms)",
                       c->heartbeat_timeout_ms, c->heartbeat_interval_ms);
    if (c->placement < PLACEMENT_RANDOM || c->placement > PLACEMENT_REMOTE)
        return cfg_err(err, errlen, "placement: invalid policy %d (expected random|local|remote)",
                       c->placement);
    if (c->etcd) {
        etcd_endpoints eps;
        char why[384];
        if (etcd_endpoints_parse(c->etcd, &eps, why, sizeof why) < 0)
            return cfg_err(err, errlen, "etcd: %s", why);
    }
    return 0;
}

void master_config_free(master_config *c)
{
    cfg_free(c, &master_schema);
}
