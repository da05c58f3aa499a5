/*
 * history.c - self-describing values, per-client operation logs and the
 * check of every read against the writes around it (see history.h).
 *
 * The check first files every write under its key (hist_index): one array
 * per key of (client, inv, ack, kind) with the acknowledgement time infinite
 * for a failed write, plus, per client, where each sequence number's write
 * sits, to find the put a value names. A read then needs one pass over its
 * key's writes: M, the latest invocation among the writes acknowledged early
 * enough to bind the read (their own client's at once, others' a window
 * earlier); a candidate version is too old exactly when it was acknowledged
 * before M.
 */
#include "history.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "testlib.h"

#define HIST_MAGIC 0x56485846u /* "FXHV" */
#define ACK_NEVER UINT64_MAX

/* ---- values ------------------------------------------------------------------ */

typedef struct value_header {
    uint32_t magic, key, writer, len;
    uint64_t seq;
    uint64_t checksum; /* over the 24 bytes above and the payload */
} value_header;

_Static_assert(sizeof(value_header) == HIST_VALUE_HEADER, "the header is 32 bytes");

static uint64_t checksum(const value_header *hd, const uint8_t *payload, size_t n)
{
    uint64_t seed = XXH3_64bits(hd, offsetof(value_header, checksum));
    return XXH3_64bits_withSeed(payload, n, seed);
}

void hist_value_make(void *buf, size_t len, uint32_t key, uint32_t writer, uint64_t seq)
{
    value_header hd = {.magic = HIST_MAGIC, .key = key, .writer = writer, .len = (uint32_t)len,
                       .seq = seq};
    uint8_t *p = (uint8_t *)buf + HIST_VALUE_HEADER;
    size_t n = len - HIST_VALUE_HEADER;
    unsigned long long s = ((unsigned long long)writer << 40 ^ seq ^ key * 0x9E3779B97F4A7C15ULL) | 1;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        unsigned long long x = test_rand(&s);
        memcpy(p + i, &x, 8);
    }
    for (; i < n; i++)
        p[i] = (uint8_t)(test_rand(&s) >> 56);
    hd.checksum = checksum(&hd, p, n);
    memcpy(buf, &hd, sizeof hd);
}

int hist_value_parse(const void *buf, size_t len, uint32_t key, uint32_t *writer, uint64_t *seq)
{
    if (len < HIST_VALUE_HEADER)
        return HIST_VALUE_TORN;
    value_header hd;
    memcpy(&hd, buf, sizeof hd);
    if (hd.magic != HIST_MAGIC || hd.len != len ||
        hd.checksum != checksum(&hd, (const uint8_t *)buf + HIST_VALUE_HEADER,
                                len - HIST_VALUE_HEADER))
        return HIST_VALUE_TORN;
    if (hd.key != key)
        return HIST_VALUE_FOREIGN;
    *writer = hd.writer;
    *seq = hd.seq;
    return HIST_VALUE_OK;
}

/* ---- recording --------------------------------------------------------------- */

typedef struct client_log {
    hist_op *ops; /* cap entries; n used (the client's thread only, until the check) */
    size_t n, cap;
    uint64_t next_seq;
    uint64_t dropped;
} client_log;

/* One write filed under its key. */
typedef struct key_write {
    uint64_t inv, resp, ack; /* ack: resp, or ACK_NEVER for a failed write */
    int client;
    uint8_t kind;
} key_write;

typedef struct key_writes {
    key_write *w;
    size_t n, cap;
} key_writes;

struct history {
    int n_clients;
    uint32_t n_keys;
    client_log *logs;
    /* Built by hist_index (the check), once the logs are complete. */
    key_writes *by_key;     /* n_keys */
    size_t **write_of_seq;  /* per client: seq - 1 -> index into its ops (SIZE_MAX: none) */
};

history *hist_new(int n_clients, size_t ops_per_client, uint32_t n_keys)
{
    history *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->n_clients = n_clients;
    h->n_keys = n_keys;
    h->logs = calloc((size_t)n_clients, sizeof *h->logs);
    if (!h->logs)
        goto fail;
    for (int c = 0; c < n_clients; c++) {
        h->logs[c].ops = calloc(ops_per_client, sizeof(hist_op));
        if (!h->logs[c].ops)
            goto fail;
        h->logs[c].cap = ops_per_client;
    }
    return h;
fail:
    hist_free(h);
    return NULL;
}

void hist_free(history *h)
{
    if (!h)
        return;
    for (int c = 0; h->logs && c < h->n_clients; c++) {
        free(h->logs[c].ops);
        if (h->write_of_seq)
            free(h->write_of_seq[c]);
    }
    for (uint32_t k = 0; h->by_key && k < h->n_keys; k++)
        free(h->by_key[k].w);
    free(h->by_key);
    free(h->write_of_seq);
    free(h->logs);
    free(h);
}

uint64_t hist_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t hist_next_seq(history *h, int client)
{
    return ++h->logs[client].next_seq;
}

int hist_add(history *h, int client, const hist_op *op)
{
    client_log *l = &h->logs[client];
    if (l->n == l->cap) {
        l->dropped++;
        return -1;
    }
    l->ops[l->n++] = *op;
    return 0;
}

const hist_op *hist_ops(const history *h, int client, size_t *n)
{
    *n = h->logs[client].n;
    return h->logs[client].ops;
}

/* ---- the index ------------------------------------------------------------------ */

static bool is_write(const hist_op *op)
{
    return op->kind == HIST_PUT || op->kind == HIST_DEL;
}

/* A delete that found nothing still leaves the key absent when it returns. */
static bool acked(const hist_op *op)
{
    return op->outcome == HIST_OK || (op->kind == HIST_DEL && op->outcome == HIST_NOTFOUND);
}

static int hist_index(history *h)
{
    if (h->by_key)
        return 0;
    h->by_key = calloc(h->n_keys, sizeof *h->by_key);
    h->write_of_seq = calloc((size_t)h->n_clients, sizeof *h->write_of_seq);
    if (!h->by_key || !h->write_of_seq)
        return -1;
    for (int c = 0; c < h->n_clients; c++) {
        const client_log *l = &h->logs[c];
        size_t n_seq = l->next_seq;
        h->write_of_seq[c] = malloc((n_seq ? n_seq : 1) * sizeof(size_t));
        if (!h->write_of_seq[c])
            return -1;
        for (size_t s = 0; s < n_seq; s++)
            h->write_of_seq[c][s] = SIZE_MAX;
        for (size_t i = 0; i < l->n; i++) {
            const hist_op *op = &l->ops[i];
            if (!is_write(op) || op->key >= h->n_keys)
                continue;
            if (op->seq >= 1 && op->seq <= n_seq)
                h->write_of_seq[c][op->seq - 1] = i;
            key_writes *kw = &h->by_key[op->key];
            if (kw->n == kw->cap) {
                size_t cap = kw->cap ? 2 * kw->cap : 16;
                key_write *w = realloc(kw->w, cap * sizeof *w);
                if (!w)
                    return -1;
                kw->w = w;
                kw->cap = cap;
            }
            kw->w[kw->n++] = (key_write){.inv = op->inv_ns, .resp = op->resp_ns,
                                         .ack = acked(op) ? op->resp_ns : ACK_NEVER,
                                         .client = c, .kind = op->kind};
        }
    }
    return 0;
}

/* M for a read of key by client invoked at inv: the latest invocation among
 * the acknowledged writes that bind it; false when none does. *culprit (may
 * be NULL) gets that write. */
static bool binding_inv(const history *h, int client, uint32_t key, uint64_t inv,
                        uint64_t window_ns, uint64_t *m, const key_write **culprit)
{
    const key_writes *kw = &h->by_key[key];
    bool any = false;
    for (size_t i = 0; i < kw->n; i++) {
        const key_write *w = &kw->w[i];
        if (w->ack == ACK_NEVER)
            continue;
        bool binds = w->client == client ? w->ack <= inv : w->ack + window_ns < inv;
        if (binds && (!any || w->inv > *m)) {
            *m = w->inv;
            any = true;
            if (culprit)
                *culprit = w;
        }
    }
    return any;
}

bool hist_absent_allowed(const history *h, int client, uint32_t key, uint64_t inv_ns,
                         uint64_t resp_ns, uint64_t window_ns)
{
    uint64_t m = 0;
    if (key >= h->n_keys || !binding_inv(h, client, key, inv_ns, window_ns, &m, NULL))
        return true; /* the initial absence is not too old */
    const key_writes *kw = &h->by_key[key];
    for (size_t i = 0; i < kw->n; i++) {
        const key_write *w = &kw->w[i];
        bool absence = w->kind == HIST_DEL || w->ack == ACK_NEVER; /* a delete, a failed put */
        if (absence && w->inv < resp_ns && w->ack >= m)
            return true;
    }
    return false;
}

enum read_verdict { READ_GOOD, READ_STALE, READ_PHANTOM, READ_FUTURE };

/* The verdict on a get answered with a value (outcome HIST_OK). */
static enum read_verdict judge_value(const history *h, int client, const hist_op *r,
                                     uint64_t window_ns, const hist_op **version,
                                     const key_write **culprit)
{
    *version = NULL;
    if (r->writer >= (uint32_t)h->n_clients || r->seq < 1 ||
        r->seq > h->logs[r->writer].next_seq)
        return READ_PHANTOM;
    size_t at = h->write_of_seq[r->writer][r->seq - 1];
    if (at == SIZE_MAX)
        return READ_PHANTOM;
    const hist_op *p = &h->logs[r->writer].ops[at];
    if (p->kind != HIST_PUT || p->key != r->key)
        return READ_PHANTOM;
    *version = p;
    if (p->inv_ns >= r->resp_ns)
        return READ_FUTURE;
    uint64_t m = 0;
    uint64_t ack = acked(p) ? p->resp_ns : ACK_NEVER;
    if (binding_inv(h, client, r->key, r->inv_ns, window_ns, &m, culprit) && m > ack)
        return READ_STALE;
    return READ_GOOD;
}

bool hist_read_ok(const history *h, int client, const hist_op *read, uint64_t window_ns)
{
    if (read->kind != HIST_GET || read->outcome != HIST_OK || !h->by_key || read->key >= h->n_keys)
        return false;
    const hist_op *v;
    const key_write *w;
    return judge_value(h, client, read, window_ns, &v, &w) == READ_GOOD;
}

/* ---- the check ------------------------------------------------------------------ */

static double rel_ms(uint64_t t, uint64_t t0)
{
    return t == ACK_NEVER ? -1.0 : ((double)t - (double)t0) / 1e6;
}

static void print_culprit(FILE *out, const key_write *w, uint64_t t0)
{
    if (!w)
        return;
    fprintf(out, "    bound by %s of client %d invoked %.3f ms, acknowledged %.3f ms\n",
            w->kind == HIST_PUT ? "put" : "delete", w->client, rel_ms(w->inv, t0),
            rel_ms(w->ack, t0));
}

/* Every write of the key around t (within 500 ms), for the excerpt. */
static void print_writes_around(FILE *out, const history *h, uint32_t key, uint64_t t,
                                uint64_t t0)
{
    const key_writes *kw = &h->by_key[key];
    const uint64_t span = 500000000u;
    for (size_t i = 0; i < kw->n; i++) {
        const key_write *w = &kw->w[i];
        if (w->inv + span < t || w->inv > t + span)
            continue;
        fprintf(out, "      %s by client %d: invoked %.3f, answered %.3f ms%s\n",
                w->kind == HIST_PUT ? "put" : "delete", w->client, rel_ms(w->inv, t0),
                rel_ms(w->resp, t0), w->ack == ACK_NEVER ? " (failed)" : "");
    }
}

uint64_t hist_check(history *h, uint64_t window_ns, uint64_t t0_ns, int max_print, FILE *out,
                    hist_report *r)
{
    memset(r, 0, sizeof *r);
    if (hist_index(h) < 0) {
        if (out)
            fprintf(out, "history: out of memory for the index\n");
        r->violations = 1;
        return 1;
    }
    int printed = 0;
    for (int c = 0; c < h->n_clients; c++) {
        const client_log *l = &h->logs[c];
        r->dropped += l->dropped;
        for (size_t i = 0; i < l->n; i++) {
            const hist_op *op = &l->ops[i];
            r->ops++;
            if (op->kind == HIST_PUT) {
                *(op->outcome == HIST_OK ? &r->puts_ok : &r->puts_failed) += 1;
                continue;
            }
            if (op->kind == HIST_DEL) {
                *(acked(op) ? &r->dels_ok : &r->dels_failed) += 1;
                continue;
            }
            if (op->outcome == HIST_FAILED) {
                r->gets_failed++;
                continue;
            }
            const char *what = NULL;
            const hist_op *version = NULL;
            const key_write *culprit = NULL;
            if (op->outcome == HIST_CORRUPT) {
                *(op->code == HIST_VALUE_FOREIGN ? &r->corrupt_foreign : &r->corrupt_torn) += 1;
                what = op->code == HIST_VALUE_FOREIGN ? "a foreign value (another key's)"
                                                      : "a torn value";
            } else if (op->outcome == HIST_NOTFOUND) {
                r->gets_absent++;
                uint64_t m = 0;
                if (!hist_absent_allowed(h, c, op->key, op->inv_ns, op->resp_ns, window_ns)) {
                    r->stale_absent++;
                    what = "KeyNotFound where an acknowledged put must be seen";
                    binding_inv(h, c, op->key, op->inv_ns, window_ns, &m, &culprit);
                }
            } else {
                r->gets_value++;
                switch (judge_value(h, c, op, window_ns, &version, &culprit)) {
                case READ_GOOD:
                    break;
                case READ_STALE:
                    r->stale_value++;
                    what = "a version older than an acknowledged write allows";
                    break;
                case READ_PHANTOM:
                    r->phantom++;
                    what = "a version no put of this key wrote";
                    break;
                case READ_FUTURE:
                    r->future++;
                    what = "a version put after the read returned";
                    break;
                }
            }
            if (!what || !out || printed >= max_print)
                continue;
            printed++;
            fprintf(out, "  key %u: get by client %d invoked %.3f, answered %.3f ms: %s\n",
                    op->key, c, rel_ms(op->inv_ns, t0_ns), rel_ms(op->resp_ns, t0_ns), what);
            if (version)
                fprintf(out, "    read client %u's seq %llu: put invoked %.3f, answered %.3f ms%s\n",
                        op->writer, (unsigned long long)op->seq, rel_ms(version->inv_ns, t0_ns),
                        rel_ms(version->resp_ns, t0_ns),
                        version->outcome == HIST_OK ? "" : " (failed)");
            print_culprit(out, culprit, t0_ns);
            print_writes_around(out, h, op->key, op->inv_ns, t0_ns);
        }
    }
    r->violations = r->stale_value + r->stale_absent + r->phantom + r->future;
    return r->violations + r->corrupt_torn + r->corrupt_foreign;
}
