/*
 * test_mem_avail.c - what an owner believes it may still reserve: the
 * MemAvailable line of /proc/meminfo, the room under a cgroup limit (v1 and v2
 * forms, "max", usage over the limit), and that the live figure is never more
 * than the machine's MemAvailable.
 */
#include "common/mem_avail.h"
#include "testlib.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void test_meminfo(void)
{
    uint64_t v = 7;
    CHECK(mem_available_parse("MemTotal:       24683548 kB\nMemFree:         1000 kB\n"
                              "MemAvailable:   22063304 kB\nBuffers: 1 kB\n", &v) == 0 &&
              v == 22063304ull * 1024,
          "MemAvailable in kB becomes bytes (%llu)", (unsigned long long)v);
    v = 7;
    CHECK(mem_available_parse("MemTotal: 10 kB\nMemFree: 5 kB\n", &v) == -ENOENT && v == 7,
          "no MemAvailable line: -ENOENT, *out untouched");
    CHECK(mem_available_parse("MemAvailable: lots\n", &v) == -EINVAL && v == 7,
          "an unreadable figure: -EINVAL");
    CHECK(mem_available_parse("MemAvailable: 99999999999999999999 kB\n", &v) == -EINVAL,
          "a figure that overflows: -EINVAL");
}

static void test_cgroup_room(void)
{
    CHECK(mem_cgroup_room("max\n", "123\n") == UINT64_MAX, "v2 \"max\": no limit");
    CHECK(mem_cgroup_room("1073741824\n", "73741824\n") == 1000000000ull,
          "limit minus usage");
    CHECK(mem_cgroup_room("1000\n", "1000\n") == 0 && mem_cgroup_room("1000\n", "5000\n") == 0,
          "usage at or over the limit: no room");
    CHECK(mem_cgroup_room("9223372036854771712\n", "264286208\n") ==
              9223372036854771712ull - 264286208ull,
          "v1's \"unlimited\" is a huge number");
    CHECK(mem_cgroup_room("", "5") == UINT64_MAX && mem_cgroup_room("100", "") == UINT64_MAX,
          "an empty file: no limit known");
}

static void test_live(void)
{
    char text[8192];
    FILE *f = fopen("/proc/meminfo", "r");
    REQUIRE(f, "/proc/meminfo readable");
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    uint64_t machine = 0, mine = 0;
    REQUIRE(mem_available_parse(text, &machine) == 0, "this machine's MemAvailable parses");
    CHECK(mem_available(&mine) == 0, "mem_available() works here");
    /* MemAvailable moves between the two reads: allow 256 MiB of drift. */
    CHECK(mine > 0 && mine <= machine + (256ull << 20),
          "never more than MemAvailable (%llu vs %llu)", (unsigned long long)mine,
          (unsigned long long)machine);
}

int main(void)
{
    test_meminfo();
    test_cgroup_room();
    test_live();
    return test_finish();
}
