/*
 * cluster_json.c - the master's /api/v1/cluster document (json-c):
 *
 *   {"version": 1, "time_ms": <monotonic ms>, "leading": bool, "routes": N,
 *    "inflight_puts": N, "inflight_gets": N,
 *    "owners": [{"name", "node_id", "state": "ready"|"recovering",
 *                "memory_capacity", "memory_used", "ssd_capacity", "ssd_used",
 *                "hits_memory", "hits_ssd", "misses", "get_errors", "puts",
 *                "deletes", "bytes_in", "bytes_out", "evictions_memory",
 *                "evictions_ssd", "ops_total",
 *                "latency_us": {"put": {"count", "p50", "p99"}, "get_memory": ...,
 *                               "get_ssd": ..., "get_remote": ...,
 *                               "get": (all three together)}}, ...]}
 *
 * Counters are totals (a reader takes rates from two documents and their
 * time_ms); ops_total is every get, put and delete the owner answered.
 * Quantiles come from the latency histograms (op_histogram_quantile, the
 * interpolation Prometheus uses), in microseconds. Owners are sorted by
 * name so that the page keeps its rows in place.
 */
#include "master/cluster_json.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "master/inflight.h"
#include "master/master.h"

static void put_u64(json_object *o, const char *key, uint64_t v)
{
    json_object_object_add(o, key, json_object_new_uint64(v));
}

static json_object *quantiles_json(const op_histogram *h)
{
    json_object *q = json_object_new_object();
    put_u64(q, "count", op_histogram_count(h));
    json_object_object_add(q, "p50", json_object_new_double(op_histogram_quantile(h, 0.5)));
    json_object_object_add(q, "p99", json_object_new_double(op_histogram_quantile(h, 0.99)));
    return q;
}

static json_object *latency_json(const member *mb)
{
    json_object *lat = json_object_new_object();
    op_histogram gets = {{0}, 0}; /* every get, whatever its source */
    for (size_t k = 0; k < OP_KINDS; k++) {
        const op_histogram *h = &mb->metrics.ops.latency[k];
        json_object_object_add(lat, op_kind_name((op_kind)k), quantiles_json(h));
        if (k == OP_PUT)
            continue;
        for (size_t b = 0; b < OP_METRICS_BUCKETS; b++)
            gets.buckets[b] += h->buckets[b];
        gets.sum_us += h->sum_us;
    }
    json_object_object_add(lat, "get", quantiles_json(&gets));
    return lat;
}

static json_object *owner_json(const member *mb)
{
    const op_metrics *ops = &mb->metrics.ops;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(mb->name));
    put_u64(o, "node_id", mb->node_id);
    json_object_object_add(o, "state", json_object_new_string(member_state(mb)));
    put_u64(o, "memory_capacity", range_alloc_capacity(mb->space->ra));
    put_u64(o, "memory_used", seg_space_used(mb->space));
    put_u64(o, "ssd_capacity", mb->ssd_capacity);
    put_u64(o, "ssd_used", mb->ssd_used);
    put_u64(o, "hits_memory", mb->hits_memory);
    put_u64(o, "hits_ssd", mb->hits_ssd);
    put_u64(o, "misses", mb->misses);
    put_u64(o, "get_errors", ops->get_errors);
    put_u64(o, "puts", ops->puts);
    put_u64(o, "deletes", ops->deletes);
    put_u64(o, "bytes_in", ops->put_bytes);
    put_u64(o, "bytes_out", ops->get_bytes);
    put_u64(o, "evictions_memory", mb->space->evictions);
    put_u64(o, "evictions_ssd", mb->metrics.ssd_evictions);
    put_u64(o, "ops_total", mb->hits_memory + mb->hits_ssd + mb->misses + ops->get_errors +
                                ops->puts + ops->deletes);
    json_object_object_add(o, "latency_us", latency_json(mb));
    return o;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const member *const *)a)->name, (*(const member *const *)b)->name);
}

char *cluster_json_build(const master *m, bool serving)
{
    json_object *doc = json_object_new_object();
    if (!doc)
        return NULL;
    put_u64(doc, "version", 1);
    put_u64(doc, "time_ms", uv_now(m->loop));
    json_object_object_add(doc, "leading", json_object_new_boolean(serving));
    put_u64(doc, "routes", m->routes.count);
    put_u64(doc, "inflight_puts", HASH_COUNT(m->inflight_puts));
    put_u64(doc, "inflight_gets", HASH_COUNT(m->inflight_gets));
    unsigned n = HASH_COUNT(m->members);
    const member **sorted = n ? calloc(n, sizeof *sorted) : NULL;
    json_object *owners = json_object_new_array();
    if (n && !sorted) {
        json_object_put(doc);
        json_object_put(owners);
        return NULL;
    }
    size_t i = 0;
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp) sorted[i++] = mb;
    if (n)
        qsort(sorted, n, sizeof *sorted, by_name);
    for (i = 0; i < n; i++)
        json_object_array_add(owners, owner_json(sorted[i]));
    free(sorted);
    json_object_object_add(doc, "owners", owners);
    const char *text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN);
    char *out = text ? strdup(text) : NULL;
    json_object_put(doc);
    return out;
}
