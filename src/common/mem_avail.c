/*
 * mem_avail.c - MemAvailable and the cgroup's memory limits (see mem_avail.h).
 */
#include "common/mem_avail.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CGROUP_ROOT "/sys/fs/cgroup"
#define PROC_CGROUP_MAX 16384

/* Reads a text file whole into buf (NUL-terminated). 0, -errno, or -EFBIG when
 * it does not fit (a truncated figure must not be believed). */
static int read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    size_t n = fread(buf, 1, cap - 1, f);
    bool more = n == cap - 1 && fgetc(f) != EOF;
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return -EIO;
    if (more)
        return -EFBIG;
    buf[n] = '\0';
    return 0;
}

/* The number after "name" at the start of a line of text (name includes its
 * separator, e.g. "MemAvailable:" or "inactive_file "). 0 or -ENOENT/-EINVAL. */
static int field_u64(const char *text, const char *name, uint64_t *out)
{
    size_t len = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, name, len) != 0)
            continue;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p + len, &end, 10);
        if (end == p + len || errno)
            return -EINVAL;
        *out = v;
        return 0;
    }
    return -ENOENT;
}

int mem_available_parse(const char *meminfo, uint64_t *out)
{
    uint64_t kb;
    int r = field_u64(meminfo, "MemAvailable:", &kb);
    if (r < 0)
        return r;
    if (kb > UINT64_MAX / 1024)
        return -EINVAL;
    *out = kb * 1024;
    return 0;
}

uint64_t mem_cgroup_room(const char *limit, const char *usage, uint64_t reclaimable)
{
    char *end;
    errno = 0;
    unsigned long long max = strtoull(limit, &end, 10);
    if (end == limit || errno) /* "max", or nothing we understand: no limit */
        return UINT64_MAX;
    errno = 0;
    unsigned long long used = strtoull(usage, &end, 10);
    if (end == usage || errno)
        return UINT64_MAX;
    used = used > reclaimable ? used - reclaimable : 0;
    return used >= max ? 0 : (uint64_t)(max - used);
}

/* One cgroup version's file names. */
typedef struct cg_files {
    const char *limit, *usage, *inactive; /* inactive: the memory.stat field */
} cg_files;

static const cg_files CG_V1 = {"memory.limit_in_bytes", "memory.usage_in_bytes",
                               "total_inactive_file "};
static const cg_files CG_V2 = {"memory.max", "memory.current", "inactive_file "};

/* The room under the limit of the cgroup directory dir, or UINT64_MAX when it
 * has none we can read. */
static uint64_t room_at(const char *dir, const cg_files *f)
{
    char path[2 * PATH_MAX + 64], limit[64], usage[64], stat[8192];
    snprintf(path, sizeof path, "%s/%s", dir, f->limit);
    if (read_text(path, limit, sizeof limit) != 0)
        return UINT64_MAX;
    snprintf(path, sizeof path, "%s/%s", dir, f->usage);
    if (read_text(path, usage, sizeof usage) != 0)
        return UINT64_MAX;
    uint64_t inactive = 0;
    snprintf(path, sizeof path, "%s/memory.stat", dir);
    if (read_text(path, stat, sizeof stat) == 0)
        field_u64(stat, f->inactive, &inactive);
    return mem_cgroup_room(limit, usage, inactive);
}

/* The least room under the cgroup at root + rel and every ancestor up to and
 * including root itself (in a container without its own cgroup namespace the
 * container's limit is at the top of what it sees). */
static uint64_t room_up_from(const char *root, const char *rel_in, const cg_files *f)
{
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s", rel_in);
    uint64_t room = UINT64_MAX;
    for (;;) {
        size_t n = strlen(rel);
        while (n > 0 && rel[n - 1] == '/')
            rel[--n] = '\0';
        char dir[2 * PATH_MAX];
        snprintf(dir, sizeof dir, "%s%s", root, rel);
        uint64_t r = room_at(dir, f);
        if (r < room)
            room = r;
        if (!n)
            break;
        char *slash = strrchr(rel, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
    return room;
}

uint64_t mem_cgroup_room_at(const char *root, const char *proc_cgroup)
{
    char text[PROC_CGROUP_MAX];
    snprintf(text, sizeof text, "%s", proc_cgroup);
    uint64_t room = UINT64_MAX;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        /* "ID:CONTROLLERS:PATH"; v2 is "0::PATH", v1's memory line lists "memory". */
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        const char *controllers = c1 + 1, *rel = c2 + 1;
        char dir[PATH_MAX];
        uint64_t r = UINT64_MAX;
        if (!strcmp(line, "0") && !*controllers) {
            r = room_up_from(root, rel, &CG_V2);
        } else {
            for (const char *tok = controllers; tok && *tok;) {
                size_t len = strcspn(tok, ",");
                if (len == 6 && !strncmp(tok, "memory", 6)) {
                    snprintf(dir, sizeof dir, "%s/memory", root);
                    r = room_up_from(dir, rel, &CG_V1);
                    break;
                }
                tok = tok[len] ? tok + len + 1 : NULL;
            }
        }
        if (r < room)
            room = r;
    }
    return room;
}

int mem_available(uint64_t *out)
{
    char meminfo[16384];
    int r = read_text("/proc/meminfo", meminfo, sizeof meminfo);
    if (r == 0)
        r = mem_available_parse(meminfo, out);
    if (r < 0)
        return r;
    char cg[PROC_CGROUP_MAX];
    if (read_text("/proc/self/cgroup", cg, sizeof cg) == 0) {
        uint64_t room = mem_cgroup_room_at(CGROUP_ROOT, cg);
        if (room < *out)
            *out = room;
    }
    return 0;
}
