/*
 * flags.h - the first pass over a server's command line: find --config (the
 * file is read before the other flags, so that flags override it) and --help.
 */
#ifndef FX_COMMON_FLAGS_H
#define FX_COMMON_FLAGS_H

#include <stdbool.h>

/* Sets *config to the --config value (or leaves it) and returns true when
 * --help is present. */
bool flags_prescan(int argc, char **argv, const char **config);

#endif
