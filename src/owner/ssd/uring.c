/*
 * uring.c - the IO engine of one SSD device: one thread, one io_uring, a read
 * and a write channel (spec 000 §6.4; see uring.h for the contract).
 *
 * Submitters append to a mutex-protected FIFO per channel and write the
 * engine's eventfd only when that FIFO goes from empty to non-empty. The
 * engine thread keeps an IORING_OP_READ on the eventfd armed in its own ring,
 * so one io_uring_submit_and_wait() sleeps on new work and on IO completions
 * alike. Each turn of the loop it moves queued requests into SQEs while a slot
 * is free (read channel first while read_inflight <= 2 * write_inflight, else
 * write first, the other channel when the preferred one is empty), submits the
 * batch once, then drains the CQ and calls each request's done().
 *
 * A slot is one of io_depth preallocated IO descriptors: it bounds the number
 * in flight and gives the request's iovec (iovec mode) a home for the IO's
 * whole lifetime without allocating per IO or growing uring_req. The CQE
 * cookie (user_data) is the slot, which points at its uring_req; the eventfd
 * read carries the reserved cookie EFD_COOKIE.
 *
 * -EAGAIN and -EINTR completions are resubmitted (bounded, see MAX_RETRIES);
 * every other result, short transfers included, goes to the caller as it is.
 *
 * A reader (uring_reader_*) is a small ring of its own for one thread that
 * submits reads and waits for them itself, as fio does: no hand-off to the
 * engine thread on the way in or out. It shares the engine's failpoints and
 * counters, not its slots or channels.
 */
#include "owner/ssd/uring.h"

#include <assert.h>
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* user_data of the eventfd read; slots are heap pointers, never all ones. */
#define EFD_COOKIE UINT64_MAX
/* A request that keeps completing with -EAGAIN / -EINTR this many times in a
 * row is reported with that error rather than spinning forever. */
#define MAX_RETRIES 1000u
#define MAX_DEPTH 4096u
#define READER_MAX_DEPTH 64u

/* One in-flight IO. Owned by the engine thread. */
struct slot {
    uring_req *req;
    struct slot *next;  /* free list or retry list */
    struct iovec iov;   /* iovec mode: lives until the CQE is reaped */
    uint32_t len;       /* bytes asked of the kernel (less than req->len for SHORT) */
    bool fail_eio;      /* failpoint: report -EIO whatever the kernel says */
    unsigned retries;
};

struct req_queue {
    uring_req *head, *tail;
};

struct uring_engine {
    struct io_uring ring; /* touched by the engine thread only once it runs */
    pthread_t thread;
    int efd;
    unsigned depth;
    bool iovec_mode;

    /* Engine thread only. */
    struct slot *slots;       /* depth of them */
    struct slot *free_slots;
    struct slot *retry_head, *retry_tail; /* reaped -EAGAIN/-EINTR, still hold a slot */
    unsigned read_inflight, write_inflight; /* slots held, by op */
    bool efd_armed;
    uint64_t efd_val;         /* the kernel writes the eventfd count here */

    pthread_mutex_t lock;
    /* Guarded by lock. */
    struct req_queue rq, wq;
    bool stopping;
#ifdef FX_FAILPOINTS
    unsigned fp[2][3]; /* [op - 1][kind]: requests left to fail */
#endif

    /* Written by the engine thread (the inflight word also at start), read by
     * anyone. read_inflight << 32 | write_inflight, so that one load gives a
     * consistent pair. */
    _Atomic uint64_t inflight_word;
    _Atomic uint64_t reads_completed, writes_completed;
    _Atomic uint64_t read_bytes, write_bytes, errors;
};

static void queue_push(struct req_queue *q, uring_req *req)
{
    req->next = NULL;
    if (q->tail)
        q->tail->next = req;
    else
        q->head = req;
    q->tail = req;
}

static uring_req *queue_pop(struct req_queue *q)
{
    uring_req *req = q->head;
    if (req) {
        q->head = req->next;
        if (!q->head)
            q->tail = NULL;
        req->next = NULL;
    }
    return req;
}

/* Moves all of src to the end of dst. */
static void queue_splice(struct req_queue *dst, struct req_queue *src)
{
    if (!src->head)
        return;
    if (dst->tail)
        dst->tail->next = src->head;
    else
        dst->head = src->head;
    dst->tail = src->tail;
    src->head = src->tail = NULL;
}

static void signal_engine(uring_engine *e)
{
    uint64_t one = 1;
    ssize_t n;
    do {
        n = write(e->efd, &one, sizeof one);
    } while (n < 0 && errno == EINTR);
    /* A blocking eventfd write fails only on counter overflow (never here). */
}

static void publish_inflight(uring_engine *e)
{
    atomic_store_explicit(&e->inflight_word,
                          (uint64_t)e->read_inflight << 32 | e->write_inflight,
                          memory_order_relaxed);
}

/* Counts a request's result in the engine's totals. */
static void count_result(uring_engine *e, const uring_req *req, int res)
{
    if (req->op == URING_WRITE) {
        atomic_fetch_add_explicit(&e->writes_completed, 1, memory_order_relaxed);
        if (res > 0)
            atomic_fetch_add_explicit(&e->write_bytes, (uint64_t)res, memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(&e->reads_completed, 1, memory_order_relaxed);
        if (res > 0)
            atomic_fetch_add_explicit(&e->read_bytes, (uint64_t)res, memory_order_relaxed);
    }
    if (res < 0)
        atomic_fetch_add_explicit(&e->errors, 1, memory_order_relaxed);
}

/* Sets req->res, counts it and calls done(). Engine thread (or the stopping
 * thread for the post-join safety net), no lock held: done() may submit. */
static void complete(uring_engine *e, uring_req *req, int res)
{
    req->res = res;
    count_result(e, req, res);
    req->done(req);
}

/* Completes every request of q with res, or with its own req->res when res is
 * 0 (requests that failed before submission). */
static void complete_list(uring_engine *e, struct req_queue *q, int res)
{
    uring_req *req;
    while ((req = queue_pop(q)))
        complete(e, req, res ? res : req->res);
}

static void prep_slot(uring_engine *e, struct io_uring_sqe *sqe, struct slot *s)
{
    uring_req *req = s->req;
    bool rd = req->op == URING_READ;
    if (e->iovec_mode) {
        s->iov.iov_base = req->buf;
        s->iov.iov_len = s->len;
        if (rd)
            io_uring_prep_readv(sqe, req->fd, &s->iov, 1, req->off);
        else
            io_uring_prep_writev(sqe, req->fd, &s->iov, 1, req->off);
    } else {
        if (rd)
            io_uring_prep_read(sqe, req->fd, req->buf, s->len, req->off);
        else
            io_uring_prep_write(sqe, req->fd, req->buf, s->len, req->off);
    }
    io_uring_sqe_set_data(sqe, s);
}

/* Releases a slot whose IO is over and returns its request. Engine thread. */
static uring_req *release_slot(uring_engine *e, struct slot *s)
{
    uring_req *req = s->req;
    if (req->op == URING_READ) {
        assert(e->read_inflight > 0);
        e->read_inflight--;
    } else {
        assert(e->write_inflight > 0);
        e->write_inflight--;
    }
    publish_inflight(e);
    s->req = NULL;
    s->next = e->free_slots;
    e->free_slots = s;
    return req;
}

/* Resubmits reaped -EAGAIN/-EINTR IOs; they keep their slots. Engine thread. */
static void prep_retries(uring_engine *e)
{
    while (e->retry_head && io_uring_sq_space_left(&e->ring) > 0) {
        struct slot *s = e->retry_head;
        e->retry_head = s->next;
        if (!e->retry_head)
            e->retry_tail = NULL;
        s->next = NULL;
        prep_slot(e, io_uring_get_sqe(&e->ring), s);
    }
}

/* Applies a pending failpoint of req's op: true when req fails before
 * submission (res set to -EIO); else *len may be halved (SHORT) or *fail_eio
 * set (COMPLETE_EIO). Without FX_FAILPOINTS, always false. e->lock held. */
static bool take_failpoint_locked(uring_engine *e, uring_req *req, uint32_t *len, bool *fail_eio)
{
#ifdef FX_FAILPOINTS
    unsigned *fp = e->fp[req->op - 1];
    if (fp[URING_FP_SUBMIT_EIO]) {
        fp[URING_FP_SUBMIT_EIO]--;
        req->res = -EIO;
        return true;
    }
    if (fp[URING_FP_COMPLETE_EIO]) {
        fp[URING_FP_COMPLETE_EIO]--;
        *fail_eio = true;
    } else if (fp[URING_FP_SHORT]) {
        /* A real short transfer: only the first half is asked of the kernel. */
        fp[URING_FP_SHORT]--;
        *len = (req->len / 2) & ~511u;
    }
#else
    (void)e;
    (void)req;
    (void)len;
    (void)fail_eio;
#endif
    return false;
}

/* Moves queued requests into SQEs while a slot and an SQE are free, by the
 * read-bias rule. Requests that fail before submission (bad op, SUBMIT_EIO
 * failpoint) go to *failed with res set. Engine thread, lock held. */
static void fill_locked(uring_engine *e, struct req_queue *failed)
{
    while (e->free_slots && io_uring_sq_space_left(&e->ring) > 0) {
        bool read_first = e->read_inflight <= 2u * e->write_inflight;
        struct req_queue *first = read_first ? &e->rq : &e->wq;
        struct req_queue *other = read_first ? &e->wq : &e->rq;
        uring_req *req = queue_pop(first);
        if (!req)
            req = queue_pop(other);
        if (!req)
            break;
        if (req->op != URING_READ && req->op != URING_WRITE) {
            req->res = -EINVAL;
            queue_push(failed, req);
            continue;
        }
        bool fail_eio = false;
        uint32_t len = req->len;
        if (take_failpoint_locked(e, req, &len, &fail_eio)) {
            queue_push(failed, req);
            continue;
        }
        struct slot *s = e->free_slots;
        e->free_slots = s->next;
        s->next = NULL;
        s->req = req;
        s->len = len;
        s->fail_eio = fail_eio;
        s->retries = 0;
        if (req->op == URING_READ)
            e->read_inflight++;
        else
            e->write_inflight++;
        prep_slot(e, io_uring_get_sqe(&e->ring), s);
    }
    publish_inflight(e);
}

static void arm_eventfd(uring_engine *e)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);
    if (!sqe)
        return; /* the SQ is full of IOs; their CQEs wake us, we re-arm then */
    io_uring_prep_read(sqe, e->efd, &e->efd_val, sizeof e->efd_val, 0);
    io_uring_sqe_set_data64(sqe, EFD_COOKIE);
    e->efd_armed = true;
}

/* Reaps every available CQE. Engine thread, no lock held. */
static void drain(uring_engine *e)
{
    struct io_uring_cqe *cqe;
    while (io_uring_peek_cqe(&e->ring, &cqe) == 0) {
        uint64_t cookie = cqe->user_data;
        int res = cqe->res;
        io_uring_cqe_seen(&e->ring, cqe);
        if (cookie == EFD_COOKIE) {
            e->efd_armed = false; /* any result: just re-arm */
            continue;
        }
        struct slot *s = (struct slot *)(uintptr_t)cookie;
        if ((res == -EAGAIN || res == -EINTR) && s->retries < MAX_RETRIES) {
            s->retries++;
            s->next = NULL;
            if (e->retry_tail)
                e->retry_tail->next = s;
            else
                e->retry_head = s;
            e->retry_tail = s;
            continue;
        }
        if (s->fail_eio)
            res = -EIO;
        complete(e, release_slot(e, s), res);
    }
}

static void *engine_main(void *arg)
{
    uring_engine *e = arg;
    for (;;) {
        struct req_queue failed = {0}, cancelled = {0};
        prep_retries(e);
        pthread_mutex_lock(&e->lock);
        bool stopping = e->stopping;
        if (stopping) {
            queue_splice(&cancelled, &e->rq);
            queue_splice(&cancelled, &e->wq);
        } else {
            fill_locked(e, &failed);
        }
        pthread_mutex_unlock(&e->lock);

        complete_list(e, &failed, 0);
        complete_list(e, &cancelled, -ECANCELED);

        /* Stopping: nothing new goes to the ring, but IOs already in flight
         * (retries included) finish normally before the thread exits. */
        if (stopping) {
            if (e->read_inflight + e->write_inflight == 0) {
                pthread_mutex_lock(&e->lock);
                bool idle = !e->rq.head && !e->wq.head;
                pthread_mutex_unlock(&e->lock);
                if (idle)
                    break;
                continue; /* a done() queued more: cancel those too */
            }
        }

        if (!e->efd_armed)
            arm_eventfd(e);
        int ret = io_uring_submit_and_wait(&e->ring, 1);
        if (ret < 0 && ret != -EINTR && ret != -ETIME) {
            /* -EAGAIN / -EBUSY: the kernel is short of resources or the CQ is
             * backed up; the SQEs stay queued for the next call. Reap what is
             * there, and back off briefly if nothing is. */
            if (io_uring_cq_ready(&e->ring) == 0) {
                struct timespec ts = {0, 1000000};
                nanosleep(&ts, NULL);
            }
        }
        drain(e);
    }
    return NULL;
}

int uring_engine_start(uring_engine **out, unsigned io_depth, bool iovec_mode)
{
    *out = NULL;
    if (io_depth < 1 || io_depth > MAX_DEPTH)
        return -EINVAL;
    uring_engine *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    int rc;
    bool ring_ok = false, lock_ok = false;
    e->efd = -1;
    e->depth = io_depth;
    e->iovec_mode = iovec_mode;
    e->slots = calloc(io_depth, sizeof *e->slots);
    if (!e->slots) {
        rc = -ENOMEM;
        goto fail;
    }
    for (unsigned i = io_depth; i-- > 0;) {
        e->slots[i].next = e->free_slots;
        e->free_slots = &e->slots[i];
    }
    e->efd = eventfd(0, EFD_CLOEXEC);
    if (e->efd < 0) {
        rc = -errno;
        goto fail;
    }
    /* io_depth IOs plus the eventfd read; the CQ is twice that by default, so
     * it cannot overflow with at most io_depth + 1 requests outstanding. */
    rc = io_uring_queue_init(io_depth + 1, &e->ring, 0);
    if (rc < 0)
        goto fail;
    ring_ok = true;
    rc = -pthread_mutex_init(&e->lock, NULL);
    if (rc < 0)
        goto fail;
    lock_ok = true;
    rc = -pthread_create(&e->thread, NULL, engine_main, e);
    if (rc < 0)
        goto fail;
    *out = e;
    return 0;

fail:
    if (lock_ok)
        pthread_mutex_destroy(&e->lock);
    if (ring_ok)
        io_uring_queue_exit(&e->ring);
    if (e->efd >= 0)
        close(e->efd);
    free(e->slots);
    free(e);
    return rc;
}

void uring_engine_stop(uring_engine *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    e->stopping = true;
    pthread_mutex_unlock(&e->lock);
    signal_engine(e);
    pthread_join(e->thread, NULL);

    /* A submit that raced the thread's exit is cancelled here, on this thread. */
    struct req_queue cancelled = {0};
    pthread_mutex_lock(&e->lock);
    queue_splice(&cancelled, &e->rq);
    queue_splice(&cancelled, &e->wq);
    pthread_mutex_unlock(&e->lock);
    complete_list(e, &cancelled, -ECANCELED);

    assert(e->read_inflight + e->write_inflight == 0);
    io_uring_queue_exit(&e->ring); /* also cancels the armed eventfd read */
    close(e->efd);
    pthread_mutex_destroy(&e->lock);
    free(e->slots);
    free(e);
}

void uring_submit(uring_engine *e, uring_req *req)
{
    req->res = 0;
    struct req_queue *q = req->op == URING_WRITE ? &e->wq : &e->rq;
    pthread_mutex_lock(&e->lock);
    bool was_empty = q->head == NULL;
    queue_push(q, req);
    pthread_mutex_unlock(&e->lock);
    /* From a done() callback the engine thread is awake already and fills its
     * ring right after the drain: waking it through the eventfd would only
     * cost a write and an extra completion. */
    if (was_empty && !pthread_equal(pthread_self(), e->thread))
        signal_engine(e);
}

void uring_get_stats(uring_engine *e, uring_stats *out)
{
    memset(out, 0, sizeof *out);
    uint64_t w = atomic_load_explicit(&e->inflight_word, memory_order_relaxed);
    out->read_inflight = (uint32_t)(w >> 32);
    out->write_inflight = (uint32_t)w;
    out->reads_completed = atomic_load_explicit(&e->reads_completed, memory_order_relaxed);
    out->writes_completed = atomic_load_explicit(&e->writes_completed, memory_order_relaxed);
    out->read_bytes = atomic_load_explicit(&e->read_bytes, memory_order_relaxed);
    out->write_bytes = atomic_load_explicit(&e->write_bytes, memory_order_relaxed);
    out->errors = atomic_load_explicit(&e->errors, memory_order_relaxed);
}

/* ---- readers ------------------------------------------------------------- */

/* One read of a reader: the request and how it went out. */
struct reader_io {
    uring_req *req;
    uint32_t len;
    bool fail_eio;
    unsigned retries;
};

struct uring_reader {
    uring_engine *eng;
    struct io_uring ring;
    unsigned inflight, unsubmitted;
    struct reader_io *ios;   /* depth of them */
    struct reader_io *free_ios[READER_MAX_DEPTH];
    unsigned n_free;
    struct req_queue failed; /* failed before submission, not yet waited for */
};

int uring_reader_open(uring_engine *e, unsigned depth, uring_reader **out)
{
    *out = NULL;
    if (!e || depth < 1 || depth > READER_MAX_DEPTH)
        return -EINVAL;
    uring_reader *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->ios = calloc(depth, sizeof *r->ios);
    int rc = r->ios ? io_uring_queue_init(depth, &r->ring, 0) : -ENOMEM;
    if (rc < 0) {
        free(r->ios);
        free(r);
        return rc;
    }
    r->eng = e;
    for (unsigned i = 0; i < depth; i++)
        r->free_ios[r->n_free++] = &r->ios[depth - 1 - i];
    *out = r;
    return 0;
}

void uring_reader_close(uring_reader *r)
{
    if (!r)
        return;
    assert(r->inflight == 0 && !r->failed.head);
    io_uring_queue_exit(&r->ring);
    free(r->ios);
    free(r);
}

static void reader_prep(uring_reader *r, struct reader_io *io)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    assert(sqe); /* at most depth IOs, and the SQ has depth entries */
    io_uring_prep_read(sqe, io->req->fd, io->req->buf, io->len, io->req->off);
    io_uring_sqe_set_data(sqe, io);
    r->unsubmitted++;
}

void uring_reader_prep(uring_reader *r, uring_req *req)
{
    req->res = 0;
    uint32_t len = req->len;
    bool fail_eio = false, failed = req->op != URING_READ;
    if (failed) {
        req->res = -EINVAL;
    } else {
#ifdef FX_FAILPOINTS
        pthread_mutex_lock(&r->eng->lock);
        failed = take_failpoint_locked(r->eng, req, &len, &fail_eio);
        pthread_mutex_unlock(&r->eng->lock);
#endif
    }
    assert(r->n_free > 0);
    if (failed || r->n_free == 0) {
        if (!failed)
            req->res = -EBUSY; /* more than depth in flight: a caller bug */
        queue_push(&r->failed, req);
        return;
    }
    struct reader_io *io = r->free_ios[--r->n_free];
    *io = (struct reader_io){.req = req, .len = len, .fail_eio = fail_eio};
    r->inflight++;
    reader_prep(r, io);
}

void uring_reader_submit(uring_reader *r)
{
    while (r->unsubmitted > 0) {
        int n = io_uring_submit(&r->ring);
        if (n > 0)
            r->unsubmitted -= (unsigned)n < r->unsubmitted ? (unsigned)n : r->unsubmitted;
        else if (n == 0)
            r->unsubmitted = 0; /* nothing was pending after all (not expected) */
        else if (n != -EINTR)
            break; /* -EAGAIN / -EBUSY / -ENOMEM: the SQEs stay queued and
                    * uring_reader_wait submits them again, backing off */
    }
}

uring_req *uring_reader_wait(uring_reader *r)
{
    uring_req *req = queue_pop(&r->failed);
    if (req) {
        count_result(r->eng, req, req->res);
        return req;
    }
    if (r->inflight == 0)
        return NULL;
    for (;;) {
        /* No completion ready: submit what is queued (io_uring_wait_cqe alone
         * would not) and wait for one. When the kernel refuses the SQEs
         * (-EAGAIN / -EBUSY / -ENOMEM), back off briefly and try again, as
         * the engine does: an IO still in flight uses the caller's buffer,
         * so there is no giving up. */
        struct io_uring_cqe *cqe;
        if (io_uring_peek_cqe(&r->ring, &cqe) != 0) {
            int rc = io_uring_submit_and_wait(&r->ring, 1);
            if (rc >= 0) {
                r->unsubmitted -= (unsigned)rc < r->unsubmitted ? (unsigned)rc : r->unsubmitted;
            } else if (rc != -EINTR && rc != -ETIME) {
                struct timespec ts = {0, 1000000};
                nanosleep(&ts, NULL);
            }
            continue;
        }
        struct reader_io *io = io_uring_cqe_get_data(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&r->ring, cqe);
        if ((res == -EAGAIN || res == -EINTR) && io->retries < MAX_RETRIES) {
            io->retries++;
            reader_prep(r, io);
            continue;
        }
        if (io->fail_eio)
            res = -EIO;
        req = io->req;
        req->res = res;
        r->inflight--;
        r->free_ios[r->n_free++] = io;
        count_result(r->eng, req, res);
        return req;
    }
}

#ifdef FX_FAILPOINTS
void uring_failpoint(uring_engine *e, int op, int kind, unsigned count)
{
    if ((op != URING_READ && op != URING_WRITE) || kind < URING_FP_SUBMIT_EIO ||
        kind > URING_FP_SHORT)
        return;
    pthread_mutex_lock(&e->lock);
    e->fp[op - 1][kind] = count;
    pthread_mutex_unlock(&e->lock);
}
#endif
