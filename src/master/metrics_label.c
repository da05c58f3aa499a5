/*
 * metrics_label.c - escaping label values for /metrics (see metrics_label.h).
 */
#include "master/metrics_label.h"

#include <errno.h>

/* The multi-byte forms of RFC 3629's UTF8-char: a lead byte in [lead_lo,
 * lead_hi] starts a sequence of len bytes whose second byte is in [next_lo,
 * next_hi] and whose others are in 0x80..0xBF (no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
static const struct utf8_form {
    unsigned char lead_lo, lead_hi, len, next_lo, next_hi;
} utf8_forms[] = {
    {0xC2, 0xDF, 2, 0x80, 0xBF}, {0xE0, 0xE0, 3, 0xA0, 0xBF}, {0xE1, 0xEC, 3, 0x80, 0xBF},
    {0xED, 0xED, 3, 0x80, 0x9F}, {0xEE, 0xEF, 3, 0x80, 0xBF}, {0xF0, 0xF0, 4, 0x90, 0xBF},
    {0xF1, 0xF3, 4, 0x80, 0xBF}, {0xF4, 0xF4, 4, 0x80, 0x8F},
};

/* The length of the valid UTF-8 sequence at s (1..4), or 0 when there is
 * none. Stops at the first byte that does not fit, so never reads past a NUL. */
static size_t utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    for (size_t f = 0; f < sizeof utf8_forms / sizeof *utf8_forms; f++) {
        const struct utf8_form *u = &utf8_forms[f];
        if (s[0] < u->lead_lo || s[0] > u->lead_hi)
            continue;
        if (s[1] < u->next_lo || s[1] > u->next_hi)
            return 0;
        for (size_t i = 2; i < u->len; i++)
            if (s[i] < 0x80 || s[i] > 0xBF)
                return 0;
        return u->len;
    }
    return 0;
}

int metrics_label_escape(const char *value, char *out, size_t cap)
{
    const unsigned char *s = (const unsigned char *)value;
    size_t o = 0;
    while (*s) {
        char esc = *s == '\\' ? '\\' : *s == '"' ? '"' : *s == '\n' ? 'n' : 0;
        size_t n = esc ? 2 : utf8_len(s);
        if (o + (n ? n : 1) >= cap)
            goto nospace;
        if (esc) {
            out[o++] = '\\';
            out[o++] = esc;
            s++;
        } else if (n == 0) {
            out[o++] = '?';
            s++;
        } else {
            for (size_t i = 0; i < n; i++)
                out[o++] = (char)*s++;
        }
    }
    if (o >= cap)
        goto nospace;
    out[o] = 0;
    return (int)o;
nospace:
    if (cap)
        out[0] = 0;
    return -ENOSPC;
}
