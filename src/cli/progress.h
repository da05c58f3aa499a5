/*
 * progress.h - a progress bar on a terminal for `fluxon put` of a large
 * file or of stdin: "key [#########.......]  45% 120.0 MiB / 256 MiB  310 MiB/s",
 * redrawn in place on stderr at most every 100 ms, and only when stderr is
 * a terminal (a pipe or a file gets nothing).
 */
#ifndef FX_CLI_PROGRESS_H
#define FX_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Values this large (or of unknown size, stdin) get a bar. */
#define PROGRESS_MIN_BYTES (8u << 20)

typedef struct progress {
    FILE *out;       /* stderr, or NULL: no bar */
    const char *label;
    uint64_t total;  /* 0: unknown (a pipe) */
    uint64_t done;
    int64_t start_ms, drawn_ms;
} progress;

/* A bar for total bytes (0: unknown) under label; off unless fd 2 is a
 * terminal and the value is large or of unknown size. */
void progress_start(progress *p, const char *label, uint64_t total);
/* done bytes so far. */
void progress_update(progress *p, uint64_t done);
/* The last draw and its line end (ok: complete; else the line is left as it was). */
void progress_finish(progress *p, bool ok);

#endif
