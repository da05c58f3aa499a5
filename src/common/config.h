/*
 * config.h - the YAML configuration of fluxon-owner and fluxon-master (libyaml).
 *
 * Owner file, same keys as the spec:
 *
 *   cluster_name: demo
 *   master: 127.0.0.1:7700
 *   node_name: owner0                       # optional, default "owner-<pid>"
 *   data_listen: 127.0.0.1:0                # optional, default 127.0.0.1:0: where
 *                                           # the owner-to-owner data plane listens
 *   log_level: warn                         # optional: error|warn|info|debug
 *   fluxonkv_spec:
 *     memory_size: 2GB                      # required, > 0
 *     client_socket: ./var/owner0.sock      # required
 *     prefault: true                        # optional, touch the segment at start
 *     use_hugepages: true                   # optional, 2 MiB pages when reserved
 *     large_file_paths: [/data/fx0, /data/fx1]
 *     large_limit_size: ["4GB", "8GB"]      # absent or null: no SSD tier
 *
 * Master file:
 *
 *   cluster_name: demo
 *   listen: 127.0.0.1:7700
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
 *   log_level: warn
 *
 * placement picks the owner of a put's memory replica: "random" (the spec's
 * policy: any owner with room), "local" (the requester's owner when it has
 * room, else random), "remote" (a random owner other than the requester when
 * one has room, else the requester).
 *
 * Every key can also be set by flag (owner_config_set with the dotted key, for
 * example "fluxonkv_spec.memory_size", or the last component alone). Every
 * violation is reported as "<key>: <what is wrong>" in err; callers exit 2.
 *
 * Two halves: the table-driven engine (config.c: struct cfg_key tables,
 * cfg_load, cfg_set, cfg_free and the shared checks), and each role's key
 * table with its owner_config_* / master_config_* functions, which live next
 * to the role: src/owner/owner_config.c (in fx_owner) and
 * src/master/master_config.c (in fx_master).
 */
#ifndef FX_COMMON_CONFIG_H
#define FX_COMMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the engine (config.c) ---------------------------------------------------- */

/* How much of an offending value is quoted back in a message (a printf
 * conversion for a string). */
#define CFG_QUOTE "%.80s"

enum cfg_kind {
    CK_MAP,          /* a section: its keys follow in the table */
    CK_STR,          /* char *, non-empty, never null */
    CK_STR_OPT,      /* char *, null clears */
    CK_HOSTPORT,     /* char * "host:port", never null */
    CK_HOSTPORT_OPT, /* char * "host:port", null clears */
    CK_SIZE,         /* uint64_t bytes */
    CK_BOOL,         /* bool */
    CK_LOGLEVEL,     /* int, null sets -1 */
    CK_DURATION,     /* uint64_t milliseconds */
    CK_ENUM,         /* int: the index of the value in names */
    CK_PERCENT,      /* unsigned percent, "80%" or "80", min..100 */
    CK_STRLIST,      /* char ** + size_t count, null clears */
    CK_SIZELIST,     /* uint64_t * + size_t count, null sets NULL */
};

/* One key of a role's table. */
struct cfg_key {
    const char *path; /* dotted, as in the file */
    enum cfg_kind kind;
    size_t off;       /* field offset in the config struct */
    size_t n_off;     /* list kinds: offset of the count */
    uint64_t min;     /* sizes and durations: smallest accepted value */
    const char *const *names; /* CK_ENUM: the accepted values, NULL-terminated */
};

/* A role's whole description: its table and its config struct. */
struct cfg_schema {
    const struct cfg_key *keys;
    size_t nkeys;
    size_t size; /* sizeof the config struct */
    /* Called after a key was applied, to keep the values that derive from
     * others in step; may be NULL. */
    void (*applied)(void *cfg, const struct cfg_key *k);
};

#define CFG_NKEYS(t) (sizeof(t) / sizeof((t)[0]))

/* Reads the YAML file path over cfg (a struct described by sc). Returns 0,
 * or -1 with a message naming the key (or the file and line for a YAML syntax
 * error) in err; cfg is replaced only when the whole file is accepted, so a
 * failed load leaves it unchanged. Unknown keys are errors. */
int cfg_load(void *cfg, const struct cfg_schema *sc, const char *path, char *err,
             size_t errlen);

/* Sets one key of cfg from a string, as a flag would: the dotted path or its
 * last component, '-' read as '_'; lists as comma-separated values; "null"
 * clears what may be cleared. Returns 0, or -1 with a message naming the key
 * and cfg unchanged. */
int cfg_set(void *cfg, const struct cfg_schema *sc, const char *key, const char *value,
            char *err, size_t errlen);

/* Frees what cfg owns by sc's table and NULLs those fields (NULL-safe); the
 * struct itself is the caller's. */
void cfg_free(void *cfg, const struct cfg_schema *sc);

/* Formats a message into err (when err is non-NULL and errlen > 0). Returns
 * -1, so that a check can `return cfg_err(...)`. */
int cfg_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The checks the roles' validate functions share. Each returns 0, or -1 with
 * "<label>: <what is wrong>" in err. A name must not be empty (and is
 * "missing (required)" when NULL and required); a host:port must parse
 * (config_parse_hostport); a log level is -1 (not set) .. FX_LOG_DEBUG. */
int cfg_check_name(const char *label, const char *s, bool required, char *err, size_t errlen);
int cfg_check_hostport(const char *label, const char *s, bool required, char *err,
                       size_t errlen);
int cfg_check_log_level(int lvl, char *err, size_t errlen);

/* Splits "host:port" (port 0..65535). Returns 0 or -1. host gets a copy. */
int config_parse_hostport(const char *s, char *host, size_t hostlen, int *port);

/* ---- the roles' configs (owner_config.c, master_config.c) ------------------- */

#define FX_SSD_MIN_LIMIT 512u

/* The values of the master's `placement` key, in the order of the names
 * "random", "local", "remote". */
enum placement_policy_kind { PLACEMENT_RANDOM, PLACEMENT_LOCAL, PLACEMENT_REMOTE };

typedef struct owner_config {
    char *cluster_name;     /* default "fluxon" */
    char *master;           /* "host:port", required */
    char *node_name;        /* default NULL: the owner picks "owner-<pid>" */
    char *data_listen;      /* "host:port" of the data plane, default "127.0.0.1:0" */
    int log_level;          /* -1: not set */
    uint64_t memory_size;   /* required, > 0 */
    char *client_socket;    /* required */
    bool prefault;          /* default true */
    bool use_hugepages;     /* default true: hugetlb pages when enough are free */
    char **large_file_paths;
    size_t n_large_file_paths;
    uint64_t *large_limit_size; /* NULL when absent or null: no SSD tier */
    size_t n_large_limit_size;
} owner_config;

typedef struct master_config {
    char *cluster_name;          /* default "fluxon" */
    char *listen;                /* default "127.0.0.1:7700" */
    char *http;                  /* default NULL: no HTTP endpoint */
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
    int log_level;               /* -1: not set */
} master_config;

/* Fills defaults. */
void owner_config_init(owner_config *c);
void master_config_init(master_config *c);

/* Reads a YAML file over the current values. Returns 0, or -1 with a message
 * naming the key (or the file and line for a YAML syntax error) in err. Unknown
 * keys are errors. */
int owner_config_load(owner_config *c, const char *path, char *err, size_t errlen);
int master_config_load(master_config *c, const char *path, char *err, size_t errlen);

/* Sets one key from a string, as a flag would ("fluxonkv_spec.memory_size" or
 * "memory_size"; lists as comma-separated values, "null" clears
 * large_limit_size). Returns 0 or -1 with a message naming the key. */
int owner_config_set(owner_config *c, const char *key, const char *value, char *err,
                     size_t errlen);
int master_config_set(master_config *c, const char *key, const char *value, char *err,
                      size_t errlen);

/* Checks the rules that span keys (required keys present, memory_size > 0,
 * large_limit_size the same length as large_file_paths, each limit >= 512,
 * "host:port" forms, heartbeat_timeout > heartbeat_interval). Returns 0 or -1
 * with a message naming the key. */
int owner_config_validate(const owner_config *c, char *err, size_t errlen);
int master_config_validate(const master_config *c, char *err, size_t errlen);

/* Frees what the config owns (NULL-safe); the struct itself is the caller's. */
void owner_config_free(owner_config *c);
void master_config_free(master_config *c);

#endif
