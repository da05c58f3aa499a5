/*
 * access_report.c - telling the master about reads it did not see.
 *
 * A get served from this owner's get cache never reaches the master, yet the
 * master's eviction policy must count it as a hit for the replica, or a key
 * read a thousand times here looks cold there. Each such read queues its key;
 * the keys go to the master as one AccessReport (one-way) every
 * ACCESS_REPORT_BATCH keys or ACCESS_REPORT_MS milliseconds, whichever comes
 * first. Reports are advisory: when the master is unreachable or memory runs
 * short they are dropped, never retried.
 */
#include "owner/owner.h"

#include <stdlib.h>
#include <string.h>

#define ACCESS_REPORT_BATCH 256u
#define ACCESS_REPORT_MS 10u

static void flush(owner *o)
{
    uv_timer_stop(&o->access_timer);
    size_t n = o->n_access;
    if (!n)
        return;
    ProtobufCBinaryData *keys = malloc(n * sizeof *keys);
    if (keys && o->registered && o->mrpc) {
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t len;
            memcpy(&len, o->access_buf + at, sizeof len);
            keys[i] = (ProtobufCBinaryData){.len = len, .data = o->access_buf + at + sizeof len};
            at += sizeof len + len;
        }
        Fx__AccessReportReq req = FX__ACCESS_REPORT_REQ__INIT;
        req.n_keys = n;
        req.keys = keys;
        rpc_notify(o->mrpc, MSG_ACCESS_REPORT, &req.base);
    }
    free(keys);
    o->n_access = 0;
    o->access_len = 0;
}

static void on_timer(uv_timer_t *t)
{
    flush(t->data);
}

void owner_report_access(owner *o, const void *key, size_t klen)
{
    uint32_t len = (uint32_t)klen;
    size_t need = o->access_len + sizeof len + klen;
    if (need > o->access_cap) {
        size_t cap = o->access_cap ? o->access_cap : 16384;
        while (cap < need)
            cap *= 2;
        uint8_t *n = realloc(o->access_buf, cap);
        if (!n)
            return; /* advisory: this read goes unreported */
        o->access_buf = n;
        o->access_cap = cap;
    }
    memcpy(o->access_buf + o->access_len, &len, sizeof len);
    memcpy(o->access_buf + o->access_len + sizeof len, key, klen);
    o->access_len = need;
    if (++o->n_access >= ACCESS_REPORT_BATCH)
        flush(o);
    else if (o->n_access == 1)
        uv_timer_start(&o->access_timer, on_timer, ACCESS_REPORT_MS, 0);
}

void owner_access_report_init(owner *o)
{
    uv_timer_init(o->loop, &o->access_timer);
    o->access_timer.data = o;
}

void owner_access_report_close(owner *o)
{
    uv_timer_stop(&o->access_timer);
    uv_close((uv_handle_t *)&o->access_timer, NULL);
    free(o->access_buf);
    o->access_buf = NULL;
    o->n_access = o->access_len = o->access_cap = 0;
}
