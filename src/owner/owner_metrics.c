/*
 * owner_metrics.c - what an owner counts about the operations it serves and
 * tells the master with each heartbeat (HeartbeatReq.metrics), for the
 * master's /metrics and /api/v1/cluster: puts, gets and deletes with their
 * bytes, errors by kind, latency histograms per operation
 * (common/op_metrics.h), the SSD tier's queue depths and evictions, and the
 * data plane's bytes each way.
 *
 * The handlers count through the owner_metrics_* calls here; a get is timed
 * from its arrival (get_waiter.t0_us) to its answer, a put from its start to
 * PutDone's answer. Misses are the heartbeat's own `misses`, not errors.
 */
#include "owner/owner.h"

#include <stdlib.h>

#include "fluxon/fluxon.h"
#include "owner/dataplane/dataplane.h"
#include "owner/ssd_tier.h"
#include "owner/ssd/ssd.h"

uint64_t owner_now_us(void)
{
    return uv_hrtime() / 1000u;
}

static uint64_t since(uint64_t t0_us)
{
    uint64_t now = owner_now_us();
    return now > t0_us ? now - t0_us : 0;
}

void owner_metrics_get_answered(owner *o, uint64_t t0_us, op_kind kind, uint64_t len)
{
    op_metrics_add(&o->metrics.get_bytes, len);
    op_metrics_observe(&o->metrics, kind, since(t0_us));
}

void owner_metrics_get_failed(owner *o, int status)
{
    if (status == FX_ENOTFOUND) /* a miss is counted as one (HeartbeatReq.misses) */
        return;
    op_metrics_add(&o->metrics.get_errors, 1);
    op_metrics_error(&o->metrics, status);
}

void owner_metrics_put_done(owner *o, uint64_t t0_us, uint64_t len)
{
    op_metrics_add(&o->metrics.puts, 1);
    op_metrics_add(&o->metrics.put_bytes, len);
    op_metrics_observe(&o->metrics, OP_PUT, since(t0_us));
}

void owner_metrics_error(owner *o, int status)
{
    op_metrics_error(&o->metrics, status);
}

void owner_metrics_deleted(owner *o)
{
    op_metrics_add(&o->metrics.deletes, 1);
}

/* The SSD tier's figures (loop thread: the tier's counts are the loop's). */
static void fill_ssd(owner *o, Fx__OwnerMetrics *m)
{
    ssd_tier *t = o->ssd;
    if (!t)
        return;
    m->ssd_jobs = t->jobs;
    m->ssd_writes = t->writes_running;
    m->ssd_stages = t->stages_running;
    m->ssd_persists_waiting = t->persists_waiting;
    ssd_stats st;
    ssd_get_stats(t->store, &st);
    m->ssd_evictions = st.evictions;
}

void owner_metrics_fill(owner *o, Fx__OwnerMetrics *m, owner_metrics_buf *buf)
{
    op_metrics now;
    op_metrics_read(&o->metrics, &now);
    m->puts = now.puts;
    m->put_bytes = now.put_bytes;
    m->get_errors = now.get_errors;
    m->get_bytes = now.get_bytes;
    m->deletes = now.deletes;
    for (size_t i = 0; i < OP_METRICS_ERRORS; i++)
        buf->errors[i] = now.errors[i];
    m->n_errors = OP_METRICS_ERRORS;
    m->errors = buf->errors;
    for (size_t k = 0; k < OP_KINDS; k++) {
        Fx__LatencyHistogram *h = &buf->hist[k];
        fx__latency_histogram__init(h);
        h->op = (uint32_t)k;
        for (size_t b = 0; b < OP_METRICS_BUCKETS; b++)
            buf->buckets[k][b] = now.latency[k].buckets[b];
        h->n_buckets = OP_METRICS_BUCKETS;
        h->buckets = buf->buckets[k];
        h->sum_us = now.latency[k].sum_us;
        buf->hist_ptrs[k] = h;
    }
    m->n_latency = OP_KINDS;
    m->latency = buf->hist_ptrs;
    if (o->dp) {
        dp_stats ds;
        dp_engine_stats(o->dp, &ds);
        m->dataplane_bytes_in = ds.bytes_in;
        m->dataplane_bytes_out = ds.bytes_out;
    }
    fill_ssd(o, m);
}
