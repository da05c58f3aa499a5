/*
 * master_config.h - the configuration of fluxon-master: its YAML file and
 * flags (keys in master_config.c, over the engine of common/config.h).
 *
 * Master file:
 *
 *   cluster_name: demo
 *   listen: 127.0.0.1:7700                  # a name, IPv4, or "[IPv6]" quoted
 *   advertise: 10.0.0.1:7700                # optional: the address owners are
 *                                           # told, written to the port file (port
 *                                           # 0: the bound port); required when
 *                                           # listen is a wildcard (0.0.0.0, [::])
 *   http: 127.0.0.1:7701                    # optional
 *   inflight_ttl: 60s                       # optional, in-flight put/get TTL
 *   heartbeat_interval: 1s                  # optional, default 1s, > 0: how often
 *                                           # owners send heartbeats
 *   heartbeat_timeout: 3s                   # optional, default 3 x heartbeat_interval,
 *                                           # must be > heartbeat_interval
 *   placement: random                       # optional: random|local|remote
 *   cache_budget: 80%                       # optional, 1..100: the share of each
 *                                           # owner's segment that memory replicas
 *                                           # and reservations may take before the
 *                                           # eviction policy makes room
 *   max_connections: 4096                   # optional, default 4096, >= 1: connections
 *                                           # open at once on the listener, and on the
 *                                           # HTTP endpoint; the next one is closed
 *   handshake_timeout: 5s                   # optional, default 5s, > 0: a connection
 *                                           # that has not registered by then is closed;
 *                                           # an HTTP connection idle that long too
 *                                           # (in whole seconds, rounded up)
 *   receive_buffer_budget: 256MiB           # optional, default 256 MiB, > 0: bytes of
 *                                           # partial frames held across connections;
 *                                           # an unregistered one that would pass it
 *                                           # is closed
 *   log_level: warn
 *   secret_file: /etc/fluxon/cluster.secret # optional: the cluster secret every
 *                                           # owner proves at connect; required
 *                                           # when listen is beyond loopback
 *   etcd: http://127.0.0.1:2379,http://...  # optional: campaign for leadership on
 *                                           # these etcd endpoints (a standby serves
 *                                           # nothing until it leads)
 *   etcd_lease_ttl: 2s                      # optional, default 2s, >= 1s: the
 *                                           # leader's lease; a dead leader is
 *                                           # replaced this long after it died
 *
 * placement picks the owner of a put's memory replica: "random" (the spec's
 * policy: any owner with room), "local" (the requester's owner when it has
 * room, else random), "remote" (a random owner other than the requester when
 * one has room, else the requester).
 *
 * Every key can also be set by flag (master_config_set with the key, for
 * example "heartbeat_interval" or "heartbeat-interval"). Every violation is
 * reported as "<key>: <what is wrong>" in err; callers exit 2.
 */
#ifndef FX_MASTER_MASTER_CONFIG_H
#define FX_MASTER_MASTER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

/* The values of the master's `placement` key, in the order of the names
 * "random", "local", "remote". */
enum placement_policy_kind { PLACEMENT_RANDOM, PLACEMENT_LOCAL, PLACEMENT_REMOTE };

typedef struct master_config {
    char *cluster_name;          /* default "fluxon" */
    char *listen;                /* default "127.0.0.1:7700" */
    char *http;                  /* default NULL: no HTTP endpoint */
    char *advertise;             /* default NULL: listen's host with the bound port */
    uint64_t inflight_ttl_ms;    /* default 60000, > 0 */
    uint64_t heartbeat_interval_ms; /* default 1000, > 0 */
    /* Default 3 x heartbeat_interval_ms, > heartbeat_interval_ms. Until
     * heartbeat_timeout is given (heartbeat_timeout_set), every load or set
     * recomputes it from the interval; a caller that writes the field by hand
     * and then sets heartbeat_interval should set the flag too. */
    uint64_t heartbeat_timeout_ms;
    bool heartbeat_timeout_set;
    int placement;               /* enum placement_policy_kind, default random */
    unsigned cache_budget_pct;   /* default 80: the evictable share of each segment */
    unsigned max_connections;    /* default 4096, >= 1, per listener (TCP and HTTP) */
    uint64_t handshake_timeout_ms; /* default 5000, > 0: until Register */
    uint64_t receive_buffer_budget; /* default 256 MiB, > 0 */
    int log_level;               /* -1: not set */
    char *secret_file;           /* default NULL: no authentication (loopback only) */
    char *etcd;                  /* default NULL: no election; "http://HOST:PORT[,...]" */
    uint64_t etcd_lease_ttl_ms;  /* default 2000, >= 1000 (whole seconds, rounded up) */
} master_config;

/* Fills defaults. */
void master_config_init(master_config *c);

/* Reads a YAML file over the current values. Returns 0, or -1 with a message
 * naming the key (or the file and line for a YAML syntax error) in err. Unknown
 * keys are errors. */
int master_config_load(master_config *c, const char *path, char *err, size_t errlen);

/* Sets one key from a string, as a flag would ("inflight_ttl" or
 * "inflight-ttl"; "null" clears http). Returns 0 or -1 with a message naming
 * the key. */
int master_config_set(master_config *c, const char *key, const char *value, char *err,
                      size_t errlen);

/* Checks the rules that span keys (required keys present, "host:port"
 * forms, heartbeat_timeout > heartbeat_interval, a known placement, an
 * advertise that is no wildcard and is given when listen is one). Returns
 * 0 or -1 with a message naming the key. */
int master_config_validate(const master_config *c, char *err, size_t errlen);

/* Frees what the config owns (NULL-safe); the struct itself is the caller's. */
void master_config_free(master_config *c);

#endif
