/*
 * owner_config.h - the configuration of fluxon-owner: its YAML file and
 * flags (keys in owner_config.c, over the engine of common/config.h).
 *
 * Owner file, same keys as the spec:
 *
 *   cluster_name: demo
 *   master: 127.0.0.1:7700
 *   node_name: owner0                       # optional, default "owner-<pid>"
 *   data_listen: 127.0.0.1:0                # optional, default 127.0.0.1:0: where
 *                                           # the owner-to-owner data plane listens
 *                                           # (a name, IPv4, or "[IPv6]" quoted)
 *   data_advertise: 10.0.0.5:0              # optional: the address peers dial,
 *                                           # sent in Register (port 0: the bound
 *                                           # port). Absent: data_listen's host, or
 *                                           # with a wildcard data_listen (0.0.0.0,
 *                                           # [::]) the local address of the
 *                                           # connection to the master
 *   log_level: warn                         # optional: error|warn|info|debug
 *   max_client_connections: 4096            # optional, default 4096, >= 1: connections
 *                                           # open at once on the client socket
 *   max_peer_connections: 4096              # optional, default 4096, >= 1: inbound
 *                                           # connections open at once on the data plane
 *   get_threads: 2                          # optional, default 2, 0..16: threads beside
 *                                           # the loop that answer clients' gets from
 *                                           # the owner's get cache (get_lanes.c),
 *                                           # connections spread over them in turn;
 *                                           # 0: the loop answers every get
 *   handshake_timeout: 5s                   # optional, default 5s, > 0: a client without
 *                                           # ExternalHello, a peer without HELLO by then
 *                                           # is closed
 *   receive_buffer_budget: 256MiB           # optional, default 256 MiB, > 0: bytes of
 *                                           # partial frames held across client
 *                                           # connections; one still without
 *                                           # ExternalHello that would pass it is closed
 *   master_wait: 10s                        # optional, default 10s, > 0: how long a
 *                                           # client request that needs the master
 *                                           # waits for one (lost, reconnecting)
 *                                           # before it fails with MasterUnavailable
 *   fluxonkv_spec:
 *     memory_size: 2GB                      # required, > 0
 *     client_socket: ./var/owner0.sock      # required
 *     client_socket_mode: "0660"            # optional, default 0600 (the owner's user
 *                                           # only); must keep the owner's rw bits
 *     client_socket_group: fluxon           # optional: the socket's group
 *     prefault: true                        # optional, touch the segment at start
 *     use_hugepages: true                   # optional, 2 MiB pages when reserved
 *     large_file_paths: [/data/fx0, /data/fx1]
 *     large_limit_size: ["4GB", "8GB"]      # absent or null: no SSD tier
 *
 * Every key can also be set by flag (owner_config_set with the dotted key, for
 * example "fluxonkv_spec.memory_size", or the last component alone). Every
 * violation is reported as "<key>: <what is wrong>" in err; callers exit 2.
 */
#ifndef FX_OWNER_OWNER_CONFIG_H
#define FX_OWNER_OWNER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"

#define FX_SSD_MIN_LIMIT 512u

/* The longest node_name: the master keeps names in 64-byte fields and the
 * handshake proves the name whole. */
#define OWNER_NODE_NAME_MAX 63

#define OWNER_PUT_POOL_AUTO UINT64_MAX
#define OWNER_GET_THREADS_MAX 16u

typedef struct owner_config {
    char *cluster_name;     /* default "fluxon" */
    char *master;           /* "host:port", required */
    char *node_name;        /* default NULL: the owner picks "owner-<pid>" */
    char *data_listen;      /* "host:port" of the data plane, default "127.0.0.1:0" */
    char *data_advertise;   /* "host:port" peers dial, NULL: derived (see above) */
    char *cluster_secret_file; /* the cluster secret proven to the master; NULL: none
                                * (then data_listen must stay on loopback) */
    int log_level;          /* -1: not set */
    unsigned max_client_connections; /* default 4096, >= 1 */
    unsigned get_threads;            /* default 2, <= OWNER_GET_THREADS_MAX */
    unsigned max_peer_connections;   /* default 4096, >= 1 */
    uint64_t handshake_timeout_ms;   /* default 5000, > 0 */
    uint64_t receive_buffer_budget;  /* default 256 MiB, > 0 */
    uint64_t master_wait_ms;         /* default 10000, > 0 (master_wait.c) */
    uint64_t memory_size;   /* required, > 0 */
    uint64_t put_pool_size; /* bytes of put grants held (put_pool.c); 0: no pool;
                             * OWNER_PUT_POOL_AUTO: memory_size / 32, at most 8 MiB */
    char *client_socket;    /* required */
    char *client_socket_mode;  /* octal permission bits of the socket, NULL: "0600" */
    char *client_socket_group; /* group given the socket, NULL: the owner's own */
    bool prefault;          /* default true */
    bool use_hugepages;     /* default true: hugetlb pages when enough are free */
    char **large_file_paths;
    size_t n_large_file_paths;
    uint64_t *large_limit_size; /* NULL when absent or null: no SSD tier */
    size_t n_large_limit_size;
} owner_config;

/* The client socket's permission bits: client_socket_mode, or 0600 when it is
 * not set (call after owner_config_validate accepted c). */
unsigned owner_config_socket_mode(const owner_config *c);
/* The gid of client_socket_group in *gid ((gid_t)-1 when it is not set):
 * 0, -ENOENT when no group has that name, or another -errno from the lookup. */
int owner_config_socket_group(const owner_config *c, gid_t *gid);

/* Fills defaults. */
void owner_config_init(owner_config *c);

/* Reads a YAML file over the current values. Returns 0, or -1 with a message
 * naming the key (or the file and line for a YAML syntax error) in err. Unknown
 * keys are errors. */
int owner_config_load(owner_config *c, const char *path, char *err, size_t errlen);

/* Sets one key from a string, as a flag would ("fluxonkv_spec.memory_size" or
 * "memory_size"; lists as comma-separated values, "null" clears
 * large_limit_size). Returns 0 or -1 with a message naming the key. */
int owner_config_set(owner_config *c, const char *key, const char *value, char *err,
                     size_t errlen);

/* Checks the rules that span keys (required keys present, memory_size > 0,
 * large_limit_size the same length as large_file_paths, each limit >= 512,
 * "host:port" forms, a data_advertise that is no wildcard literal). Returns 0
 * or -1 with a message naming the key. */
int owner_config_validate(const owner_config *c, char *err, size_t errlen);

/* Frees what the config owns (NULL-safe); the struct itself is the caller's. */
void owner_config_free(owner_config *c);

/* master_locator.c: `master` as "etcd://HOST:PORT[,HOST:PORT...]" (the
 * leader etcd names) rather than a fixed HOST:PORT. */
int owner_master_is_etcd(const char *master);
/* Checks an etcd:// value; 0, or -1 with "master: <why>" in err. */
int owner_master_etcd_check(const char *master, char *err, size_t errlen);

#endif
