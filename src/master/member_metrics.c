/*
 * member_metrics.c - a member's operation metrics as its heartbeats report
 * them (HeartbeatReq.metrics, counted by the owner's owner_metrics.c), kept
 * for /metrics and /api/v1/cluster. Each report replaces the last: the
 * counters are the owner's totals since it started.
 */
#include "master/master.h"

#include "common/log.h"

static void take_histogram(member *mb, const Fx__LatencyHistogram *h)
{
    if (!h || h->op >= OP_KINDS || h->n_buckets != OP_METRICS_BUCKETS) {
        FX_LOG_LIMITED(WARN, "member %u '%s' reported a latency histogram of op %u with %zu "
                             "buckets (want op < %u, %u buckets); dropped",
                       mb->node_id, mb->name, h ? h->op : 0u, h ? h->n_buckets : (size_t)0,
                       (unsigned)OP_KINDS, (unsigned)OP_METRICS_BUCKETS);
        return;
    }
    op_histogram *dst = &mb->metrics.ops.latency[h->op];
    for (size_t b = 0; b < OP_METRICS_BUCKETS; b++)
        dst->buckets[b] = h->buckets[b];
    dst->sum_us = h->sum_us;
}

const char *member_state(const member *mb)
{
    return mb->recovering && !mb->ready ? "recovering" : "ready";
}

void member_metrics_take(member *mb, const Fx__OwnerMetrics *m)
{
    if (!m)
        return;
    member_metrics *mm = &mb->metrics;
    mm->reported = true;
    mm->ops.puts = m->puts;
    mm->ops.put_bytes = m->put_bytes;
    mm->ops.get_errors = m->get_errors;
    mm->ops.get_bytes = m->get_bytes;
    mm->ops.deletes = m->deletes;
    for (size_t i = 0; i < OP_METRICS_ERRORS; i++)
        mm->ops.errors[i] = i < m->n_errors ? m->errors[i] : 0;
    for (size_t k = 0; k < m->n_latency; k++)
        take_histogram(mb, m->latency[k]);
    mm->ssd_evictions = m->ssd_evictions;
    mm->dataplane_bytes_in = m->dataplane_bytes_in;
    mm->dataplane_bytes_out = m->dataplane_bytes_out;
    mm->ssd_jobs = m->ssd_jobs;
    mm->ssd_writes = m->ssd_writes;
    mm->ssd_stages = m->ssd_stages;
    mm->ssd_persists_waiting = m->ssd_persists_waiting;
}
