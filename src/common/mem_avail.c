/*
 * mem_avail.c - MemAvailable and the cgroup's memory limits (see mem_avail.h).
 */
#include "common/mem_avail.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CGROUP_ROOT "/sys/fs/cgroup"

/* Reads a small text file whole into buf (NUL-terminated). 0 or -errno. */
static int read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    size_t n = fread(buf, 1, cap - 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return -EIO;
    buf[n] = '\0';
    return 0;
}

int mem_available_parse(const char *meminfo, uint64_t *out)
{
    const char *p = strstr(meminfo, "MemAvailable:");
    if (!p)
        return -ENOENT;
    unsigned long long kb;
    if (sscanf(p + strlen("MemAvailable:"), "%llu kB", &kb) != 1 || kb > UINT64_MAX / 1024)
        return -EINVAL;
    *out = (uint64_t)kb * 1024;
    return 0;
}

uint64_t mem_cgroup_room(const char *limit, const char *current)
{
    char *end;
    errno = 0;
    unsigned long long max = strtoull(limit, &end, 10);
    if (end == limit || errno) /* "max", or nothing we understand: no limit */
        return UINT64_MAX;
    unsigned long long cur = strtoull(current, &end, 10);
    if (end == current)
        return UINT64_MAX;
    return cur >= max ? 0 : (uint64_t)(max - cur);
}

/* The least room under the limits of the cgroup at rel (below root) and of
 * each of its ancestors; limit_file and usage_file name the two files. */
static uint64_t room_up_from(const char *root, char *rel, const char *limit_file,
                             const char *usage_file)
{
    uint64_t room = UINT64_MAX;
    for (;;) {
        char path[2 * PATH_MAX], limit[64], current[64];
        snprintf(path, sizeof path, "%s%s/%s", root, rel, limit_file);
        int a = read_text(path, limit, sizeof limit);
        snprintf(path, sizeof path, "%s%s/%s", root, rel, usage_file);
        int b = read_text(path, current, sizeof current);
        if (a == 0 && b == 0) {
            uint64_t r = mem_cgroup_room(limit, current);
            if (r < room)
                room = r;
        }
        char *slash = strrchr(rel, '/');
        if (!slash || slash == rel)
            break;
        *slash = '\0';
    }
    return room;
}

/* The room under this process's memory cgroup and its ancestors: v1
 * (memory.limit_in_bytes - memory.usage_in_bytes) or v2 (memory.max -
 * memory.current). UINT64_MAX when no limit applies or none can be read. */
static uint64_t cgroup_room(void)
{
    char text[4096];
    if (read_text("/proc/self/cgroup", text, sizeof text) != 0)
        return UINT64_MAX;
    uint64_t room = UINT64_MAX;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        /* "ID:CONTROLLERS:PATH"; v2 is "0::PATH", v1 memory lists "memory". */
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *controllers = c1 + 1;
        char *rel = c2 + 1;
        uint64_t r = UINT64_MAX;
        if (!strcmp(line, "0") && !*controllers) {
            r = room_up_from(CGROUP_ROOT, rel, "memory.max", "memory.current");
        } else {
            for (char *tok = strstr(controllers, "memory"); tok; tok = strstr(tok + 1, "memory"))
                if ((tok == controllers || tok[-1] == ',') && (tok[6] == '\0' || tok[6] == ',')) {
                    r = room_up_from(CGROUP_ROOT "/memory", rel, "memory.limit_in_bytes",
                                     "memory.usage_in_bytes");
                    break;
                }
        }
        if (r < room)
            room = r;
    }
    return room;
}

int mem_available(uint64_t *out)
{
    char meminfo[8192];
    int r = read_text("/proc/meminfo", meminfo, sizeof meminfo);
    if (r == 0)
        r = mem_available_parse(meminfo, out);
    if (r < 0)
        return r;
    uint64_t room = cgroup_room();
    if (room < *out)
        *out = room;
    return 0;
}
