/*
 * etcd_local.c - the etcd member of a local cluster (see etcd_local.h): its
 * command line on free loopback ports, and the leader key read through the
 * fx_etcd client.
 *
 * A free port is one the kernel hands out for 127.0.0.1:0 and we release at
 * once, as tests/util/sock_probe.c finds them; etcd binds it a moment later.
 * Nothing here talks HTTP itself: etcd_client.h does.
 */
#include "cli/etcd_local.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A TCP port on 127.0.0.1 that nothing listens on now, or -errno. */
static int free_loopback_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int rc = 0;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        rc = -errno;
    close(fd);
    return rc < 0 ? rc : (int)ntohs(sa.sin_port);
}

int etcd_local_prepare(etcd_local *e, const char *bin, const char *data_dir)
{
    int client = free_loopback_port(), peer = free_loopback_port();
    if (client < 0)
        return client;
    if (peer < 0)
        return peer;
    if (client == peer) /* released and handed out again: try once more */
        peer = free_loopback_port();
    if (peer < 0 || peer == client)
        return peer < 0 ? peer : -EADDRINUSE;
    if ((size_t)snprintf(e->data_dir, sizeof e->data_dir, "%s", data_dir) >= sizeof e->data_dir)
        return -ENAMETOOLONG;
    e->client_port = client;
    e->peer_port = peer;
    snprintf(e->endpoint, sizeof e->endpoint, "http://127.0.0.1:%d", client);
    snprintf(e->locator, sizeof e->locator, "etcd://127.0.0.1:%d", client);
    snprintf(e->peer_url, sizeof e->peer_url, "http://127.0.0.1:%d", peer);
    snprintf(e->cluster, sizeof e->cluster, "%s=%s", ETCD_LOCAL_NAME, e->peer_url);
    char *argv[] = {(char *)bin,
                    "--name",
                    ETCD_LOCAL_NAME,
                    "--data-dir",
                    e->data_dir,
                    "--listen-client-urls",
                    e->endpoint,
                    "--advertise-client-urls",
                    e->endpoint,
                    "--listen-peer-urls",
                    e->peer_url,
                    "--initial-advertise-peer-urls",
                    e->peer_url,
                    "--initial-cluster",
                    e->cluster,
                    "--initial-cluster-state",
                    "new",
                    NULL};
    _Static_assert(sizeof argv <= sizeof e->argv, "etcd_local.argv holds the command line");
    memset(e->argv, 0, sizeof e->argv);
    memcpy(e->argv, argv, sizeof argv);
    return 0;
}

int etcd_local_leader(etcd_client *c, const char *cluster_name, leader_record *rec,
                      int64_t *term, char *err, size_t errlen)
{
    char key[ETCD_KEY_MAX];
    if (leader_key(cluster_name, key, sizeof key) != 0) {
        snprintf(err, errlen, "cluster name '%s' is too long for an etcd key", cluster_name);
        return -EINVAL;
    }
    bool found = false;
    etcd_kv kv;
    int rc = etcd_client_get(c, key, &found, &kv);
    if (rc < 0) {
        snprintf(err, errlen, "%s", etcd_client_error(c));
        return rc;
    }
    if (!found)
        return 0;
    leader_record r;
    if (leader_record_decode(kv.value, kv.value_len, &r) != 0) {
        snprintf(err, errlen, "etcd key %s holds %zu bytes that are not a leader record", key,
                 kv.value_len);
        return -EPROTO;
    }
    *rec = r;
    *term = kv.create_revision;
    return 1;
}
