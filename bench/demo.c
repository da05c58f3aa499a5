/*
 * demo.c - the demo workload of `make demo`: puts a few hundred values of
 * 4 KiB to 4 MiB into a running cluster, reads every one back and verifies it
 * byte for byte, and prints ops/s, GiB/s and the owners' hit counters. With a
 * second socket (another owner of the cluster) it reads everything again
 * through that owner too: values placed elsewhere are pulled over the
 * owner-to-owner data plane.
 *
 *   fx_demo SOCKET [COUNT [SOCKET2]]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fluxon/fluxon.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* Sizes spread log-uniformly over 4 KiB .. 4 MiB, fixed per index. */
static size_t value_size(int i)
{
    int shift = 12 + (int)(mix((uint64_t)i) % 11); /* 2^12 .. 2^22 */
    size_t base = (size_t)1 << shift;
    return base + (shift < 22 ? mix((uint64_t)i + 7) % base : 0);
}

static void fill(uint8_t *buf, size_t len, int i)
{
    for (size_t off = 0; off < len; off += 8) {
        uint64_t v = mix((uint64_t)i * 1000003u + off);
        memcpy(buf + off, &v, len - off < 8 ? len - off : 8);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fx_demo SOCKET [COUNT [SOCKET2]]\n");
        return 2;
    }
    int count = argc > 2 ? atoi(argv[2]) : 300;
    int err;
    fx_client *c = fx_connect(argv[1], &err);
    if (!c) {
        fprintf(stderr, "fx_demo: connect: %s: %s\n", fx_strerror(err), fx_last_error_detail());
        return 1;
    }
    uint8_t *buf = malloc(4u << 20), *copy = malloc(4u << 20);
    char key[64];
    double bytes = 0, t_put = 0, t0;
    int failures = 0;
    for (int i = 0; i < count; i++) {
        size_t len = value_size(i);
        fill(buf, len, i);
        int klen = snprintf(key, sizeof key, "demo/%04d", i);
        t0 = now_s();
        int r = fx_put(c, key, (size_t)klen, buf, len);
        t_put += now_s() - t0;
        if (r) {
            fprintf(stderr, "put %s: %s: %s\n", key, fx_strerror(r), fx_last_error_detail());
            failures++;
        }
        bytes += (double)len;
    }
    printf("put  %4d values (%.1f MiB): %8.0f ops/s %6.2f GiB/s\n", count, bytes / (1 << 20),
           count / t_put, bytes / t_put / (1 << 30));
    for (int pass = 0; pass < (argc > 3 ? 2 : 1); pass++) {
        fx_client *rc = c;
        if (pass == 1 && !(rc = fx_connect(argv[3], &err))) {
            fprintf(stderr, "fx_demo: connect %s: %s: %s\n", argv[3], fx_strerror(err),
                    fx_last_error_detail());
            failures++;
            break;
        }
        int verified = 0;
        double t_get = 0;
        for (int i = 0; i < count; i++) {
            size_t len = value_size(i);
            int klen = snprintf(key, sizeof key, "demo/%04d", i);
            fx_holder *h;
            t0 = now_s();
            int r = fx_get(rc, key, (size_t)klen, &h);
            if (r) {
                fprintf(stderr, "get %s: %s: %s\n", key, fx_strerror(r), fx_last_error_detail());
                failures++;
                continue;
            }
            memcpy(copy, fx_holder_data(h), fx_holder_len(h)); /* bytes mode: a private copy */
            t_get += now_s() - t0;
            fill(buf, len, i);
            if (fx_holder_len(h) == len && memcmp(copy, buf, len) == 0)
                verified++;
            else
                failures++;
            fx_holder_release(h);
        }
        printf("get  %4d values, verified %d: %8.0f ops/s %6.2f GiB/s (get + copy out%s)\n",
               count, verified, count / t_get, bytes / t_get / (1 << 30),
               pass ? ", through the second owner" : "");
        if (rc != c)
            fx_close(rc);
    }
    fx_owner_stat st[8];
    size_t n = 0;
    if (fx_stat(c, st, 8, &n) == 0)
        for (size_t i = 0; i < n && i < 8; i++)
            printf("%s: hits memory=%llu ssd=%llu misses=%llu, memory used %.1f of %.1f MiB\n",
                   st[i].name, (unsigned long long)st[i].hits_memory,
                   (unsigned long long)st[i].hits_ssd, (unsigned long long)st[i].misses,
                   st[i].memory_used / 1048576.0, st[i].memory_capacity / 1048576.0);
    for (int i = 0; i < count; i++) {
        int klen = snprintf(key, sizeof key, "demo/%04d", i);
        fx_delete(c, key, (size_t)klen);
    }
    free(buf);
    free(copy);
    fx_close(c);
    if (failures)
        fprintf(stderr, "fx_demo: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
