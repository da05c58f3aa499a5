/*
 * config.h - the table-driven engine behind the YAML files and flags of
 * fluxon-owner and fluxon-master (libyaml).
 *
 * Each role describes its keys in a table of struct cfg_key (dotted path,
 * kind, field offset) and a struct cfg_schema, next to the role:
 * src/owner/owner_config.[ch] (in fx_owner) and src/master/master_config.[ch]
 * (in fx_master). The engine loads a YAML file, sets a key as a flag would
 * (the dotted key, for example "fluxonkv_spec.memory_size", or the last
 * component alone) and frees a config by that table. Every violation is
 * reported as "<key>: <what is wrong>" in err; callers exit 2.
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
    CK_COUNT,        /* unsigned whole number, min..CFG_COUNT_MAX */
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

#define CFG_COUNT_MAX 16777216u /* the largest CK_COUNT accepted */

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

#endif
