/*
 * uring.h - the IO engine of one SSD device: an io_uring ring driven by its
 * own thread, with separate read and write channels (spec 000 §6.4).
 *
 * Any thread submits requests; the engine thread moves them into SQEs while
 * fewer than io_depth are in flight, choosing the read channel first while
 * read_inflight <= 2 * write_inflight and the write channel first otherwise,
 * and taking the other channel whenever the preferred one is empty, so a free
 * slot never idles. Completion callbacks run on the engine thread and must be
 * short (signal a waiter, queue a follow-up). Hand-off from submitters is a
 * mutex-protected queue plus an eventfd that the ring itself polls, signalled
 * only when a queue goes from empty to non-empty.
 *
 * SingleBuffer mode (IORING_OP_READ / IORING_OP_WRITE) is the default; iovec
 * mode (IORING_OP_READV / IORING_OP_WRITEV with one element) is kept as a test
 * and comparison path. Short transfers are reported as they are (res < len):
 * the caller decides (a short write aborts the entry).
 *
 * In builds with FX_FAILPOINTS defined (test builds), uring_failpoint() makes
 * the next N requests of a kind fail with -EIO at submission or completion, or
 * complete short, because LD_PRELOAD fault injection does not see io_uring.
 */
#ifndef FX_SSD_URING_H
#define FX_SSD_URING_H

#include <stdbool.h>
#include <stdint.h>

enum uring_op { URING_READ = 1, URING_WRITE = 2 };

typedef struct uring_req {
    int op;         /* enum uring_op */
    int fd;         /* an O_DIRECT file */
    void *buf;      /* 512-aligned */
    uint32_t len;   /* a multiple of 512 */
    uint64_t off;   /* a multiple of 512 */
    int res;        /* on completion: bytes transferred or -errno */
    void (*done)(struct uring_req *req); /* called once, on the engine thread */
    void *ud;
    struct uring_req *next; /* engine-private queue link */
} uring_req;

/* Counters since start. *_completed count done() calls of any result,
 * *_bytes sum the positive results, errors counts results < 0 (cancellations
 * and failpoints included). The inflight pair is one consistent snapshot of
 * the IOs holding ring slots (at most io_depth together); a request has left
 * them by the time its done() runs. */
typedef struct uring_stats {
    uint64_t reads_completed, writes_completed;
    uint64_t read_bytes, write_bytes;
    uint64_t errors;
    uint32_t read_inflight, write_inflight; /* now */
} uring_stats;

typedef struct uring_engine uring_engine;

/* Starts an engine thread with an io_uring of io_depth entries (1..4096).
 * Returns 0 and the engine in *out (freed by uring_engine_stop), or a negative
 * errno with *out NULL: -EINVAL for a bad io_depth, -ENOSYS where io_uring is
 * unavailable, -EPERM where it is disabled, -ENOMEM. */
int uring_engine_start(uring_engine **out, unsigned io_depth, bool iovec_mode);
/* Completes every queued request with -ECANCELED, waits for the in-flight ones,
 * stops the thread and frees the engine (NULL-safe). Requests that done()
 * callbacks queue meanwhile are cancelled too. Must not be called from a
 * done() callback, nor while other threads may still call uring_submit(). */
void uring_engine_stop(uring_engine *e);
/* Queues req (thread-safe, also from a done() callback); req->done will be
 * called exactly once, with req->res set: bytes transferred (possibly short),
 * -EINVAL for an unknown op, the kernel's -errno, or -ECANCELED at stop.
 * The caller keeps req and its buffer alive and untouched until then. */
void uring_submit(uring_engine *e, uring_req *req);
void uring_get_stats(uring_engine *e, uring_stats *out);

/* A reader: a private io_uring (depth 1..64 reads in flight) for one thread
 * at a time that submits reads and waits for their completions itself, with
 * no hand-off to the engine thread (each hand-off wakes a thread, 60-90 us on
 * the 2-vCPU guests of docs/benchmarks.md). Its reads do not pass through the
 * engine's read/write channels: they never wait behind queued writes, and
 * the engine's io_depth, in-flight counts and iovec mode do not apply to them
 * (always IORING_OP_READ). They count in the engine's completed-IO stats and
 * take its failpoints (uring_failpoint).
 * A reader is not thread-safe: one thread uses it at a time (a pool hands it
 * out). uring_reader_open returns 0 or a negative errno (-EINVAL for a bad
 * depth; the io_uring's own errors). Close it with nothing in flight. */
typedef struct uring_reader uring_reader;
int uring_reader_open(uring_engine *e, unsigned depth, uring_reader **out);
void uring_reader_close(uring_reader *r);
/* Queues req (op URING_READ, fd / buf / len / off as for uring_submit; done
 * and ud are not used) without entering the kernel; at most depth prepared
 * or in flight. A request that fails before submission (a failpoint, another
 * op) is handed back by uring_reader_wait like any other. */
void uring_reader_prep(uring_reader *r, uring_req *req);
/* Submits what uring_reader_prep queued, in one system call. */
void uring_reader_submit(uring_reader *r);
/* Waits for one of the submitted requests to complete and returns it with
 * res set as uring_submit's done() would see it; NULL when none is left. */
uring_req *uring_reader_wait(uring_reader *r);

#ifdef FX_FAILPOINTS
enum uring_failpoint_kind {
    URING_FP_SUBMIT_EIO,   /* fail before the SQE is submitted */
    URING_FP_COMPLETE_EIO, /* replace the CQE result by -EIO */
    URING_FP_SHORT,        /* report half of the bytes (rounded down to 512) */
};
/* The next count requests of op (URING_READ or URING_WRITE) taken from its
 * queue fail as kind (replacing what was left of kind for op). One request
 * takes at most one fault, SUBMIT_EIO before COMPLETE_EIO before SHORT. SHORT
 * really asks the kernel for only the first half, so res is that length. */
void uring_failpoint(uring_engine *e, int op, int kind, unsigned count);
#endif

#endif
