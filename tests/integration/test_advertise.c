/*
 * test_advertise.c - the addresses a cluster tells its members, never a
 * wildcard:
 *
 *   1. fluxon-master --listen 0.0.0.0:0 without --advertise exits 2 naming
 *      --advertise and writes no port file (so do [::]:0, a wildcard
 *      --advertise and a --listen name that does not resolve); with
 *      --advertise 127.0.0.1:5555 its port file holds exactly that.
 *   2. A cluster whose master listens on 0.0.0.0:0 with --advertise
 *      127.0.0.1:0 (port 0: the bound port) and whose owners have
 *      `data_listen: 0.0.0.0:0` and no data_advertise: the port file holds
 *      127.0.0.1:PORT, each owner registers 127.0.0.1:PORT (the local
 *      address of its connection to the master, with its data plane's port),
 *      not 0.0.0.0, and a remote pull through those addresses works.
 *   3. An owner with `data_advertise: 0.0.0.0:7` exits 2 naming
 *      data_advertise.
 *   4. When the machine has a non-loopback IPv4 address A: a master reached
 *      at A, and an owner that would announce a loopback address (the
 *      default data_listen 127.0.0.1:0, or data_advertise 127.0.0.1:0) exits
 *      2 naming data_advertise; an owner on 0.0.0.0:0 registers A:PORT.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cluster.h"
#include "fluxon/fluxon.h"
#include "raw_member.h"
#include "testlib.h"
#include "values.h"

static test_cluster tc;

static bool file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return strstr(buf, needle) != NULL;
}

static bool exists(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f)
        fclose(f);
    return f != NULL;
}

/* Runs fluxon-master with --listen listen, --port-file under tc.dir and the
 * extra flags; returns its exit status; log gets its output path. */
static int master_exit_status(const char *listen, const char *extra0, const char *extra1,
                              char *port_file, char *log)
{
    char bin[512];
    snprintf(bin, sizeof bin, "%s", cluster_bin("fluxon-master"));
    char *argv[] = {bin, "--listen", (char *)listen, "--port-file", port_file,
                    (char *)extra0, (char *)extra1, NULL};
    return cluster_run(argv, log, 10000);
}

static void master_needs_advertise(void)
{
    char port_file[512], log[512];
    snprintf(port_file, sizeof port_file, "%s/m1.addr", tc.dir);
    snprintf(log, sizeof log, "%s/m1.log", tc.dir);
    int st = master_exit_status("0.0.0.0:0", NULL, NULL, port_file, log);
    CHECK(st == 2, "a wildcard --listen without --advertise exits 2 (%d)", st);
    CHECK(file_contains(log, "--advertise"), "and names --advertise");
    CHECK(!exists(port_file), "and writes no port file");
    if (st != 2 || !file_contains(log, "--advertise"))
        cluster_print_log_tail(log);

    snprintf(port_file, sizeof port_file, "%s/m2.addr", tc.dir);
    snprintf(log, sizeof log, "%s/m2.log", tc.dir);
    st = master_exit_status("[::]:0", NULL, NULL, port_file, log);
    CHECK(st == 2 && file_contains(log, "--advertise"), "so does [::]:0 (%d)", st);
    st = master_exit_status("0.0.0.0:0", "--advertise", "0.0.0.0:1", port_file, log);
    CHECK(st == 2 && file_contains(log, "advertise"), "a wildcard --advertise exits 2 (%d)", st);
    st = master_exit_status("nosuch.invalid:0", NULL, NULL, port_file, log);
    CHECK(st == 2 && file_contains(log, "listen: 'nosuch.invalid:0': cannot resolve"),
          "a --listen name that does not resolve exits 2 naming it (%d)", st);

    char bin[512];
    snprintf(bin, sizeof bin, "%s", cluster_bin("fluxon-master"));
    snprintf(port_file, sizeof port_file, "%s/m3.addr", tc.dir);
    snprintf(log, sizeof log, "%s/m3.log", tc.dir);
    char *argv[] = {bin, "--listen", "0.0.0.0:0", "--advertise", "127.0.0.1:5555",
                    "--port-file", port_file, "--secret-file", tc.secret_file, NULL};
    pid_t pid = cluster_spawn(argv, log);
    REQUIRE(pid > 0, "spawn a master");
    char addr[300];
    CHECK(cluster_wait_port_file(port_file, pid, addr, sizeof addr, 10000) == 0 &&
              strcmp(addr, "127.0.0.1:5555") == 0,
          "with --advertise 127.0.0.1:5555 the port file holds it: '%s'", addr);
    kill(pid, SIGTERM);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "that master stops cleanly");
}

/* Writes an owner YAML into tc.dir and runs fluxon-owner on it to its end;
 * returns its exit status (a running owner is killed after 10 s: -1). */
static int owner_exit_status(const char *name, const char *master, const char *secret_file,
                             const char *data_listen, const char *data_advertise, char *log,
                             size_t logcap)
{
    char yaml[512], sock[512], bin[512];
    snprintf(yaml, sizeof yaml, "%s/%s.yaml", tc.dir, name);
    snprintf(sock, sizeof sock, "%s/%s.sock", tc.dir, name);
    snprintf(log, logcap, "%s/%s.log", tc.dir, name);
    FILE *f = fopen(yaml, "w");
    REQUIRE(f, "write %s", yaml);
    fprintf(f,
            "cluster_name: test\nmaster: '%s'\nnode_name: %s\ndata_listen: '%s'\n"
            "fluxonkv_spec:\n  memory_size: 8388608\n  client_socket: %s\n",
            master, name, data_listen, sock);
    if (data_advertise)
        fprintf(f, "data_advertise: '%s'\n", data_advertise);
    if (secret_file[0])
        fprintf(f, "cluster_secret_file: '%s'\n", secret_file);
    REQUIRE(fclose(f) == 0, "write %s", yaml);
    snprintf(bin, sizeof bin, "%s", cluster_bin("fluxon-owner"));
    char *argv[] = {bin, "--config", yaml, NULL};
    return cluster_run(argv, log, 10000);
}

/* Each owner of c is announced as host:PORT (PORT > 0) in the member table. */
static void owners_announced_as(test_cluster *c, const char *host)
{
    raw_member rm;
    REQUIRE(raw_member_register_secret(&rm, c->master_addr, "test", "observer", 1,
                                       c->secret_file) == 0,
            "an observer registers at %s", c->master_addr);
    size_t hl = strlen(host);
    int seen = 0;
    for (size_t i = 0; rm.members && i < rm.members->n_members; i++) {
        const Fx__MemberInfo *mi = rm.members->members[i];
        if (strncmp(mi->name, "owner", 5) != 0)
            continue;
        seen++;
        CHECK(strncmp(mi->data_addr, host, hl) == 0 && mi->data_addr[hl] == ':' &&
                  atoi(mi->data_addr + hl + 1) > 0,
              "%s (data_listen 0.0.0.0:0) registered %s:PORT, not a wildcard: '%s'", mi->name,
              host, mi->data_addr);
    }
    CHECK(seen == c->n_owners, "the table lists %d owners (%d)", c->n_owners, seen);
    raw_member_close(&rm);
}

/* A put through owner 0 and a get through owner 1 (a remote pull). */
static void remote_pull(test_cluster *c, const char *key)
{
    fx_client *a = NULL, *b = NULL;
    int err = 0;
    REQUIRE((a = fx_connect(c->sockets[0], &err)) && (b = fx_connect(c->sockets[1], &err)),
            "connect: %s", fx_strerror(err));
    const size_t len = (2u << 20) + 5;
    REQUIRE(value_put(a, key, 0xADD5, len) == 0, "put %s through owner0", key);
    fx_holder *h = NULL;
    int r = fx_get(b, key, strlen(key), &h);
    CHECK(r == 0 && value_holder_is(h, 0xADD5, len),
          "owner1 pulled %s from owner0 byte for byte (%s)", key, fx_strerror(r));
    if (h)
        fx_holder_release(h);
    fx_close(a);
    fx_close(b);
}

static void wildcard_cluster(void)
{
    cluster_addrs addrs = {.master_listen = "0.0.0.0:0",
                           .data_listen = {"0.0.0.0:0", "0.0.0.0:0"}};
    const char *args[] = {"--advertise", "127.0.0.1:0", "--placement", "local", NULL};
    REQUIRE(cluster_start_addrs(&tc, 2, 64ull << 20, &addrs, args) == 0, "cluster start");
    CHECK(strncmp(tc.master_addr, "127.0.0.1:", 10) == 0 && atoi(tc.master_addr + 10) > 0,
          "the port file holds --advertise 127.0.0.1 with the bound port: '%s'", tc.master_addr);
    owners_announced_as(&tc, "127.0.0.1");
    remote_pull(&tc, "wildcard-pull");

    char log[512];
    int st = owner_exit_status("adv-wild", tc.master_addr, tc.secret_file, "127.0.0.1:0", "0.0.0.0:7", log,
                               sizeof log);
    CHECK(st == 2 && file_contains(log, "data_advertise"),
          "data_advertise 0.0.0.0:7 exits 2 naming data_advertise (%d)", st);
}

/* A non-loopback IPv4 address of this machine into buf, or false. */
static bool non_loopback_ipv4(char *buf, size_t len)
{
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return false;
    bool found = false;
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        const struct sockaddr_in *in = (const struct sockaddr_in *)i->ifa_addr;
        if ((ntohl(in->sin_addr.s_addr) >> 24) == 127)
            continue;
        found = inet_ntop(AF_INET, &in->sin_addr, buf, (socklen_t)len) != NULL;
    }
    freeifaddrs(ifs);
    return found;
}

static void remote_master(void)
{
    char ip[64], advertise[80];
    if (!non_loopback_ipv4(ip, sizeof ip)) {
        printf("no non-loopback IPv4 address here: the loopback refusal is not tried\n");
        return;
    }
    snprintf(advertise, sizeof advertise, "%s:0", ip);
    static test_cluster remote; /* valid until cluster_stop, also through REQUIRE */
    cluster_addrs addrs = {.master_listen = "0.0.0.0:0", .data_listen = {"0.0.0.0:0"}};
    const char *args[] = {"--advertise", advertise, NULL};
    REQUIRE(cluster_start_addrs(&remote, 1, 64ull << 20, &addrs, args) == 0,
            "a cluster reached at %s", ip);
    owners_announced_as(&remote, ip);

    char log[512];
    int st = owner_exit_status("loop-listen", remote.master_addr, remote.secret_file, "127.0.0.1:0", NULL, log,
                               sizeof log);
    CHECK(st == 2 && file_contains(log, "data_advertise") && file_contains(log, "loopback"),
          "data_listen 127.0.0.1:0 with the master at %s exits 2 naming data_advertise (%d)",
          remote.master_addr, st);
    if (st != 2)
        cluster_print_log_tail(log);
    st = owner_exit_status("loop-adv", remote.master_addr, remote.secret_file, "0.0.0.0:0", "127.0.0.1:0", log,
                           sizeof log);
    CHECK(st == 2 && file_contains(log, "data_advertise") && file_contains(log, "loopback"),
          "data_advertise 127.0.0.1:0 with the master at %s exits 2 (%d)", remote.master_addr,
          st);
    CHECK(cluster_stop(&remote) == 0, "that cluster stops cleanly");
}

int main(void)
{
    /* Wildcard listeners reach beyond loopback: only with the cluster secret. */
    setenv("FX_CLUSTER_SECRET", "1", 1);
    wildcard_cluster(); /* first: tc.dir holds the other processes' files too */
    master_needs_advertise();
    remote_master();
    CHECK(cluster_stop(&tc) == 0, "cluster stopped cleanly");
    return test_finish();
}
