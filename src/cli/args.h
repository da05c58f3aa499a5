/*
 * args.h - the option parser of the `fluxon` subcommands.
 *
 * Options and positional words may come in any order ("get KEY -v" and
 * "get -v KEY" are the same). An option takes its value from the next word
 * or after '=' ("--dir /x" or "--dir=/x"); "--" ends the options (so a key
 * may start with '-'); a lone "-" is a positional word (stdin for put).
 * "-h" and "--help" ask for the usage text.
 */
#ifndef FX_CLI_ARGS_H
#define FX_CLI_ARGS_H

#include <stddef.h>

struct args_opt {
    const char *name;   /* "--dir", "-o" */
    const char *alias;  /* a second spelling ("--output"), or NULL */
    const char **value; /* an option with a value: where it goes (last one wins) */
    int *flag;          /* an option without a value: set to 1 */
};

struct args_spec {
    const char *cmd;                 /* "get": names the command in messages */
    const struct args_opt *opts;
    size_t nopts;
    const char *const *pos_names;    /* names of the positional words ("KEY", "FILE") */
    size_t min_pos, max_pos;
};

enum { ARGS_OK = 0, ARGS_HELP = 1, ARGS_ERROR = -1 };

/* Parses argv[0..argc). Positional words go to pos[0..max_pos) in order and
 * their count to *npos. Returns ARGS_OK; ARGS_HELP for -h/--help; or
 * ARGS_ERROR after printing "fluxon CMD: <what is wrong>" on stderr (unknown
 * option, missing value, missing or extra positional word). argv is not
 * modified; the stored strings point into it. */
int args_parse(const struct args_spec *spec, int argc, char **argv, const char **pos,
               size_t *npos);

#endif
