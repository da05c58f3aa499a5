/*
 * main.c - fluxon-owner: config, segment, master registration, then the event
 * loop until SIGTERM.
 *
 *   fluxon-owner --config FILE [--master HOST:PORT] [--memory-size SIZE]
 *                [--client-socket PATH] [--cluster-name NAME] [--node-name NAME]
 *                [--data-listen HOST:PORT] [--data-advertise HOST:PORT]
 *                [--prefault true|false] [--large-file-paths A,B]
 *                [--large-limit-size S1,S2] [--log-level LEVEL]
 *                [--max-client-connections N] [--max-peer-connections N]
 *                [--handshake-timeout DUR] [--receive-buffer-budget SIZE]
 *                [--master-wait DUR] [--put-pool-size SIZE] [--get-threads N]
 *
 * Every YAML key can be given as a flag; flags override the file. Bad values
 * are startup errors naming the key, exit code 2; so is an SSD tier
 * (large_file_paths + large_limit_size) that cannot be opened, a client_socket
 * that another process serves or that is not a socket, and a registration the
 * master refuses as InvalidArgument (a cluster_name that is not its own). The SSD tier
 * opens before the segment and closes after the loop has drained.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "owner/owner_config.h"
#include "common/fd_limit.h"
#include "common/flags.h"
#include "common/log.h"
#include "net/unix_path.h"
#include "owner/dataplane/dataplane.h"
#include "owner/owner.h"
#include "owner/put_pool.h"
#include "owner/replica_index.h"
#include "owner/ssd_tier.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: fluxon-owner --config FILE [--master HOST:PORT] [--memory-size SIZE]\n"
               "                    [--client-socket PATH] [--cluster-name NAME] [--node-name NAME]\n"
               "                    [--data-listen HOST:PORT] [--data-advertise HOST:PORT]\n"
               "                    [--prefault true|false] [--large-file-paths P1,P2]\n"
               "                    [--large-limit-size S1,S2] [--use-hugepages true|false]\n"
               "                    [--log-level LEVEL]\n"
               "                    [--max-client-connections N] [--max-peer-connections N]\n"
               "                    [--handshake-timeout DURATION] [--receive-buffer-budget SIZE]\n"
               "                    [--master-wait DURATION] [--put-pool-size SIZE]\n"
               "                    [--get-threads N]\n");
}

static uv_signal_t sig_term, sig_int;

/* Starts the owner-to-owner data plane on data_listen; peers learn its
 * address from the master (Register carries it, data_address.c). */
static int start_data_plane(owner *o)
{
    int err = 0;
    o->dp = dp_engine_new(o->loop, o->seg.base, o->seg.size, o->cfg.data_listen, &err);
    if (!o->dp) {
        fprintf(stderr, "fluxon-owner: data_listen: cannot listen on %s: %s\n", o->cfg.data_listen,
                uv_strerror(err));
        return -1;
    }
    dp_engine_set_peer_keys(o->dp, owner_peer_key, o);
    dp_engine_set_write_hook(o->dp, owner_index_on_peer_write, o);
    dp_engine_set_limits(o->dp, o->cfg.max_peer_connections, o->cfg.handshake_timeout_ms);
    char why[512];
    if (owner_data_address_init(o, why, sizeof why) < 0) {
        fprintf(stderr, "fluxon-owner: %s\n", why);
        return -1;
    }
    FX_LOG(INFO, "data plane on %s (port %d), announced as %s", o->cfg.data_listen,
           dp_engine_port(o->dp), o->data_addr_from_link ? "the address towards the master"
                                                         : o->data_addr);
    return 0;
}

static void on_signal(uv_signal_t *s, int signum)
{
    FX_LOG(INFO, "signal %d: shutting down", signum);
    owner_stop(s->data, 0);
}

int main(int argc, char **argv)
{
    int rc = 0;
    static const struct option opts[] = {
        {"config", required_argument, 0, 'c'},
        {"master", required_argument, 0, 'm'},
        {"memory-size", required_argument, 0, 's'},
        {"client-socket", required_argument, 0, 'k'},
        {"cluster-name", required_argument, 0, 'n'},
        {"node-name", required_argument, 0, 'N'},
        {"data-listen", required_argument, 0, 'D'},
        {"data-advertise", required_argument, 0, 'A'},
        {"prefault", required_argument, 0, 'P'},
        {"large-file-paths", required_argument, 0, 'f'},
        {"large-limit-size", required_argument, 0, 'L'},
        {"log-level", required_argument, 0, 'v'},
        {"use-hugepages", required_argument, 0, 'H'},
        {"max-client-connections", required_argument, 0, 'X'},
        {"max-peer-connections", required_argument, 0, 'Y'},
        {"handshake-timeout", required_argument, 0, 'T'},
        {"receive-buffer-budget", required_argument, 0, 'R'},
        {"master-wait", required_argument, 0, 'W'},
        {"put-pool-size", required_argument, 0, 'G'},
        {"get-threads", required_argument, 0, 'g'},
        {"help", no_argument, 0, '?'},
        {0, 0, 0, 0},
    };
    static const char *keys[128] = {
        ['m'] = "master", ['s'] = "fluxonkv_spec.memory_size",
        ['k'] = "fluxonkv_spec.client_socket", ['n'] = "cluster_name", ['N'] = "node_name",
        ['P'] = "fluxonkv_spec.prefault", ['f'] = "fluxonkv_spec.large_file_paths",
        ['L'] = "fluxonkv_spec.large_limit_size", ['v'] = "log_level",
        ['H'] = "fluxonkv_spec.use_hugepages", ['D'] = "data_listen", ['A'] = "data_advertise",
        ['X'] = "max_client_connections", ['Y'] = "max_peer_connections",
        ['T'] = "handshake_timeout", ['R'] = "receive_buffer_budget", ['W'] = "master_wait",
        ['G'] = "fluxonkv_spec.put_pool_size", ['g'] = "get_threads",
    };
    fx_log_init("owner");
    signal(SIGPIPE, SIG_IGN);
    static owner o;
    owner_config_init(&o.cfg);
    char err[512];
    const char *config = NULL;
    if (flags_prescan(argc, argv, &config)) {
        usage(stdout);
        goto out;
    }
    if (config && owner_config_load(&o.cfg, config, err, sizeof err) < 0) {
        fprintf(stderr, "fluxon-owner: %s\n", err);
        rc = 2;
        goto out;
    }
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'c')
            continue;
        if (c == '?' || c < 0 || c >= 128 || !keys[c]) {
            usage(stderr);
            rc = 2;
            goto out;
        }
        if (owner_config_set(&o.cfg, keys[c], optarg, err, sizeof err) < 0) {
            fprintf(stderr, "fluxon-owner: %s\n", err);
            rc = 2;
            goto out;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fluxon-owner: unexpected argument '%s'\n", argv[optind]);
        rc = 2;
        goto out;
    }
    if (owner_config_validate(&o.cfg, err, sizeof err) < 0) {
        fprintf(stderr, "fluxon-owner: %s\n", err);
        rc = 2;
        goto out;
    }
    if (o.cfg.log_level >= 0)
        fx_log_threshold = o.cfg.log_level;
    /* Both listeners may reach their caps; more for peers, the master, the SSD tier. */
    fd_limit_raise((unsigned long)o.cfg.max_client_connections * (o.cfg.get_threads ? 2 : 1) +
                   o.cfg.max_peer_connections + 256); /* lanes: get_lanes.c */
    if (!owner_master_is_etcd(o.cfg.master) &&
        config_parse_hostport(o.cfg.master, o.master_host, sizeof o.master_host, &o.master_port) < 0) {
        fprintf(stderr, "fluxon-owner: master: '%s' is not HOST:PORT\n", o.cfg.master);
        rc = 2;
        goto out;
    }
    if (owner_auth_setup(&o, err, sizeof err) < 0) {
        fprintf(stderr, "fluxon-owner: %s\n", err);
        rc = 2;
        goto out;
    }
    /* Early, before the cluster hears of us: a socket path that another
     * owner serves (or a file that is no socket) is a configuration error.
     * The listener checks again when it binds, after registration. */
    int pe = unix_path_claim(o.cfg.client_socket);
    if (pe < 0) {
        fprintf(stderr, "fluxon-owner: fluxonkv_spec.client_socket: %s: %s\n", o.cfg.client_socket,
                unix_path_strerror(pe));
        rc = 2;
        goto out;
    }
    /* Before node_name gets its per-process default: the SSD root's name must
     * not change from one run to the next. */
    if (ssd_tier_open(&o, err, sizeof err) < 0) {
        fprintf(stderr, "fluxon-owner: %s\n", err);
        rc = 2;
        goto out;
    }
    char default_name[64];
    if (!o.cfg.node_name) {
        snprintf(default_name, sizeof default_name, "owner-%d", (int)getpid());
        o.cfg.node_name = strdup(default_name);
    }
    char why[256];
    int r = segment_create(&o.seg, o.cfg.memory_size, o.cfg.prefault, o.cfg.use_hugepages, why,
                           sizeof why);
    if (r < 0) {
        fprintf(stderr, "fluxon-owner: fluxonkv_spec.memory_size: cannot create the segment: %s\n",
                why);
        rc = r == -ENOMEM ? 2 : 1; /* too large for this machine: a bad value */
        goto out;
    }
    o.index = replica_index_new();
    if (!o.index) {
        fprintf(stderr, "fluxon-owner: out of memory\n");
        rc = 1;
        goto out;
    }
    pthread_mutex_init(&o.hold_lock, NULL);
    o.loop = uv_default_loop();
    if (!(o.write_scope = net_write_scope_new()))
        FX_LOG(WARN, "out of memory: no write scope; each connection gathers only its answers");
    uv_signal_init(o.loop, &sig_term);
    uv_signal_init(o.loop, &sig_int);
    sig_term.data = sig_int.data = &o;
    uv_signal_start(&sig_term, on_signal, SIGTERM);
    uv_signal_start(&sig_int, on_signal, SIGINT);
    if (start_data_plane(&o) < 0) {
        rc = 2;
        goto out;
    }
    if (owner_master_wait_init(&o) < 0 || owner_put_pool_init(&o) < 0) {
        fprintf(stderr, "fluxon-owner: out of memory\n");
        rc = 1;
        goto out;
    }
    if (owner_locator_start(&o, err, sizeof err) < 0) {
        fprintf(stderr, "fluxon-owner: %s\n", err);
        owner_master_wait_close(&o);
        uv_run(o.loop, UV_RUN_NOWAIT);
        rc = 1;
        goto out;
    }
    if (owner_master_connect(&o) < 0) {
        fprintf(stderr, "fluxon-owner: master: cannot connect to '%s'\n", o.cfg.master);
        owner_master_wait_close(&o);
        uv_run(o.loop, UV_RUN_NOWAIT); /* its close callback frees the queue */
        rc = 2;
        goto out;
    }
    if (owner_get_lanes_start(&o, err, sizeof err) < 0) {
        fprintf(stderr, "fluxon-owner: %s\n", err);
        owner_stop(&o, 1);
    }
    uv_run(o.loop, UV_RUN_DEFAULT);
    /* The get threads go first, while the sessions they serve still stand. */
    owner_get_lanes_stop(&o);
    /* Orderly teardown: stop the SSD tier taking work, close the master link
     * (pending SSD commits complete and release their guards) and every
     * connection, fail the client requests still waiting for a master, run
     * the loop until the close callbacks have freed their state and the last
     * SSD job has completed, then close the SSD store. */
    ssd_tier_shutdown(&o);
    if (o.ext_listener)
        net_listener_close(o.ext_listener);
    if (o.master)
        net_conn_close(o.master);
    if (o.fenced_master)
        net_conn_close(o.fenced_master);
    owner_locator_stop(&o);
    owner_master_wait_close(&o);
    if (o.dp)
        dp_engine_close(o.dp);
    uv_close((uv_handle_t *)&sig_term, NULL);
    uv_close((uv_handle_t *)&sig_int, NULL);
    owner_holder_ack_close(&o);
    owner_access_report_close(&o);
    uv_close((uv_handle_t *)&o.heartbeat_timer, NULL);
    uv_close((uv_handle_t *)&o.connect_timer, NULL);
    uv_run(o.loop, UV_RUN_DEFAULT);
    ssd_tier_close(&o);
    holders_cache_clear(&o);
    if (o.dp)
        dp_engine_free(o.dp);
    for (size_t i = 0; i < o.n_members; i++)
        auth_key_wipe(&o.members[i].pair_key);
    free(o.members);
    uv_loop_close(o.loop);
    segment_destroy(&o.seg);
    owner_holder_ack_free(&o);
    owner_put_pool_free(&o);
    rc = o.exit_code;
out:
    net_write_scope_free(o.write_scope); /* every connection is closed by now */
    owner_put_pool_free(&o); /* a startup failure after it was made (NULL-safe) */
    ssd_tier_close(&o); /* a startup failure after the tier opened */
    replica_index_free(o.index);
    owner_config_free(&o.cfg);
    return rc;
}
