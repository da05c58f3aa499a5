/*
 * test_size.c - size strings: exact values, binary units, truncated fractions,
 * rejected forms (-EINVAL), overflow (-ERANGE) and the human form.
 */
#include "common/size.h"
#include "testlib.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

static void expect_ok(const char *s, uint64_t want)
{
    uint64_t v = 12345;
    int rc = size_parse(s, &v);
    CHECK(rc == 0, "size_parse('%s') = %d, want 0", s, rc);
    CHECK(v == want, "size_parse('%s') = %" PRIu64 ", want %" PRIu64, s, v, want);
}

static void expect_err(const char *s, int want)
{
    uint64_t v = 12345;
    int rc = size_parse(s, &v);
    CHECK(rc == want, "size_parse('%s') = %d, want %d", s, rc, want);
    CHECK(v == 12345, "size_parse('%s') changed *out on failure", s);
}

static void test_good(void)
{
    expect_ok("0", 0);
    expect_ok("4096", 4096);
    expect_ok("007", 7);
    expect_ok("  4096  ", 4096);
    expect_ok("512B", 512);
    expect_ok("512.9B", 512);
    expect_ok("1.999999999999999999999999999b", 1);
    expect_ok("1.5GB", 1610612736ull);
    expect_ok("0.5KB", 512);
    expect_ok("0.1KB", 102);    /* 102.4 truncates */
    expect_ok("0.001KB", 1);    /* 1.024 */
    expect_ok("0.0009KB", 0);   /* 0.9216 */
    expect_ok("3.3MB", 3460300); /* 3460300.8 */
    expect_ok("2GB", 2147483648ull);
    expect_ok("2 GB", 2147483648ull);
    expect_ok("2\tGB", 2147483648ull);
    expect_ok("1.5 gib", 1610612736ull);
    expect_ok("1.25 Mb", 1310720);

    /* Every spelling of every unit, any case. */
    static const char *k[] = {"K", "k", "KB", "kb", "Kb", "KiB", "kib", "KIB"};
    static const char *m[] = {"M", "m", "MB", "mb", "MiB", "mib"};
    static const char *g[] = {"G", "g", "GB", "gB", "GiB", "GIB"};
    static const char *t[] = {"T", "t", "TB", "tb", "TiB", "tib"};
    char buf[32];
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        snprintf(buf, sizeof buf, "3%s", k[i]);
        expect_ok(buf, 3ull << 10);
    }
    for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
        snprintf(buf, sizeof buf, "3%s", m[i]);
        expect_ok(buf, 3ull << 20);
    }
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        snprintf(buf, sizeof buf, "3%s", g[i]);
        expect_ok(buf, 3ull << 30);
    }
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        snprintf(buf, sizeof buf, "3%s", t[i]);
        expect_ok(buf, 3ull << 40);
    }

    /* The edges of 64 bits. */
    expect_ok("18446744073709551615", UINT64_MAX);
    expect_ok("18446744073709551615B", UINT64_MAX);
    expect_ok("16777215TB", UINT64_MAX - ((1ull << 40) - 1));
    /* (2^24 - 1) TiB + floor(0.99..9 * 2^40) = 2^64 - 1 exactly. */
    expect_ok("16777215.99999999999999999999TB", UINT64_MAX);
    expect_ok("17179869183.999999999999GB", UINT64_MAX);

    /* Exact fraction math: 2^-40 TiB is exactly one byte, and needs all 40
     * fraction digits; one less in the last digit is zero bytes. */
    expect_ok("0.0000000000009094947017729282379150390625TB", 1);
    expect_ok("0.0000000000009094947017729282379150390624TB", 0);
    expect_ok("0.0000000000009094947017729282379150390625000000000001TB", 1);
    expect_ok("1.0000000000000000000000000000000000000000000000000000001KB", 1024);
    /* 0.3 GiB = 322122547.2 bytes */
    expect_ok("0.3GB", 322122547ull);
    /* 1.1 TiB = 1209462790553.6 bytes: a double would get this right too, but
     * 0.1 is not representable, so check the truncation is not off by one. */
    expect_ok("1.1TB", 1209462790553ull);
    expect_ok("8191.9999999999999999TB", (8192ull << 40) - 1);
}

static void test_bad(void)
{
    static const char *inval[] = {
        "", "   ", "-1", "-0", "+1", "-1KB", "+1KB", "abc", "KB", "B", "1.2.3", "1..2",
        ".5KB", "5.", "5.KB", "5. KB", "1.5", "0.5", "1XB", "1 K B", "1KBx", "1KB 2", "1 2",
        "nan", "NaN", "inf", "infinity", "-inf", "0x10", "1e9", "1E3", "1,5GB", "1_000",
        "1PB", "1EB", "1 bytes", "1KiBs", "1GiBB", "1\nGB", "١٢", "12\xff", "1;2",
    };
    for (size_t i = 0; i < sizeof inval / sizeof *inval; i++)
        expect_err(inval[i], -EINVAL);

    /* Overflow is -ERANGE, but only for otherwise well-formed input. */
    expect_err("18446744073709551616", -ERANGE);
    expect_err("99999999999999999999999", -ERANGE);
    expect_err("99999999999999999999999B", -ERANGE);
    expect_err("16777216TB", -ERANGE);
    expect_err("17179869184GB", -ERANGE);
    expect_err("18014398509481984KB", -ERANGE);
    expect_err("18446744073709551615.5KB", -ERANGE);
    expect_err("99999999999999999999999x", -EINVAL);
    expect_err("99999999999999999999999PB", -EINVAL);

    uint64_t v = 7;
    CHECK(size_parse(NULL, &v) == -EINVAL && v == 7, "NULL input must be -EINVAL");
    CHECK(size_parse("1", NULL) == -EINVAL, "NULL out must be -EINVAL");
}

static void expect_fmt(uint64_t v, const char *want)
{
    char buf[32];
    char *r = size_format(v, buf, sizeof buf);
    CHECK(r == buf, "size_format returns buf");
    CHECK(strcmp(buf, want) == 0, "size_format(%" PRIu64 ") = '%s', want '%s'", v, buf, want);
}

static void test_format(void)
{
    expect_fmt(0, "0 B");
    expect_fmt(512, "512 B");
    expect_fmt(1023, "1023 B");
    expect_fmt(1024, "1.00 KiB");
    expect_fmt(1536, "1.50 KiB");
    expect_fmt(1048575, "1023.99 KiB"); /* truncated, never "1024.00 KiB" */
    expect_fmt(1610612736ull, "1.50 GiB");
    expect_fmt(4ull << 30, "4.00 GiB");
    expect_fmt(3ull << 40, "3.00 TiB");
    expect_fmt(5ull << 50, "5.00 PiB");
    expect_fmt(UINT64_MAX, "15.99 EiB");

    char small[6];
    size_format(1610612736ull, small, sizeof small);
    CHECK(strcmp(small, "1.50 ") == 0, "truncated to the buffer: '%s'", small);
    CHECK(size_format(1, NULL, 0) == NULL, "NULL buffer is accepted");

    /* The human form of whole units parses back to the same value. */
    static const uint64_t vals[] = {0, 1, 1000, 1024, 3ull << 20, 1ull << 30, 7ull << 40};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        char buf[32];
        uint64_t back = 1;
        size_format(vals[i], buf, sizeof buf);
        CHECK(size_parse(buf, &back) == 0 && back == vals[i], "round trip of %" PRIu64 " via '%s'",
              vals[i], buf);
    }
}

int main(void)
{
    test_good();
    test_bad();
    test_format();
    return test_finish();
}
