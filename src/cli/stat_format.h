/*
 * stat_format.h - how `fluxon stat` prints what it learned: key=value lines
 * (the default, what scripts and tests read), an aligned table for people
 * (--human) or one JSON document (--json).
 */
#ifndef FX_CLI_STAT_FORMAT_H
#define FX_CLI_STAT_FORMAT_H

#include <stddef.h>
#include <stdio.h>

#include "fluxon/fluxon.h"

typedef enum stat_format { STAT_KV, STAT_HUMAN, STAT_JSON } stat_format;

/* Writes the master and its n owners to f in the format; returns 0, or -1
 * when out of memory (JSON). pid_known: the master runs on this host, so
 * its pid means something here. */
int stat_print(FILE *f, stat_format fmt, const fx_master_stat *ms, int pid_known,
               const fx_owner_stat *owners, size_t n);

/* "512 B", "1.5 KiB", "64.0 MiB", "2.00 GiB" into buf. */
const char *stat_size(char *buf, size_t cap, uint64_t bytes);

#endif
