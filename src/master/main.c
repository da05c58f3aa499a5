/*
 * main.c - fluxon-master: flags and config, then the event loop until SIGTERM.
 *
 *   fluxon-master --listen HOST:PORT [--advertise HOST:PORT] [--http HOST:PORT]
 *                 [--config FILE]
 *                 [--port-file FILE] [--http-port-file FILE]
 *                 [--cluster-name NAME] [--inflight-ttl DUR]
 *                 [--heartbeat-interval DUR] [--heartbeat-timeout DUR]
 *                 [--placement random|local|remote] [--cache-budget PCT]
 *                 [--max-connections N] [--handshake-timeout DUR]
 *                 [--receive-buffer-budget SIZE] [--log-level LEVEL]
 *
 * Flags override the config file. A bad value is a startup error naming the
 * key, exit code 2. --port-file receives "HOST:PORT" once the master is ready
 * (listening, and serving HTTP when --http is given; useful with port 0): the
 * --advertise address, else the --listen host with the bound port;
 * --http-port-file receives the HTTP endpoint's "HOST:PORT" just before. HOSTs are
 * names, IPv4 or [IPv6] literals; a wildcard --listen (0.0.0.0, [::]) needs
 * --advertise, since nobody can dial a wildcard.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master/master_config.h"
#include "common/fd_limit.h"
#include "common/flags.h"
#include "common/log.h"
#include "master/master.h"
#include "net/addr.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: fluxon-master --listen HOST:PORT [--advertise HOST:PORT]\n"
               "                     [--http HOST:PORT] [--config FILE]\n"
               "                     [--port-file FILE] [--http-port-file FILE]\n"
               "                     [--cluster-name NAME]\n"
               "                     [--inflight-ttl DURATION] [--heartbeat-interval DURATION]\n"
               "                     [--heartbeat-timeout DURATION]\n"
               "                     [--placement random|local|remote] [--cache-budget PCT]\n"
               "                     [--max-connections N] [--handshake-timeout DURATION]\n"
               "                     [--receive-buffer-budget SIZE]\n"
               "                     [--log-level error|warn|info|debug] [--secret-file FILE]\n"
               "                     [--etcd http://HOST:PORT[,...]] [--etcd-lease-ttl DURATION]\n"
               "defaults: --listen 127.0.0.1:7700, --cluster-name fluxon (it must match the\n"
               "owners' cluster_name), --heartbeat-interval 1s, --inflight-ttl 60s,\n"
               "--max-connections 4096, --handshake-timeout 5s, --receive-buffer-budget 256MiB\n"
               "--secret-file: the cluster secret (>= 32 bytes, mode 0600) owners must prove;\n"
               "required when --listen is beyond loopback\n"
               "--etcd: campaign for leadership on etcd; a standby serves nothing until the\n"
               "leader's lease (--etcd-lease-ttl, default 2s) ends, then takes over\n"
               "HOST: a name, an IPv4 or an [IPv6] address; --advertise (required with a\n"
               "wildcard --listen such as 0.0.0.0 or [::]) is what the port file holds\n"
               "--http: /metrics (Prometheus), /api/v1/cluster (JSON) and the web page at /;\n"
               "--http-port-file receives its HOST:PORT (useful with port 0) before the port file\n");
}

/* A listen address whose name does not resolve is a bad value, as a
 * malformed one is (exit 2), not a failure to start. */
static int check_resolves(uv_loop_t *loop, const char *key, const char *hostport)
{
    struct sockaddr_storage ss;
    char why[384];
    if (!hostport || addr_resolve(loop, hostport, &ss, why, sizeof why) == 0)
        return 0;
    fprintf(stderr, "fluxon-master: %s: %s\n", key, why);
    return -1;
}

static uv_signal_t sig_term, sig_int;

static void on_signal(uv_signal_t *s, int signum)
{
    master *m = s->data;
    FX_LOG(INFO, "signal %d: shutting down", signum);
    master_stop(m);
    uv_close((uv_handle_t *)&sig_term, NULL);
    uv_close((uv_handle_t *)&sig_int, NULL);
}

int main(int argc, char **argv)
{
    int rc = 0;
    static const struct option opts[] = {
        {"listen", required_argument, 0, 'l'},
        {"http", required_argument, 0, 'h'},
        {"advertise", required_argument, 0, 'a'},
        {"config", required_argument, 0, 'c'},
        {"port-file", required_argument, 0, 'p'},
        {"http-port-file", required_argument, 0, 'H'},
        {"cluster-name", required_argument, 0, 'n'},
        {"inflight-ttl", required_argument, 0, 't'},
        {"heartbeat-interval", required_argument, 0, 'i'},
        {"heartbeat-timeout", required_argument, 0, 'b'},
        {"placement", required_argument, 0, 'P'},
        {"cache-budget", required_argument, 0, 'B'},
        {"max-connections", required_argument, 0, 'C'},
        {"handshake-timeout", required_argument, 0, 'T'},
        {"receive-buffer-budget", required_argument, 0, 'R'},
        {"log-level", required_argument, 0, 'v'},
        {"secret-file", required_argument, 0, 'S'},
        {"etcd", required_argument, 0, 'e'},
        {"etcd-lease-ttl", required_argument, 0, 'L'},
        {"help", no_argument, 0, '?'},
        {0, 0, 0, 0},
    };
    static const char *keys[128] = {
        ['l'] = "listen", ['h'] = "http", ['a'] = "advertise", ['n'] = "cluster_name",
        ['t'] = "inflight_ttl", ['b'] = "heartbeat_timeout", ['v'] = "log_level",
        ['i'] = "heartbeat_interval", ['P'] = "placement", ['B'] = "cache_budget",
        ['S'] = "secret_file", ['e'] = "etcd", ['L'] = "etcd_lease_ttl",
        ['C'] = "max_connections", ['T'] = "handshake_timeout", ['R'] = "receive_buffer_budget",
    };
    fx_log_init("master");
    signal(SIGPIPE, SIG_IGN);
    master m;
    memset(&m, 0, sizeof m);
    master_config_init(&m.cfg);
    char err[512];
    const char *config = NULL, *port_file = NULL;
    if (flags_prescan(argc, argv, &config)) {
        usage(stdout);
        goto out;
    }
    if (config && master_config_load(&m.cfg, config, err, sizeof err) < 0) {
        fprintf(stderr, "fluxon-master: %s\n", err);
        rc = 2;
        goto out;
    }
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'c')
            continue;
        if (c == 'p') {
            port_file = optarg;
            continue;
        }
        if (c == 'H') {
            m.http_port_file = optarg;
            continue;
        }
        if (c == '?' || c < 0 || c >= 128 || !keys[c]) {
            usage(stderr);
            rc = 2;
            goto out;
        }
        if (master_config_set(&m.cfg, keys[c], optarg, err, sizeof err) < 0) {
            fprintf(stderr, "fluxon-master: %s\n", err);
            rc = 2;
            goto out;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fluxon-master: unexpected argument '%s'\n", argv[optind]);
        rc = 2;
        goto out;
    }
    if (master_config_validate(&m.cfg, err, sizeof err) < 0) {
        fprintf(stderr, "fluxon-master: %s\n", err);
        rc = 2;
        goto out;
    }
    if (m.cfg.log_level >= 0)
        fx_log_threshold = m.cfg.log_level;
    /* The TCP listener and HTTP may each reach their cap; a few more for the
     * listening sockets, the log and the loop. */
    fd_limit_raise(2ul * m.cfg.max_connections + 64);
    uv_loop_t *loop = uv_default_loop();
    if (check_resolves(loop, "listen", m.cfg.listen) < 0 ||
        check_resolves(loop, "http", m.cfg.http) < 0) {
        rc = 2;
        goto out;
    }
    if (master_auth_setup(&m, err, sizeof err) < 0) {
        fprintf(stderr, "fluxon-master: %s\n", err);
        rc = 2;
        goto out;
    }
    if (master_start(&m, loop, port_file) < 0) {
        fprintf(stderr, "fluxon-master: cannot start (see log)\n");
        rc = 1;
        goto out;
    }
    uv_signal_init(loop, &sig_term);
    uv_signal_init(loop, &sig_int);
    sig_term.data = sig_int.data = &m;
    uv_signal_start(&sig_term, on_signal, SIGTERM);
    uv_signal_start(&sig_int, on_signal, SIGINT);
    /* The signals do not keep the loop alive: a master that stops on its own
     * (lost leadership) exits once the rest has closed. */
    uv_unref((uv_handle_t *)&sig_term);
    uv_unref((uv_handle_t *)&sig_int);
    uv_run(loop, UV_RUN_DEFAULT);
    master_free_state(&m);
    uv_loop_close(loop);
    rc = m.exit_code;
out:
    master_config_free(&m.cfg);
    return rc;
}
