/*
 * metrics_text.c - the master's /metrics page in the Prometheus text format
 * (version 0.0.4): every family once, with its # HELP and # TYPE, then one
 * sample per member (label owner, escaped by metrics_label.c).
 *
 * The master's own families: routes, puts and gets in flight, members by
 * state. Per owner: memory and SSD capacity and use, the put pool, puts by
 * how they started, gets by result and source, deletes, evictions (memory:
 * the master's; SSD: the owner's), bytes in and out of the cache and over
 * the data plane, errors by kind, SSD queue depths, and a latency histogram
 * per operation (common/op_metrics.h) in seconds. What owners report comes
 * with their heartbeats (member_metrics.c), so it is at most one heartbeat
 * interval old. Built on the loop thread (http_publish).
 */
#include "master/metrics_text.h"

#include <inttypes.h>
#include <string.h>

#include "master/inflight.h"
#include "master/master.h"
#include "master/metrics_label.h"

/* One per-owner sample's writer: fprintf of the value with labels after the
 * owner's (", x=\"y\"" or nothing). */
typedef void (*owner_sample_fn)(FILE *f, const char *name, const char *owner, const member *mb);

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(FILE *f, const char *name, const char *owner, const char *labels, uint64_t v)
{
    fprintf(f, "%s{owner=\"%s\"%s} %" PRIu64 "\n", name, owner, labels ? labels : "", v);
}

/* Runs fn for every member under one family header. */
static void per_owner(FILE *f, const master *m, const char *name, const char *type,
                      const char *help, owner_sample_fn fn)
{
    family(f, name, type, help);
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp) {
        char owner[2 * sizeof mb->name + 1]; /* always fits (metrics_label.h) */
        metrics_label_escape(mb->name, owner, sizeof owner);
        fn(f, name, owner, mb);
    }
}

static void s_seg_capacity(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, NULL, range_alloc_capacity(mb->space->ra));
}
static void s_seg_used(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, NULL, seg_space_used(mb->space));
}
static void s_pool(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, NULL, mb->space->granted);
}
static void s_puts(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, ",start=\"pool\"", mb->puts_pool);
    sample(f, n, o, ",start=\"master\"", mb->puts_started);
}
static void s_ssd_capacity(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, NULL, mb->ssd_capacity);
}
static void s_ssd_used(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, NULL, mb->ssd_used);
}
static void s_ssd_errors(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, NULL, mb->ssd_errors);
}
static void s_hits(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, ",source=\"memory\"", mb->hits_memory);
    sample(f, n, o, ",source=\"ssd\"", mb->hits_ssd);
}
static void s_misses(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, NULL, mb->misses);
}
static void s_gets(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, ",result=\"hit\",source=\"memory\"", mb->hits_memory);
    sample(f, n, o, ",result=\"hit\",source=\"ssd\"", mb->hits_ssd);
    sample(f, n, o, ",result=\"miss\",source=\"none\"", mb->misses);
    sample(f, n, o, ",result=\"error\",source=\"none\"", mb->metrics.ops.get_errors);
}
static void s_put_ops(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, NULL, mb->metrics.ops.puts);
}
static void s_deletes(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, NULL, mb->metrics.ops.deletes);
}
static void s_evictions(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, ",tier=\"memory\"", mb->space->evictions);
    sample(f, n, o, ",tier=\"ssd\"", mb->metrics.ssd_evictions);
}
static void s_bytes(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, ",direction=\"in\"", mb->metrics.ops.put_bytes);
    sample(f, n, o, ",direction=\"out\"", mb->metrics.ops.get_bytes);
}
static void s_dp_bytes(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, ",direction=\"in\"", mb->metrics.dataplane_bytes_in);
    sample(f, n, o, ",direction=\"out\"", mb->metrics.dataplane_bytes_out);
}
static void s_errors(FILE *f, const char *n, const char *o, const member *mb)
{
    for (size_t i = 1; i <= OP_METRICS_ERRORS; i++) { /* "Other" (index 0) last */
        size_t k = i % OP_METRICS_ERRORS;
        char labels[64];
        snprintf(labels, sizeof labels, ",kind=\"%s\"", op_error_name(k));
        sample(f, n, o, labels, mb->metrics.ops.errors[k]);
    }
}
static void s_ssd_queue(FILE *f, const char *n, const char *o, const member *mb)
{
    sample(f, n, o, ",queue=\"jobs\"", mb->metrics.ssd_jobs);
    sample(f, n, o, ",queue=\"writes\"", mb->metrics.ssd_writes);
    sample(f, n, o, ",queue=\"stages\"", mb->metrics.ssd_stages);
    sample(f, n, o, ",queue=\"persists_waiting\"", mb->metrics.ssd_persists_waiting);
}

static void s_latency(FILE *f, const char *n, const char *o, const member *mb)
{
    for (size_t k = 0; k < OP_KINDS; k++) {
        const op_histogram *h = &mb->metrics.ops.latency[k];
        const char *op = op_kind_name((op_kind)k);
        uint64_t cum = 0;
        for (size_t b = 0; b < OP_METRICS_BUCKETS; b++) {
            cum += h->buckets[b];
            if (b < OP_METRICS_BOUNDS)
                fprintf(f, "%s_bucket{owner=\"%s\",op=\"%s\",le=\"%g\"} %" PRIu64 "\n", n, o, op,
                        (double)op_metrics_bounds_us[b] / 1e6, cum);
            else
                fprintf(f, "%s_bucket{owner=\"%s\",op=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", n, o,
                        op, cum);
        }
        fprintf(f, "%s_sum{owner=\"%s\",op=\"%s\"} %.6f\n", n, o, op, (double)h->sum_us / 1e6);
        fprintf(f, "%s_count{owner=\"%s\",op=\"%s\"} %" PRIu64 "\n", n, o, op, cum);
    }
}

static void master_families(FILE *f, const master *m, bool serving)
{
    family(f, "fluxon_routes", "gauge", "Keys with a route on this master.");
    fprintf(f, "fluxon_routes %zu\n", m->routes.count);
    family(f, "fluxon_inflight_puts", "gauge", "Puts started on this master and not yet done.");
    fprintf(f, "fluxon_inflight_puts %u\n", HASH_COUNT(m->inflight_puts));
    family(f, "fluxon_inflight_gets", "gauge", "Gets planned by this master and not yet done.");
    fprintf(f, "fluxon_inflight_gets %u\n", HASH_COUNT(m->inflight_gets));
    family(f, "fluxon_members", "gauge", "Live members by state (recovering: its recovery "
                                         "report has not ended).");
    unsigned ready = 0, recovering = 0;
    member *mb, *tmp;
    HASH_ITER(hh, m->members, mb, tmp) {
        if (strcmp(member_state(mb), "recovering") == 0)
            recovering++;
        else
            ready++;
    }
    fprintf(f, "fluxon_members{state=\"ready\"} %u\n", ready);
    fprintf(f, "fluxon_members{state=\"recovering\"} %u\n", recovering);
    family(f, "fluxon_master_leading", "gauge",
           "1 when this master serves (the etcd leader, or the only master).");
    fprintf(f, "fluxon_master_leading %d\n", (int)serving);
}

void metrics_text_write(FILE *f, const master *m, bool serving)
{
    master_families(f, m, serving);
    per_owner(f, m, "kvcache_segment_capacity_bytes", "gauge",
              "Bytes of the owner's memory segment.", s_seg_capacity);
    per_owner(f, m, "kvcache_segment_used_bytes", "gauge",
              "Bytes of the owner's segment allocated (replicas, puts, holders).", s_seg_used);
    per_owner(f, m, "fluxon_put_pool_bytes", "gauge",
              "Bytes granted to the owner's put pool and not yet used.", s_pool);
    per_owner(f, m, "fluxon_puts_total", "counter",
              "Puts installed on this master, by how they started (the owner's pool or PutStart).",
              s_puts);
    per_owner(f, m, "fluxon_owner_puts_total", "counter",
              "Puts the owner saw published (PutDone answered OK).", s_put_ops);
    per_owner(f, m, "fluxon_gets_total", "counter",
              "Gets by result (hit, miss, error) and source of the bytes (memory, ssd).", s_gets);
    per_owner(f, m, "fluxon_hits_total", "counter", "Get hits by source (memory, ssd).", s_hits);
    per_owner(f, m, "fluxon_misses_total", "counter", "Gets of a key with no readable replica.",
              s_misses);
    per_owner(f, m, "fluxon_deletes_total", "counter", "Deletes answered OK.", s_deletes);
    per_owner(f, m, "fluxon_evictions_total", "counter",
              "Values evicted for room, by tier (memory replicas, SSD copies).", s_evictions);
    per_owner(f, m, "fluxon_bytes_total", "counter",
              "Value bytes into the cache by puts (in) and handed out by gets (out).", s_bytes);
    per_owner(f, m, "fluxon_dataplane_bytes_total", "counter",
              "Owner-to-owner payload bytes received (in) and sent (out).", s_dp_bytes);
    per_owner(f, m, "fluxon_errors_total", "counter",
              "Operations that failed, by error kind (misses are not errors).", s_errors);
    per_owner(f, m, "kv_ssd_capacity_bytes", "gauge", "Bytes of the owner's SSD tier.",
              s_ssd_capacity);
    per_owner(f, m, "kv_ssd_used_bytes", "gauge", "Bytes of the SSD tier holding values.",
              s_ssd_used);
    per_owner(f, m, "fluxon_ssd_errors_total", "counter",
              "SSD reads and writes that failed and values that failed their checksum.",
              s_ssd_errors);
    per_owner(f, m, "fluxon_ssd_queue_depth", "gauge",
              "SSD tier work by queue: jobs queued or running, persist writes and stage reads "
              "running, persists waiting for a write slot.",
              s_ssd_queue);
    per_owner(f, m, "fluxon_op_latency_seconds", "histogram",
              "Latency at the owner from a request's arrival to its answer, by operation "
              "(put, get_memory, get_ssd, get_remote).",
              s_latency);
}
