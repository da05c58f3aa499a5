/*
 * cli.h - what the pieces of the `fluxon` command share: the exit codes, the
 * usage text, and one entry point per subcommand.
 *
 * cli.c implements the shared part. main.c dispatches on the first word;
 * each subcommand gets the words after it (argv[0] is the first word after
 * the command name) and returns the process exit code: 0 success, 1 failure
 * (already reported on stderr), 2 usage error or a feature that is not built
 * yet.
 */
#ifndef FX_CLI_CLI_H
#define FX_CLI_CLI_H

#include <stdio.h>

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Prints the usage text to out. */
void cli_usage(FILE *out);

/* After a usage error's own line: prints where the full text is (a line
 * pointing at --help on stderr), not the text. */
void cli_usage_hint(void);

/* Turns a non-zero args_parse() result into an exit code: help prints the
 * usage on stdout and gives CLI_OK; an error (already described on stderr)
 * adds a line pointing at --help and gives CLI_USAGE. */
int cli_args_exit(int args_rc);

/* The default cluster directory, "/tmp/fluxon-$UID", written into buf. */
void cli_default_dir(char *buf, size_t cap);

int cli_up(int argc, char **argv);   /* up.c */
int cli_down(int argc, char **argv); /* down.c */
int cli_put(int argc, char **argv);  /* kv.c */
int cli_get(int argc, char **argv);  /* kv.c */
int cli_del(int argc, char **argv);  /* kv.c */
int cli_stat(int argc, char **argv); /* kv.c */

#endif
