/*
 * test_ssd_store.c - the SSD tier's store (src/owner/ssd/ssd.h) on real
 * O_DIRECT files and a real io_uring, in a temporary directory under /var/tmp
 * (tmpfs often refuses O_DIRECT; exit 77 when this file system does).
 *
 * Covers: a 1000-byte value takes 1024 bytes on disk and reads back as
 * exactly 1000; direct vs scratch reads chosen by the four conditions (the
 * counters); wraparound over 5x the capacity with writers and readers holding
 * pins (no pinned entry overwritten, every read right or not-found); evicted
 * keys reported exactly once; persist guards and read pins block the ring;
 * the stale-begin re-check (test hook); device de-duplication; the root lock;
 * the config errors the store sees (the size strings themselves are parsed,
 * and refused when unparsable, by src/common/config.c: test_config); bytes
 * flipped in a shard file caught by the checksum; injected -EIO and short IO
 * on reads and writes (uring failpoints); chunked loads; a disk too small
 * for the limit (RLIMIT_FSIZE) failing the open; close with a writer waiting.
 */
#include "owner/ssd/ssd.h"
#include "owner/ssd/ssd_test.h"
#include "owner/ssd/uring.h"
#include "testlib.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef FX_FAILPOINTS
#error "test_ssd_store needs the failpoint build of the SSD library (fx_ssd_fp)"
#endif

#define KiB (1024ull)
#define MiB (1024ull * 1024ull)
#define CLUSTER "t"

static char g_base[256]; /* the temporary directory */

/* ---- helpers ------------------------------------------------------------ */

static void cleanup(void *arg)
{
    (void)arg;
    if (g_base[0])
        test_remove_dir(g_base);
}

/* Waits up to 10 s for *v to reach want, then 200 ms more to see it stay
 * (a writer that should be blocked gets the chance to move on wrongly). */
static unsigned settle(atomic_uint *v, unsigned want)
{
    for (int i = 0; i < 1000 && atomic_load(v) < want; i++)
        test_sleep_ms(10);
    test_sleep_ms(200);
    return atomic_load(v);
}

/* <base>/<name> */
static void base_path(char *out, const char *name)
{
    snprintf(out, PATH_MAX, "%s/%s", g_base, name);
}

/* The derived root of <base>/<name> for instance inst. */
static void root_path(char *out, const char *name, const char *inst)
{
    snprintf(out, PATH_MAX, "%s/%s/" CLUSTER "_cluster_kv_ssd_storage/%s", g_base, name, inst);
}

typedef struct store_opts {
    const char *name; /* directory under the base */
    const char *inst;
    uint64_t limit;
    unsigned shards;
    size_t evq_cap;
    bool iovec;
} store_opts;

static int try_open(const store_opts *o, ssd_store **out, char *err, size_t errlen)
{
    char path[PATH_MAX];
    base_path(path, o->name);
    const char *paths[1] = {path};
    uint64_t limits[1] = {o->limit};
    ssd_config c = {.cluster_name = CLUSTER, .instance = o->inst, .paths = paths,
                    .limits = limits, .n_paths = 1, .n_limits = 1,
                    .shards_per_device = o->shards, .eviction_queue_cap = o->evq_cap,
                    .iovec_mode = o->iovec};
    return ssd_open(&c, out, err, errlen);
}

static ssd_store *must_open(const store_opts *o)
{
    ssd_store *s = NULL;
    char err[512];
    int rc = try_open(o, &s, err, sizeof err);
    REQUIRE(rc == SSD_OK && s, "ssd_open(%s): %d %s", o->name, rc, err);
    return s;
}

static ssd_stats stats(ssd_store *s)
{
    ssd_stats st;
    ssd_get_stats(s, &st);
    return st;
}

/* Deterministic content of value i. */
static void fill(uint8_t *p, uint64_t n, uint64_t seed)
{
    unsigned long long x = seed * 0x9E3779B97F4A7C15ull + 12345;
    for (uint64_t i = 0; i < n; i += 8) {
        unsigned long long v = test_rand(&x);
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

static void key_of(char *k, unsigned i)
{
    snprintf(k, 32, "key-%08u", i);
}

static ssd_put_id pid_of(unsigned i)
{
    return (ssd_put_id){.time_ms = 1000000 + i, .version = i % 7};
}

static void *aligned(uint64_t n)
{
    void *p = NULL;
    REQUIRE(posix_memalign(&p, 4096, n ? n : 1) == 0, "posix_memalign %llu",
            (unsigned long long)n);
    return p;
}

/* Writes value i of len bytes; returns the status. */
static int put(ssd_store *s, unsigned i, uint64_t len, ssd_guard **g)
{
    char k[32];
    key_of(k, i);
    uint8_t *v = malloc(len ? len : 1);
    fill(v, len, i);
    int rc = ssd_write(s, k, strlen(k), pid_of(i), v, len, g);
    free(v);
    return rc;
}

/* Loads value i (len bytes) into addr with capacity; on SSD_OK checks the
 * bytes and returns whether they were right in *ok. */
static int get_into(ssd_store *s, unsigned i, uint64_t len, uint8_t *addr, uint64_t cap,
                    bool *ok)
{
    char k[32];
    key_of(k, i);
    int rc = ssd_load_into_addr(s, k, strlen(k), pid_of(i), addr, len, cap);
    if (ok) {
        *ok = true;
        if (rc == SSD_OK) {
            uint8_t *want = malloc(len ? len : 1);
            fill(want, len, i);
            *ok = memcmp(addr, want, len) == 0;
            free(want);
        }
    }
    return rc;
}

static int get(ssd_store *s, unsigned i, uint64_t len, bool *ok)
{
    uint8_t *b = aligned(len + 512);
    int rc = get_into(s, i, len, b, len + 512, ok);
    free(b);
    return rc;
}

/* Flips one byte at off of a shard file through a second, buffered fd. */
static void flip_byte(const char *shard, uint64_t off)
{
    int fd = open(shard, O_RDWR);
    REQUIRE(fd >= 0, "open %s: %s", shard, strerror(errno));
    uint8_t b;
    REQUIRE(pread(fd, &b, 1, (off_t)off) == 1, "pread %s", shard);
    b ^= 0x5a;
    REQUIRE(pwrite(fd, &b, 1, (off_t)off) == 1, "pwrite %s", shard);
    REQUIRE(fdatasync(fd) == 0, "fdatasync %s", shard);
    close(fd);
}

/* A consumer of a chunked load, on its own thread. */
typedef struct consumer {
    pthread_t th;
    ssd_chunk_queue *q;
    unsigned delay_ms; /* per chunk */
    /* results */
    bool in_order;
    uint64_t covered;
    unsigned chunks;
    int last_status;
    uint64_t last_offset;
} consumer;

/* Records one popped item; true for the last. */
static bool consumer_take(consumer *c, ssd_chunk ch)
{
    if (ch.last) {
        c->last_status = ch.status;
        c->last_offset = ch.offset;
        return true;
    }
    if (ch.offset != c->covered || ch.len == 0)
        c->in_order = false;
    c->covered = ch.offset + ch.len;
    c->chunks++;
    return false;
}

static void *consume(void *arg)
{
    consumer *c = arg;
    c->in_order = true;
    c->covered = 0;
    while (!consumer_take(c, ssd_chunk_queue_pop(c->q)))
        if (c->delay_ms)
            test_sleep_ms(c->delay_ms);
    return NULL;
}

static void consumer_start(consumer *c, unsigned slots, unsigned delay_ms)
{
    memset(c, 0, sizeof *c);
    c->q = ssd_chunk_queue_new(slots);
    c->delay_ms = delay_ms;
    REQUIRE(c->q, "ssd_chunk_queue_new");
    REQUIRE(pthread_create(&c->th, NULL, consume, c) == 0, "pthread_create");
}

static void consumer_join(consumer *c)
{
    pthread_join(c->th, NULL);
    ssd_chunk_queue_free(c->q);
    c->q = NULL;
}

/* A chunked load of value i with a consumer thread; returns the status. */
static int get_chunks(ssd_store *s, unsigned i, uint64_t len, uint8_t *addr, uint64_t cap,
                      uint64_t chunk, unsigned inflight, unsigned slots, unsigned delay_ms,
                      consumer *c)
{
    char k[32];
    key_of(k, i);
    consumer_start(c, slots, delay_ms);
    int rc = ssd_load_into_addr_chunks(s, k, strlen(k), pid_of(i), addr, len, cap, chunk,
                                       inflight, c->q);
    consumer_join(c);
    return rc;
}

/* The polled consumer: sem is posted by the queue's notify hook after every
 * push; each wake-up takes whatever is ready without waiting. */
typedef struct polled {
    consumer *c;
    sem_t sem;
    unsigned notified;
} polled;

static void polled_notify(void *arg)
{
    polled *p = arg;
    __atomic_add_fetch(&p->notified, 1, __ATOMIC_RELAXED);
    sem_post(&p->sem);
}

static void *consume_polled(void *arg)
{
    polled *p = arg;
    consumer *c = p->c;
    c->in_order = true;
    for (;;) {
        sem_wait(&p->sem);
        ssd_chunk ch;
        while (ssd_chunk_queue_try_pop(c->q, &ch))
            if (consumer_take(c, ch))
                return NULL;
    }
}

static int get_chunks_polled(ssd_store *s, unsigned i, uint64_t len, uint8_t *addr, uint64_t cap,
                             consumer *c)
{
    char k[32];
    key_of(k, i);
    memset(c, 0, sizeof *c);
    c->q = ssd_chunk_queue_new(2); /* small: the producer must wait for the consumer */
    REQUIRE(c->q, "ssd_chunk_queue_new");
    polled p = {.c = c};
    sem_init(&p.sem, 0, 0);
    ssd_chunk empty;
    CHECK(!ssd_chunk_queue_try_pop(c->q, &empty), "try_pop on an empty queue returned a chunk");
    ssd_chunk_queue_set_notify(c->q, polled_notify, &p);
    REQUIRE(pthread_create(&c->th, NULL, consume_polled, &p) == 0, "pthread_create");
    int rc = ssd_load_into_addr_chunks(s, k, strlen(k), pid_of(i), addr, len, cap, 1 * MiB, 4,
                                       c->q);
    pthread_join(c->th, NULL);
    CHECK(p.notified == c->chunks + 1, "notified %u times for %u chunks and the last item",
          p.notified, c->chunks);
    sem_destroy(&p.sem);
    ssd_chunk_queue_free(c->q);
    c->q = NULL;
    return rc;
}

static bool matches(unsigned i, const uint8_t *p, uint64_t len)
{
    uint8_t *want = malloc(len ? len : 1);
    fill(want, len, i);
    bool ok = memcmp(p, want, len) == 0;
    free(want);
    return ok;
}

/* ---- config ------------------------------------------------------------- */

static void expect_config_error(ssd_config c, const char *needle, const char *what)
{
    ssd_store *s = (ssd_store *)1;
    char err[512] = "";
    int rc = ssd_open(&c, &s, err, sizeof err);
    CHECK(rc == SSD_EINVAL, "%s: rc %d (%s)", what, rc, err);
    CHECK(s == NULL, "%s: store set on failure", what);
    CHECK(strstr(err, needle) != NULL, "%s: message '%s' does not name '%s'", what, err, needle);
}

static void test_config_errors(void)
{
    char p0[PATH_MAX], p1[PATH_MAX];
    base_path(p0, "cfg0");
    base_path(p1, "cfg1");
    const char *paths[2] = {p0, p1};
    uint64_t limits[2] = {1 * MiB, 1 * MiB};
    ssd_config ok = {.cluster_name = CLUSTER, .instance = "cfg", .paths = paths,
                     .limits = limits, .n_paths = 2, .n_limits = 2};
    ssd_config c;

    c = ok, c.n_limits = 1;
    expect_config_error(c, "large_limit_size", "lengths differ");
    c = ok, c.limits = NULL, c.n_limits = 0;
    expect_config_error(c, "large_limit_size", "no limits");
    uint64_t small[2] = {1 * MiB, 100};
    c = ok, c.limits = small;
    expect_config_error(c, "large_limit_size[1]", "size under 512");
    uint64_t small0[2] = {511, 1 * MiB};
    c = ok, c.limits = small0;
    expect_config_error(c, "large_limit_size[0]", "size 511");
    c = ok, c.cluster_name = NULL;
    expect_config_error(c, "cluster_name", "no cluster_name");
    c = ok, c.cluster_name = "";
    expect_config_error(c, "cluster_name", "empty cluster_name");
    c = ok, c.cluster_name = "a/b";
    expect_config_error(c, "cluster_name", "cluster_name with '/'");
    c = ok, c.instance = NULL;
    expect_config_error(c, "instance", "no instance");
    c = ok, c.instance = "x/y";
    expect_config_error(c, "instance", "instance with '/'");
    c = ok, c.instance = "..";
    expect_config_error(c, "instance", "instance ..");
    c = ok, c.n_paths = 0, c.n_limits = 0;
    expect_config_error(c, "large_file_paths", "no paths");
    const char *empty[2] = {p0, ""};
    c = ok, c.paths = empty;
    expect_config_error(c, "large_file_paths[1]", "empty path");
    c = ok, c.io_depth = 5000;
    expect_config_error(c, "io_depth", "io_depth too large");
    c = ok, c.shards_per_device = 100000;
    expect_config_error(c, "shards_per_device", "too many shards");
    char err[64];
    CHECK(ssd_open(NULL, &(ssd_store *){NULL}, err, sizeof err) == SSD_EINVAL, "NULL config");

    /* None of these created a root: config errors come before the disk. */
    char r[PATH_MAX];
    root_path(r, "cfg0", "cfg");
    struct stat st;
    CHECK(stat(r, &st) != 0, "a refused config created %s", r);

    /* A limit over the file system's free space is refused before a byte of
     * it is reserved (no shard file appears). */
    uint64_t huge[1] = {1ull << 50};
    ssd_config ch = {.cluster_name = CLUSTER, .instance = "cfg", .paths = paths, .limits = huge,
                     .n_paths = 1, .n_limits = 1};
    expect_config_error(ch, "large_limit_size[0]", "a limit of 1 PiB");
    char shard0[PATH_MAX + 16];
    snprintf(shard0, sizeof shard0, "%s/shard-000", r);
    CHECK(stat(shard0, &st) != 0, "a limit the disk cannot hold created %s", shard0);

    /* A path that cannot be created is an open error naming the root. */
    char file[PATH_MAX];
    base_path(file, "plainfile");
    int fd = open(file, O_CREAT | O_WRONLY, 0644);
    REQUIRE(fd >= 0, "create %s", file);
    close(fd);
    const char *bad[1] = {file};
    ssd_config cb = {.cluster_name = CLUSTER, .instance = "cfg", .paths = bad, .limits = limits,
                     .n_paths = 1, .n_limits = 1};
    ssd_store *s = NULL;
    char msg[512] = "";
    int rc = ssd_open(&cb, &s, msg, sizeof msg);
    CHECK(rc == SSD_EIO && !s, "root under a file: rc %d", rc);
    CHECK(strstr(msg, "root ") && strstr(msg, "plainfile"), "root error message: %s", msg);
}

/* ---- 1000 bytes, direct and scratch ----------------------------------- */

static void test_1000_bytes(void)
{
    store_opts o = {.name = "small", .inst = "i0", .limit = 1 * MiB, .shards = 1};
    ssd_store *s = must_open(&o);
    ssd_guard *g = (ssd_guard *)1;
    CHECK(put(s, 1, 1000, &g) == SSD_OK && g, "write 1000 bytes");
    ssd_guard_release(g);
    ssd_stats st = stats(s);
    CHECK(st.used_bytes == 1024 && st.devices[0].used_bytes == 1024,
          "1000 bytes use %llu bytes, want 1024", (unsigned long long)st.used_bytes);
    CHECK(st.capacity_bytes == 1 * MiB && st.n_devices == 1, "capacity %llu",
          (unsigned long long)st.capacity_bytes);
    CHECK(st.entries == 1 && st.writes == 1, "entries %llu writes %llu",
          (unsigned long long)st.entries, (unsigned long long)st.writes);

    /* On disk: the payload, then 24 zero bytes, in shard-000 at offset 0. */
    char shard[PATH_MAX + 16], r[PATH_MAX];
    root_path(r, "small", "i0");
    snprintf(shard, sizeof shard, "%s/shard-000", r);
    struct stat fst;
    CHECK(stat(shard, &fst) == 0 && (uint64_t)fst.st_size == 1 * MiB,
          "shard file sized %lld", (long long)fst.st_size);
    CHECK((uint64_t)fst.st_blocks * 512 >= 1 * MiB, "shard file not reserved (%lld blocks)",
          (long long)fst.st_blocks);
    int fd = open(shard, O_RDONLY);
    REQUIRE(fd >= 0, "open %s", shard);
    uint8_t disk[1024];
    REQUIRE(pread(fd, disk, sizeof disk, 0) == (ssize_t)sizeof disk, "pread");
    close(fd);
    CHECK(matches(1, disk, 1000), "payload on disk");
    bool zero = true;
    for (int i = 1000; i < 1024; i++)
        zero = zero && disk[i] == 0;
    CHECK(zero, "padding not zeroed");

    /* Direct: aligned address, capacity covers 1024: padding lands too. */
    uint8_t *buf = aligned(8192);
    memset(buf, 0xAA, 8192);
    bool ok;
    CHECK(get_into(s, 1, 1000, buf, 4096, &ok) == SSD_OK && ok, "direct read");
    CHECK(buf[1000] == 0 && buf[1023] == 0 && buf[1024] == 0xAA, "direct read reads 1024");

    /* Scratch with capacity exactly 1000: exactly 1000 bytes appear. */
    memset(buf, 0xAA, 8192);
    CHECK(get_into(s, 1, 1000, buf, 1000, &ok) == SSD_OK && ok, "scratch read");
    CHECK(buf[1000] == 0xAA && buf[1023] == 0xAA, "scratch read wrote past len");
    st = stats(s);
    CHECK(st.direct_reads == 1 && st.scratch_reads == 1, "direct %llu scratch %llu",
          (unsigned long long)st.direct_reads, (unsigned long long)st.scratch_reads);

    /* Wrong length, short capacity, absent version, too big for a shard. */
    CHECK(get_into(s, 1, 999, buf, 4096, NULL) == SSD_EINVAL, "length mismatch");
    CHECK(get_into(s, 1, 1000, buf, 999, NULL) == SSD_EINVAL, "capacity under len");
    char k[32];
    key_of(k, 1);
    ssd_put_id other = pid_of(1);
    other.version++;
    CHECK(ssd_load_into_addr(s, k, strlen(k), other, buf, 1000, 4096) == SSD_ENOTFOUND,
          "another put_id is not found");
    CHECK(put(s, 2, 1 * MiB + 1, NULL) == SSD_E2BIG, "value over the shard size");
    CHECK(stats(s).entries == 1, "E2BIG changed the index");

    /* The same (key, put_id) again replaces the entry; an empty value works. */
    CHECK(put(s, 1, 1000, NULL) == SSD_OK, "rewrite");
    CHECK(stats(s).entries == 1, "a rewrite adds an entry");
    CHECK(get(s, 1, 1000, &ok) == SSD_OK && ok, "read after rewrite");
    CHECK(put(s, 3, 0, NULL) == SSD_OK, "empty value");
    CHECK(get_into(s, 3, 0, buf, 0, NULL) == SSD_OK, "read empty value");
    free(buf);
    ssd_close(s);

    /* iovec mode, the comparison path, does the same. */
    store_opts ov = {.name = "small", .inst = "iov", .limit = 1 * MiB, .shards = 2,
                     .iovec = true};
    s = must_open(&ov);
    for (unsigned i = 0; i < 8; i++)
        CHECK(put(s, i, 3000 + i, NULL) == SSD_OK, "iovec write %u", i);
    for (unsigned i = 0; i < 8; i++)
        CHECK(get(s, i, 3000 + i, &ok) == SSD_OK && ok, "iovec read %u", i);
    ssd_close(s);
}

typedef struct counts {
    uint64_t direct, scratch;
} counts;

static counts delta(ssd_store *s, counts *prev)
{
    ssd_stats st = stats(s);
    counts d = {st.direct_reads - prev->direct, st.scratch_reads - prev->scratch};
    prev->direct = st.direct_reads;
    prev->scratch = st.scratch_reads;
    return d;
}

static void test_direct_vs_scratch(void)
{
    store_opts o = {.name = "dvs", .inst = "i0", .limit = 1 * MiB, .shards = 1};
    ssd_store *s = must_open(&o);
    REQUIRE(put(s, 1, 1000, NULL) == SSD_OK, "write 1000");
    REQUIRE(put(s, 2, 1500, NULL) == SSD_OK, "write 1500");
    REQUIRE(put(s, 3, 2048, NULL) == SSD_OK, "write 2048");
    uint8_t *base = aligned(16384);
    counts c = {0, 0}, d;
    bool ok;
    consumer cs;
    delta(s, &c);

    /* Whole value: all conditions hold -> direct. */
    CHECK(get_into(s, 1, 1000, base, 1024, &ok) == SSD_OK && ok, "all aligned");
    d = delta(s, &c);
    CHECK(d.direct == 1 && d.scratch == 0, "all aligned: direct %llu scratch %llu",
          (unsigned long long)d.direct, (unsigned long long)d.scratch);
    /* Address off by 8 -> scratch. */
    CHECK(get_into(s, 1, 1000, base + 8, 4096, &ok) == SSD_OK && ok, "misaligned address");
    d = delta(s, &c);
    CHECK(d.direct == 0 && d.scratch == 1, "misaligned address: direct %llu scratch %llu",
          (unsigned long long)d.direct, (unsigned long long)d.scratch);
    /* Capacity one byte short of the aligned length -> scratch. */
    CHECK(get_into(s, 1, 1000, base, 1023, &ok) == SSD_OK && ok, "short capacity");
    d = delta(s, &c);
    CHECK(d.direct == 0 && d.scratch == 1, "short capacity: direct %llu scratch %llu",
          (unsigned long long)d.direct, (unsigned long long)d.scratch);

    /* Chunks. 512-byte chunks of 1500 bytes, aligned, room for 1536: direct x3. */
    CHECK(get_chunks(s, 2, 1500, base, 1536, 512, 2, 0, 0, &cs) == SSD_OK &&
              matches(2, base, 1500) && cs.last_status == SSD_OK,
          "aligned chunks");
    d = delta(s, &c);
    CHECK(d.direct == 3 && d.scratch == 0, "aligned chunks: direct %llu scratch %llu",
          (unsigned long long)d.direct, (unsigned long long)d.scratch);
    /* Capacity 1500: the last chunk's aligned read does not fit -> it alone is
     * scratch. */
    CHECK(get_chunks(s, 2, 1500, base, 1500, 512, 2, 0, 0, &cs) == SSD_OK &&
              matches(2, base, 1500),
          "chunks, capacity = len");
    d = delta(s, &c);
    CHECK(d.direct == 2 && d.scratch == 1, "capacity = len: direct %llu scratch %llu",
          (unsigned long long)d.direct, (unsigned long long)d.scratch);
    /* Chunk length 1000 over 2048 bytes: chunk 0 ([0,1000)) fails only the
     * length condition (address and file offset aligned, capacity ample);
     * chunks 1 and 2 are misaligned too -> all scratch. Same value with
     * 1024-byte chunks -> all direct. */
    CHECK(get_chunks(s, 3, 2048, base, 4096, 1000, 4, 0, 0, &cs) == SSD_OK &&
              matches(3, base, 2048) && cs.chunks == 3,
          "unaligned chunk length");
    d = delta(s, &c);
    CHECK(d.direct == 0 && d.scratch == 3, "unaligned length: direct %llu scratch %llu",
          (unsigned long long)d.direct, (unsigned long long)d.scratch);
    CHECK(get_chunks(s, 3, 2048, base, 4096, 1024, 4, 0, 0, &cs) == SSD_OK &&
              matches(3, base, 2048) && cs.chunks == 2,
          "aligned chunk length");
    d = delta(s, &c);
    CHECK(d.direct == 2 && d.scratch == 0, "aligned length: direct %llu scratch %llu",
          (unsigned long long)d.direct, (unsigned long long)d.scratch);
    /* File offset: 600-byte chunks of 1000 bytes into base + 424. Chunk 1
     * ([600,1000), the last) lands at base + 1024 (aligned), reads 512 bytes
     * (aligned) with ample capacity, but starts at file offset 600 -> scratch,
     * like chunk 0 (misaligned address). */
    CHECK(get_chunks(s, 1, 1000, base + 424, 8192, 600, 2, 0, 0, &cs) == SSD_OK &&
              matches(1, base + 424, 1000),
          "misaligned file offset");
    d = delta(s, &c);
    CHECK(d.direct == 0 && d.scratch == 2, "misaligned offset: direct %llu scratch %llu",
          (unsigned long long)d.direct, (unsigned long long)d.scratch);
    free(base);
    ssd_close(s);
}

/* ---- evictions, guards and pins ----------------------------------------- */

static void test_evictions_once(void)
{
    /* One 8 KiB shard holds eight 1024-byte values. */
    store_opts o = {.name = "evict", .inst = "i0", .limit = 8 * KiB, .shards = 1};
    ssd_store *s = must_open(&o);
    const unsigned n = 100;
    CHECK(put(s, 0, 1000, NULL) == SSD_OK, "write 0");
    CHECK(put(s, 0, 1000, NULL) == SSD_OK, "rewrite 0 (one key, two records)");
    for (unsigned i = 1; i < n; i++)
        CHECK(put(s, i, 1000, NULL) == SSD_OK, "write %u", i);
    unsigned seen[100] = {0};
    ssd_eviction ev[7];
    size_t got, total = 0;
    bool in_order = true;
    while ((got = ssd_pop_evictions(s, ev, 7)) > 0) {
        for (size_t j = 0; j < got; j++) {
            unsigned i = 0;
            CHECK(ev[j].klen == 12 && sscanf(ev[j].key, "key-%08u", &i) == 1 && i < n,
                  "evicted key %.*s", (int)ev[j].klen, ev[j].key);
            if (i < n) {
                seen[i]++;
                CHECK(ev[j].pid.time_ms == pid_of(i).time_ms &&
                          ev[j].pid.version == pid_of(i).version,
                      "evicted put_id of %u", i);
                in_order = in_order && i == total;
            }
            total++;
            free(ev[j].key);
        }
    }
    unsigned once = 0, twice = 0;
    for (unsigned i = 0; i < n; i++) {
        once += seen[i] == 1;
        twice += seen[i] > 1;
    }
    /* 101 records, 8 left: 93 evicted, one of them the replaced record of
     * key 0 (not reported: its successor was still indexed). */
    CHECK(total == n - 8 && once == n - 8 && twice == 0 && in_order,
          "evictions: total %zu once %u twice %u in order %d", total, once, twice, in_order);
    for (unsigned i = 0; i < n - 8; i++)
        CHECK(seen[i] == 1, "key %u not reported", i);
    ssd_stats st = stats(s);
    CHECK(st.evictions == n - 8 && st.evictions_dropped == 0 && st.entries == 8,
          "stats: evictions %llu dropped %llu entries %llu", (unsigned long long)st.evictions,
          (unsigned long long)st.evictions_dropped, (unsigned long long)st.entries);
    bool ok;
    CHECK(get(s, 0, 1000, NULL) == SSD_ENOTFOUND, "evicted key 0 still found");
    CHECK(get(s, n - 1, 1000, &ok) == SSD_OK && ok, "newest key");

    /* One 8 KiB value evicts all eight at once: reported oldest first. */
    CHECK(put(s, 1000, 8192, NULL) == SSD_OK, "8 KiB write");
    got = ssd_pop_evictions(s, ev, 7);
    ssd_eviction last;
    CHECK(got == 7 && ssd_pop_evictions(s, &last, 1) == 1, "popped %zu + 1", got);
    for (size_t j = 0; j < got; j++) {
        char want[32];
        key_of(want, n - 8 + (unsigned)j);
        CHECK(!strcmp(ev[j].key, want), "eviction %zu is %s, want %s", j, ev[j].key, want);
        free(ev[j].key);
    }
    CHECK(got == 7 && !strcmp(last.key, "key-00000099"), "last eviction %s", last.key);
    free(last.key);
    CHECK(ssd_pop_evictions(s, ev, 7) == 0, "more evictions than entries");
    ssd_close(s);

    /* A full queue drops (and counts) instead of blocking writes. */
    store_opts o2 = {.name = "evict", .inst = "i1", .limit = 8 * KiB, .shards = 1,
                     .evq_cap = 10};
    s = must_open(&o2);
    for (unsigned i = 0; i < 50; i++)
        CHECK(put(s, i, 1000, NULL) == SSD_OK, "write %u", i);
    st = stats(s);
    CHECK(st.evictions == 42 && st.evictions_dropped == 32, "bounded queue: %llu / %llu",
          (unsigned long long)st.evictions, (unsigned long long)st.evictions_dropped);
    ssd_eviction ev2[64];
    got = ssd_pop_evictions(s, ev2, 64);
    CHECK(got == 10, "popped %zu of a 10-entry queue", got);
    for (size_t j = 0; j < got; j++)
        free(ev2[j].key);
    ssd_close(s);
}

typedef struct writer_arg {
    ssd_store *s;
    unsigned first, n;
    uint64_t len;
    atomic_uint done;
    int last_rc;
} writer_arg;

static void *writer(void *arg)
{
    writer_arg *w = arg;
    for (unsigned i = 0; i < w->n; i++) {
        w->last_rc = put(w->s, w->first + i, w->len, NULL);
        if (w->last_rc != SSD_OK)
            break;
        atomic_fetch_add(&w->done, 1);
    }
    return NULL;
}

typedef struct load_arg {
    ssd_store *s;
    unsigned i;
    uint64_t len;
    uint8_t *buf;
    ssd_chunk_queue *q;
    int rc;
} load_arg;

/* A chunked load of 512-byte chunks into buf; the test pops. */
static void *loader(void *arg)
{
    load_arg *a = arg;
    char k[32];
    key_of(k, a->i);
    a->rc = ssd_load_into_addr_chunks(a->s, k, strlen(k), pid_of(a->i), a->buf, a->len, a->len,
                                      512, 1, a->q);
    return NULL;
}

static void test_pins_block_the_ring(void)
{
    store_opts o = {.name = "pins", .inst = "i0", .limit = 8 * KiB, .shards = 1};
    ssd_store *s = must_open(&o);
    ssd_guard *g = NULL;
    REQUIRE(put(s, 0, 1000, &g) == SSD_OK && g, "guarded write");

    /* Seven more fit; the eighth needs key 0's space and waits for the guard. */
    writer_arg w = {.s = s, .first = 1, .n = 20, .len = 1000};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, writer, &w) == 0, "pthread_create");
    unsigned got = settle(&w.done, 7);
    CHECK(got == 7, "writer got %u writes past a guarded entry", got);
    bool ok;
    CHECK(get(s, 0, 1000, &ok) == SSD_OK && ok, "guarded entry overwritten");
    ssd_guard_release(g);
    pthread_join(th, NULL);
    CHECK(atomic_load(&w.done) == 20 && w.last_rc == SSD_OK, "writer after release: %u, %d",
          atomic_load(&w.done), w.last_rc);
    CHECK(get(s, 0, 1000, NULL) == SSD_ENOTFOUND, "key 0 survived the wrap");

    /* A read pin: a chunked load whose consumer has not popped yet holds it
     * (4 KiB in 512-byte chunks through a 1-slot queue). The ring holds four
     * 1 KiB entries and then the 4 KiB one, so a writer gets four writes in
     * and then waits for the pin. */
    unsigned k = 100;
    REQUIRE(put(s, k, 4096, NULL) == SSD_OK, "write 4 KiB");
    load_arg la = {.s = s, .i = k, .len = 4096, .buf = aligned(4096),
                   .q = ssd_chunk_queue_new(1)};
    pthread_t lt;
    REQUIRE(pthread_create(&lt, NULL, loader, &la) == 0, "pthread_create");
    /* The first chunk proves the pin; the loader then blocks on a full queue. */
    ssd_chunk ch = ssd_chunk_queue_pop(la.q);
    CHECK(!ch.last && ch.offset == 0 && ch.len == 512, "first chunk");
    uint64_t covered = ch.len;
    bool in_order = true;
    writer_arg w2 = {.s = s, .first = 200, .n = 20, .len = 1000};
    REQUIRE(pthread_create(&th, NULL, writer, &w2) == 0, "pthread_create");
    got = settle(&w2.done, 4);
    CHECK(got == 4, "writer got %u writes past a read pin", got);
    while (!(ch = ssd_chunk_queue_pop(la.q)).last) {
        in_order = in_order && ch.offset == covered;
        covered = ch.offset + ch.len;
    }
    pthread_join(lt, NULL);
    CHECK(ch.status == SSD_OK && la.rc == SSD_OK && in_order && covered == 4096 &&
              matches(k, la.buf, 4096),
          "pinned load: status %d rc %d covered %llu", ch.status, la.rc,
          (unsigned long long)covered);
    pthread_join(th, NULL);
    CHECK(atomic_load(&w2.done) == 20 && w2.last_rc == SSD_OK, "writer after unpin: %u, %d",
          atomic_load(&w2.done), w2.last_rc);
    ssd_chunk_queue_free(la.q);
    free(la.buf);
    ssd_close(s);
}

/* ---- wraparound under concurrent readers -------------------------------- */

#define WRAP_LIMIT (256 * KiB)
#define WRAP_KEYS 4096u

static uint64_t wrap_len(unsigned i)
{
    unsigned long long x = i * 2654435761ull + 1;
    return 1 + test_rand(&x) % 12000;
}

typedef struct wrap_ctx {
    ssd_store *s;
    atomic_uint next_key;     /* next key to write */
    atomic_uint high;         /* keys below this were handed out */
    _Atomic uint64_t written; /* aligned bytes committed */
    atomic_bool writing;
    atomic_uchar committed[WRAP_KEYS];
    atomic_uint write_fail, reads_ok, reads_nf, reads_bad;
} wrap_ctx;

static void *wrap_writer(void *arg)
{
    wrap_ctx *c = arg;
    /* At least 5x the capacity, and long enough for the readers to get many
     * loads in (each pinning its entry while the writers wrap). */
    while (atomic_load(&c->written) < 5 * WRAP_LIMIT + WRAP_LIMIT / 2 ||
           atomic_load(&c->reads_ok) + atomic_load(&c->reads_nf) < 600) {
        unsigned i = atomic_fetch_add(&c->next_key, 1);
        if (i >= WRAP_KEYS)
            break;
        atomic_store(&c->high, i + 1);
        uint64_t len = wrap_len(i);
        if (put(c->s, i, len, NULL) != SSD_OK) {
            atomic_fetch_add(&c->write_fail, 1);
            continue;
        }
        atomic_store(&c->committed[i], 1);
        atomic_fetch_add(&c->written, (len + 511) & ~511ull);
    }
    return NULL;
}

static void *wrap_reader(void *arg)
{
    wrap_ctx *c = arg;
    unsigned long long rnd = (unsigned long long)(uintptr_t)&rnd | 1;
    uint8_t *buf = aligned(16 * KiB);
    while (atomic_load(&c->writing)) {
        unsigned high = atomic_load(&c->high);
        if (high == 0)
            continue;
        unsigned back = (unsigned)(test_rand(&rnd) % 48);
        unsigned i = back < high ? high - 1 - back : 0;
        uint64_t len = wrap_len(i);
        int mode = (int)(test_rand(&rnd) % 3), rc;
        bool ok = true;
        if (mode == 0) { /* direct */
            rc = get_into(c->s, i, len, buf, 16 * KiB, &ok);
        } else if (mode == 1) { /* scratch */
            rc = get_into(c->s, i, len, buf + 24, 16 * KiB - 24, &ok);
        } else { /* chunked, slow consumer: the pin stays while writers wrap */
            consumer cs;
            rc = get_chunks(c->s, i, len, buf, 16 * KiB, 1024, 2, 2, 1, &cs);
            ok = rc == cs.last_status && (rc != SSD_OK || (cs.in_order && cs.covered == len &&
                                                           matches(i, buf, len)));
        }
        if (rc == SSD_OK && ok)
            atomic_fetch_add(&c->reads_ok, 1);
        else if (rc == SSD_ENOTFOUND && ok)
            atomic_fetch_add(&c->reads_nf, 1);
        else
            atomic_fetch_add(&c->reads_bad, 1);
    }
    free(buf);
    return NULL;
}

static void test_wraparound(void)
{
    store_opts o = {.name = "wrap", .inst = "i0", .limit = WRAP_LIMIT, .shards = 2};
    wrap_ctx *c = calloc(1, sizeof *c);
    c->s = must_open(&o);
    atomic_store(&c->writing, true);
    enum { WRITERS = 2, READERS = 3 };
    pthread_t w[WRITERS], r[READERS];
    for (int i = 0; i < READERS; i++)
        REQUIRE(pthread_create(&r[i], NULL, wrap_reader, c) == 0, "pthread_create");
    for (int i = 0; i < WRITERS; i++)
        REQUIRE(pthread_create(&w[i], NULL, wrap_writer, c) == 0, "pthread_create");
    for (int i = 0; i < WRITERS; i++)
        pthread_join(w[i], NULL);
    atomic_store(&c->writing, false);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);

    ssd_stats st = stats(c->s);
    uint64_t written = atomic_load(&c->written);
    CHECK(written >= 5 * st.capacity_bytes, "wrote %llu bytes over %llu of capacity",
          (unsigned long long)written, (unsigned long long)st.capacity_bytes);
    CHECK(atomic_load(&c->write_fail) == 0, "%u writes failed", atomic_load(&c->write_fail));
    CHECK(atomic_load(&c->reads_bad) == 0, "%u reads returned wrong bytes or errors",
          atomic_load(&c->reads_bad));
    CHECK(atomic_load(&c->reads_ok) > 0, "no read succeeded (%u not found)",
          atomic_load(&c->reads_nf));
    /* A pinned entry overwritten under a read would show as a checksum
     * failure or a stale read (or wrong bytes above). */
    CHECK(st.checksum_failures == 0 && st.stale_reads == 0, "checksum %llu stale %llu",
          (unsigned long long)st.checksum_failures, (unsigned long long)st.stale_reads);
    printf("wraparound: %llu bytes written (%.1fx capacity), reads ok %u, not found %u\n",
           (unsigned long long)written, (double)written / (double)st.capacity_bytes,
           atomic_load(&c->reads_ok), atomic_load(&c->reads_nf));

    /* Every committed key is either reported evicted exactly once (and gone)
     * or still readable. */
    unsigned n = atomic_load(&c->next_key);
    if (n > WRAP_KEYS)
        n = WRAP_KEYS;
    unsigned char *seen = calloc(WRAP_KEYS, 1);
    ssd_eviction ev[100];
    size_t got, total = 0, dup = 0, bad = 0;
    while ((got = ssd_pop_evictions(c->s, ev, 100)) > 0) {
        for (size_t j = 0; j < got; j++) {
            unsigned i = WRAP_KEYS;
            if (sscanf(ev[j].key, "key-%08u", &i) != 1 || i >= n || !c->committed[i])
                bad++;
            else if (seen[i]++)
                dup++;
            free(ev[j].key);
        }
        total += got;
    }
    CHECK(dup == 0 && bad == 0, "evictions: %zu reported twice, %zu unknown", dup, bad);
    CHECK(total == st.evictions && st.evictions_dropped == 0, "popped %zu of %llu", total,
          (unsigned long long)st.evictions);
    CHECK(st.entries + st.evictions == st.writes, "entries %llu + evictions %llu != writes %llu",
          (unsigned long long)st.entries, (unsigned long long)st.evictions,
          (unsigned long long)st.writes);
    unsigned wrong = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!c->committed[i])
            continue;
        bool ok;
        int rc = get(c->s, i, wrap_len(i), &ok);
        if (seen[i] ? rc != SSD_ENOTFOUND : rc != SSD_OK || !ok)
            wrong++;
    }
    CHECK(wrong == 0, "%u keys disagree with the eviction reports", wrong);
    free(seen);
    ssd_close(c->s);
    free(c);
}

/* ---- stale re-check, de-duplication, root lock -------------------------- */

static void test_stale_recheck(void)
{
    store_opts o = {.name = "stale", .inst = "i0", .limit = 64 * KiB, .shards = 1};
    ssd_store *s = must_open(&o);
    REQUIRE(put(s, 1, 5000, NULL) == SSD_OK && put(s, 2, 5000, NULL) == SSD_OK, "writes");
    bool ok;
    ssd_test_stale_next_reads(s, 1);
    CHECK(get(s, 1, 5000, NULL) == SSD_ENOTFOUND, "stale read not refused");
    ssd_stats st = stats(s);
    CHECK(st.stale_reads == 1 && st.entries == 1, "stale %llu entries %llu",
          (unsigned long long)st.stale_reads, (unsigned long long)st.entries);
    CHECK(get(s, 1, 5000, NULL) == SSD_ENOTFOUND, "stale entry not dropped");
    CHECK(stats(s).stale_reads == 1, "the second miss re-checked");

    uint8_t *buf = aligned(8192);
    consumer cs;
    ssd_test_stale_next_reads(s, 1);
    int rc = get_chunks(s, 2, 5000, buf, 8192, 1024, 2, 0, 0, &cs);
    CHECK(rc == SSD_ENOTFOUND && cs.last_status == SSD_ENOTFOUND, "stale chunk: %d / %d", rc,
          cs.last_status);
    CHECK(get(s, 2, 5000, &ok) == SSD_ENOTFOUND && stats(s).entries == 0, "chunk-stale kept");
    free(buf);

    /* Dropped entries leave the ring like any other but are not reported. */
    for (unsigned i = 10; i < 80; i++)
        CHECK(put(s, i, 1000, NULL) == SSD_OK, "write %u", i);
    ssd_eviction ev[128];
    size_t got = ssd_pop_evictions(s, ev, 128);
    CHECK(got > 0, "no evictions");
    for (size_t j = 0; j < got; j++) {
        CHECK(strcmp(ev[j].key, "key-00000001") && strcmp(ev[j].key, "key-00000002"),
              "dropped entry %s reported", ev[j].key);
        free(ev[j].key);
    }
    ssd_close(s);
}

static void test_dedup(void)
{
    char a[PATH_MAX], b[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];
    base_path(a, "da");
    base_path(b, "db/");
    root_path(ra, "da", "dd");
    root_path(rb, "db", "dd");
    const char *paths[2] = {a, b};
    uint64_t limits[2] = {64 * KiB, 128 * KiB};
    ssd_config c = {.cluster_name = CLUSTER, .instance = "dd", .paths = paths, .limits = limits,
                    .n_paths = 2, .n_limits = 2, .shards_per_device = 1};
    ssd_store *s = NULL;
    char err[512];
    REQUIRE(ssd_open(&c, &s, err, sizeof err) == SSD_OK, "open: %s", err);
    ssd_stats st = stats(s);
    CHECK(st.n_devices == 1, "two roots on one file system gave %zu devices", st.n_devices);
    CHECK(strcmp(st.devices[0].root, ra) == 0, "kept root %s, want %s", st.devices[0].root, ra);
    CHECK(st.capacity_bytes == 64 * KiB, "capacity %llu, want the first root's limit",
          (unsigned long long)st.capacity_bytes);
    struct stat fs;
    char f[PATH_MAX + 16];
    CHECK(stat(rb, &fs) == 0 && S_ISDIR(fs.st_mode), "second root %s not created", rb);
    snprintf(f, sizeof f, "%s/shard-000", rb);
    CHECK(stat(f, &fs) != 0, "the de-duplicated root got a shard file");
    snprintf(f, sizeof f, "%s/shard-000", ra);
    CHECK(stat(f, &fs) == 0, "the kept root has no shard file");
    for (unsigned i = 0; i < 10; i++)
        CHECK(put(s, i, 2000, NULL) == SSD_OK, "write %u", i);
    ssd_close(s);
    snprintf(f, sizeof f, "%s/shard-000", ra);
    CHECK(stat(f, &fs) != 0, "close removed the shard files (%s is left)", f);

    /* A small limit gets fewer shards rather than empty ones. */
    store_opts o = {.name = "da", .inst = "few", .limit = 1536, .shards = 4};
    s = must_open(&o);
    st = stats(s);
    CHECK(st.capacity_bytes == 1536, "capacity %llu", (unsigned long long)st.capacity_bytes);
    CHECK(put(s, 1, 512, NULL) == SSD_OK && put(s, 2, 513, NULL) == SSD_E2BIG, "512-byte shards");
    ssd_close(s);
}

static void test_root_lock(void)
{
    store_opts o = {.name = "lock", .inst = "i0", .limit = 64 * KiB, .shards = 2};
    ssd_store *s1 = must_open(&o);
    REQUIRE(put(s1, 1, 3000, NULL) == SSD_OK, "write");
    ssd_store *s2 = NULL;
    char err[512] = "", r[PATH_MAX];
    root_path(r, "lock", "i0");
    int rc = try_open(&o, &s2, err, sizeof err);
    CHECK(rc == SSD_EIO && s2 == NULL, "second open of a locked root: %d", rc);
    CHECK(strstr(err, "locked by another owner") && strstr(err, r), "lock message: %s", err);
    /* The refused open truncated nothing and removed nothing (s1 reads
     * through its open files, so also look at the path). */
    bool ok;
    CHECK(get(s1, 1, 3000, &ok) == SSD_OK && ok, "first store damaged by the second open");
    char shard[PATH_MAX + 16];
    struct stat sst;
    snprintf(shard, sizeof shard, "%s/shard-000", r);
    CHECK(stat(shard, &sst) == 0 && sst.st_size > 0, "the refused open removed %s", shard);
    /* Another instance on the same path is another root. */
    store_opts o2 = o;
    o2.inst = "i1";
    s2 = must_open(&o2);
    ssd_close(s2);
    ssd_close(s1);
    s1 = must_open(&o); /* the lock went with the store */
    CHECK(get(s1, 1, 3000, NULL) == SSD_ENOTFOUND, "no recovery: a new store starts empty");
    ssd_close(s1);
}

/* ---- checksum ------------------------------------------------------------ */

static void test_checksum(void)
{
    store_opts o = {.name = "sum", .inst = "i0", .limit = 1 * MiB, .shards = 1};
    ssd_store *s = must_open(&o);
    char shard[PATH_MAX + 16], r[PATH_MAX];
    root_path(r, "sum", "i0");
    snprintf(shard, sizeof shard, "%s/shard-000", r);
    /* Layout of the one shard: 0 at 0, 1 at 4096, 2 at 8192, 3 at 18432. */
    REQUIRE(put(s, 0, 4096, NULL) == SSD_OK && put(s, 1, 3000, NULL) == SSD_OK &&
                put(s, 2, 10240, NULL) == SSD_OK && put(s, 3, 2000, NULL) == SSD_OK,
            "writes");
    uint8_t *buf = aligned(16 * KiB);
    bool ok;

    /* Value 1 reused value 0's pooled buffer: its padding is still zeroed. */
    int fd = open(shard, O_RDONLY);
    REQUIRE(fd >= 0, "open %s", shard);
    uint8_t pad[72];
    REQUIRE(pread(fd, pad, sizeof pad, 4096 + 3000) == (ssize_t)sizeof pad, "pread");
    close(fd);
    bool zero = true;
    for (size_t i = 0; i < sizeof pad; i++)
        zero = zero && pad[i] == 0;
    CHECK(zero, "padding of a reused buffer not zeroed");

    flip_byte(shard, 100);
    memset(buf, 0, 4096);
    CHECK(get_into(s, 0, 4096, buf, 4096, NULL) == SSD_ENOTFOUND, "flipped byte not caught");
    ssd_stats st = stats(s);
    CHECK(st.checksum_failures == 1 && st.entries == 3, "checksum %llu entries %llu",
          (unsigned long long)st.checksum_failures, (unsigned long long)st.entries);
    CHECK(get(s, 0, 4096, NULL) == SSD_ENOTFOUND && stats(s).checksum_failures == 1,
          "corrupt entry not dropped");

    /* Padding is not payload: a flip there changes nothing a reader sees. */
    flip_byte(shard, 4096 + 3000 + 5);
    CHECK(get(s, 1, 3000, &ok) == SSD_OK && ok, "a flip in the padding failed the read");

    /* Chunked: the last item says not found. */
    flip_byte(shard, 8192 + 9000);
    consumer cs;
    int rc = get_chunks(s, 2, 10240, buf, 16 * KiB, 4096, 2, 0, 0, &cs);
    CHECK(rc == SSD_ENOTFOUND && cs.last_status == SSD_ENOTFOUND && cs.in_order,
          "corrupt chunked load: %d / %d", rc, cs.last_status);

    /* Scratch path: same. */
    flip_byte(shard, 18432 + 10);
    CHECK(get_into(s, 3, 2000, buf + 8, 4000, NULL) == SSD_ENOTFOUND, "scratch corrupt");
    st = stats(s);
    CHECK(st.checksum_failures == 3 && st.entries == 1, "checksum %llu entries %llu",
          (unsigned long long)st.checksum_failures, (unsigned long long)st.entries);
    free(buf);
    ssd_close(s);
}

/* ---- failpoints ---------------------------------------------------------- */

static void test_failpoints(void)
{
    store_opts o = {.name = "fp", .inst = "i0", .limit = 64 * KiB, .shards = 1};
    ssd_store *s = must_open(&o);
    uring_engine *eng = ssd_test_engine(s, 0);
    REQUIRE(eng != NULL && ssd_test_engine(s, 1) == NULL, "ssd_test_engine");
    const int kinds[3] = {URING_FP_SUBMIT_EIO, URING_FP_COMPLETE_EIO, URING_FP_SHORT};
    const char *names[3] = {"submit -EIO", "complete -EIO", "short"};
    bool ok;

    for (int k = 0; k < 3; k++) {
        uring_failpoint(eng, URING_WRITE, kinds[k], 1);
        ssd_guard *g = (ssd_guard *)1;
        CHECK(put(s, (unsigned)k, 3000, &g) == SSD_EIO && g == NULL, "write, %s", names[k]);
        CHECK(get(s, (unsigned)k, 3000, NULL) == SSD_ENOTFOUND, "failed write %s committed",
              names[k]);
    }
    ssd_stats st = stats(s);
    CHECK(st.write_errors == 3 && st.entries == 0 && st.writes == 0, "errors %llu entries %llu",
          (unsigned long long)st.write_errors, (unsigned long long)st.entries);

    REQUIRE(put(s, 10, 3000, NULL) == SSD_OK, "write after failures");
    for (int k = 0; k < 3; k++) {
        uring_failpoint(eng, URING_READ, kinds[k], 1);
        CHECK(get(s, 10, 3000, NULL) == SSD_EIO, "read, %s", names[k]);
        CHECK(get(s, 10, 3000, &ok) == SSD_OK && ok, "entry lost after a read %s", names[k]);
        uring_failpoint(eng, URING_READ, kinds[k], 1);
        uint8_t *b = aligned(4096);
        CHECK(get_into(s, 10, 3000, b + 4, 4000, NULL) == SSD_EIO, "scratch read, %s",
              names[k]);
        free(b);
    }
    uint8_t *buf = aligned(4096);
    consumer cs;
    uring_failpoint(eng, URING_READ, URING_FP_COMPLETE_EIO, 1);
    int rc = get_chunks(s, 10, 3000, buf, 4096, 1024, 3, 0, 0, &cs);
    CHECK(rc == SSD_EIO && cs.last_status == SSD_EIO, "chunked read -EIO: %d / %d", rc,
          cs.last_status);
    free(buf);
    st = stats(s);
    CHECK(st.read_errors == 7 && st.checksum_failures == 0 && st.entries == 1,
          "read errors %llu", (unsigned long long)st.read_errors);

    /* The engine and the ring keep going: aborted entries are passed. */
    for (unsigned i = 100; i < 300; i++)
        CHECK(put(s, i, 1000 + i, NULL) == SSD_OK, "write %u after failures", i);
    CHECK(get(s, 299, 1299, &ok) == SSD_OK && ok, "read after failures");
    ssd_close(s);
}

/* ---- chunked loads of large values -------------------------------------- */

static void test_chunked(void)
{
    store_opts o = {.name = "chunk", .inst = "i0", .limit = 64 * MiB, .shards = 1};
    ssd_store *s = must_open(&o);
    const uint64_t len = 10 * MiB + 123, alen = (len + 511) & ~511ull;
    REQUIRE(put(s, 1, len, NULL) == SSD_OK, "write 10 MiB");
    uint8_t *buf = aligned(alen + 4096);
    consumer cs;

    int rc = get_chunks(s, 1, len, buf, alen, 1 * MiB, 4, 8, 0, &cs);
    CHECK(rc == SSD_OK && cs.last_status == SSD_OK, "chunked: %d / %d", rc, cs.last_status);
    CHECK(cs.in_order && cs.covered == len && cs.chunks == 11 && cs.last_offset == len,
          "chunks: in order %d covered %llu count %u", cs.in_order,
          (unsigned long long)cs.covered, cs.chunks);
    CHECK(matches(1, buf, len), "chunked bytes");

    /* Defaults (4 MiB, 4 in flight, 8 slots) through scratch. */
    memset(buf, 0, alen + 4096);
    ssd_stats before = stats(s);
    rc = get_chunks(s, 1, len, buf + 100, alen, 0, 0, 0, 0, &cs);
    ssd_stats after = stats(s);
    CHECK(rc == SSD_OK && cs.chunks == 3 && cs.covered == len && matches(1, buf + 100, len),
          "default chunks through scratch: %d, %u chunks", rc, cs.chunks);
    CHECK(after.scratch_reads - before.scratch_reads == 3 &&
              after.direct_reads == before.direct_reads,
          "scratch chunks counted");
    CHECK(after.reader_loads == before.reader_loads,
          "a chunked load stays on the engine (%llu reader loads)",
          (unsigned long long)(after.reader_loads - before.reader_loads));

    /* The whole-value form, in 4 MiB pieces read straight into buf. */
    memset(buf, 0, alen);
    bool ok;
    before = stats(s);
    CHECK(get_into(s, 1, len, buf, alen, &ok) == SSD_OK && ok, "whole load of 10 MiB");
    after = stats(s);
    CHECK(after.direct_reads - before.direct_reads == 3 &&
              after.scratch_reads == before.scratch_reads,
          "whole load: %llu direct pieces, want 3",
          (unsigned long long)(after.direct_reads - before.direct_reads));
    CHECK(after.reader_loads - before.reader_loads == 1,
          "the whole load ran on the loading thread's reader (%llu reader loads, want 1)",
          (unsigned long long)(after.reader_loads - before.reader_loads));

    /* A consumer that never blocks on the queue: woken by the notify hook,
     * it takes chunks with try_pop (the owner's loop does this). */
    memset(buf, 0, alen);
    rc = get_chunks_polled(s, 1, len, buf, alen, &cs);
    CHECK(rc == SSD_OK && cs.last_status == SSD_OK && cs.in_order && cs.covered == len &&
              cs.chunks == 11 && matches(1, buf, len),
          "polled consumer: %d / %d, %u chunks, in order %d", rc, cs.last_status, cs.chunks,
          cs.in_order);

    /* The first piece fails while the later ones are in flight: the load
     * drains them and fails, whole (reader) and chunked (engine) alike, and
     * the entry stays readable. */
    const int kinds[3] = {URING_FP_SUBMIT_EIO, URING_FP_COMPLETE_EIO, URING_FP_SHORT};
    for (int k = 0; k < 3; k++) {
        uring_failpoint(ssd_test_engine(s, 0), URING_READ, kinds[k], 1);
        rc = get_into(s, 1, len, buf, alen, NULL);
        CHECK(rc == SSD_EIO, "whole load with a failed first piece (kind %d): %d", kinds[k], rc);
        uring_failpoint(ssd_test_engine(s, 0), URING_READ, kinds[k], 1);
        rc = get_chunks(s, 1, len, buf, alen, 1 * MiB, 4, 8, 0, &cs);
        CHECK(rc == SSD_EIO && cs.last_status == SSD_EIO,
              "chunked load with a failed first chunk (kind %d): %d / %d", kinds[k], rc,
              cs.last_status);
    }
    CHECK(get_into(s, 1, len, buf, alen, &ok) == SSD_OK && ok,
          "readable after the failed loads");

    /* A multi-piece write with one failed piece commits nothing. */
    uring_failpoint(ssd_test_engine(s, 0), URING_WRITE, URING_FP_COMPLETE_EIO, 1);
    CHECK(put(s, 2, 20 * MiB, NULL) == SSD_EIO, "20 MiB write with a failed piece");
    CHECK(get(s, 2, 20 * MiB, NULL) == SSD_ENOTFOUND, "partial write committed");
    CHECK(put(s, 2, 20 * MiB, NULL) == SSD_OK && get(s, 2, 20 * MiB, &ok) == SSD_OK && ok,
          "20 MiB write and read");

    /* Empty value: just the last item. */
    REQUIRE(put(s, 3, 0, NULL) == SSD_OK, "empty write");
    rc = get_chunks(s, 3, 0, buf, 0, 0, 0, 0, 0, &cs);
    CHECK(rc == SSD_OK && cs.chunks == 0 && cs.last_status == SSD_OK, "empty chunked load");
    CHECK(ssd_load_into_addr_chunks(s, "x", 1, pid_of(0), buf, 1, 1, 0, 0, NULL) == SSD_EINVAL,
          "no queue");
    rc = get_chunks(s, 999, 100, buf, 100, 0, 0, 0, 0, &cs);
    CHECK(rc == SSD_ENOTFOUND && cs.last_status == SSD_ENOTFOUND && cs.chunks == 0,
          "absent key: %d", rc);

    /* Corruption in the middle: the last item is not OK. */
    char shard[PATH_MAX + 16], r[PATH_MAX];
    root_path(r, "chunk", "i0");
    snprintf(shard, sizeof shard, "%s/shard-000", r);
    flip_byte(shard, 5 * MiB + 7);
    rc = get_chunks(s, 1, len, buf, alen, 1 * MiB, 4, 8, 0, &cs);
    CHECK(rc == SSD_ENOTFOUND && cs.last_status == SSD_ENOTFOUND && cs.in_order,
          "corrupt value: %d / %d", rc, cs.last_status);
    free(buf);
    ssd_close(s);
}

/* ---- a disk too small for the limit ------------------------------------ */

static void test_disk_too_small(void)
{
    /* RLIMIT_FSIZE stands in for a small disk: fallocate past it fails. */
    struct rlimit old, lim;
    REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0, "getrlimit");
    lim = old;
    lim.rlim_cur = 1 * MiB;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
    store_opts o = {.name = "tiny", .inst = "i0", .limit = 64 * MiB, .shards = 2};
    ssd_store *s = NULL;
    char err[512] = "", r[PATH_MAX];
    int rc = try_open(&o, &s, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    root_path(r, "tiny", "i0");
    CHECK(rc == SSD_EIO && s == NULL, "open past the disk: %d", rc);
    CHECK(strstr(err, r) && strstr(err, "reserve"), "message: %s", err);
    /* Nothing stayed locked. */
    o.limit = 64 * KiB;
    s = must_open(&o);
    ssd_close(s);
}

/* ---- close with a writer waiting ---------------------------------------- */

static void test_close_wakes_writers(void)
{
    store_opts o = {.name = "close", .inst = "i0", .limit = 8 * KiB, .shards = 1};
    ssd_store *s = must_open(&o);
    ssd_guard *g = NULL;
    REQUIRE(put(s, 0, 1000, &g) == SSD_OK, "guarded write");
    writer_arg w = {.s = s, .first = 1, .n = 20, .len = 1000};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, writer, &w) == 0, "pthread_create");
    /* Once it waits inside ssd_write (7 writes done, the 8th blocked). */
    CHECK(settle(&w.done, 7) == 7, "writer passed a guarded entry");
    ssd_close(s); /* the guard goes with the store */
    pthread_join(th, NULL);
    CHECK(atomic_load(&w.done) == 7 && w.last_rc == SSD_ECLOSED, "waiting writer: %u, %d",
          atomic_load(&w.done), w.last_rc);
}

int main(void)
{
    snprintf(g_base, sizeof g_base, "/var/tmp/fx_ssd_store_XXXXXX");
    if (!mkdtemp(g_base)) {
        perror("mkdtemp /var/tmp");
        return 1;
    }
    test_at_exit(cleanup, NULL);
    char probe[PATH_MAX];
    base_path(probe, "probe");
    int fd = open(probe, O_RDWR | O_CREAT | O_DIRECT, 0644);
    if (fd < 0 && errno == EINVAL) {
        printf("skip: %s refuses O_DIRECT\n", g_base);
        return 77;
    }
    REQUIRE(fd >= 0, "open %s: %s", probe, strerror(errno));
    close(fd);
    unlink(probe);
    store_opts o = {.name = "probe", .inst = "i0", .limit = 4096, .shards = 1};
    ssd_store *s = NULL;
    char err[512] = "";
    if (try_open(&o, &s, err, sizeof err) != SSD_OK && strstr(err, "io_uring")) {
        printf("skip: %s\n", err);
        return 77;
    }
    ssd_close(s);

    test_config_errors();
    test_1000_bytes();
    test_direct_vs_scratch();
    test_evictions_once();
    test_pins_block_the_ring();
    test_wraparound();
    test_stale_recheck();
    test_dedup();
    test_root_lock();
    test_checksum();
    test_failpoints();
    test_chunked();
    test_disk_too_small();
    test_close_wakes_writers();
    return test_finish();
}
