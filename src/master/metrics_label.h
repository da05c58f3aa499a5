/*
 * metrics_label.h - label values for the Prometheus text format of /metrics.
 *
 * A label value comes from a peer (an owner's node_name travels in its
 * Register), so it is escaped before it goes between the quotes: the format
 * requires backslash as \\, double quote as \" and line feed as \n, or a name
 * could close the label and start samples of its own. The format also wants
 * UTF-8, so a byte that is not part of a valid UTF-8 sequence becomes '?'.
 */
#ifndef FX_MASTER_METRICS_LABEL_H
#define FX_MASTER_METRICS_LABEL_H

#include <stddef.h>

/* Escapes value into out (cap bytes, NUL-terminated). Returns the length
 * written, or -ENOSPC when it does not fit (out is then ""). A cap of
 * 2 * strlen(value) + 1 always fits. */
int metrics_label_escape(const char *value, char *out, size_t cap);

#endif
