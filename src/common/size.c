/*
 * size.c - parsing and printing of size strings ("4096", "512.9B", "1.5GB").
 *
 * The config file, the owner flags and the CLI all go through size_parse, so
 * "2GB" means the same number of bytes everywhere. Units are binary
 * (KB = KiB = K = 1024 bytes). The value is computed exactly in integers:
 * bytes = int_part * unit + floor(fraction * unit). Because every unit is
 * 2^k with k <= 40, floor(fraction * 2^k) depends only on the first k
 * fraction digits (any n / 2^k has at most k decimal digits), so longer
 * fractions are checked for syntax and then truncated without losing anything.
 */
#include "common/size.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Fraction digits that can affect the result: the largest unit is 2^40. */
#define SIZE_FRAC_DIGITS 40

struct size_unit {
    const char *name;
    unsigned shift;
};

static const struct size_unit size_units[] = {
    {"", 0},    {"b", 0},    {"k", 10},   {"kb", 10},  {"kib", 10}, {"m", 20},
    {"mb", 20}, {"mib", 20}, {"g", 30},   {"gb", 30},  {"gib", 30}, {"t", 40},
    {"tb", 40}, {"tib", 40},
};

static int size_unit_lookup(const char *s, size_t len, unsigned *shift)
{
    for (size_t i = 0; i < sizeof size_units / sizeof size_units[0]; i++) {
        if (strlen(size_units[i].name) == len && strncasecmp(s, size_units[i].name, len) == 0) {
            *shift = size_units[i].shift;
            return 0;
        }
    }
    return -EINVAL;
}

/* floor(0.d1d2...dn * 2^shift) by doubling the decimal fraction shift times
 * and collecting the carries out of the integer position; digits[] is
 * clobbered. The result is < 2^shift. */
static uint64_t size_frac_bytes(unsigned char *digits, size_t n, unsigned shift)
{
    uint64_t whole = 0;
    for (unsigned k = 0; k < shift; k++) {
        unsigned carry = 0;
        for (size_t i = n; i-- > 0;) {
            unsigned v = digits[i] * 2u + carry;
            digits[i] = (unsigned char)(v % 10u);
            carry = v / 10u;
        }
        whole = whole * 2u + carry;
    }
    return whole;
}

int size_parse(const char *s, uint64_t *out)
{
    if (!s || !out)
        return -EINVAL;
    while (isspace((unsigned char)*s))
        s++;
    const char *p = s;

    const char *int_start = p;
    while (isdigit((unsigned char)*p))
        p++;
    size_t int_len = (size_t)(p - int_start);
    if (int_len == 0)
        return -EINVAL; /* empty, sign, ".5", "nan", "inf", garbage */

    const char *frac_start = NULL;
    size_t frac_len = 0;
    if (*p == '.') {
        frac_start = ++p;
        while (isdigit((unsigned char)*p))
            p++;
        frac_len = (size_t)(p - frac_start);
        if (frac_len == 0)
            return -EINVAL; /* "5." or "5.GB" */
    }

    while (*p == ' ' || *p == '\t')
        p++;
    const char *unit_start = p;
    while (isalpha((unsigned char)*p))
        p++;
    size_t unit_len = (size_t)(p - unit_start);
    while (isspace((unsigned char)*p))
        p++;
    if (*p != '\0')
        return -EINVAL; /* a second dot, trailing junk */

    unsigned shift;
    if (size_unit_lookup(unit_start, unit_len, &shift) < 0)
        return -EINVAL;
    /* A fraction needs a unit: "1.5" alone is more likely a mistake than 1 byte. */
    if (frac_start && unit_len == 0)
        return -EINVAL;

    uint64_t whole = 0;
    for (size_t i = 0; i < int_len; i++) {
        unsigned d = (unsigned)(int_start[i] - '0');
        if (whole > (UINT64_MAX - d) / 10u)
            return -ERANGE;
        whole = whole * 10u + d;
    }

    uint64_t frac = 0;
    if (frac_start && shift > 0) {
        unsigned char digits[SIZE_FRAC_DIGITS];
        size_t n = frac_len < SIZE_FRAC_DIGITS ? frac_len : SIZE_FRAC_DIGITS;
        for (size_t i = 0; i < n; i++)
            digits[i] = (unsigned char)(frac_start[i] - '0');
        frac = size_frac_bytes(digits, n, shift);
    }

    if (whole > (UINT64_MAX >> shift))
        return -ERANGE;
    uint64_t v = whole << shift;
    if (v > UINT64_MAX - frac)
        return -ERANGE;
    *out = v + frac;
    return 0;
}

char *size_format(uint64_t v, char *buf, size_t cap)
{
    static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (!buf || cap == 0)
        return buf;
    unsigned i = 0;
    while (i + 1 < sizeof names / sizeof names[0] && v >> (10u * (i + 1)) != 0)
        i++;
    if (i == 0) {
        snprintf(buf, cap, "%" PRIu64 " B", v);
        return buf;
    }
    unsigned shift = 10u * i;
    uint64_t whole = v >> shift;
    uint64_t rem = v & ((UINT64_C(1) << shift) - 1);
    /* Hundredths, truncated (never rounds up to "1024.00 KiB"); drop 10 low
     * bits first so rem * 100 cannot overflow for the largest units. */
    unsigned drop = shift > 50 ? 10u : 0u;
    uint64_t hundredths = ((rem >> drop) * 100u) >> (shift - drop);
    snprintf(buf, cap, "%" PRIu64 ".%02" PRIu64 " %s", whole, hundredths, names[i]);
    return buf;
}
