/*
 * args.c - the option parser of the `fluxon` subcommands (see args.h).
 *
 * Deliberately small: long and short options from a table, values in the next
 * word or after '=', positional words anywhere. getopt_long would permute argv
 * and keep global state; a table walk is simpler to read and test.
 */
#include "cli/args.h"

#include <stdio.h>
#include <string.h>

/* Finds the option whose name (or alias) is the first len bytes of word. */
static const struct args_opt *find_opt(const struct args_spec *spec, const char *word,
                                       size_t len)
{
    for (size_t i = 0; i < spec->nopts; i++) {
        const struct args_opt *o = &spec->opts[i];
        if ((strlen(o->name) == len && memcmp(o->name, word, len) == 0) ||
            (o->alias && strlen(o->alias) == len && memcmp(o->alias, word, len) == 0))
            return o;
    }
    return NULL;
}

int args_parse(const struct args_spec *spec, int argc, char **argv, const char **pos,
               size_t *npos)
{
    size_t n = 0;
    int only_pos = 0;

    for (int i = 0; i < argc; i++) {
        const char *w = argv[i];
        int is_opt = !only_pos && w[0] == '-' && w[1] != '\0';

        if (is_opt && strcmp(w, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (is_opt && (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0))
            return ARGS_HELP;
        if (is_opt) {
            /* "--name=value" only for long options; "-o=x" is not a form anyone expects. */
            const char *eq = (w[1] == '-') ? strchr(w, '=') : NULL;
            size_t len = eq ? (size_t)(eq - w) : strlen(w);
            const struct args_opt *o = find_opt(spec, w, len);
            if (!o) {
                fprintf(stderr, "fluxon %s: unknown option '%.*s'\n", spec->cmd, (int)len, w);
                return ARGS_ERROR;
            }
            if (o->flag) {
                if (eq) {
                    fprintf(stderr, "fluxon %s: option '%s' takes no value\n", spec->cmd,
                            o->name);
                    return ARGS_ERROR;
                }
                *o->flag = 1;
            } else if (eq) {
                *o->value = eq + 1;
            } else if (i + 1 < argc) {
                *o->value = argv[++i];
            } else {
                fprintf(stderr, "fluxon %s: option '%s' needs a value\n", spec->cmd, o->name);
                return ARGS_ERROR;
            }
            continue;
        }
        if (n >= spec->max_pos) {
            fprintf(stderr, "fluxon %s: unexpected argument '%s'\n", spec->cmd, w);
            return ARGS_ERROR;
        }
        pos[n++] = w;
    }
    if (n < spec->min_pos) {
        fprintf(stderr, "fluxon %s: missing %s\n", spec->cmd, spec->pos_names[n]);
        return ARGS_ERROR;
    }
    *npos = n;
    return ARGS_OK;
}
