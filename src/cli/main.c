/*
 * main.c - the `fluxon` command: dispatch on the first word and the usage text.
 *
 * Each subcommand lives in the file named after what it does or touches:
 * up.c and down.c start and stop a local cluster (over cluster_dir.c, its
 * directory), kv.c talks to an owner through libfluxon (put, get, del,
 * stat). Exit codes are in cli.h.
 */
#include "cli/args.h"
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: fluxon <command> [options]\n"
    "\n"
    "commands:\n"
    "  up [--dir DIR] [--dram SIZE] [--ssd SIZE] [--owners N] [--cache-budget PCT]\n"
    "     [--bin-dir PATH]\n"
    "      start a local cluster (one master, N owners) in the background and\n"
    "      print each owner's client socket path\n"
    "  down [--dir DIR]\n"
    "      stop the cluster started in DIR and remove its runtime files\n"
    "  put KEY [FILE|-] [--socket PATH]\n"
    "      store the contents of FILE (stdin when '-' or absent) under KEY\n"
    "  get [-v] KEY [-o FILE] [--socket PATH]\n"
    "      write the value of KEY to stdout (or FILE); -v prints its source\n"
    "      (source=memory or source=ssd) on stderr\n"
    "  del KEY [--socket PATH]\n"
    "      delete KEY\n"
    "  stat [--socket PATH]\n"
    "      per-owner memory and SSD capacity/used and hits by source\n"
    "\n"
    "DIR defaults to /tmp/fluxon-$UID; SIZE is bytes or a size such as 512MB or\n"
    "1.5GB (binary units); --dram defaults to 1GB. The binaries fluxon-master and\n"
    "fluxon-owner come from --bin-dir, else the directory of this program, else\n"
    "PATH. The socket is --socket, else $FLUXON_SOCKET, else\n"
    "/tmp/fluxon-$UID/owner0.sock. Options may come before or after the other\n"
    "arguments; use '--' before a KEY that starts with '-'.\n"
    "\n"
    "exit status: 0 success, 1 failure (KeyNotFound on a miss), 2 usage error.\n";

void cli_usage(FILE *out)
{
    fputs(usage_text, out);
}

/* After a usage error's own line: where the full text is, not the text. */
static void usage_hint(void)
{
    fputs("run 'fluxon --help' for the commands and their options\n", stderr);
}

int cli_args_exit(int args_rc)
{
    if (args_rc == ARGS_HELP) {
        cli_usage(stdout);
        return CLI_OK;
    }
    usage_hint();
    return CLI_USAGE;
}

void cli_default_dir(char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/fluxon-%u", (unsigned)getuid());
}

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
    usage_hint();
    return CLI_USAGE;
}
