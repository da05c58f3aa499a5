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

/* MemAvailable of /proc/meminfo, lowered to the room left under every memory
 * limit of this process's cgroup and its ancestors (v1 memory.limit_in_bytes
 * minus memory.usage_in_bytes, or v2 memory.max minus memory.current). Returns 0 with the bytes in *out, or a negative
 * errno when /proc/meminfo cannot be read or has no MemAvailable line. */
int mem_available(uint64_t *out);

/* The same parsing on given texts (for tests): meminfo is the text of
 * /proc/meminfo; limit and current are one cgroup level's limit and usage
 * files (memory.max may say "max": no limit). */
int mem_available_parse(const char *meminfo, uint64_t *out);
uint64_t mem_cgroup_room(const char *limit, const char *current);

#endif
