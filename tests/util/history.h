/*
 * history.h - a history checker for concurrent puts, gets and deletes: the
 * values say who wrote them, every operation is recorded with the times it
 * was invoked and answered, and the check afterwards finds reads that a
 * correct cache could not have answered.
 *
 * Values. hist_value_make fills a value with a header naming the key, the
 * writer and the writer's sequence number, the value's length and an
 * XXH3 checksum over the header and the payload (bytes drawn from the
 * writer and sequence). hist_value_parse tells a good value (its version:
 * writer, seq) from a torn one (bad magic, length or checksum) and from a
 * foreign one (intact, but another key's).
 *
 * Recording. A history has n_clients logs, one per client thread (only that
 * thread appends to it, no lock), each a preallocated array. Every put and
 * delete takes the next sequence number of its client (hist_next_seq), so a
 * version is (client, seq). Times are CLOCK_MONOTONIC nanoseconds.
 *
 * The rules (hist_check), per key. A write is a put or a delete; it is
 * acknowledged when it returned 0 (a delete also when it returned
 * KeyNotFound: the key is absent once it returns), and its acknowledgement
 * time is then its response time; a write that failed (MasterUnavailable,
 * Timeout, NoSpace, ...) may or may not have taken effect, at any time after
 * it was invoked: its acknowledgement time is infinite. A get answered with
 * a value or KeyNotFound is a read of one version:
 *   - a value: the put of that (client, seq) of the same key, which must
 *     exist (else "phantom") and have been invoked before the read returned
 *     (else "from the future");
 *   - KeyNotFound: the key's initial absence (acknowledged at time 0), or
 *     any delete of it, or any failed put of it (an overwrite that failed
 *     half-way may leave the key absent: a cache may lose, never lie),
 *     invoked before the read returned; any one of them may explain it.
 * A version V is too old for a read R when some acknowledged write W2 of
 * the key was invoked after V was acknowledged and was itself acknowledged
 * before R was invoked: at once for W2 by R's own client (read-your-writes),
 * window_ns earlier for any other client (the invalidation window). Writes
 * that overlap in time are concurrent: either may be the last, so a read may
 * return any version that was not acknowledged-before-overwritten. A read
 * all of whose candidate versions are too old is a violation ("stale").
 * Corrupt reads (torn, foreign) are counted apart and not checked further.
 */
#ifndef FX_TESTS_HISTORY_H
#define FX_TESTS_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- values ------------------------------------------------------------------ */

#define HIST_VALUE_HEADER 32 /* the smallest value hist_value_make writes */

/* Fills len (>= HIST_VALUE_HEADER) bytes of buf with version (writer, seq)
 * of key. */
void hist_value_make(void *buf, size_t len, uint32_t key, uint32_t writer, uint64_t seq);

enum hist_value_verdict {
    HIST_VALUE_OK = 0,
    HIST_VALUE_TORN = -1,    /* not a whole value: magic, length or checksum wrong */
    HIST_VALUE_FOREIGN = -2, /* a whole value of another key */
};

/* Reads the version of len bytes got for key: HIST_VALUE_OK with *writer
 * and *seq set, or a negative verdict (*writer, *seq unchanged). */
int hist_value_parse(const void *buf, size_t len, uint32_t key, uint32_t *writer, uint64_t *seq);

/* ---- recording --------------------------------------------------------------- */

enum hist_kind { HIST_PUT = 1, HIST_GET, HIST_DEL };

enum hist_outcome {
    HIST_OK = 1,      /* put/delete done; get returned a value */
    HIST_NOTFOUND,    /* KeyNotFound (get, delete) */
    HIST_FAILED,      /* any other error (code says which) */
    HIST_CORRUPT,     /* get: a torn or foreign value (code: its verdict) */
};

typedef struct hist_op {
    uint64_t inv_ns, resp_ns;
    uint32_t key;
    uint8_t kind;    /* enum hist_kind */
    uint8_t outcome; /* enum hist_outcome */
    int16_t code;    /* FX_E* of a failure, verdict of a corrupt read, else 0 */
    uint32_t writer; /* get answered with a value: the version's writer */
    uint64_t seq;    /* put, delete: this write's seq; get with a value: the version's */
} hist_op;

typedef struct history history;

/* A history for n_clients logs of up to ops_per_client operations each, on
 * keys 0..n_keys-1. Returns NULL when out of memory. Free with hist_free. */
history *hist_new(int n_clients, size_t ops_per_client, uint32_t n_keys);
void hist_free(history *h);

/* Now, CLOCK_MONOTONIC, in ns. */
uint64_t hist_now_ns(void);

/* The next sequence number (from 1) of client's writes. Client thread only. */
uint64_t hist_next_seq(history *h, int client);

/* Appends op to client's log. Returns 0, or -1 when the log is full (the op
 * is dropped and counted). Client thread only. */
int hist_add(history *h, int client, const hist_op *op);

/* Client's log (read it once the client threads are done). */
const hist_op *hist_ops(const history *h, int client, size_t *n);

/* ---- checking ---------------------------------------------------------------- */

typedef struct hist_report {
    uint64_t ops, dropped;
    uint64_t puts_ok, puts_failed, dels_ok, dels_failed, gets_value, gets_absent, gets_failed;
    uint64_t corrupt_torn, corrupt_foreign;
    uint64_t stale_value;  /* a value older than an acknowledged write allows */
    uint64_t stale_absent; /* KeyNotFound where an acknowledged put must be seen */
    uint64_t phantom, future;
    uint64_t violations; /* stale_value + stale_absent + phantom + future */
} hist_report;

/* Checks every read of every client against the rules above, with the
 * cross-client window window_ns. Fills *r and prints up to max_print
 * violations and corrupt reads to out (may be NULL), each with the read and
 * the write that made it wrong, times in ms since t0_ns. Returns
 * r->violations + the corrupt reads. The history must not change meanwhile. */
uint64_t hist_check(history *h, uint64_t window_ns, uint64_t t0_ns, int max_print, FILE *out,
                    hist_report *r);

/* Whether the rules allow KeyNotFound for a read of key by client invoked
 * at inv_ns and answered at resp_ns (hist_check must have run: it builds
 * the per-key index this uses). False means an acknowledged put must be
 * seen: a key that must be readable. */
bool hist_absent_allowed(const history *h, int client, uint32_t key, uint64_t inv_ns,
                         uint64_t resp_ns, uint64_t window_ns);

/* Whether a get of client answered with a value passes the rules (a corrupt
 * or failed one does not). hist_check must have run. */
bool hist_read_ok(const history *h, int client, const hist_op *read, uint64_t window_ns);

#endif
