/*
 * handshake_bench.c - fx_bench_handshake: what the cluster handshake costs a
 * connection (issue 19: authentication is per connection, not per byte).
 *
 * Two rows, each the median (and range) of ROUNDS rounds:
 *   - cpu: both sides of the control handshake (net/handshake.h) run in one
 *     thread with no socket, CPU_N exchanges per round: the HMAC-SHA256 and
 *     nonce work of one handshake, client and server together.
 *   - connect: wall time for a client to get a usable connection to a real
 *     fluxon-master on loopback, CONNECT_N connections per round, alternating
 *     between a master without a secret (TCP connect alone: the connection is
 *     usable once connected) and one with --secret-file (TCP connect plus the
 *     handshake until the master's RESULT arrived). The difference is what
 *     the handshake adds to opening a connection.
 * The data plane's handshake is the same work (two HMACs a side) plus the
 * same one round trip, once per connection; its connections are reused across
 * transfers, so a bulk transfer pays it once (the bandwidth A/B is
 * scripts/bench_auth_ab.sh).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tests/util/cluster.h"
#include "../tests/util/raw_handshake.h"
#include "../tests/util/testlib.h"
#include "benchutil.h"
#include "net/handshake.h"

#define ROUNDS 7
#define CPU_N 2000
#define CONNECT_N 200

static double median_of(double *v, int n, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *lo = v[0];
    *hi = v[n - 1];
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double cpu_round(void)
{
    auth_key k;
    auth_random(&k, sizeof k);
    uint64_t t0 = now_ns();
    for (int i = 0; i < CPU_N; i++) {
        handshake c, s;
        uint8_t a[HS_OUT_MAX], b[HS_OUT_MAX];
        size_t na, nb;
        handshake_client_start(&c, &k, HS_ROLE_OWNER, "owner0", a, &na);
        handshake_server_start(&s, &k);
        handshake_step(&s, a, na, b, &nb);
        handshake_step(&c, b, nb, a, &na);
        handshake_step(&s, a, na, b, &nb);
        handshake_step(&c, b, nb, a, &na);
        if (c.state != HS_DONE || s.state != HS_DONE) {
            fprintf(stderr, "fx_bench_handshake: an in-memory handshake failed\n");
            exit(1);
        }
    }
    return (double)(now_ns() - t0) / CPU_N / 1000.0;
}

/* A master on loopback, with the secret in secret_path or without one. */
typedef struct bench_master {
    pid_t pid;
    int port;
} bench_master;

static int start_master(const char *dir, const char *name, const char *secret, bench_master *bm)
{
    char port_file[400], log[400];
    snprintf(port_file, sizeof port_file, "%s/%s.port", dir, name);
    snprintf(log, sizeof log, "%s/%s.log", dir, name);
    bm->pid = fork();
    if (bm->pid == 0) {
        freopen(log, "w", stderr);
        const char *bin = cluster_bin("fluxon-master");
        if (secret)
            execl(bin, bin, "--listen", "127.0.0.1:0", "--port-file", port_file,
                  "--secret-file", secret, (char *)NULL);
        else
            execl(bin, bin, "--listen", "127.0.0.1:0", "--port-file", port_file, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(port_file, "r");
        char line[128];
        if (f && fgets(line, sizeof line, f) && strchr(line, '\n')) {
            fclose(f);
            bm->port = atoi(strrchr(line, ':') + 1);
            return 0;
        }
        if (f)
            fclose(f);
        sleep_ns(50 * 1000 * 1000);
    }
    fprintf(stderr, "fx_bench_handshake: master %s did not start (see %s)\n", name, log);
    return -1;
}

static int connect_loopback(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Microseconds per usable connection, CONNECT_N connections. */
static double connect_round(int port, const auth_key *k)
{
    uint64_t t0 = now_ns();
    for (int i = 0; i < CONNECT_N; i++) {
        int fd = connect_loopback(port);
        if (fd < 0 || (k && raw_handshake(fd, k, "bench") < 0)) {
            fprintf(stderr, "fx_bench_handshake: connection %d failed\n", i);
            exit(1);
        }
        close(fd);
    }
    return (double)(now_ns() - t0) / CONNECT_N / 1000.0;
}

int main(void)
{
    if (auth_init() < 0)
        return 1;
    char dir[] = "/tmp/fx-bench-hs-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char secret[300];
    snprintf(secret, sizeof secret, "%s/cluster.secret", dir);
    auth_key key;
    char err[512];
    bench_master plain = {0}, authed = {0};
    int rc = 1;
    if (auth_secret_create(secret) < 0 || auth_key_load(secret, &key, err, sizeof err) < 0 ||
        start_master(dir, "plain", NULL, &plain) < 0 ||
        start_master(dir, "authed", secret, &authed) < 0)
        goto out;
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    printf("fx_bench_handshake: %s, %ld CPUs; median of %d rounds [min, max]\n", cpu,
           sysconf(_SC_NPROCESSORS_ONLN), ROUNDS);
    double c[ROUNDS], p[ROUNDS], a[ROUNDS], d[ROUNDS], lo, hi;
    for (int r = 0; r < ROUNDS; r++) {
        c[r] = cpu_round();
        p[r] = connect_round(plain.port, NULL);
        a[r] = connect_round(authed.port, &key);
        d[r] = a[r] - p[r];
    }
    double m = median_of(c, ROUNDS, &lo, &hi);
    printf("%-34s %8.1f us [%.1f, %.1f]  (%d exchanges a round)\n",
           "cpu: both sides of one handshake", m, lo, hi, CPU_N);
    m = median_of(p, ROUNDS, &lo, &hi);
    printf("%-34s %8.1f us [%.1f, %.1f]  (%d connections a round)\n", "connect, no secret", m,
           lo, hi, CONNECT_N);
    m = median_of(a, ROUNDS, &lo, &hi);
    printf("%-34s %8.1f us [%.1f, %.1f]\n", "connect + handshake", m, lo, hi);
    m = median_of(d, ROUNDS, &lo, &hi);
    printf("%-34s %8.1f us [%.1f, %.1f]  (paired per round)\n", "handshake adds per connection",
           m, lo, hi);
    rc = 0;
out:
    for (int i = 0; i < 2; i++) {
        pid_t pid = i ? authed.pid : plain.pid;
        if (pid > 0) {
            kill(pid, SIGTERM);
            waitpid(pid, NULL, 0);
        }
    }
    if (test_remove_dir(dir) < 0)
        rc = 1;
    return rc;
}
