/*
 * ssd_bench.c - fx_bench_ssd: write and read bandwidth of the SSD engine
 * (src/owner/ssd/ssd.h) on one file system, the engine half of the issue's
 * "fio vs engine" comparison. scripts/bench_ssd.sh runs fio first on the same
 * directory and queue depth, then this program, and prints both side by side.
 *
 * One store, one configured path (so one device, one io_uring engine), a
 * limit of --limit-gib GiB over 4 shards, io_depth --qd. Then, each row for a
 * fixed time (--seconds) after a short warmup:
 *   - prefill: one pass of 4 MiB values over the whole limit, unmeasured by
 *     the targets: it turns the freshly fallocated (unwritten) extents into
 *     written ones, as fio's layout pass does for its file, so the write rows
 *     measure steady-state overwrites on both sides;
 *   - write, for 1, 4 and 16 MiB values: --threads threads (default io_depth +
 *     io_depth/4, so the engine's write channel always has a request waiting
 *     when a slot frees) each calling the blocking ssd_write() on new keys
 *     with bytes from a pre-touched 256 MiB source pool; the ring wraps and
 *     evicts, as it does in service;
 *   - read, same sizes: the same number of threads calling
 *     ssd_load_into_addr() on the keys of the last writes (all the ring
 *     holds, less two values per shard for the dead space at a wrap and the
 *     round-robin's skew, so about as many bytes as fio's file), in
 *     write order and cycling, as fio's rw=read walks its file, into their own
 *     pre-touched buffers whose capacity covers the aligned length: the
 *     direct path (the row reports the share that took it, from
 *     ssd_get_stats). Reading only recently written data would flatter the
 *     engine on this machine, whose O_DIRECT reads may hit a host cache.
 *     The buffers are on huge pages, as the owner's segment is; for 4 MiB a
 *     second row, read-4k, reads into physically scattered 4 KiB pages. The
 *     difference is large on a virtio disk: a request carries a bounded
 *     number of physically contiguous runs, so here a 4 MiB read into
 *     scattered pages leaves the guest as ~512 KiB requests, into huge pages
 *     as one 4 MiB request.
 *     Each row shows the average request size the device completed
 *     (KiB/req, from /proc/diskstats);
 *   - mixed, 4 MiB: --mixed-threads readers and as many writers at once
 *     (default 2 x io_depth each; readers walk the 4 MiB keys of the last
 *     half of the ring), so both channels of the engine have requests
 *     waiting whenever a slot frees. With only io_depth blocking threads per
 *     side that is not so: completions come in bursts, each reader spends a
 *     while waking up and verifying the checksum before it queues its next
 *     read, and the engine (work-conserving, as the spec says) gives the
 *     slots the empty read channel leaves to writes. Reports completed
 *     reads:writes in the window from the engine's counters (direct_reads +
 *     scratch_reads vs writes) and from the threads' own counts, and the
 *     device's mean queue per direction (/sys/dev/block/M:m/inflight).
 * An op counts when it completes inside the measured window; MB/s is 10^6
 * bytes per second, as fio's bw_bytes. `--json FILE` writes one JSON object
 * per row for the script. Evictions are popped and freed by a background
 * thread, as the owner would batch them. The store's root
 * (<dir>/fx_ssd_bench_cluster_kv_ssd_storage) is removed at the end.
 *
 * Exit: 0 after a full run, 1 on an error (ssd_open's message says which),
 * 77 when the file system refuses O_DIRECT (nothing to measure).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hist.h"
#include "owner/ssd/ssd.h"

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)

#define CLUSTER "fx_ssd_bench"
#define INSTANCE "bench"
#define SRC_POOL (256 * MIB)     /* write sources rotate over this much memory */
#define MAX_KEYS (1u << 24)      /* key ids; a run uses a few 100k at most */
#define MAX_THREADS 256
#define MIXED_SIZE (4 * MIB)
#define SHARDS 4

/* ---- time and latency histogram ------------------------------------------ */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* ---- the block device under the directory --------------------------------- */

/* Requests the device completed, from /proc/diskstats: the average request
 * size shows whether a 4 MiB IO left the guest as one request or as several
 * (a request holds at most max_segments physically contiguous runs, so 4 KiB
 * pages that happen not to be adjacent split it). Other IO on the same disk
 * counts too: read it as an indication. */
typedef struct disk_snap {
    bool ok;
    uint64_t rd_ios, rd_sect, wr_ios, wr_sect;
} disk_snap;

static disk_snap disk_read(unsigned maj, unsigned min)
{
    disk_snap d = {0};
    FILE *f = fopen("/proc/diskstats", "r");
    if (!f)
        return d;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned a, b;
        char name[64];
        unsigned long long v[8];
        if (sscanf(line, "%u %u %63s %llu %llu %llu %llu %llu %llu %llu %llu", &a, &b, name,
                   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 11 &&
            a == maj && b == min) {
            d = (disk_snap){.ok = true, .rd_ios = v[0], .rd_sect = v[2], .wr_ios = v[4],
                            .wr_sect = v[6]};
            break;
        }
    }
    fclose(f);
    return d;
}

/* Requests in flight at the device now, by direction (the block layer's
 * count, after splitting). Returns false when the file is not there. */
static bool disk_inflight(unsigned maj, unsigned min, unsigned *rd, unsigned *wr)
{
    char path[96];
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/inflight", maj, min);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fscanf(f, "%u %u", rd, wr) == 2;
    fclose(f);
    return ok;
}

/* ---- target buffers ---------------------------------------------------------- */

/* The readers' target buffers: one per reader thread, each covering the
 * largest value. "huge" is what the owner reads into, a segment on 2 MiB huge
 * pages (hugetlb when reserved, else transparent huge pages by madvise); "4k"
 * is ordinary 4 KiB pages with THP disabled, touched so that they are
 * physically scattered (see bufset_alloc). Both are pre-touched, so page
 * faults are never counted as IO time. */
typedef struct bufset {
    uint8_t *p[MAX_THREADS];
    size_t len; /* bytes mapped per buffer */
    unsigned n;
    const char *kind; /* "hugetlb", "thp" or "4k": the weakest any buffer got */
} bufset;

static int bufset_alloc(bufset *bs, unsigned n, uint64_t size, bool huge)
{
    memset(bs, 0, sizeof bs->p);
    bs->len = (size_t)((size + 2 * MIB - 1) / (2 * MIB) * (2 * MIB));
    bs->n = 0;
    bs->kind = huge ? "hugetlb" : "4k";
    for (unsigned i = 0; i < n; i++) {
        void *m = MAP_FAILED;
        if (huge)
            m = mmap(NULL, bs->len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        if (m == MAP_FAILED) {
            /* 2 MiB-aligned so that every 2 MiB of it can be one huge page */
            size_t over = bs->len + 2 * MIB;
            uint8_t *raw = mmap(NULL, over, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (raw == MAP_FAILED)
                return -ENOMEM;
            uint8_t *al = (uint8_t *)(((uintptr_t)raw + 2 * MIB - 1) & ~(uintptr_t)(2 * MIB - 1));
            if (al > raw)
                munmap(raw, (size_t)(al - raw));
            size_t tail = (size_t)(raw + over - (al + bs->len));
            if (tail)
                munmap(al + bs->len, tail);
            m = al;
            madvise(m, bs->len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
            if (huge)
                bs->kind = "thp";
        }
        bs->p[i] = m;
        bs->n++;
        if (huge) {
            memset(m, 0xa5, bs->len);
        } else {
            /* touch the pages last to first: the page allocator tends to hand
             * out ascending frames, so neighbours in the buffer are not
             * neighbours in memory and every page is its own DMA segment, as in
             * a long-running process whose memory is fragmented (left alone,
             * a fresh process often gets contiguous frames by luck) */
            for (size_t off = bs->len; off > 0; off -= 4096)
                memset((uint8_t *)m + off - 4096, 0xa5, 4096);
        }
    }
    return 0;
}

static void bufset_free(bufset *bs)
{
    for (unsigned i = 0; i < bs->n; i++)
        munmap(bs->p[i], bs->len);
    bs->n = 0;
}

/* ---- the run ----------------------------------------------------------------- */

enum role { ROLE_WRITE = 1, ROLE_READ = 2 };

typedef struct bench {
    ssd_store *store;
    unsigned qd, threads;
    uint64_t limit;
    uint64_t run_ns, warm_ns;
    FILE *json;
    uint8_t *src_pool;
    /* Key ids are handed out in order; key_mib[id] is the value size of a key
     * (in MiB) once its write returned SSD_OK, 0 before and after a failure. */
    _Atomic uint64_t next_key;
    _Atomic uint8_t *key_mib;
    atomic_bool evict_stop;
    _Atomic uint64_t evicted;
    bool disk_ok;
    unsigned disk_maj, disk_min; /* the device of the directory */
} bench;

/* One measured phase: every thread of it shares this. */
typedef struct phase {
    bench *b;
    uint64_t size;          /* value bytes */
    uint64_t byte_budget;   /* write until this many bytes were issued (0: time) */
    _Atomic uint64_t issued_bytes;
    _Atomic uint64_t win_start, win_end; /* ops completing in [start, end] count */
    atomic_bool stop;
    /* readers: keys in [hi - window, hi - margin) of this size; with moving
     * writers hi is next_key read at each op */
    uint64_t read_window;
    uint64_t read_margin;
    uint64_t read_lo;       /* never below this id (the phase's first key of size) */
    _Atomic uint64_t cursor; /* readers: the next key, as an offset into the window */
} phase;

typedef struct worker {
    phase *ph;
    int role;
    pthread_t tid;
    uint8_t *buf; /* readers: 4 KiB-aligned, covers the largest value */
    uint64_t ops, errors, notfound;
    hist h;
} worker;

/* xorshift64*, as tests/util/testlib.h's test_rand (not linked here). */
static uint64_t rand_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 2685821657736338717ull;
}

static void key_name(uint64_t id, char *buf, size_t cap)
{
    snprintf(buf, cap, "bench-%010llu", (unsigned long long)id);
}

static ssd_put_id key_pid(uint64_t id)
{
    return (ssd_put_id){.time_ms = 1, .version = (uint32_t)id};
}

static bool in_window(phase *ph, uint64_t t)
{
    uint64_t s = atomic_load_explicit(&ph->win_start, memory_order_relaxed);
    uint64_t e = atomic_load_explicit(&ph->win_end, memory_order_relaxed);
    return s && t >= s && t <= e;
}

static void do_write(worker *w)
{
    phase *ph = w->ph;
    bench *b = ph->b;
    if (ph->byte_budget &&
        atomic_fetch_add(&ph->issued_bytes, ph->size) >= ph->byte_budget) {
        atomic_store(&ph->stop, true);
        return;
    }
    uint64_t id = atomic_fetch_add(&b->next_key, 1);
    if (id >= MAX_KEYS) {
        atomic_store(&ph->stop, true);
        return;
    }
    char key[32];
    key_name(id, key, sizeof key);
    /* rotate over the pool at 4 KiB steps so consecutive writes read
     * different memory, as an owner copying out of a large segment does */
    uint64_t span = SRC_POOL - ph->size;
    const uint8_t *src = b->src_pool + ((id * 1234567ull * 4096ull) % span & ~4095ull);
    uint64_t t0 = now_ns();
    int rc = ssd_write(b->store, key, strlen(key), key_pid(id), src, ph->size, NULL);
    uint64_t t1 = now_ns();
    if (rc == SSD_OK)
        atomic_store_explicit(&b->key_mib[id], (uint8_t)(ph->size / MIB), memory_order_release);
    if (ph->byte_budget || in_window(ph, t1)) {
        if (rc == SSD_OK) {
            w->ops++;
            hist_add(&w->h, t1 - t0);
        } else {
            w->errors++;
        }
    }
}

static void do_read(worker *w)
{
    phase *ph = w->ph;
    bench *b = ph->b;
    uint64_t hi = atomic_load(&b->next_key);
    if (hi < ph->read_lo + ph->read_margin + 1) {
        sleep_ns(100000); /* nothing readable yet */
        return;
    }
    uint64_t top = hi - ph->read_margin; /* exclusive */
    uint64_t lo = top > ph->read_window ? top - ph->read_window : 0;
    if (lo < ph->read_lo)
        lo = ph->read_lo;
    /* keys in write order, cycling: each value is one contiguous region and
     * keys were written in order, so this walks the shards sequentially, as
     * fio's rw=read walks its file */
    uint64_t id = lo + atomic_fetch_add_explicit(&ph->cursor, 1, memory_order_relaxed) % (top - lo);
    uint8_t mib = atomic_load_explicit(&b->key_mib[id], memory_order_acquire);
    if (mib * MIB != ph->size)
        return; /* failed or still in flight: pick another */
    char key[32];
    key_name(id, key, sizeof key);
    uint64_t cap = (ph->size + SSD_ALIGN - 1) / SSD_ALIGN * SSD_ALIGN;
    uint64_t t0 = now_ns();
    int rc = ssd_load_into_addr(b->store, key, strlen(key), key_pid(id), w->buf, ph->size, cap);
    uint64_t t1 = now_ns();
    if (!in_window(ph, t1))
        return;
    if (rc == SSD_OK) {
        w->ops++;
        hist_add(&w->h, t1 - t0);
    } else if (rc == SSD_ENOTFOUND) {
        w->notfound++;
    } else {
        w->errors++;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    while (!atomic_load_explicit(&w->ph->stop, memory_order_relaxed)) {
        if (w->role == ROLE_WRITE)
            do_write(w);
        else
            do_read(w);
    }
    return NULL;
}

/* Pops evictions as the owner's batcher would, so the bounded queue keeps
 * moving and the evicted keys are freed. */
static void *evict_main(void *arg)
{
    bench *b = arg;
    ssd_eviction ev[256];
    while (!atomic_load(&b->evict_stop)) {
        size_t n = ssd_pop_evictions(b->store, ev, 256);
        for (size_t i = 0; i < n; i++)
            free(ev[i].key);
        atomic_fetch_add(&b->evicted, n);
        if (n < 256)
            sleep_ns(10000000);
    }
    return NULL;
}

/* What one role (readers or writers) of a phase did in the window. */
typedef struct side {
    unsigned threads;
    uint64_t ops, errors, notfound;
    double mb_s, p50_ms, p99_ms;
} side;

typedef struct result {
    const char *name;
    uint64_t size;
    double secs, cpu_pct;
    side wr, rd;
    uint64_t eng_writes, eng_direct, eng_scratch, eng_read_errors, eng_write_errors;
    const char *buffers;         /* the readers' target memory */
    double dev_rd_inflight, dev_wr_inflight; /* mean requests in flight at the device, -1: unknown */
    double rd_kib_req, wr_kib_req; /* average request size at the device, 0: unknown */
} result;

typedef struct phase_spec {
    const char *name;
    uint64_t size;
    unsigned writers, readers;
    uint64_t byte_budget; /* writers only: stop after this many bytes (no window) */
    uint64_t read_window, read_margin, read_lo;
} phase_spec;

static void summarize(side *sd, worker *ws, unsigned n, int role, uint64_t size, double secs)
{
    hist *h = calloc(1, sizeof *h);
    memset(sd, 0, sizeof *sd);
    for (unsigned i = 0; i < n; i++) {
        if (ws[i].role != role)
            continue;
        sd->threads++;
        sd->ops += ws[i].ops;
        sd->errors += ws[i].errors;
        sd->notfound += ws[i].notfound;
        if (h)
            hist_merge(h, &ws[i].h);
    }
    sd->mb_s = secs > 0 ? (double)(sd->ops * size) / 1e6 / secs : 0;
    if (h) {
        sd->p50_ms = hist_quantile(h, 0.50) / 1e6;
        sd->p99_ms = hist_quantile(h, 0.99) / 1e6;
    }
    free(h);
}

static int run_phase(bench *b, const phase_spec *sp, result *out, const bufset *rbufs)
{
    phase ph;
    memset(&ph, 0, sizeof ph);
    ph.b = b;
    ph.size = sp->size;
    ph.byte_budget = sp->byte_budget;
    ph.read_window = sp->read_window;
    ph.read_margin = sp->read_margin;
    ph.read_lo = sp->read_lo;
    unsigned n = sp->writers + sp->readers;
    worker *ws = calloc(n, sizeof *ws);
    if (!ws)
        return -ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        ws[i].ph = &ph;
        ws[i].role = i < sp->writers ? ROLE_WRITE : ROLE_READ;
        ws[i].buf = ws[i].role == ROLE_READ ? rbufs->p[i - sp->writers] : NULL;
    }
    ssd_stats s0, s1;
    disk_snap d0 = {0}, d1 = {0};
    double cpu0 = cpu_seconds();
    uint64_t t0 = now_ns();
    if (sp->byte_budget) {
        ssd_get_stats(b->store, &s0);
        if (b->disk_ok)
            d0 = disk_read(b->disk_maj, b->disk_min);
        atomic_store(&ph.win_start, t0);
        atomic_store(&ph.win_end, UINT64_MAX);
    }
    unsigned started = 0;
    int rc = 0;
    for (; started < n; started++) {
        rc = -pthread_create(&ws[started].tid, NULL, worker_main, &ws[started]);
        if (rc) {
            fprintf(stderr, "ssd_bench: pthread_create: %s\n", strerror(-rc));
            atomic_store(&ph.stop, true);
            break;
        }
    }
    uint64_t ws_ns = t0, we_ns;
    if (!sp->byte_budget && !rc) {
        sleep_ns(b->warm_ns);
        ssd_get_stats(b->store, &s0);
        if (b->disk_ok)
            d0 = disk_read(b->disk_maj, b->disk_min);
        cpu0 = cpu_seconds();
        ws_ns = now_ns();
        atomic_store(&ph.win_start, ws_ns);
        atomic_store(&ph.win_end, UINT64_MAX);
        /* sample the device's queue every 10 ms while the window runs */
        uint64_t deadline = ws_ns + b->run_ns, samples = 0, sum_rd = 0, sum_wr = 0;
        for (uint64_t t = now_ns(); t < deadline; t = now_ns()) {
            sleep_ns(deadline - t < 10000000ull ? deadline - t : 10000000ull);
            unsigned qr, qw;
            if (b->disk_ok && disk_inflight(b->disk_maj, b->disk_min, &qr, &qw)) {
                sum_rd += qr;
                sum_wr += qw;
                samples++;
            }
        }
        we_ns = now_ns();
        out->dev_rd_inflight = samples ? (double)sum_rd / (double)samples : -1;
        out->dev_wr_inflight = samples ? (double)sum_wr / (double)samples : -1;
        atomic_store(&ph.win_end, we_ns);
        ssd_get_stats(b->store, &s1);
        if (b->disk_ok)
            d1 = disk_read(b->disk_maj, b->disk_min);
        double cpu1 = cpu_seconds();
        atomic_store(&ph.stop, true);
        for (unsigned i = 0; i < started; i++)
            pthread_join(ws[i].tid, NULL);
        out->cpu_pct = 100.0 * (cpu1 - cpu0) / ((double)(we_ns - ws_ns) / 1e9);
    } else {
        for (unsigned i = 0; i < started; i++)
            pthread_join(ws[i].tid, NULL);
        we_ns = now_ns();
        ssd_get_stats(b->store, &s1);
        if (b->disk_ok)
            d1 = disk_read(b->disk_maj, b->disk_min);
        out->cpu_pct = 100.0 * (cpu_seconds() - cpu0) / ((double)(we_ns - ws_ns) / 1e9);
    }
    out->name = sp->name;
    out->size = sp->size;
    out->secs = (double)(we_ns - ws_ns) / 1e9;
    summarize(&out->wr, ws, n, ROLE_WRITE, sp->size, out->secs);
    summarize(&out->rd, ws, n, ROLE_READ, sp->size, out->secs);
    out->eng_writes = s1.writes - s0.writes;
    out->eng_direct = s1.direct_reads - s0.direct_reads;
    out->eng_scratch = s1.scratch_reads - s0.scratch_reads;
    out->eng_read_errors = s1.read_errors - s0.read_errors;
    out->eng_write_errors = s1.write_errors - s0.write_errors;
    out->buffers = sp->readers ? rbufs->kind : "-";
    if (d0.ok && d1.ok) {
        if (d1.rd_ios > d0.rd_ios)
            out->rd_kib_req = (double)(d1.rd_sect - d0.rd_sect) / 2.0 / (double)(d1.rd_ios - d0.rd_ios);
        if (d1.wr_ios > d0.wr_ios)
            out->wr_kib_req = (double)(d1.wr_sect - d0.wr_sect) / 2.0 / (double)(d1.wr_ios - d0.wr_ios);
    }
    free(ws);
    return rc;
}

/* ---- output ------------------------------------------------------------------ */

static void print_header(void)
{
    printf("%-9s %5s %4s %8s %9s %8s %8s %5s %7s  %s\n", "row", "size", "thr", "ops", "MB/s",
           "p50 ms", "p99 ms", "cpu%", "KiB/req", "notes");
    printf("%-9s %5s %4s %8s %9s %8s %8s %5s %7s  %s\n", "---------", "-----", "----",
           "--------", "---------", "--------", "--------", "-----", "-------", "-----");
}

static void print_side(const char *name, const result *r, const side *sd, double kib_req,
                       const char *notes)
{
    printf("%-9s %4lluM %4u %8llu %9.1f %8.2f %8.2f %5.0f %7.0f  %s\n", name,
           (unsigned long long)(r->size / MIB), sd->threads, (unsigned long long)sd->ops,
           sd->mb_s, sd->p50_ms, sd->p99_ms, r->cpu_pct, kib_req, notes);
    fflush(stdout);
}

static void json_side(bench *b, const char *kind, const result *r, const side *sd,
                      double kib_req)
{
    if (!b->json)
        return;
    fprintf(b->json,
            "{\"kind\":\"%s\",\"row\":\"%s\",\"size_mib\":%llu,\"threads\":%u,\"ops\":%llu,"
            "\"seconds\":%.3f,\"mb_per_s\":%.2f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"cpu_pct\":%.1f,"
            "\"errors\":%llu,\"notfound\":%llu,\"engine_writes\":%llu,\"engine_direct_reads\":%llu,"
            "\"engine_scratch_reads\":%llu,\"buffers\":\"%s\",\"kib_per_req\":%.1f,"
            "\"dev_read_inflight\":%.2f,\"dev_write_inflight\":%.2f}\n",
            kind, r->name, (unsigned long long)(r->size / MIB), sd->threads,
            (unsigned long long)sd->ops, r->secs, sd->mb_s, sd->p50_ms, sd->p99_ms, r->cpu_pct,
            (unsigned long long)sd->errors, (unsigned long long)sd->notfound,
            (unsigned long long)r->eng_writes, (unsigned long long)r->eng_direct,
            (unsigned long long)r->eng_scratch, r->buffers, kib_req, r->dev_rd_inflight,
            r->dev_wr_inflight);
    fflush(b->json);
}

static void report_write(bench *b, const result *r)
{
    char notes[128];
    snprintf(notes, sizeof notes, "errors %llu", (unsigned long long)r->wr.errors);
    print_side(r->name, r, &r->wr, r->wr_kib_req, notes);
    json_side(b, "write", r, &r->wr, r->wr_kib_req);
}

static void report_read(bench *b, const result *r)
{
    char notes[160];
    uint64_t all = r->eng_direct + r->eng_scratch;
    snprintf(notes, sizeof notes, "into %s pages, direct %.0f%%, notfound %llu, errors %llu",
             r->buffers, all ? 100.0 * (double)r->eng_direct / (double)all : 0.0,
             (unsigned long long)r->rd.notfound, (unsigned long long)r->rd.errors);
    print_side(r->name, r, &r->rd, r->rd_kib_req, notes);
    json_side(b, "read", r, &r->rd, r->rd_kib_req);
}

/* ---- setup and main ---------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* True when the file system under dir accepts O_DIRECT opens. */
static bool direct_io_ok(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.fx_ssd_bench_probe.%d", dir, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    close(fd);
    unlink(path);
    return true;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fx_bench_ssd [--dir DIR] [--qd N] [--limit-gib G] [--seconds S]\n"
            "                    [--warmup S] [--threads N] [--mixed-threads N]\n"
            "                    [--sizes 1,4,16] [--no-mixed]\n"
            "                    [--json FILE]\n"
            "  --dir      the file system to measure (default /var/tmp/fx-ssd-bench)\n"
            "  --qd       the engine's io_depth (default 16; use fio's iodepth)\n"
            "  --limit-gib  large_limit_size of the one path (default 4)\n"
            "  --seconds  measured seconds per row (default 8)\n"
            "  --threads  threads per write/read row (default qd + qd/4)\n"
            "  --mixed-threads  readers, and writers, of the mixed row (default 2 x qd)\n");
}

int main(int argc, char **argv)
{
    const char *dir = "/var/tmp/fx-ssd-bench", *json_path = NULL, *sizes_arg = "1,4,16";
    double seconds = 8, warmup = 1, limit_gib = 4;
    unsigned qd = 16, threads = 0, mixed_threads = 0;
    bool mixed = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-mixed")) {
            mixed = false;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            usage(stderr);
            return 1;
        }
        i++;
        if (!strcmp(a, "--dir"))
            dir = v;
        else if (!strcmp(a, "--qd"))
            qd = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--limit-gib"))
            limit_gib = strtod(v, NULL);
        else if (!strcmp(a, "--seconds"))
            seconds = strtod(v, NULL);
        else if (!strcmp(a, "--warmup"))
            warmup = strtod(v, NULL);
        else if (!strcmp(a, "--threads"))
            threads = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--mixed-threads"))
            mixed_threads = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--sizes"))
            sizes_arg = v;
        else if (!strcmp(a, "--json"))
            json_path = v;
        else {
            usage(stderr);
            return 1;
        }
    }
    if (!qd || qd > 1024 || seconds <= 0 || warmup < 0 || limit_gib < 0.25) {
        fprintf(stderr, "ssd_bench: bad --qd, --seconds, --warmup or --limit-gib\n");
        return 1;
    }
    if (!threads)
        threads = qd + qd / 4;
    if (!mixed_threads)
        mixed_threads = 2 * qd;
    if (threads > MAX_THREADS / 2 || mixed_threads > MAX_THREADS / 2) {
        fprintf(stderr, "ssd_bench: at most %d threads per role\n", MAX_THREADS / 2);
        return 1;
    }
    uint64_t sizes[8];
    unsigned nsizes = 0;
    for (const char *p = sizes_arg; *p && nsizes < 8;) {
        char *end;
        unsigned long m = strtoul(p, &end, 10);
        if (end == p || m == 0 || m > 64) {
            fprintf(stderr, "ssd_bench: bad --sizes %s (MiB, 1..64, comma-separated)\n",
                    sizes_arg);
            return 1;
        }
        sizes[nsizes++] = m * MIB;
        p = *end == ',' ? end + 1 : end;
    }
    uint64_t max_size = MIXED_SIZE;
    for (unsigned i = 0; i < nsizes; i++)
        if (sizes[i] > max_size)
            max_size = sizes[i];

    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "ssd_bench: mkdir %s: %s\n", dir, strerror(errno));
        return 1;
    }
    if (!direct_io_ok(dir)) {
        fprintf(stderr, "ssd_bench: %s refuses O_DIRECT (%s): skipped\n", dir, strerror(errno));
        return 77;
    }

    bench b;
    memset(&b, 0, sizeof b);
    b.qd = qd;
    b.threads = threads;
    b.limit = (uint64_t)(limit_gib * (double)GIB) / MIB * MIB;
    b.run_ns = (uint64_t)(seconds * 1e9);
    b.warm_ns = (uint64_t)(warmup * 1e9);
    int rc = 1;
    static bufset huge, small; /* readers' targets: huge pages, 4 KiB pages */
    unsigned nbufs = threads > mixed_threads ? threads : mixed_threads;
    bool have_4m = false;
    for (unsigned i = 0; i < nsizes; i++)
        have_4m |= sizes[i] == 4 * MIB;
    pthread_t evict_tid;
    bool evict_started = false;

    b.key_mib = calloc(MAX_KEYS, sizeof *b.key_mib);
    b.src_pool = aligned_alloc(4096, SRC_POOL);
    if (!b.key_mib || !b.src_pool) {
        fprintf(stderr, "ssd_bench: out of memory\n");
        goto out;
    }
    uint64_t seed = 0x5eed;
    for (uint64_t i = 0; i < SRC_POOL / 8; i++)
        ((uint64_t *)b.src_pool)[i] = rand_next(&seed);
    if (bufset_alloc(&huge, nbufs, max_size, true) ||
        (have_4m && bufset_alloc(&small, threads, 4 * MIB, false))) {
        fprintf(stderr, "ssd_bench: out of memory for the read buffers\n");
        goto out;
    }
    struct stat dst;
    if (stat(dir, &dst) == 0) {
        b.disk_maj = major(dst.st_dev);
        b.disk_min = minor(dst.st_dev);
        b.disk_ok = disk_read(b.disk_maj, b.disk_min).ok;
    }
    if (json_path) {
        b.json = fopen(json_path, "w");
        if (!b.json) {
            fprintf(stderr, "ssd_bench: cannot write %s: %s\n", json_path, strerror(errno));
            goto out;
        }
    }

    const char *paths[1] = {dir};
    uint64_t limits[1] = {b.limit};
    ssd_config cfg = {.cluster_name = CLUSTER,
                      .instance = INSTANCE,
                      .paths = paths,
                      .limits = limits,
                      .n_paths = 1,
                      .n_limits = 1,
                      .shards_per_device = SHARDS,
                      .io_depth = qd};
    char err[512] = "";
    uint64_t t_open = now_ns();
    int orc = ssd_open(&cfg, &b.store, err, sizeof err);
    if (orc != SSD_OK) {
        fprintf(stderr, "ssd_bench: ssd_open(%s): %d: %s\n", dir, orc, err);
        goto out;
    }
    double open_s = (double)(now_ns() - t_open) / 1e9;
    if (pthread_create(&evict_tid, NULL, evict_main, &b) != 0) {
        fprintf(stderr, "ssd_bench: pthread_create failed\n");
        goto out;
    }
    evict_started = true;

    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("fx_bench_ssd: dir %s, limit %.2f GiB over %u shards (open + fallocate %.2f s), "
           "io_depth %u, %u threads per row, %.1f s per row after %.1f s warmup, %ld CPUs\n",
           dir, (double)b.limit / (double)GIB, SHARDS, open_s, qd, threads, seconds, warmup, ncpu);
    printf("machine note: 2 vCPU guest, virtio disk, shared with other sessions; O_DIRECT rates "
           "here may reflect a host cache (DESIGN.md §9). MB/s = 10^6 bytes/s.\n");
    if (b.disk_ok)
        printf("device %u:%u; KiB/req = average request size it completed in the row "
               "(/proc/diskstats, includes other IO on that disk)\n",
               b.disk_maj, b.disk_min);
    printf("read targets: %s pages%s\n\n", huge.kind,
           small.n ? "; read-4k: 4 KiB pages, THP off" : "");
    print_header();
    if (b.json)
        fprintf(b.json, "{\"kind\":\"config\",\"dir\":\"%s\",\"qd\":%u,\"threads\":%u,"
                        "\"limit_bytes\":%llu,\"seconds\":%.2f,\"ncpu\":%ld}\n",
                dir, qd, threads, (unsigned long long)b.limit, seconds, ncpu);

    /* prefill: one pass over the whole limit (unwritten -> written extents) */
    result r;
    memset(&r, 0, sizeof r);
    phase_spec pre = {.name = "prefill", .size = 4 * MIB, .writers = threads,
                      .byte_budget = b.limit};
    if (run_phase(&b, &pre, &r, &huge))
        goto out;
    report_write(&b, &r);

    for (unsigned si = 0; si < nsizes; si++) {
        uint64_t size = sizes[si];
        uint64_t first = atomic_load(&b.next_key);
        phase_spec wsp = {.name = "write", .size = size, .writers = threads};
        memset(&r, 0, sizeof r);
        if (run_phase(&b, &wsp, &r, &huge))
            goto out;
        report_write(&b, &r);
        uint64_t aligned = (size + SSD_ALIGN - 1) / SSD_ALIGN * SSD_ALIGN;
        phase_spec rsp = {.name = "read", .size = size, .readers = threads,
                          .read_window = b.limit / aligned - 2 * SHARDS, .read_margin = 0,
                          .read_lo = first};
        memset(&r, 0, sizeof r);
        if (run_phase(&b, &rsp, &r, &huge))
            goto out;
        report_read(&b, &r);
        if (size == 4 * MIB && small.n) {
            /* the same reads into ordinary 4 KiB pages */
            rsp.name = "read-4k";
            memset(&r, 0, sizeof r);
            if (run_phase(&b, &rsp, &r, &small))
                goto out;
            report_read(&b, &r);
        }
    }

    if (mixed) {
        /* fill half the ring with 4 MiB values for the readers, then run qd
         * readers and qd writers at once: both channels always have work */
        uint64_t first = atomic_load(&b.next_key);
        phase_spec fill = {.name = "fill", .size = MIXED_SIZE, .writers = threads,
                           .byte_budget = b.limit / 2};
        memset(&r, 0, sizeof r);
        if (run_phase(&b, &fill, &r, &huge))
            goto out;
        phase_spec msp = {.name = "mixed", .size = MIXED_SIZE, .writers = mixed_threads,
                          .readers = mixed_threads,
                          .read_window = b.limit / 2 / MIXED_SIZE,
                          .read_margin = 2ull * mixed_threads,
                          .read_lo = first};
        memset(&r, 0, sizeof r);
        if (run_phase(&b, &msp, &r, &huge))
            goto out;
        r.name = "mixed-rd";
        report_read(&b, &r);
        r.name = "mixed-wr";
        report_write(&b, &r);
        uint64_t eng_reads = r.eng_direct + r.eng_scratch;
        double eng_ratio = r.eng_writes ? (double)eng_reads / (double)r.eng_writes : 0;
        double thr_ratio = r.wr.ops ? (double)r.rd.ops / (double)r.wr.ops : 0;
        printf("\nmixed 4 MiB, %u readers + %u writers, io_depth %u: completed reads:writes = "
               "%.2f (engine counters %llu:%llu), %.2f (threads %llu:%llu); "
               "total %.1f MB/s\n",
               mixed_threads, mixed_threads, qd, eng_ratio, (unsigned long long)eng_reads,
               (unsigned long long)r.eng_writes, thr_ratio, (unsigned long long)r.rd.ops,
               (unsigned long long)r.wr.ops, r.rd.mb_s + r.wr.mb_s);
        if (r.dev_rd_inflight >= 0)
            printf("device during the mixed window: %.1f read and %.1f write requests in flight "
                   "(mean), of %.0f and %.0f KiB; 4 MiB IOs in flight ~ %.1f read, %.1f write\n",
                   r.dev_rd_inflight, r.dev_wr_inflight, r.rd_kib_req, r.wr_kib_req,
                   r.dev_rd_inflight * r.rd_kib_req / 4096.0,
                   r.dev_wr_inflight * r.wr_kib_req / 4096.0);
        if (b.json)
            fprintf(b.json,
                    "{\"kind\":\"mixed\",\"size_mib\":4,\"readers\":%u,\"writers\":%u,"
                    "\"seconds\":%.3f,\"engine_reads\":%llu,\"engine_writes\":%llu,"
                    "\"ratio\":%.4f,\"thread_reads\":%llu,\"thread_writes\":%llu,"
                    "\"thread_ratio\":%.4f,\"read_mb_per_s\":%.2f,\"write_mb_per_s\":%.2f,"
                    "\"read_p50_ms\":%.3f,\"write_p50_ms\":%.3f,\"dev_read_inflight\":%.2f,"
                    "\"dev_write_inflight\":%.2f,\"read_kib_per_req\":%.1f,"
                    "\"write_kib_per_req\":%.1f}\n",
                    mixed_threads, mixed_threads, r.secs, (unsigned long long)eng_reads,
                    (unsigned long long)r.eng_writes, eng_ratio, (unsigned long long)r.rd.ops,
                    (unsigned long long)r.wr.ops, thr_ratio, r.rd.mb_s, r.wr.mb_s, r.rd.p50_ms,
                    r.wr.p50_ms, r.dev_rd_inflight, r.dev_wr_inflight, r.rd_kib_req,
                    r.wr_kib_req);
    }
    ssd_stats st;
    ssd_get_stats(b.store, &st);
    printf("engine totals: writes %llu (errors %llu), direct reads %llu, scratch reads %llu "
           "(errors %llu), checksum failures %llu, stale %llu, evictions %llu "
           "(dropped %llu, popped %llu)\n",
           (unsigned long long)st.writes, (unsigned long long)st.write_errors,
           (unsigned long long)st.direct_reads, (unsigned long long)st.scratch_reads,
           (unsigned long long)st.read_errors, (unsigned long long)st.checksum_failures,
           (unsigned long long)st.stale_reads, (unsigned long long)st.evictions,
           (unsigned long long)st.evictions_dropped, (unsigned long long)atomic_load(&b.evicted));
    rc = 0;

out:
    if (evict_started) {
        atomic_store(&b.evict_stop, true);
        pthread_join(evict_tid, NULL);
    }
    if (b.store) {
        ssd_eviction ev[256];
        size_t n;
        while ((n = ssd_pop_evictions(b.store, ev, 256)) > 0)
            for (size_t i = 0; i < n; i++)
                free(ev[i].key);
        ssd_close(b.store);
        char root[4096];
        snprintf(root, sizeof root, "%s/%s_cluster_kv_ssd_storage", dir, CLUSTER);
        nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    if (b.json)
        fclose(b.json);
    bufset_free(&huge);
    bufset_free(&small);
    free(b.src_pool);
    free((void *)b.key_mib);
    return rc;
}
