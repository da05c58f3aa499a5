/*
 * config.c - the table-driven engine behind the YAML files and flags of
 * fluxon-owner and fluxon-master.
 *
 * Each role describes its keys in one table (dotted path, kind, field
 * offset): src/owner/owner_config.c and src/master/master_config.c. The YAML
 * walker, the flag setter, the deep copy and the free function here are
 * driven by that one description, so they cannot drift apart. A value always
 * goes through apply_key(), which parses into temporaries and only then
 * replaces the field: a failed flag leaves the config as it was. A file is
 * loaded into a deep copy that replaces the caller's config only when the
 * whole file was accepted, so a failed load leaves it unchanged too. Values
 * that derive from others (the master's default heartbeat_timeout, 3 x
 * heartbeat_interval) are recomputed by the schema's applied() hook after
 * each key. The checks that the roles' validate functions share (names,
 * "host:port", log level) are here too.
 *
 * The YAML side uses libyaml's document API: the file is composed into a node
 * tree, then walked mapping by mapping. Every error names the dotted key
 * ("fluxonkv_spec.large_limit_size[1]: invalid size 'x'") and, for file
 * errors, ends with "(FILE:LINE)"; syntax errors start with "FILE:LINE:COL:".
 */
#include "common/config.h"

#include "common/log.h"
#include "common/size.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

/* Longest host accepted in "host:port" (a DNS name is at most 253 bytes). */
#define CFG_HOST_MAX 255

#define FIELD(cfg, off, type) ((type *)(void *)((char *)(cfg) + (off)))

/* A value to apply: a null, one scalar, or a list of scalars. */
struct cfg_value {
    bool is_null;
    const char *str;    /* scalar kinds */
    const char **items; /* list kinds */
    size_t n;
};

int cfg_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Appends " (FILE:LINE)" to a message that is already in err. */
static void cfg_err_where(char *err, size_t errlen, const char *file, size_t line)
{
    if (!err || errlen == 0)
        return;
    size_t len = strlen(err);
    if (len + 1 < errlen)
        snprintf(err + len, errlen - len, " (%s:%zu)", file, line + 1);
}

/* ---- scalar parsers ------------------------------------------------------ */

int config_parse_hostport(const char *s, char *host, size_t hostlen, int *port)
{
    if (!s)
        return -1;
    const char *colon = strrchr(s, ':');
    if (!colon)
        return -1;
    const char *h = s;
    size_t hlen = (size_t)(colon - s);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') { /* [::1]:7700 */
        h++;
        hlen -= 2;
    } else if (memchr(h, ':', hlen)) {
        return -1; /* a bare IPv6 address is ambiguous */
    }
    if (hlen == 0 || hlen > CFG_HOST_MAX)
        return -1;
    for (size_t i = 0; i < hlen; i++)
        if (isspace((unsigned char)h[i]) || h[i] == '[' || h[i] == ']' || h[i] == '/')
            return -1;

    const char *p = colon + 1;
    size_t plen = strlen(p);
    if (plen == 0 || plen > 5)
        return -1;
    long v = 0;
    for (size_t i = 0; i < plen; i++) {
        if (!isdigit((unsigned char)p[i]))
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    if (v > 65535)
        return -1;

    if (host) {
        if (hlen + 1 > hostlen)
            return -1;
        memcpy(host, h, hlen);
        host[hlen] = '\0';
    }
    if (port)
        *port = (int)v;
    return 0;
}

/* "500ms", "60s", "2m", "1h" or a plain integer of milliseconds. Returns 0,
 * -EINVAL or -ERANGE. */
static int parse_duration_ms(const char *s, uint64_t *out)
{
    while (isspace((unsigned char)*s))
        s++;
    const char *p = s;
    uint64_t v = 0;
    bool overflow = false;
    while (isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10u)
            overflow = true;
        else
            v = v * 10u + d;
        p++;
    }
    if (p == s)
        return -EINVAL;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *unit = p;
    while (isalpha((unsigned char)*p))
        p++;
    size_t ulen = (size_t)(p - unit);
    while (isspace((unsigned char)*p))
        p++;
    if (*p != '\0')
        return -EINVAL;

    uint64_t mul;
    if (ulen == 0 || (ulen == 2 && strncasecmp(unit, "ms", 2) == 0))
        mul = 1;
    else if (ulen == 1 && tolower((unsigned char)*unit) == 's')
        mul = 1000;
    else if (ulen == 1 && tolower((unsigned char)*unit) == 'm')
        mul = 60000;
    else if (ulen == 1 && tolower((unsigned char)*unit) == 'h')
        mul = 3600000;
    else
        return -EINVAL;
    if (overflow || v > UINT64_MAX / mul)
        return -ERANGE;
    *out = v * mul;
    return 0;
}

static int parse_bool(const char *s, bool *out)
{
    if (strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0) {
        *out = true;
        return 0;
    }
    if (strcasecmp(s, "false") == 0 || strcasecmp(s, "no") == 0) {
        *out = false;
        return 0;
    }
    return -1;
}

static int parse_size_value(const char *label, const char *s, uint64_t min, uint64_t *out,
                            char *err, size_t errlen)
{
    uint64_t v;
    int rc = size_parse(s, &v);
    if (rc == -ERANGE)
        return cfg_err(err, errlen, "%s: size '" CFG_QUOTE "' is too large", label, s);
    if (rc < 0)
        return cfg_err(err, errlen, "%s: invalid size '" CFG_QUOTE "'", label, s);
    if (v < min) {
        if (min == 1)
            return cfg_err(err, errlen, "%s: must be > 0", label);
        return cfg_err(err, errlen, "%s: %" PRIu64 " bytes is below the minimum of %" PRIu64,
                       label, v, min);
    }
    *out = v;
    return 0;
}

/* ---- applying one value ---------------------------------------------------- */

static void free_strlist(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int apply_scalar(void *cfg, const struct cfg_key *k, const char *label,
                        const struct cfg_value *v, char *err, size_t errlen)
{
    if (v->is_null) {
        switch (k->kind) {
        case CK_STR_OPT:
        case CK_HOSTPORT_OPT: {
            char **f = FIELD(cfg, k->off, char *);
            free(*f);
            *f = NULL;
            return 0;
        }
        case CK_LOGLEVEL:
            *FIELD(cfg, k->off, int) = -1;
            return 0;
        default:
            return cfg_err(err, errlen, "%s: a value is required, got null", label);
        }
    }

    const char *s = v->str;
    switch (k->kind) {
    case CK_STR:
    case CK_STR_OPT:
    case CK_HOSTPORT:
    case CK_HOSTPORT_OPT: {
        if (*s == '\0')
            return cfg_err(err, errlen, "%s: must not be empty", label);
        if ((k->kind == CK_HOSTPORT || k->kind == CK_HOSTPORT_OPT) &&
            config_parse_hostport(s, NULL, 0, NULL) < 0)
            return cfg_err(err, errlen,
                           "%s: invalid host:port '" CFG_QUOTE "' (expected HOST:PORT, "
                           "port 0..65535)",
                           label, s);
        char *dup = strdup(s);
        if (!dup)
            return cfg_err(err, errlen, "%s: out of memory", label);
        char **f = FIELD(cfg, k->off, char *);
        free(*f);
        *f = dup;
        return 0;
    }
    case CK_SIZE:
        return parse_size_value(label, s, k->min, FIELD(cfg, k->off, uint64_t), err, errlen);
    case CK_BOOL: {
        bool b;
        if (parse_bool(s, &b) < 0)
            return cfg_err(err, errlen,
                           "%s: invalid boolean '" CFG_QUOTE "' (expected true/false/yes/no)",
                           label, s);
        *FIELD(cfg, k->off, bool) = b;
        return 0;
    }
    case CK_LOGLEVEL: {
        int lvl = fx_log_level_parse(s);
        if (lvl < 0)
            return cfg_err(err, errlen,
                           "%s: invalid log level '" CFG_QUOTE "' (expected error/warn/info/debug)",
                           label, s);
        *FIELD(cfg, k->off, int) = lvl;
        return 0;
    }
    case CK_DURATION: {
        uint64_t ms;
        int rc = parse_duration_ms(s, &ms);
        if (rc == -ERANGE)
            return cfg_err(err, errlen, "%s: duration '" CFG_QUOTE "' is too large", label, s);
        if (rc < 0)
            return cfg_err(err, errlen,
                           "%s: invalid duration '" CFG_QUOTE "' (expected e.g. 500ms, 60s, 2m "
                           "or an integer of milliseconds)",
                           label, s);
        if (ms < k->min)
            return cfg_err(err, errlen, "%s: must be > 0", label);
        *FIELD(cfg, k->off, uint64_t) = ms;
        return 0;
    }
    case CK_ENUM: {
        for (int i = 0; k->names[i]; i++) {
            if (strcasecmp(s, k->names[i]) == 0) {
                *FIELD(cfg, k->off, int) = i;
                return 0;
            }
        }
        char allowed[128] = "";
        for (int i = 0; k->names[i]; i++) {
            size_t used = strlen(allowed);
            snprintf(allowed + used, sizeof allowed - used, "%s%s", i ? "|" : "", k->names[i]);
        }
        return cfg_err(err, errlen, "%s: invalid value '" CFG_QUOTE "' (expected %s)", label, s,
                       allowed);
    }
    case CK_PERCENT: {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s || errno || (*end && strcmp(end, "%") != 0) || *s == '-' || v < k->min ||
            v > 100)
            return cfg_err(err, errlen,
                           "%s: invalid percentage '" CFG_QUOTE "' (expected %llu..100, e.g. 80%%)",
                           label, s, (unsigned long long)k->min);
        *FIELD(cfg, k->off, unsigned) = (unsigned)v;
        return 0;
    }
    case CK_COUNT: {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s || errno || *end || *s == '-' || *s == '+' || v < k->min ||
            v > CFG_COUNT_MAX)
            return cfg_err(err, errlen,
                           "%s: invalid count '" CFG_QUOTE "' (expected a whole number, "
                           "%llu..%u)",
                           label, s, (unsigned long long)k->min, CFG_COUNT_MAX);
        *FIELD(cfg, k->off, unsigned) = (unsigned)v;
        return 0;
    }
    default:
        return cfg_err(err, errlen, "%s: not a scalar key", label);
    }
}

static int apply_list(void *cfg, const struct cfg_key *k, const char *label,
                      const struct cfg_value *v, char *err, size_t errlen)
{
    size_t *count = FIELD(cfg, k->n_off, size_t);
    char item_label[300];

    if (k->kind == CK_STRLIST) {
        char ***f = FIELD(cfg, k->off, char **);
        char **list = NULL;
        if (!v->is_null) {
            list = calloc(v->n ? v->n : 1, sizeof *list);
            if (!list)
                return cfg_err(err, errlen, "%s: out of memory", label);
            for (size_t i = 0; i < v->n; i++) {
                snprintf(item_label, sizeof item_label, "%s[%zu]", label, i);
                if (v->items[i][0] == '\0') {
                    free_strlist(list, i);
                    return cfg_err(err, errlen, "%s: must not be empty", item_label);
                }
                list[i] = strdup(v->items[i]);
                if (!list[i]) {
                    free_strlist(list, i);
                    return cfg_err(err, errlen, "%s: out of memory", item_label);
                }
            }
        }
        free_strlist(*f, *count);
        *f = list;
        *count = v->is_null ? 0 : v->n;
        return 0;
    }

    /* CK_SIZELIST: an empty list stays non-NULL, so that "present but empty"
     * differs from "absent" when the lengths are compared. */
    uint64_t **f = FIELD(cfg, k->off, uint64_t *);
    uint64_t *list = NULL;
    if (!v->is_null) {
        list = calloc(v->n ? v->n : 1, sizeof *list);
        if (!list)
            return cfg_err(err, errlen, "%s: out of memory", label);
        for (size_t i = 0; i < v->n; i++) {
            snprintf(item_label, sizeof item_label, "%s[%zu]", label, i);
            if (parse_size_value(item_label, v->items[i], k->min, &list[i], err, errlen) < 0) {
                free(list);
                return -1;
            }
        }
    }
    free(*f);
    *f = list;
    *count = v->is_null ? 0 : v->n;
    return 0;
}

static int apply_key(void *cfg, const struct cfg_schema *sc, const struct cfg_key *k,
                     const char *label, const struct cfg_value *v, char *err, size_t errlen)
{
    int rc;
    if (k->kind == CK_STRLIST || k->kind == CK_SIZELIST)
        rc = apply_list(cfg, k, label, v, err, errlen);
    else
        rc = apply_scalar(cfg, k, label, v, err, errlen);
    if (rc == 0 && sc->applied)
        sc->applied(cfg, k);
    return rc;
}

/* ---- free and deep copy, driven by the table ------------------------------ */

void cfg_free(void *cfg, const struct cfg_schema *sc)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < sc->nkeys; i++) {
        const struct cfg_key *k = &sc->keys[i];
        switch (k->kind) {
        case CK_STR:
        case CK_STR_OPT:
        case CK_HOSTPORT:
        case CK_HOSTPORT_OPT:
            free(*FIELD(cfg, k->off, char *));
            *FIELD(cfg, k->off, char *) = NULL;
            break;
        case CK_STRLIST:
            free_strlist(*FIELD(cfg, k->off, char **), *FIELD(cfg, k->n_off, size_t));
            *FIELD(cfg, k->off, char **) = NULL;
            *FIELD(cfg, k->n_off, size_t) = 0;
            break;
        case CK_SIZELIST:
            free(*FIELD(cfg, k->off, uint64_t *));
            *FIELD(cfg, k->off, uint64_t *) = NULL;
            *FIELD(cfg, k->n_off, size_t) = 0;
            break;
        default:
            break;
        }
    }
}

/* Deep-copies src into dst (same struct type). Returns 0, or -1 with dst
 * holding nothing that needs freeing. */
static int cfg_copy(void *dst, const void *src, const struct cfg_schema *sc)
{
    memcpy(dst, src, sc->size);
    /* Detach every pointer first so that a failure half-way frees only copies. */
    for (size_t i = 0; i < sc->nkeys; i++) {
        const struct cfg_key *k = &sc->keys[i];
        switch (k->kind) {
        case CK_STR:
        case CK_STR_OPT:
        case CK_HOSTPORT:
        case CK_HOSTPORT_OPT:
            *FIELD(dst, k->off, char *) = NULL;
            break;
        case CK_STRLIST:
            *FIELD(dst, k->off, char **) = NULL;
            *FIELD(dst, k->n_off, size_t) = 0;
            break;
        case CK_SIZELIST:
            *FIELD(dst, k->off, uint64_t *) = NULL;
            *FIELD(dst, k->n_off, size_t) = 0;
            break;
        default:
            break;
        }
    }
    for (size_t i = 0; i < sc->nkeys; i++) {
        const struct cfg_key *k = &sc->keys[i];
        switch (k->kind) {
        case CK_STR:
        case CK_STR_OPT:
        case CK_HOSTPORT:
        case CK_HOSTPORT_OPT: {
            const char *s = *FIELD(src, k->off, char *);
            if (s && !(*FIELD(dst, k->off, char *) = strdup(s)))
                goto fail;
            break;
        }
        case CK_STRLIST: {
            char **s = *FIELD(src, k->off, char **);
            size_t n = *FIELD(src, k->n_off, size_t);
            if (!s)
                break;
            char **d = calloc(n ? n : 1, sizeof *d);
            if (!d)
                goto fail;
            for (size_t j = 0; j < n; j++) {
                if (!(d[j] = strdup(s[j]))) {
                    free_strlist(d, j);
                    goto fail;
                }
            }
            *FIELD(dst, k->off, char **) = d;
            *FIELD(dst, k->n_off, size_t) = n;
            break;
        }
        case CK_SIZELIST: {
            uint64_t *s = *FIELD(src, k->off, uint64_t *);
            size_t n = *FIELD(src, k->n_off, size_t);
            if (!s)
                break;
            uint64_t *d = calloc(n ? n : 1, sizeof *d);
            if (!d)
                goto fail;
            memcpy(d, s, n * sizeof *d);
            *FIELD(dst, k->off, uint64_t *) = d;
            *FIELD(dst, k->n_off, size_t) = n;
            break;
        }
        default:
            break;
        }
    }
    return 0;
fail:
    cfg_free(dst, sc);
    return -1;
}

/* ---- YAML walk --------------------------------------------------------------- */

struct load_ctx {
    yaml_document_t *doc;
    const struct cfg_schema *sc;
    void *cfg;
    const char *file;
    char *err;
    size_t errlen;
};

static const char *node_type_name(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

static bool node_is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE)
        return false;
    if (n->tag && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0)
        return true;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *s = (const char *)n->data.scalar.value;
    return s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
           strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

/* The text of a scalar node, or NULL (with err set) when it holds a NUL byte
 * and so cannot be a C string. */
static const char *node_str(struct load_ctx *lc, const yaml_node_t *n, const char *label)
{
    const char *s = (const char *)n->data.scalar.value;
    if (strlen(s) != n->data.scalar.length) {
        cfg_err(lc->err, lc->errlen, "%s: value contains a NUL byte", label);
        return NULL;
    }
    return s;
}

static const struct cfg_key *find_key(const struct cfg_schema *sc, const char *path)
{
    for (size_t i = 0; i < sc->nkeys; i++)
        if (strcmp(sc->keys[i].path, path) == 0)
            return &sc->keys[i];
    return NULL;
}

/* Applies the value node vn to key k. Errors leave the message in lc->err. */
static int load_value(struct load_ctx *lc, const struct cfg_key *k, const char *label,
                      yaml_node_t *vn)
{
    struct cfg_value v = {0};
    bool is_list = k->kind == CK_STRLIST || k->kind == CK_SIZELIST;
    int rc = -1;

    if (node_is_null(vn)) {
        v.is_null = true;
        return apply_key(lc->cfg, lc->sc, k, label, &v, lc->err, lc->errlen);
    }
    if (!is_list) {
        if (vn->type != YAML_SCALAR_NODE)
            return cfg_err(lc->err, lc->errlen, "%s: expected a scalar, got %s", label,
                           node_type_name(vn));
        if (!(v.str = node_str(lc, vn, label)))
            return -1;
        return apply_key(lc->cfg, lc->sc, k, label, &v, lc->err, lc->errlen);
    }

    if (vn->type != YAML_SEQUENCE_NODE)
        return cfg_err(lc->err, lc->errlen, "%s: expected a list, got %s", label,
                       node_type_name(vn));
    size_t n = (size_t)(vn->data.sequence.items.top - vn->data.sequence.items.start);
    v.items = calloc(n ? n : 1, sizeof *v.items);
    if (!v.items)
        return cfg_err(lc->err, lc->errlen, "%s: out of memory", label);
    v.n = n;
    for (size_t i = 0; i < n; i++) {
        char item_label[300];
        snprintf(item_label, sizeof item_label, "%s[%zu]", label, i);
        yaml_node_t *in = yaml_document_get_node(lc->doc, vn->data.sequence.items.start[i]);
        if (!in || in->type != YAML_SCALAR_NODE) {
            cfg_err(lc->err, lc->errlen, "%s: expected a scalar, got %s", item_label,
                    in ? node_type_name(in) : "nothing");
            goto out;
        }
        if (node_is_null(in)) {
            cfg_err(lc->err, lc->errlen, "%s: a value is required, got null", item_label);
            goto out;
        }
        if (!(v.items[i] = node_str(lc, in, item_label)))
            goto out;
    }
    rc = apply_key(lc->cfg, lc->sc, k, label, &v, lc->err, lc->errlen);
out:
    free(v.items);
    return rc;
}

static int load_mapping(struct load_ctx *lc, yaml_node_t *map, const char *prefix)
{
    yaml_node_pair_t *start = map->data.mapping.pairs.start;
    yaml_node_pair_t *top = map->data.mapping.pairs.top;

    for (yaml_node_pair_t *pair = start; pair < top; pair++) {
        yaml_node_t *kn = yaml_document_get_node(lc->doc, pair->key);
        yaml_node_t *vn = yaml_document_get_node(lc->doc, pair->value);
        if (!kn || !vn || kn->type != YAML_SCALAR_NODE) {
            cfg_err(lc->err, lc->errlen, "%s: mapping keys must be scalars",
                    prefix ? prefix : "top level");
            cfg_err_where(lc->err, lc->errlen, lc->file, map->start_mark.line);
            return -1;
        }
        const char *name = (const char *)kn->data.scalar.value;
        if (strlen(name) != kn->data.scalar.length) {
            cfg_err(lc->err, lc->errlen, "%s: a key contains a NUL byte",
                    prefix ? prefix : "top level");
            cfg_err_where(lc->err, lc->errlen, lc->file, kn->start_mark.line);
            return -1;
        }
        char label[256];
        if (prefix)
            snprintf(label, sizeof label, "%s.%s", prefix, name);
        else
            snprintf(label, sizeof label, "%s", name);

        for (yaml_node_pair_t *q = start; q < pair; q++) {
            yaml_node_t *qk = yaml_document_get_node(lc->doc, q->key);
            if (qk && qk->type == YAML_SCALAR_NODE &&
                strcmp((const char *)qk->data.scalar.value, name) == 0) {
                cfg_err(lc->err, lc->errlen, "%s: duplicate key", label);
                cfg_err_where(lc->err, lc->errlen, lc->file, kn->start_mark.line);
                return -1;
            }
        }

        const struct cfg_key *k = find_key(lc->sc, label);
        int rc;
        if (!k) {
            rc = cfg_err(lc->err, lc->errlen, "%s: unknown key", label);
        } else if (k->kind == CK_MAP) {
            if (node_is_null(vn))
                continue; /* an empty section */
            if (vn->type == YAML_MAPPING_NODE) {
                if (load_mapping(lc, vn, label) < 0)
                    return -1; /* the inner error already says where */
                continue;
            }
            rc = cfg_err(lc->err, lc->errlen, "%s: expected a mapping, got %s", label,
                         node_type_name(vn));
        } else {
            rc = load_value(lc, k, label, vn);
        }
        if (rc < 0) {
            cfg_err_where(lc->err, lc->errlen, lc->file,
                          k ? vn->start_mark.line : kn->start_mark.line);
            return -1;
        }
    }
    return 0;
}

static void yaml_error_message(const yaml_parser_t *p, const char *file, char *err,
                               size_t errlen)
{
    switch (p->error) {
    case YAML_MEMORY_ERROR:
        cfg_err(err, errlen, "%s: out of memory while reading YAML", file);
        break;
    case YAML_READER_ERROR:
        cfg_err(err, errlen, "%s:%zu: YAML read error: %s (byte %zu)", file, p->mark.line + 1,
                p->problem ? p->problem : "unknown", p->problem_offset);
        break;
    default:
        cfg_err(err, errlen, "%s:%zu:%zu: YAML syntax error: %s%s%s", file,
                p->problem_mark.line + 1, p->problem_mark.column + 1,
                p->problem ? p->problem : "unknown", p->context ? " " : "",
                p->context ? p->context : "");
        break;
    }
}

/* Loads path over cfg; cfg is replaced only when the whole file is accepted. */
int cfg_load(void *cfg, const struct cfg_schema *sc, const char *path, char *err, size_t errlen)
{
    if (!cfg || !path)
        return cfg_err(err, errlen, "config: no file given");

    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        return cfg_err(err, errlen, "%s: cannot open: %s", path, strerror(e));
    }

    int rc = -1;
    yaml_parser_t parser;
    yaml_document_t doc, extra;
    bool have_doc = false;
    /* The copy the file is loaded into: sc->size bytes, a role's config struct. */
    void *tmp = NULL;
    bool have_tmp = false;

    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        return cfg_err(err, errlen, "%s: out of memory", path);
    }
    yaml_parser_set_input_file(&parser, f);

    if (!yaml_parser_load(&parser, &doc)) {
        yaml_error_message(&parser, path, err, errlen);
        goto out;
    }
    have_doc = true;

    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root) {
        if (!yaml_parser_load(&parser, &extra)) {
            yaml_error_message(&parser, path, err, errlen);
            goto out;
        }
        yaml_node_t *extra_root = yaml_document_get_root_node(&extra);
        size_t extra_line = extra.start_mark.line; /* its "---" */
        yaml_document_delete(&extra);
        if (extra_root) {
            cfg_err(err, errlen, "%s:%zu: more than one YAML document", path, extra_line + 1);
            goto out;
        }
    }

    if (!(tmp = malloc(sc->size)) || cfg_copy(tmp, cfg, sc) < 0) {
        cfg_err(err, errlen, "%s: out of memory", path);
        goto out;
    }
    have_tmp = true;

    if (root && !node_is_null(root)) {
        if (root->type != YAML_MAPPING_NODE) {
            cfg_err(err, errlen, "%s: the top level must be a mapping of keys, got %s", path,
                    node_type_name(root));
            goto out;
        }
        struct load_ctx lc = {&doc, sc, tmp, path, err, errlen};
        if (load_mapping(&lc, root, NULL) < 0)
            goto out;
    }

    cfg_free(cfg, sc);
    memcpy(cfg, tmp, sc->size);
    have_tmp = false;
    rc = 0;
out:
    if (have_tmp)
        cfg_free(tmp, sc);
    free(tmp);
    if (have_doc)
        yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}

/* ---- flags ------------------------------------------------------------------- */

/* Finds a key by its dotted path or its last component; '-' reads as '_'. */
static const struct cfg_key *find_flag_key(const struct cfg_schema *sc, const char *key)
{
    char norm[128];
    size_t len = strlen(key);
    if (len == 0 || len >= sizeof norm)
        return NULL;
    for (size_t i = 0; i <= len; i++)
        norm[i] = key[i] == '-' ? '_' : key[i];
    for (size_t i = 0; i < sc->nkeys; i++) {
        const struct cfg_key *k = &sc->keys[i];
        if (k->kind == CK_MAP)
            continue;
        const char *dot = strrchr(k->path, '.');
        if (strcmp(k->path, norm) == 0 || (dot && strcmp(dot + 1, norm) == 0))
            return k;
    }
    return NULL;
}

int cfg_set(void *cfg, const struct cfg_schema *sc, const char *key, const char *value, char *err,
            size_t errlen)
{
    if (!cfg || !key)
        return cfg_err(err, errlen, "config: no key given");
    const struct cfg_key *k = find_flag_key(sc, key);
    if (!k)
        return cfg_err(err, errlen, "%.100s: unknown key", key);
    if (!value)
        return cfg_err(err, errlen, "%s: missing value", k->path);

    struct cfg_value v = {0};
    if (strcmp(value, "null") == 0) {
        v.is_null = true;
        return apply_key(cfg, sc, k, k->path, &v, err, errlen);
    }
    if (k->kind != CK_STRLIST && k->kind != CK_SIZELIST) {
        v.str = value;
        return apply_key(cfg, sc, k, k->path, &v, err, errlen);
    }

    /* A comma-separated list; "" is the empty list. Items are trimmed. */
    char *copy = strdup(value);
    size_t n = 0;
    if (!copy)
        return cfg_err(err, errlen, "%s: out of memory", k->path);
    if (*copy) {
        n = 1;
        for (const char *p = copy; *p; p++)
            n += *p == ',';
    }
    v.items = calloc(n ? n : 1, sizeof *v.items);
    if (!v.items) {
        free(copy);
        return cfg_err(err, errlen, "%s: out of memory", k->path);
    }
    char *p = copy;
    for (size_t i = 0; i < n; i++) {
        char *end = strchr(p, ',');
        if (end)
            *end = '\0';
        while (isspace((unsigned char)*p))
            p++;
        size_t l = strlen(p);
        while (l > 0 && isspace((unsigned char)p[l - 1]))
            p[--l] = '\0';
        v.items[i] = p;
        p = end ? end + 1 : p + l;
    }
    v.n = n;
    int rc = apply_key(cfg, sc, k, k->path, &v, err, errlen);
    free(v.items);
    free(copy);
    return rc;
}
/* ---- validation helpers ------------------------------------------------------ */

int cfg_check_name(const char *label, const char *s, bool required, char *err, size_t errlen)
{
    if (!s && required)
        return cfg_err(err, errlen, "%s: missing (required)", label);
    if (s && *s == '\0')
        return cfg_err(err, errlen, "%s: must not be empty", label);
    return 0;
}

int cfg_check_hostport(const char *label, const char *s, bool required, char *err,
                       size_t errlen)
{
    if (!s)
        return required ? cfg_err(err, errlen, "%s: missing (required)", label) : 0;
    if (config_parse_hostport(s, NULL, 0, NULL) < 0)
        return cfg_err(err, errlen,
                       "%s: invalid host:port '" CFG_QUOTE "' (expected HOST:PORT, port 0..65535)",
                       label, s);
    return 0;
}

int cfg_check_log_level(int lvl, char *err, size_t errlen)
{
    if (lvl < -1 || lvl > FX_LOG_DEBUG)
        return cfg_err(err, errlen, "log_level: invalid level %d", lvl);
    return 0;
}
