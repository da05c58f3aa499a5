/*
 * cli.c - what the subcommands of the `fluxon` command share (see cli.h): the
 * usage text, the exit code of an option-parsing result, and the default
 * cluster directory.
 *
 * Kept apart from main.c, which only dispatches, so that the subcommand
 * files call down into this file and never back into the dispatcher.
 */
#include "cli/args.h"
#include "cli/cli.h"

#include <stdio.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: fluxon <command> [options]\n"
    "\n"
    "commands:\n"
    "  up [--dir DIR] [--dram SIZE] [--ssd SIZE] [--owners N] [--masters M]\n"
    "     [--cache-budget PCT] [--get-threads N] [--bin-dir PATH]\n"
    "      start a local cluster (one master, N owners) in the background and\n"
    "      print each owner's client socket path, then the master's web page and\n"
    "      /metrics URL (http://127.0.0.1:PORT/); --masters M (M >= 2) starts\n"
    "      an etcd and M masters on it, one leading and the others standing by\n"
    "      (--get-threads N: each owner's threads that answer gets beside its\n"
    "      loop, 0..16, default 2)\n"
    "  down [--dir DIR]\n"
    "      stop the cluster started in DIR and remove its runtime files\n"
    "  put KEY [FILE|-] [--socket PATH]\n"
    "      store the contents of FILE (stdin when '-' or absent) under KEY; on a\n"
    "      terminal a large value shows a progress bar on stderr\n"
    "  get [-v] KEY [-o FILE] [--socket PATH]\n"
    "      write the value of KEY to stdout (or FILE); -v prints its source\n"
    "      (source=memory or source=ssd) on stderr\n"
    "  del KEY [--socket PATH]\n"
    "      delete KEY\n"
    "  stat [--human|--json] [--socket PATH]\n"
    "      the master (leader=HOST:PORT term=T pid=PID) on the first line, then\n"
    "      per-owner memory and SSD capacity/used and hits by source as\n"
    "      key=value lines; --human: an aligned table (sizes in MiB / GiB, hit\n"
    "      rates in %); --json: one JSON document\n"
    "\n"
    "DIR defaults to /tmp/fluxon-$UID; SIZE is bytes or a size such as 512MB or\n"
    "1.5GB (binary units); --dram defaults to 1GB. The binaries fluxon-master and\n"
    "fluxon-owner come from --bin-dir, else the directory of this program, else\n"
    "PATH (etcd, for --masters, from any of them). The socket is --socket, else\n"
    "$FLUXON_SOCKET, else /tmp/fluxon-$UID/owner0.sock. Options may come before\n"
    "or after the other arguments; use '--' before a KEY that starts with '-'.\n"
    "\n"
    "exit status: 0 success, 1 failure (KeyNotFound on a miss), 2 usage error.\n";

void cli_usage(FILE *out)
{
    fputs(usage_text, out);
}

void cli_usage_hint(void)
{
    fputs("run 'fluxon --help' for the commands and their options\n", stderr);
}

int cli_args_exit(int args_rc)
{
    if (args_rc == ARGS_HELP) {
        cli_usage(stdout);
        return CLI_OK;
    }
    cli_usage_hint();
    return CLI_USAGE;
}

void cli_default_dir(char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/fluxon-%u", (unsigned)getuid());
}
