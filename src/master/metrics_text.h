/*
 * metrics_text.h - the master's /metrics page (Prometheus text format).
 */
#ifndef FX_MASTER_METRICS_TEXT_H
#define FX_MASTER_METRICS_TEXT_H

#include <stdbool.h>
#include <stdio.h>

struct master;

/* Writes the whole page into f (loop thread); serving: master_serving(m). */
void metrics_text_write(FILE *f, const struct master *m, bool serving);

#endif
