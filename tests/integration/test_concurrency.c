/*
 * test_concurrency.c - 8 threads put, get and delete the same 64 keys for
 * 10 s (FX_TEST_SECONDS to change) with self-verifying values: each value
 * carries its key, a version and a checksum of its payload, and every read
 * (including re-reads of holders kept alive across other threads' overwrites)
 * must verify. Each thread also owns one private key on which it checks
 * read-your-writes: the exact version it last put, or KeyNotFound after its
 * delete, never an older version from a cache.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "testlib.h"

#define THREADS 8
#define SHARED_KEYS 64
#define HOLD_MAX 4
#define MAGIC 0xF1C0C0DEF1C0C0DEULL

typedef struct value_hdr {
    uint64_t magic;
    uint64_t key_id;
    uint64_t version;
    uint64_t len;
    uint64_t checksum; /* of the bytes after the header */
} value_hdr;

static fx_client *client;
static atomic_long corrupt, reads, writes, deletes, misses, errors, ryw_fail;
static atomic_uint_fast64_t next_version = 1;
static double run_seconds = 10;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t make_value(uint8_t *buf, uint64_t key_id, uint64_t version, unsigned long long *rng)
{
    size_t len = sizeof(value_hdr) + test_rand(rng) % (test_rand(rng) % 8 == 0 ? (1u << 20) : 65536);
    unsigned long long s = version * 0x9E3779B97F4A7C15ULL;
    for (size_t i = sizeof(value_hdr); i < len; i++)
        buf[i] = (uint8_t)(test_rand(&s) >> 56);
    value_hdr h = {MAGIC, key_id, version, len, XXH3_64bits(buf + sizeof h, len - sizeof h)};
    memcpy(buf, &h, sizeof h);
    return len;
}

/* Returns the value's version, or 0 when the bytes do not verify. */
static uint64_t verify(const uint8_t *p, size_t len, uint64_t key_id)
{
    value_hdr h;
    if (len < sizeof h)
        return 0;
    memcpy(&h, p, sizeof h);
    if (h.magic != MAGIC || h.key_id != key_id || h.len != len)
        return 0;
    if (XXH3_64bits(p + sizeof h, len - sizeof h) != h.checksum)
        return 0;
    return h.version;
}

static int key_name(char *buf, uint64_t key_id)
{
    return snprintf(buf, 32, "cc-key-%llu", (unsigned long long)key_id);
}

typedef struct held {
    fx_holder *h;
    uint64_t key_id, version;
} held;

static void *worker(void *arg)
{
    int tid = (int)(intptr_t)arg;
    unsigned long long rng = 0x1234567ULL * (unsigned long long)(tid + 1);
    uint8_t *buf = malloc((1u << 20) + 4096);
    held holds[HOLD_MAX];
    int n_holds = 0;
    uint64_t own_key = SHARED_KEYS + (uint64_t)tid, own_version = 0; /* 0: deleted/absent */
    char key[32];
    double end = now_s() + run_seconds;
    while (now_s() < end) {
        unsigned op = (unsigned)(test_rand(&rng) % 100);
        bool own = op >= 90;
        uint64_t kid = own ? own_key : test_rand(&rng) % SHARED_KEYS;
        int klen = key_name(key, kid);
        op = own ? (unsigned)(test_rand(&rng) % 100) : op;
        if (op < 35) {
            uint64_t v = atomic_fetch_add(&next_version, 1);
            size_t len = make_value(buf, kid, v, &rng);
            int r = fx_put(client, key, (size_t)klen, buf, len);
            if (r == 0) {
                atomic_fetch_add(&writes, 1);
                if (own)
                    own_version = v;
            } else {
                atomic_fetch_add(&errors, 1);
                fprintf(stderr, "put: %s %s\n", fx_strerror(r), fx_last_error_detail());
            }
        } else if (op < 45) {
            int r = fx_delete(client, key, (size_t)klen);
            if (r == 0 || r == FX_ENOTFOUND) {
                atomic_fetch_add(&deletes, 1);
                if (own) {
                    if ((r == FX_ENOTFOUND) != (own_version == 0))
                        atomic_fetch_add(&ryw_fail, 1);
                    own_version = 0;
                }
            } else {
                atomic_fetch_add(&errors, 1);
            }
        } else {
            fx_holder *h = NULL;
            int r = fx_get(client, key, (size_t)klen, &h);
            if (r == FX_ENOTFOUND) {
                atomic_fetch_add(&misses, 1);
                if (own && own_version != 0)
                    atomic_fetch_add(&ryw_fail, 1);
                continue;
            }
            if (r) {
                atomic_fetch_add(&errors, 1);
                fprintf(stderr, "get: %s %s\n", fx_strerror(r), fx_last_error_detail());
                continue;
            }
            atomic_fetch_add(&reads, 1);
            uint64_t v = verify(fx_holder_data(h), fx_holder_len(h), kid);
            if (!v)
                atomic_fetch_add(&corrupt, 1);
            if (own && v != own_version)
                atomic_fetch_add(&ryw_fail, 1);
            if (n_holds < HOLD_MAX && test_rand(&rng) % 4 == 0) {
                holds[n_holds++] = (held){h, kid, v};
            } else {
                fx_holder_release(h);
            }
        }
        if (n_holds && test_rand(&rng) % 8 == 0) {
            int i = (int)(test_rand(&rng) % (unsigned)n_holds);
            /* A held value must be unchanged however it was overwritten since. */
            if (verify(fx_holder_data(holds[i].h), fx_holder_len(holds[i].h), holds[i].key_id) !=
                holds[i].version)
                atomic_fetch_add(&corrupt, 1);
            fx_holder_release(holds[i].h);
            holds[i] = holds[--n_holds];
        }
    }
    for (int i = 0; i < n_holds; i++) {
        if (verify(fx_holder_data(holds[i].h), fx_holder_len(holds[i].h), holds[i].key_id) !=
            holds[i].version)
            atomic_fetch_add(&corrupt, 1);
        fx_holder_release(holds[i].h);
    }
    free(buf);
    return NULL;
}

int main(void)
{
    const char *s = getenv("FX_TEST_SECONDS");
    if (s && atof(s) > 0)
        run_seconds = atof(s);
    test_cluster tc;
    REQUIRE(cluster_start(&tc, 512ull << 20) == 0, "cluster start");
    int err;
    client = fx_connect(tc.socket, &err);
    REQUIRE(client, "connect: %s", fx_strerror(err));
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    printf("reads %ld writes %ld deletes %ld misses %ld errors %ld corrupt %ld ryw_fail %ld\n",
           atomic_load(&reads), atomic_load(&writes), atomic_load(&deletes), atomic_load(&misses),
           atomic_load(&errors), atomic_load(&corrupt), atomic_load(&ryw_fail));
    CHECK(atomic_load(&corrupt) == 0, "corrupt reads: %ld", atomic_load(&corrupt));
    CHECK(atomic_load(&ryw_fail) == 0, "read-your-writes violations: %ld", atomic_load(&ryw_fail));
    CHECK(atomic_load(&errors) == 0, "errors: %ld", atomic_load(&errors));
    CHECK(atomic_load(&reads) > 1000 && atomic_load(&writes) > 1000, "enough operations ran");
    /* Clean up and check nothing is left allocated. */
    char key[32];
    for (uint64_t k = 0; k < SHARED_KEYS + THREADS; k++) {
        int klen = key_name(key, k);
        fx_delete(client, key, (size_t)klen);
    }
    uint64_t used = UINT64_MAX;
    for (int i = 0; i < 200 && used; i++) {
        fx_owner_stat st[2];
        size_t n = 0;
        if (fx_stat(client, st, 2, &n) == 0 && n >= 1)
            used = st[0].memory_used;
        if (used)
            usleep(10000);
    }
    CHECK(used == 0, "segment used after deleting everything: %llu", (unsigned long long)used);
    fx_close(client);
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
    return test_finish();
}
