/*
 * test_mem_avail.c - what an owner believes it may still reserve: the
 * MemAvailable line of /proc/meminfo; the room under one cgroup level (limit
 * minus usage, inactive page cache not counted, "max", usage over the
 * limit); and the walk over a fake cgroup mount: v1's memory controller
 * (alone or among others on its line) and v2, the cgroup and each ancestor
 * up to the mount's top (a container's limit sits there), the least room of
 * all. Finally the live figure is never more than the machine's MemAvailable.
 */
#include "common/mem_avail.h"
#include "testlib.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mkdir_p.h"

#define MIB (1024ull * 1024ull)

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
    CHECK(mem_available_parse("MemAvailable: 18014398509481984 kB\n", &v) == -EINVAL,
          "kB that overflow as bytes: -EINVAL");
}

static void test_cgroup_room(void)
{
    CHECK(mem_cgroup_room("max\n", "123\n", 0) == UINT64_MAX, "v2 \"max\": no limit");
    CHECK(mem_cgroup_room("1073741824\n", "73741824\n", 0) == 1000000000ull,
          "limit minus usage");
    CHECK(mem_cgroup_room("1000\n", "900\n", 500) == 600,
          "inactive page cache does not count as used");
    CHECK(mem_cgroup_room("1000\n", "900\n", 5000) == 1000, "more cache than usage: all room");
    CHECK(mem_cgroup_room("1000\n", "1000\n", 0) == 0 && mem_cgroup_room("1000\n", "5000\n", 0) == 0,
          "usage at or over the limit: no room");
    CHECK(mem_cgroup_room("9223372036854771712\n", "264286208\n", 0) ==
              9223372036854771712ull - 264286208ull,
          "v1's \"unlimited\" is a huge number");
    CHECK(mem_cgroup_room("", "5", 0) == UINT64_MAX && mem_cgroup_room("100", "", 0) == UINT64_MAX,
          "an empty file: no limit known");
}

/* ---- a fake cgroup mount -------------------------------------------------- */

static char g_root[64];

static void remove_root(void *arg)
{
    (void)arg;
    test_remove_dir(g_root);
}

/* Writes one cgroup level under g_root: limit, usage and inactive file cache
 * (limit NULL: no files at all). */
static void level(const char *rel, bool v1, const char *limit, uint64_t usage, uint64_t inactive)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s%s%s", g_root, v1 ? "/memory" : "", rel);
    REQUIRE(mkdir_p(dir, 0755, 0755) == 0, "mkdir %s", dir);
    if (!limit)
        return;
    const char *names[3] = {v1 ? "memory.limit_in_bytes" : "memory.max",
                            v1 ? "memory.usage_in_bytes" : "memory.current", "memory.stat"};
    char texts[3][128];
    snprintf(texts[0], sizeof texts[0], "%s\n", limit);
    snprintf(texts[1], sizeof texts[1], "%llu\n", (unsigned long long)usage);
    snprintf(texts[2], sizeof texts[2], "cache 1\n%sinactive_file %llu\nactive_file 3\n",
             v1 ? "total_" : "", (unsigned long long)inactive);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "w");
        REQUIRE(f, "write %s", path);
        fputs(texts[i], f);
        fclose(f);
    }
}

static void test_cgroup_walk(void)
{
    snprintf(g_root, sizeof g_root, "/tmp/fx-memavail-XXXXXX");
    REQUIRE(mkdtemp(g_root), "mkdtemp");
    test_at_exit(remove_root, NULL);

    /* v1: a limit only at the top of the mount (a container without its own
     * cgroup namespace sees /docker/abc but its limit at the top). */
    level("", true, "1073741824", 600 * MIB, 100 * MIB);
    level("/docker", true, "9223372036854771712", 1, 0);
    level("/docker/abc", true, NULL, 0, 0);
    CHECK(mem_cgroup_room_at(g_root, "4:memory:/docker/abc\n") == 524 * MIB,
          "v1: the top's limit counts (%llu MiB)",
          (unsigned long long)(mem_cgroup_room_at(g_root, "4:memory:/docker/abc\n") / MIB));
    CHECK(mem_cgroup_room_at(g_root, "9:cpu,memory,pids:/docker/abc\n") == 524 * MIB,
          "v1: memory among other controllers on its line");
    CHECK(mem_cgroup_room_at(g_root, "9:cpu,memorything:/docker/abc\n") == UINT64_MAX,
          "v1: a controller that only starts with \"memory\" is not it");
    /* A tighter leaf wins. */
    level("/docker/abc", true, "209715200", 150 * MIB, 40 * MIB);
    CHECK(mem_cgroup_room_at(g_root, "12:pids:/\n4:memory:/docker/abc/\n") == 90 * MIB,
          "v1: the least room of the cgroup and its ancestors");

    /* v2: "max" at the leaf, a number at its parent; the top has no files. */
    level("/sys/svc", false, "max", 5 * MIB, 0);
    level("/sys", false, "104857600", 60 * MIB, 10 * MIB);
    CHECK(mem_cgroup_room_at(g_root, "0::/sys/svc\n") == 50 * MIB, "v2: the parent's limit");
    CHECK(mem_cgroup_room_at(g_root, "0::/sys/svc\n4:memory:/docker/abc\n") == 50 * MIB,
          "both versions named: the least room of the two");
    CHECK(mem_cgroup_room_at(g_root, "0::/nothing/here\n") == UINT64_MAX &&
              mem_cgroup_room_at(g_root, "garbage\n\n1:name=systemd:/\n") == UINT64_MAX &&
              mem_cgroup_room_at(g_root, "") == UINT64_MAX,
          "no limit anywhere, or nothing to parse: UINT64_MAX");
}

static void test_live(void)
{
    char text[16384];
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
    test_cgroup_walk();
    test_live();
    return test_finish();
}
