/*
 * main.c - the `fluxon` command: dispatch on the first word.
 *
 * Each subcommand lives in the file named after what it does or touches:
 * up.c and down.c start and stop a local cluster (over cluster_dir.c, its
 * directory), kv.c talks to an owner through libfluxon (put, get, del,
 * stat); cli.c holds what they share (the usage text, the default cluster
 * directory). Exit codes are in cli.h.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"up", cli_up},   {"down", cli_down}, {"put", cli_put},    {"get", cli_get},
    {"del", cli_del}, {"delete", cli_del}, {"stat", cli_stat},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_usage(stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        cli_usage(stdout);
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 2, argv + 2);

    if (cmd[0] == '-')
        fprintf(stderr, "fluxon: unknown option '%s'\n", cmd);
    else
        fprintf(stderr, "fluxon: unknown command '%s'\n", cmd);
    cli_usage_hint();
    return CLI_USAGE;
}
