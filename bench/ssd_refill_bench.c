/*
 * ssd_refill_bench.c - fx_bench_ssd_refill: gets that refill DRAM from the
 * SSD tier, measured against what fio reads from the same file system and
 * what one loopback TCP stream moves, in one run (issue 5's targets: a local
 * refill reaches >= 75% of fio's O_DIRECT read bandwidth at 4 MiB blocks; a
 * remote refill >= 60% of min(fio read, loopback TCP)).
 *
 * Two clusters, one after the other, each owner with a DRAM segment of
 * FX_REFILL_DRAM_MIB (default 512) and an SSD tier of FX_REFILL_SSD_MIB
 * (default 4096) in the cluster's temporary directory (removed at the end):
 *   - local: one owner. A client puts a round of values through it
 *     (FX_REFILL_PUT_MIB, default 1280: far more than DRAM, so the master
 *     evicts the memory replicas of the early keys once their SSD copy is
 *     committed), waits until every key's route has its SSD copy (persists
 *     are asynchronous; asked of the master as a member would, untimed), lets
 *     the disk settle (FX_REFILL_SETTLE_SECONDS, default 3: on this kind of
 *     virtio disk reads run 10x slower for 0.1-1 s after a burst of writes,
 *     fio's as much as ours), then gets, through the same owner, keys whose
 *     route has an SSD copy and no memory replica. Each such get is one
 *     ssd_load_into_addr of the whole value into the requester's target:
 *     4 MiB reads, at most 4 in flight.
 *   - remote: two owners, master `--placement local`. The values are put
 *     through owner0 and evicted from its DRAM; a client on owner1 gets them:
 *     owner0 reads its SSD copy into a staging range (4 MiB chunks, <= 4 in
 *     flight) and pushes each chunk into owner1's target over the data plane
 *     (src/owner/ssd_stage.c). Waiting and settling as above.
 * Holder mode: a get is timed until fx_get returns the holder; the holder
 * must say FX_SRC_SSD for the get to count as a refill (a get served from
 * memory is counted apart, not in the figures); then a few bytes are checked
 * against what was put and the holder is released. A refill promotes the
 * value back into DRAM (and evicts another), so each key is read at most
 * once, and at most FX_REFILL_READ_MIB (default DRAM / 2) per round: a
 * refill's target then always finds an unreferenced memory replica to evict
 * (local) or free room (owner1, remote). The round's keys are deleted after.
 *
 * Each round first runs fio (ioengine=io_uring, direct=1, rw=read, bs=4M,
 * FX_REFILL_FIO_SECONDS, default 1) at iodepth 1 and 4 on a file of
 * FX_REFILL_FIO_MIB (default 2048, written once, then the disk settles) in
 * the cluster's directory, the SSD tier's file system, with buffers on the
 * same kind of pages as the owners' segments (--mem=shmhuge for 2 MiB pages:
 * on this kind of guest the buffer's pages decide the request size the disk
 * sees, docs/benchmarks.md), and in the remote cluster one loopback stream
 * (loopback.h). A refill of one 4 MiB value has one 4 MiB read in flight, of
 * a 16 MiB value four: the baseline is fio at that depth (iodepth 1 for 4 MiB, 4 for 16 MiB); the
 * other depth is printed beside it. GiB/s of a refill row = refilled bytes /
 * the sum of the refill gets' times (one client thread, one get at a time).
 * FX_REFILL_ROUNDS (default 4) rounds per size and cluster; the target lines
 * use the totals and the medians of the rounds' baselines, and the median of
 * the per-round ratios (paired: each round's refills against the fio and
 * loopback figures measured just before them).
 *
 * FX_REFILL_VERBOSE prints every get. SIGINT / SIGTERM stop the run early,
 * still stopping the clusters and removing their files.
 *
 * Exit: 0 measured (targets are reported, not enforced), 1 error, 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "../tests/util/cluster.h"
#include "../tests/util/raw_member.h"
#include "fluxon/fluxon.h"
#include "benchutil.h"
#include "hist.h"
#include "loopback.h"

#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

#define POOL_BYTES (64 * MIB)   /* put sources, pre-touched */
#define LB_BYTES (256 * MIB)    /* each loopback buffer */
#define SAMPLE 64               /* bytes compared at each checked spot */
#define MAX_ROUNDS 32
#define N_SIZES 2
#define PERSIST_POLL_NS 50000000ull
#define PERSIST_IDLE_NS 2000000000ull /* no new SSD copy for this long: stop waiting */
#define PERSIST_MAX_NS 120000000000ull

static const char *const prog = "ssd-refill-bench";
/* Set by SIGINT / SIGTERM: the run stops at the next get or round and still
 * stops its clusters and removes their files (several GiB). */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static const size_t sizes[N_SIZES] = {4 * MIB, 16 * MIB};

/* ---- time, environment ------------------------------------------------------ */

static double median(const double *v, int n)
{
    double s[MAX_ROUNDS];
    if (n <= 0)
        return 0;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* ---- the disk: request sizes from /proc/diskstats --------------------------- */

typedef struct disk {
    unsigned maj, min;
    bool known;
} disk;

typedef struct disk_snap {
    uint64_t reads, read_sectors;
} disk_snap;

static disk_snap disk_read(const disk *d)
{
    disk_snap s = {0};
    FILE *f = d->known ? fopen("/proc/diskstats", "r") : NULL;
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        unsigned ma, mi;
        unsigned long long r, rm, rs;
        if (sscanf(line, "%u %u %*s %llu %llu %llu", &ma, &mi, &r, &rm, &rs) == 5 &&
            ma == d->maj && mi == d->min) {
            s = (disk_snap){.reads = r, .read_sectors = rs};
            break;
        }
    }
    if (f)
        fclose(f);
    return s;
}

/* Average read request the disk completed between a and b, KiB (0: none). */
static double read_kib_per_req(disk_snap a, disk_snap b)
{
    uint64_t n = b.reads - a.reads;
    return n ? (double)(b.read_sectors - a.read_sectors) / 2.0 / (double)n : 0;
}

/* ---- CPU: how busy the machine's CPUs were (/proc/stat) --------------------- */

typedef struct cpu_snap {
    unsigned long long busy, total;
} cpu_snap;

static cpu_snap cpu_read(void)
{
    cpu_snap c = {0};
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                    &v[4], &v[5], &v[6], &v[7]) == 8) {
        for (int i = 0; i < 8; i++)
            c.total += v[i];
        c.busy = c.total - v[3] - v[4]; /* all but idle and iowait */
    }
    if (f)
        fclose(f);
    return c;
}

/* Busy share of all CPUs between a and b, percent (100: every CPU busy). */
static double cpu_busy_pct(cpu_snap a, cpu_snap b)
{
    return b.total > a.total ? 100.0 * (double)(b.busy - a.busy) / (double)(b.total - a.total) : 0;
}

/* ---- fio ---------------------------------------------------------------------- */

typedef struct fio_row {
    double gib_s;
} fio_row;

/* Runs fio with the common options plus extra on path; *bytes and *ms from
 * its terse (v3) line: the read or the write side. Returns 0, or -1 after
 * printing fio's output. */
static int fio_run(const char *path, uint64_t file_mib, const char *extra, bool writes,
                   double *bytes, double *ms)
{
    char cmd[1024], line[8192], out[4096] = "";
    snprintf(cmd, sizeof cmd,
             "fio --name=fx-refill --filename=%s --size=%" PRIu64 "M --ioengine=io_uring "
             "--direct=1 --bs=4M --numjobs=1 --output-format=terse --terse-version=3 %s 2>&1",
             path, file_mib, extra);
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "%s: cannot run fio: %s\n", prog, strerror(errno));
        return -1;
    }
    bool found = false;
    while (fgets(line, sizeof line, p)) {
        if (strncmp(line, "3;", 2)) {
            if (strlen(out) + strlen(line) < sizeof out)
                strcat(out, line);
            continue;
        }
        /* 1-based fields: 6/7/9 read KiB, KiB/s, ms; 47/48/50 the same for writes */
        int want_kib = writes ? 47 : 6, want_ms = writes ? 50 : 9, field = 1;
        double kib = -1, t = -1;
        for (char *s = line, *e; s; s = e ? e + 1 : NULL, field++) {
            e = strchr(s, ';');
            if (field == want_kib)
                kib = strtod(s, NULL);
            else if (field == want_ms)
                t = strtod(s, NULL);
        }
        if (kib > 0 && t > 0) {
            *bytes = kib * 1024;
            *ms = t;
            found = true;
        }
    }
    int st = pclose(p);
    if (st != 0 || !found) {
        fprintf(stderr, "%s: fio failed (status %d): %s\n%s", prog, st, cmd, out);
        return -1;
    }
    return 0;
}

/* One time-based read row at iodepth qd with buffers of kind mem. */
static int fio_read(const char *path, uint64_t file_mib, int qd, const char *mem, double secs,
                    fio_row *r)
{
    char extra[256];
    snprintf(extra, sizeof extra, "--rw=read --iodepth=%d --mem=%s --time_based --runtime=%llums",
             qd, mem, (unsigned long long)(secs * 1000));
    double bytes, ms;
    if (fio_run(path, file_mib, extra, false, &bytes, &ms) < 0)
        return -1;
    r->gib_s = bytes / (ms / 1000) / (double)GIB;
    return 0;
}

/* ---- values -------------------------------------------------------------------- */

/* A value's stamp, in its first and last 16 bytes: which write it is. */
typedef struct stamp {
    uint64_t round;
    uint64_t key; /* key index | size << 16 */
} stamp;

/* Key i of a round is put from pool slot i % slots, stamped at both ends;
 * the slot's inner bytes never change. */
static uint8_t *value_src(uint8_t *pool, size_t size, int i)
{
    return pool + (size_t)i % (POOL_BYTES / size) * size;
}

static void stamp_value(uint8_t *v, size_t size, int round, int i)
{
    stamp s = {.round = (uint64_t)round, .key = (uint64_t)i | (uint64_t)size << 16};
    memcpy(v, &s, sizeof s);
    memcpy(v + size - sizeof s, &s, sizeof s);
}

/* Checks what a holder shows against key i of the round: both stamps and
 * SAMPLE bytes at every 1 MiB boundary. Returns true when they match. */
static bool check_value(const uint8_t *got, size_t got_len, uint8_t *pool, size_t size, int round,
                        int i, char *why, size_t cap)
{
    if (got_len != size) {
        snprintf(why, cap, "holder of %zu bytes, expected %zu", got_len, size);
        return false;
    }
    stamp want = {.round = (uint64_t)round, .key = (uint64_t)i | (uint64_t)size << 16}, head, tail;
    memcpy(&head, got, sizeof head);
    memcpy(&tail, got + size - sizeof tail, sizeof tail);
    if (memcmp(&head, &want, sizeof want) || memcmp(&tail, &want, sizeof want)) {
        snprintf(why, cap, "stamp of round %llu key %llx, expected round %d key %d",
                 (unsigned long long)head.round, (unsigned long long)head.key, round, i);
        return false;
    }
    const uint8_t *src = value_src(pool, size, i);
    for (size_t at = sizeof(stamp);; at += MIB) {
        size_t off = at + SAMPLE + sizeof(stamp) > size ? size - sizeof(stamp) - SAMPLE : at;
        if (memcmp(got + off, src + off, SAMPLE)) {
            snprintf(why, cap, "bytes at offset %zu differ from what was put", off);
            return false;
        }
        if (off == size - sizeof(stamp) - SAMPLE)
            break;
    }
    return true;
}

/* ---- the cluster ----------------------------------------------------------------- */

typedef struct setup {
    double fio_secs, lb_secs;
    uint64_t dram, ssd, put_bytes, read_bytes, fio_mib;
    int rounds;
    bool verbose; /* FX_REFILL_VERBOSE: print every get */
    uint64_t settle_ns; /* FX_REFILL_SETTLE_SECONDS: idle time after the persists */
    uint8_t *pool;
    lb_bufs lb;
} setup;

typedef struct cluster {
    test_cluster tc;
    int n;
    fx_client *c[2];
    uint32_t node[2];
    raw_member obs; /* asks the master for routes */
    bool obs_up;
    char page[2][32];
    unsigned page_kib;
    char fio_path[400];
    char fio_mem[16];
    disk d;
} cluster;

/* The page size of the mapping holding p in this process, KiB (0: unknown). */
static unsigned page_kib_at(const void *p)
{
    unsigned kib = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    bool inside = false;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long a, e, k;
        if (sscanf(line, "%llx-%llx ", &a, &e) == 2)
            inside = (uintptr_t)p >= a && (uintptr_t)p < e;
        else if (inside && sscanf(line, "KernelPageSize: %llu kB", &k) == 1) {
            kib = (unsigned)k;
            break;
        }
    }
    if (f)
        fclose(f);
    return kib;
}

/* The page size of c's owner's segment, through the holder of a probe key (a
 * holder lies in the requester's own segment). */
static unsigned segment_page_kib(fx_client *c, const char *probe)
{
    fx_holder *h;
    unsigned kib = 0;
    if (fx_put(c, probe, strlen(probe), "x", 1) || fx_get(c, probe, strlen(probe), &h))
        return 0;
    kib = page_kib_at(fx_holder_data(h));
    fx_holder_release(h);
    fx_delete(c, probe, strlen(probe));
    return kib;
}

static unsigned huge_pages_free(void)
{
    unsigned n = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "HugePages_Free: %u", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

static void cluster_down(cluster *cl, int *stop_failed)
{
    if (cl->obs_up)
        raw_member_close(&cl->obs);
    for (int i = 0; i < cl->n; i++)
        fx_close(cl->c[i]);
    if (cl->fio_path[0])
        unlink(cl->fio_path);
    if (cluster_stop(&cl->tc) != 0)
        *stop_failed = 1;
}

/* Starts n owners (--placement local), connects a client to each, registers
 * the route observer, writes fio's file in the cluster's directory (the SSD
 * tier's file system). Returns 0, or -1 after printing why (nothing left). */
static int cluster_up(cluster *cl, const setup *su, int n)
{
    memset(cl, 0, sizeof *cl);
    /* The shard files are fallocated: n x the SSD tier, plus fio's file. */
    struct statvfs vfs;
    uint64_t need = (uint64_t)n * su->ssd + su->fio_mib * MIB + GIB;
    if (statvfs("/tmp", &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < need) {
        fprintf(stderr, "%s: /tmp has %" PRIu64 " MiB free; %d SSD tier(s) and the fio file need "
                        "%" PRIu64 " MiB (FX_REFILL_SSD_MIB, FX_REFILL_FIO_MIB)\n",
                prog, (uint64_t)vfs.f_bavail * vfs.f_frsize / MIB, n, need / MIB);
        return -1;
    }
    const char *args[] = {"--placement", "local", "--heartbeat-timeout", "600s", NULL};
    if (cluster_start_ssd(&cl->tc, n, su->dram, su->ssd, args) != 0)
        return -1;
    cl->n = n;
    int err = 0, stop = 0;
    for (int i = 0; i < n; i++) {
        cl->c[i] = fx_connect(cl->tc.sockets[i], &err);
        if (!cl->c[i]) {
            fprintf(stderr, "%s: connect owner%d: %s (%s)\n", prog, i, fx_strerror(err),
                    fx_last_error_detail());
            goto fail;
        }
    }
    fx_owner_stat st[4];
    size_t ns = 0;
    if (fx_stat(cl->c[0], st, 4, &ns) != 0 || (int)ns != n) {
        fprintf(stderr, "%s: stat: %zu owners (%s)\n", prog, ns, fx_last_error_detail());
        goto fail;
    }
    for (size_t i = 0; i < ns; i++)
        for (int k = 0; k < n; k++) {
            char name[16];
            snprintf(name, sizeof name, "owner%d", k);
            if (!strcmp(st[i].name, name))
                cl->node[k] = st[i].node_id;
        }
    if (raw_member_register(&cl->obs, cl->tc.master_addr, "test", "observer", 1) != 0)
        goto fail;
    cl->obs_up = true;
    cl->page_kib = 2048;
    for (int i = 0; i < n; i++) {
        char probe[32];
        snprintf(probe, sizeof probe, "refill-bench/probe%d", i);
        unsigned kib = segment_page_kib(cl->c[i], probe);
        snprintf(cl->page[i], sizeof cl->page[i], "%u KiB%s", kib, kib >= 2048 ? " (hugetlb)" : "");
        if (kib < cl->page_kib)
            cl->page_kib = kib;
    }
    /* fio's buffers on the owners' kind of pages, when enough are free */
    snprintf(cl->fio_mem, sizeof cl->fio_mem, "%s",
             cl->page_kib >= 2048 && huge_pages_free() >= 16 ? "shmhuge" : "malloc");
    char ssd_dir[300];
    snprintf(ssd_dir, sizeof ssd_dir, "%s/ssd0", cl->tc.dir);
    struct stat sb;
    if (stat(ssd_dir, &sb) == 0) {
        cl->d = (disk){.maj = major(sb.st_dev), .min = minor(sb.st_dev), .known = true};
        /* a partition's stats are the disk's: /proc/diskstats has both */
    }
    snprintf(cl->fio_path, sizeof cl->fio_path, "%s/fio-read.dat", cl->tc.dir);
    double bytes, ms;
    uint64_t t0 = now_ns();
    if (fio_run(cl->fio_path, su->fio_mib, "--rw=write --iodepth=4", true, &bytes, &ms) < 0)
        goto fail;
    double wrote_s = (double)(now_ns() - t0) / 1e9;
    sleep_ns(su->settle_ns); /* the disk is slow for a while after a write burst */
    printf("cluster of %d owner(s): master pid %d, owner0 pid %d (%s pages)", n,
           (int)cl->tc.master_pid, (int)cl->tc.owner_pids[0], cl->page[0]);
    if (n > 1)
        printf(", owner1 pid %d (%s pages)", (int)cl->tc.owner_pids[1], cl->page[1]);
    printf("\n  dir %s (device %u:%u); fio file %" PRIu64 " MiB written in %.1f s; fio buffers "
           "--mem=%s\n",
           cl->tc.dir, cl->d.maj, cl->d.min, su->fio_mib, wrote_s, cl->fio_mem);
    fflush(stdout);
    return 0;
fail:
    cluster_down(cl, &stop);
    return -1;
}

/* The route of key as the master sees it: is there a memory replica or an
 * SSD copy on any node, and an SSD copy on node. */
static void route_of(cluster *cl, const char *key, uint32_t node, bool *mem_any, bool *ssd_any,
                     bool *ssd_node)
{
    Fx__RouteInfoReq req = FX__ROUTE_INFO_REQ__INIT;
    req.key = (ProtobufCBinaryData){.len = strlen(key), .data = (uint8_t *)key};
    ProtobufCMessage *m = raw_member_call(&cl->obs, MSG_ROUTE_INFO, &req.base, 5000);
    *mem_any = *ssd_any = *ssd_node = false;
    if (m && msg_status(m) == 0) {
        Fx__RouteInfoResp *r = (Fx__RouteInfoResp *)m;
        for (size_t i = 0; i < r->n_replicas; i++) {
            *mem_any |= r->replicas[i]->memory;
            *ssd_any |= r->replicas[i]->ssd;
            if (r->replicas[i]->node_id == node && r->replicas[i]->ssd)
                *ssd_node = true;
        }
    }
    msg_free(m);
}

/* ---- rounds ------------------------------------------------------------------------ */

typedef struct round_res {
    fio_row fio[2]; /* iodepth 1, 4 */
    double lb_gib_s;
    uint64_t puts, put_ns, persist_ns, persisted, candidates;
    uint64_t refills, refill_bytes, refill_ns, mem_hits, errors;
    double gib_s, p50_us, p99_us, kib_req, cpu_pct;
    char detail[512];
} round_res;

typedef struct size_res {
    round_res r[MAX_ROUNDS];
    int n;
    hist h; /* every refill of every round */
} size_res;

static void note_error(round_res *r, const char *key, const char *what)
{
    if (!r->errors++)
        snprintf(r->detail, sizeof r->detail, "%s: %s", key, what);
}

static void key_name(char *buf, size_t cap, bool remote, size_t size, int round, int i)
{
    snprintf(buf, cap, "refill/%s/%zu/%d/%05d", remote ? "remote" : "local", size, round, i);
}

/* One round: baselines, puts through owner0, the wait for persists, the
 * refill gets through the reader's owner, deletes. Returns 0, or -1 when
 * the round could not be run (printed); a get that failed or did not check
 * out is counted in r->errors. */
static int run_round(cluster *cl, const setup *su, bool remote, size_t size, int round,
                     round_res *r, hist *all)
{
    static hist h;
    memset(&h, 0, sizeof h);
    memset(r, 0, sizeof *r);
    static const int qds[2] = {1, 4};
    for (int q = 0; q < 2; q++)
        if (fio_read(cl->fio_path, su->fio_mib, qds[q], cl->fio_mem, su->fio_secs, &r->fio[q]) < 0)
            return -1;
    if (remote) {
        uint64_t chunks;
        double secs;
        if (lb_stream(&su->lb, (uint64_t)(su->lb_secs * 2.5e8), (uint64_t)(su->lb_secs * 1e9),
                      &chunks, &secs, NULL, NULL, 0) < 0)
            return -1;
        r->lb_gib_s = secs > 0 ? (double)chunks * LB_CHUNK / secs / (double)GIB : 0;
    }
    fx_client *w = cl->c[0], *rd = cl->c[remote ? 1 : 0];
    int n = (int)(su->put_bytes / size);
    char key[96];
    uint64_t t0 = now_ns();
    for (int i = 0; i < n && !interrupted; i++) {
        uint8_t *v = value_src(su->pool, size, i);
        stamp_value(v, size, round, i);
        key_name(key, sizeof key, remote, size, round, i);
        int rc = fx_put(w, key, strlen(key), v, size);
        if (rc) {
            fprintf(stderr, "%s: put %s: %s (%s)\n", prog, key, fx_strerror(rc),
                    fx_last_error_detail());
            return -1;
        }
    }
    if (interrupted)
        return -1; /* the caller stops the cluster: no need to delete */
    r->puts = (uint64_t)n;
    r->put_ns = now_ns() - t0;
    /* Persists are asynchronous: wait until every key has its SSD copy (or
     * the count stops growing for PERSIST_IDLE_NS: a persist may also be
     * skipped), so that no SSD write competes with the refills. While owner0
     * is full of replicas not yet on SSD, the master places puts on owner1
     * (placement local falls back to a member with room): the keys to read
     * are those with an SSD copy on owner0 and no memory replica anywhere. */
    int *pick = calloc((size_t)n, sizeof *pick), np = 0;
    if (!pick) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    int max_reads = (int)(su->read_bytes / size), persisted = 0, last = -1;
    t0 = now_ns();
    for (uint64_t changed = t0;;) {
        persisted = np = 0;
        for (int i = 0; i < n; i++) {
            bool mem, ssd, ssd0;
            key_name(key, sizeof key, remote, size, round, i);
            route_of(cl, key, cl->node[0], &mem, &ssd, &ssd0);
            persisted += ssd;
            if (!mem && ssd0 && np < max_reads)
                pick[np++] = i;
        }
        uint64_t t = now_ns();
        if (persisted != last)
            changed = t;
        last = persisted;
        if (persisted == n || t - changed > PERSIST_IDLE_NS || t - t0 > PERSIST_MAX_NS ||
            interrupted)
            break;
        sleep_ns(PERSIST_POLL_NS);
    }
    r->persist_ns = now_ns() - t0;
    r->persisted = (uint64_t)persisted;
    r->candidates = (uint64_t)np;
    if (su->verbose) {
        printf("    reading %d keys after %.1f s of settling\n", np, (double)su->settle_ns / 1e9);
        fflush(stdout);
    }
    if (su->settle_ns)
        sleep_ns(su->settle_ns);
    disk_snap d0 = disk_read(&cl->d);
    cpu_snap c0 = cpu_read();
    for (int k = 0; k < np && !interrupted; k++) {
        int i = pick[k];
        key_name(key, sizeof key, remote, size, round, i);
        fx_holder *hd;
        uint64_t g0 = now_ns();
        int rc = fx_get(rd, key, strlen(key), &hd);
        uint64_t g1 = now_ns();
        if (rc) {
            char what[300];
            snprintf(what, sizeof what, "fx_get: %s (%s)", fx_strerror(rc), fx_last_error_detail());
            note_error(r, key, what);
            continue;
        }
        if (fx_holder_source(hd) != FX_SRC_SSD) {
            r->mem_hits++; /* not a refill: not in the figures */
        } else {
            r->refills++;
            r->refill_bytes += size;
            r->refill_ns += g1 - g0;
            hist_add(&h, g1 - g0);
        }
        if (su->verbose) {
            printf("    get %s: %.0f us, source %s\n", key, (double)(g1 - g0) / 1e3,
                   fx_holder_source(hd) == FX_SRC_SSD ? "ssd" : "memory");
            fflush(stdout);
        }
        char why[160];
        if (!check_value(fx_holder_data(hd), fx_holder_len(hd), su->pool, size, round, i, why,
                         sizeof why))
            note_error(r, key, why);
        fx_holder_release(hd);
    }
    r->kib_req = read_kib_per_req(d0, disk_read(&cl->d));
    r->cpu_pct = cpu_busy_pct(c0, cpu_read());
    if (su->verbose) {
        printf("    read done\n");
        fflush(stdout);
    }
    free(pick);
    for (int i = 0; i < n; i++) {
        key_name(key, sizeof key, remote, size, round, i);
        fx_delete(w, key, strlen(key));
    }
    r->gib_s = r->refill_ns ? (double)r->refill_bytes / ((double)r->refill_ns / 1e9) / (double)GIB
                            : 0;
    r->p50_us = hist_quantile(&h, 0.50) / 1e3;
    r->p99_us = hist_quantile(&h, 0.99) / 1e3;
    hist_merge(all, &h);
    return interrupted ? -1 : 0;
}

static void print_round_header(bool remote)
{
    printf("  %-6s %3s %5s %5s %5s %4s %7s %7s %8s %8s %8s %8s %7s %4s %7s%s\n", "size", "rnd",
           "puts", "ssd", "pick", "mem", "refills", "GiB/s", "p50 us", "p99 us", "fio qd1",
           "fio qd4", "KiB/req", "cpu%", "persist", remote ? " loopback" : "");
}

static void print_round(size_t size, int round, const round_res *r, bool remote)
{
    printf("  %3zuMiB %3d %5llu %5llu %5llu %4llu %7llu %7.2f %8.0f %8.0f %8.2f %8.2f %7.0f %4.0f "
           "%6.2fs",
           size / MIB, round, (unsigned long long)r->puts, (unsigned long long)r->persisted,
           (unsigned long long)r->candidates, (unsigned long long)r->mem_hits,
           (unsigned long long)r->refills, r->gib_s, r->p50_us, r->p99_us, r->fio[0].gib_s,
           r->fio[1].gib_s, r->kib_req, r->cpu_pct, (double)r->persist_ns / 1e9);
    if (remote)
        printf(" %8.2f", r->lb_gib_s);
    if (r->errors)
        printf("  ERRORS: %llu, first: %s", (unsigned long long)r->errors, r->detail);
    printf("\n");
    fflush(stdout);
}

/* Runs every round of both sizes on cl; fills res[size]. Returns 0, or -1
 * when a round could not be run. */
static int run_mode(cluster *cl, const setup *su, bool remote, size_res *res)
{
    printf("%s refill: %s\n"
           "  puts / ssd: values put, of them with an SSD copy; pick: keys read (SSD copy on "
           "owner0, no memory replica); mem: gets served from memory (not counted);\n"
           "  fio: iodepth 1 and 4, --mem=%s, GiB/s; KiB/req: the disk's average read request and "
           "cpu%%: busy share of all CPUs, both during the refills; persist: the wait for SSD "
           "copies\n",
           remote ? "remote" : "local",
           remote ? "values put through owner0 and evicted from its DRAM, got through owner1"
                  : "values put and got through owner0, evicted from its DRAM first",
           cl->fio_mem);
    print_round_header(remote);
    for (int s = 0; s < N_SIZES; s++) {
        memset(&res[s], 0, sizeof res[s]);
        for (int k = 0; k < su->rounds; k++) {
            if (interrupted ||
                run_round(cl, su, remote, sizes[s], k, &res[s].r[k], &res[s].h) < 0) {
                if (interrupted)
                    fprintf(stderr, "%s: interrupted\n", prog);
                return -1;
            }
            res[s].n++;
            print_round(sizes[s], k, &res[s].r[k], remote);
        }
    }
    printf("\n");
    return 0;
}

/* ---- summary ---------------------------------------------------------------------- */

typedef struct summary {
    double gib_s, p50_us, p99_us, fio[2], lb, base, ratio, paired, paired_lo, paired_hi;
    uint64_t refills, mem_hits, errors;
    int base_qd;
} summary;

static summary summarize(const size_res *sr, size_t size, bool remote)
{
    summary s = {0};
    double f[2][MAX_ROUNDS], l[MAX_ROUNDS], pr[MAX_ROUNDS];
    uint64_t bytes = 0, ns = 0;
    int np = 0;
    s.base_qd = size > 4 * MIB ? 4 : 1; /* 4 MiB reads in flight for one value: <= 4 */
    for (int k = 0; k < sr->n; k++) {
        const round_res *r = &sr->r[k];
        f[0][k] = r->fio[0].gib_s;
        f[1][k] = r->fio[1].gib_s;
        l[k] = r->lb_gib_s;
        bytes += r->refill_bytes;
        ns += r->refill_ns;
        s.refills += r->refills;
        s.mem_hits += r->mem_hits;
        s.errors += r->errors;
        double b = r->fio[s.base_qd == 4].gib_s;
        if (remote && r->lb_gib_s < b)
            b = r->lb_gib_s;
        if (r->gib_s > 0 && b > 0)
            pr[np++] = r->gib_s / b;
    }
    s.gib_s = ns ? (double)bytes / ((double)ns / 1e9) / (double)GIB : 0;
    s.p50_us = hist_quantile(&sr->h, 0.50) / 1e3;
    s.p99_us = hist_quantile(&sr->h, 0.99) / 1e3;
    s.fio[0] = median(f[0], sr->n);
    s.fio[1] = median(f[1], sr->n);
    s.lb = remote ? median(l, sr->n) : 0;
    s.base = s.fio[s.base_qd == 4];
    if (remote && s.lb < s.base)
        s.base = s.lb;
    s.ratio = s.base > 0 ? s.gib_s / s.base : 0;
    if (np) {
        s.paired = median(pr, np);
        qsort(pr, (size_t)np, sizeof *pr, cmp_double);
        s.paired_lo = pr[0];
        s.paired_hi = pr[np - 1];
    }
    return s;
}

static void print_summary(const size_res *res, bool remote, int *misses)
{
    printf("%s refill (holder mode, one client thread; all rounds)\n",
           remote ? "remote" : "local");
    printf("  %-5s %7s %4s %8s %8s %8s %9s %9s%s\n", "size", "refills", "mem", "GiB/s", "p50 us",
           "p99 us", "fio qd1", "fio qd4", remote ? "  loopback" : "");
    for (int s = 0; s < N_SIZES; s++) {
        summary m = summarize(&res[s], sizes[s], remote);
        printf("  %3zuMiB %7llu %4llu %8.2f %8.0f %8.0f %9.2f %9.2f", sizes[s] / MIB,
               (unsigned long long)m.refills, (unsigned long long)m.mem_hits, m.gib_s, m.p50_us,
               m.p99_us, m.fio[0], m.fio[1]);
        if (remote)
            printf("  %8.2f", m.lb);
        printf("%s\n", m.errors ? "  (ERRORS: see the rounds)" : "");
    }
    for (int s = 0; s < N_SIZES; s++) {
        summary m = summarize(&res[s], sizes[s], remote);
        char base[96];
        if (remote)
            snprintf(base, sizeof base, "min(fio qd%d %.2f, loopback %.2f)", m.base_qd,
                     m.fio[m.base_qd == 4], m.lb);
        else
            snprintf(base, sizeof base, "fio qd%d", m.base_qd);
        double target = remote ? 0.60 : 0.75;
        bool pass = m.refills > 0 && !m.errors && m.ratio >= target;
        *misses += !pass;
        printf("  %s %2zuMiB  %.2f / %.2f GiB/s = %.0f%% (target >= %.0f%%) %s   [baseline %s; "
               "paired rounds: median %.0f%%, range %.0f-%.0f%%]\n",
               remote ? "remote_refill_vs_min(fio,loopback)" : "local_refill_vs_fio",
               sizes[s] / MIB, m.gib_s, m.base, m.ratio * 100, target * 100,
               m.errors ? "FAILED (errors)" : pass ? "PASS" : "MISS", base, m.paired * 100,
               m.paired_lo * 100, m.paired_hi * 100);
        int other = m.base_qd == 4 ? 0 : 1;
        if (m.fio[other] > 0)
            printf("      (against fio qd%d instead: %.0f%%)\n", other ? 4 : 1,
                   m.gib_s / (remote && m.lb < m.fio[other] ? m.lb : m.fio[other]) * 100);
    }
    printf("\n");
    fflush(stdout);
}

/* ---- main ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: fx_bench_ssd_refill [--local-only | --remote-only]\n"
            "  env FX_REFILL_ROUNDS (4), FX_REFILL_DRAM_MIB (512, each owner),\n"
            "      FX_REFILL_SSD_MIB (4096, each owner), FX_REFILL_PUT_MIB (1280 per round),\n"
            "      FX_REFILL_READ_MIB (DRAM / 2 per round), FX_REFILL_FIO_MIB (2048),\n"
            "      FX_REFILL_FIO_SECONDS (1 per fio row), FX_REFILL_LOOPBACK_SECONDS (1)\n"
            "  needs fio (scripts/deps.sh) and about 2 x SSD + fio file of free disk under /tmp\n");
}

int main(int argc, char **argv)
{
    bool do_local = true, do_remote = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--local-only")) {
            do_remote = false;
        } else if (!strcmp(argv[i], "--remote-only")) {
            do_local = false;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    double rounds = 4, dram = 512, ssd = 4096, put = 1280, read = 0, fio_mib = 2048,
           fio_secs = 1, lb_secs = 1, settle = 3;
    if (env_number(prog, "FX_REFILL_ROUNDS", MAX_ROUNDS, false, &rounds) < 0 ||
        env_number(prog, "FX_REFILL_DRAM_MIB", 1 << 20, false, &dram) < 0 ||
        env_number(prog, "FX_REFILL_SSD_MIB", 1 << 24, false, &ssd) < 0 ||
        env_number(prog, "FX_REFILL_PUT_MIB", 1 << 24, false, &put) < 0 ||
        env_number(prog, "FX_REFILL_READ_MIB", 1 << 24, false, &read) < 0 ||
        env_number(prog, "FX_REFILL_FIO_MIB", 1 << 24, false, &fio_mib) < 0 ||
        env_number(prog, "FX_REFILL_FIO_SECONDS", 600, false, &fio_secs) < 0 ||
        env_number(prog, "FX_REFILL_LOOPBACK_SECONDS", 600, false, &lb_secs) < 0 ||
        env_number(prog, "FX_REFILL_SETTLE_SECONDS", 600, true, &settle) < 0)
        return 2;
    if (read == 0)
        read = dram / 2;
    if (put < dram + 2 * 16 || put > ssd / 2 || read < 16) {
        fprintf(stderr, "%s: FX_REFILL_PUT_MIB=%.0f must exceed the DRAM (%.0f MiB) and fit half "
                        "the SSD (%.0f MiB); FX_REFILL_READ_MIB=%.0f at least 16\n",
                prog, put, dram, ssd, read);
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    setup su = {.fio_secs = fio_secs, .lb_secs = lb_secs, .dram = (uint64_t)dram * MIB,
                .ssd = (uint64_t)ssd * MIB, .put_bytes = (uint64_t)put * MIB,
                .read_bytes = (uint64_t)read * MIB, .fio_mib = (uint64_t)fio_mib,
                .rounds = (int)rounds, .verbose = getenv("FX_REFILL_VERBOSE") != NULL,
                .settle_ns = (uint64_t)(settle * 1e9)};
    su.pool = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (su.pool == MAP_FAILED) {
        fprintf(stderr, "%s: cannot map the source pool: %s\n", prog, strerror(errno));
        return 1;
    }
    for (size_t i = 0; i < POOL_BYTES; i += sizeof(uint64_t)) {
        uint64_t v = (uint64_t)i * 0x9e3779b97f4a7c15ull; /* every 8 bytes differ */
        memcpy(su.pool + i, &v, sizeof v);
    }
    unsigned long long src_huge = 0, ring_huge = 0;
    if (do_remote) {
        su.lb = (lb_bufs){.src = lb_huge_alloc(LB_BYTES, 3, &src_huge), .src_len = LB_BYTES,
                          .ring = lb_huge_alloc(LB_BYTES, 9, &ring_huge), .ring_len = LB_BYTES};
        if (!su.lb.src || !su.lb.ring)
            return 1;
    }
    char model[256];
    cpu_model(model, sizeof model);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    time_t now = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    printf("fx_bench_ssd_refill: %s, %s, %ld online CPU(s)%s\n", date, model, cpus,
           cpus <= 2 ? " - the client, the owners and the master share them" : "");
    printf("each owner: %.0f MiB DRAM, %.0f MiB SSD tier; per round: %.0f MiB of values put, at "
           "most %.0f MiB of refills read; %d round(s) per size; fio rows of %.1f s on a %.0f MiB "
           "file%s\n",
           dram, ssd, put, read, su.rounds, fio_secs, fio_mib,
           do_remote ? "; loopback rows of 1 stream" : "");
    if (do_remote)
        printf("loopback: 4 MiB sends from a 256 MiB buffer into a 256 MiB ring on transparent "
               "huge pages (%llu + %llu of 256 MiB given), TCP_NODELAY, reno, 4 MiB socket "
               "buffers\n",
               src_huge >> 10, ring_huge >> 10);
    printf("a refill counts when fx_get returns a holder with source ssd; GiB/s = refilled bytes / "
           "time in those fx_get calls; baseline: fio at the refill's own depth (one 4 MiB value: "
           "1 read in flight; 16 MiB: 4)\n\n");
    fflush(stdout);

    static size_res local[N_SIZES], remote[N_SIZES];
    int failed = 0, stop_failed = 0, misses = 0;
    bool have_local = false, have_remote = false;
    cluster cl;
    if (do_local) {
        if (cluster_up(&cl, &su, 1) == 0) {
            have_local = run_mode(&cl, &su, false, local) == 0;
            failed |= !have_local;
            cluster_down(&cl, &stop_failed);
        } else {
            failed = 1;
        }
    }
    if (do_remote && !interrupted) {
        if (cluster_up(&cl, &su, 2) == 0) {
            have_remote = run_mode(&cl, &su, true, remote) == 0;
            failed |= !have_remote;
            cluster_down(&cl, &stop_failed);
        } else {
            failed = 1;
        }
    }
    if (have_local)
        print_summary(local, false, &misses);
    if (have_remote)
        print_summary(remote, true, &misses);
    failed |= interrupted;
    printf("%s\n", interrupted ? "interrupted"
                   : failed   ? "a part of the run failed (see above)"
                   : misses   ? "some targets missed"
                              : "all targets met");
    if (do_remote) {
        munmap((void *)su.lb.src, LB_BYTES);
        munmap(su.lb.ring, LB_BYTES);
    }
    munmap(su.pool, POOL_BYTES);
    if (stop_failed)
        fprintf(stderr, "%s: a cluster did not stop cleanly (see the logs above)\n", prog);
    return failed || stop_failed ? 1 : 0;
}
