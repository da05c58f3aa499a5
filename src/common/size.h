/*
 * size.h - size strings of the config and the CLI ("4096", "512.9B", "1.5GB").
 *
 * A size is an integer number of bytes, or a decimal number followed by a unit:
 * B, KB, MB, GB, TB (binary: KB = 1024 bytes, as in the spec), also written
 * KiB/MiB/GiB/TiB or K/M/G/T, case-insensitive, with optional spaces between
 * number and unit. Fractions truncate to whole bytes.
 */
#ifndef FX_COMMON_SIZE_H
#define FX_COMMON_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* Parses s into *out. Returns 0, or -EINVAL for empty, negative, malformed or
 * unknown-unit input, -ERANGE when the value does not fit in 64 bits; *out is
 * unchanged on failure. */
int size_parse(const char *s, uint64_t *out);

/* Writes a human form ("1.50 GiB", "512 B") into buf; returns buf. */
char *size_format(uint64_t v, char *buf, size_t cap);

#endif
