/*
 * stat_format.c - `fluxon stat`'s three outputs (see stat_format.h).
 *
 * key=value (kept as it always was):
 *   master leader=HOST:PORT term=N pid=PID|-
 *   NAME node=N live=0|1 memory_capacity=... ssd_errors=...     (one per owner)
 * --human: the master line in words, then a table with sizes in KiB / MiB /
 * GiB and hit rates in % of the owner's gets (hits + misses);
 * --json: {"master": {...}, "owners": [{...}, ...]} with the same fields as
 * the key=value lines, numbers as numbers (json-c).
 */
#include "cli/stat_format.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <string.h>

const char *stat_size(char *buf, size_t cap, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%" PRIu64 " B", bytes);
    else
        snprintf(buf, cap, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, units[u]);
    return buf;
}

static int name_len(const fx_owner_stat *o)
{
    return (int)strnlen(o->name, sizeof o->name);
}

static void print_kv(FILE *f, const fx_master_stat *ms, int pid_known, const fx_owner_stat *st,
                     size_t n)
{
    fprintf(f, "master leader=%s term=%" PRIu64 " pid=", ms->addr[0] ? ms->addr : "-", ms->term);
    if (pid_known)
        fprintf(f, "%" PRId64 "\n", ms->pid);
    else
        fputs("-\n", f);
    for (size_t i = 0; i < n; i++) {
        const fx_owner_stat *o = &st[i];
        int len = name_len(o);
        fprintf(f,
                "%.*s node=%" PRIu32 " live=%d memory_capacity=%" PRIu64 " memory_used=%" PRIu64
                " ssd_capacity=%" PRIu64 " ssd_used=%" PRIu64 " hits_memory=%" PRIu64
                " hits_ssd=%" PRIu64 " misses=%" PRIu64 " cache_budget=%" PRIu64
                " cache_used=%" PRIu64 " cache_reserved=%" PRIu64 " evictions=%" PRIu64
                " ssd_errors=%" PRIu64 "\n",
                len ? len : 1, len ? o->name : "-", o->node_id, o->live ? 1 : 0,
                o->memory_capacity, o->memory_used, o->ssd_capacity, o->ssd_used, o->hits_memory,
                o->hits_ssd, o->misses, o->cache_budget, o->cache_weight, o->cache_reserved,
                o->evictions, o->ssd_errors);
    }
}

/* "12.5%" of part in total, "-" when total is 0. */
static const char *percent(char *buf, size_t cap, uint64_t part, uint64_t total)
{
    if (!total)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.1f%%", 100.0 * (double)part / (double)total);
    return buf;
}

/* "used / capacity" with sizes, or "-" for no capacity. */
static const char *use(char *buf, size_t cap, uint64_t used, uint64_t capacity)
{
    char a[32], b[32];
    if (!capacity)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%s / %s", stat_size(a, sizeof a, used),
                 stat_size(b, sizeof b, capacity));
    return buf;
}

static void print_human(FILE *f, const fx_master_stat *ms, int pid_known, const fx_owner_stat *st,
                        size_t n)
{
    fprintf(f, "master  %s", ms->addr[0] ? ms->addr : "(address unknown)");
    if (ms->term)
        fprintf(f, ", etcd term %" PRIu64, ms->term);
    if (pid_known)
        fprintf(f, ", pid %" PRId64, ms->pid);
    fprintf(f, "\n\n");
    int w = 5; /* "OWNER" */
    for (size_t i = 0; i < n; i++)
        if (name_len(&st[i]) > w)
            w = name_len(&st[i]);
    fprintf(f, "%-*s  %4s  %-5s  %-21s  %6s  %-21s  %9s  %7s  %6s  %9s  %6s\n", w, "OWNER",
            "NODE", "STATE", "MEMORY", "USED", "SSD", "HIT MEM", "HIT SSD", "MISS", "EVICTIONS",
            "SSD ERR");
    for (size_t i = 0; i < n; i++) {
        const fx_owner_stat *o = &st[i];
        char mem[64], ssd[64], used[16], hm[16], hs[16], mi[16];
        uint64_t gets = o->hits_memory + o->hits_ssd + o->misses;
        int len = name_len(o);
        fprintf(f,
                "%-*.*s  %4" PRIu32 "  %-5s  %-21s  %6s  %-21s  %9s  %7s  %6s  %9" PRIu64
                "  %6" PRIu64 "\n",
                w, len ? len : 1, len ? o->name : "-", o->node_id, o->live ? "live" : "down",
                use(mem, sizeof mem, o->memory_used, o->memory_capacity),
                percent(used, sizeof used, o->memory_used, o->memory_capacity),
                use(ssd, sizeof ssd, o->ssd_used, o->ssd_capacity),
                percent(hm, sizeof hm, o->hits_memory, gets),
                percent(hs, sizeof hs, o->hits_ssd, gets), percent(mi, sizeof mi, o->misses, gets),
                o->evictions, o->ssd_errors);
    }
}

static void add_u64(json_object *o, const char *key, uint64_t v)
{
    json_object_object_add(o, key, json_object_new_uint64(v));
}

static int print_json(FILE *f, const fx_master_stat *ms, int pid_known, const fx_owner_stat *st,
                      size_t n)
{
    json_object *doc = json_object_new_object();
    json_object *master = json_object_new_object();
    json_object *owners = json_object_new_array();
    if (!doc || !master || !owners) {
        json_object_put(doc);
        json_object_put(master);
        json_object_put(owners);
        return -1;
    }
    json_object_object_add(master, "leader", ms->addr[0] ? json_object_new_string(ms->addr) : NULL);
    add_u64(master, "term", ms->term);
    json_object_object_add(master, "pid", pid_known ? json_object_new_int64(ms->pid) : NULL);
    json_object_object_add(doc, "master", master);
    for (size_t i = 0; i < n; i++) {
        const fx_owner_stat *o = &st[i];
        json_object *j = json_object_new_object();
        json_object_object_add(j, "name", json_object_new_string_len(o->name, name_len(o)));
        add_u64(j, "node", o->node_id);
        json_object_object_add(j, "live", json_object_new_boolean(o->live));
        add_u64(j, "memory_capacity", o->memory_capacity);
        add_u64(j, "memory_used", o->memory_used);
        add_u64(j, "ssd_capacity", o->ssd_capacity);
        add_u64(j, "ssd_used", o->ssd_used);
        add_u64(j, "hits_memory", o->hits_memory);
        add_u64(j, "hits_ssd", o->hits_ssd);
        add_u64(j, "misses", o->misses);
        add_u64(j, "cache_budget", o->cache_budget);
        add_u64(j, "cache_used", o->cache_weight);
        add_u64(j, "cache_reserved", o->cache_reserved);
        add_u64(j, "evictions", o->evictions);
        add_u64(j, "ssd_errors", o->ssd_errors);
        json_object_array_add(owners, j);
    }
    json_object_object_add(doc, "owners", owners);
    fprintf(f, "%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
                                                               JSON_C_TO_STRING_SPACED));
    json_object_put(doc);
    return 0;
}

int stat_print(FILE *f, stat_format fmt, const fx_master_stat *ms, int pid_known,
               const fx_owner_stat *owners, size_t n)
{
    switch (fmt) {
    case STAT_HUMAN:
        print_human(f, ms, pid_known, owners, n);
        return 0;
    case STAT_JSON:
        return print_json(f, ms, pid_known, owners, n);
    default:
        print_kv(f, ms, pid_known, owners, n);
        return 0;
    }
}
