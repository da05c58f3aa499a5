/*
 * flags.c - see flags.h.
 */
#include "common/flags.h"

#include <string.h>

bool flags_prescan(int argc, char **argv, const char **config)
{
    bool help = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            *config = argv[++i];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            *config = argv[i] + 9;
        else if (strcmp(argv[i], "--help") == 0)
            help = true;
    }
    return help;
}
