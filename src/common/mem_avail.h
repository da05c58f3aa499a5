/*
 * mem_avail.h - how much memory this process could still take: what an owner
 * checks before it reserves its segment.
 *
 * Shared memory (a memfd) has no size limit of its own: reserving more than
 * the machine has does not fail, it wakes the kernel's OOM killer, which may
 * kill any process on the machine. So an owner compares memory_size with this
 * figure first and refuses to start when it does not fit.
 */
#ifndef FX_COMMON_MEM_AVAIL_H
#define FX_COMMON_MEM_AVAIL_H

#include <stdint.h>

/* MemAvailable of /proc/meminfo, lowered to the room left under the memory
 * limits of this process's cgroup and of each ancestor (v1 or v2; see
 * mem_cgroup_room). Returns 0 with the bytes in *out, or a negative errno
 * when /proc/meminfo cannot be read or has no MemAvailable line. */
int mem_available(uint64_t *out);

/* The parts, for tests. meminfo is the text of /proc/meminfo. */
int mem_available_parse(const char *meminfo, uint64_t *out);

/* One cgroup level: limit and usage are the texts of its limit and usage
 * files (v2 memory.max may say "max": no limit, UINT64_MAX); reclaimable is
 * the inactive page cache of its memory.stat, which the kernel gives back
 * before it kills, so it does not count as used (as kubelet and docker count
 * a cgroup's working set). */
uint64_t mem_cgroup_room(const char *limit, const char *usage, uint64_t reclaimable);

/* The least room over the cgroups that proc_cgroup (the text of
 * /proc/self/cgroup) names under the cgroup mount root, each with its
 * ancestors up to the mount's top: v2 ("0::/path": root/path/memory.max ...)
 * and v1's memory controller (root/memory/path/memory.limit_in_bytes ...).
 * UINT64_MAX when no limit applies or none can be read. */
uint64_t mem_cgroup_room_at(const char *root, const char *proc_cgroup);

#endif
