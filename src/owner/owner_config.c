/*
 * owner_config.c - the keys of fluxon-owner's YAML file and flags, and the
 * rules that span them.
 *
 * The table below is the whole description of the owner's keys (dotted path,
 * kind, field offset); the table-driven engine in common/config.c walks the
 * YAML file, applies flags, deep-copies and frees by it. What only the owner
 * has lives here: its defaults and owner_config_validate() (required keys,
 * the client socket's length, the SSD tier's paths and limits, an advertised
 * address that is no wildcard).
 */
#include "owner/owner_config.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "net/addr.h"

#define OWNER_F(f) offsetof(owner_config, f)

static const struct cfg_key owner_keys[] = {
    {"cluster_name", CK_STR, OWNER_F(cluster_name), 0, 0, NULL},
    {"master", CK_STR, OWNER_F(master), 0, 0, NULL},
    {"node_name", CK_STR_OPT, OWNER_F(node_name), 0, 0, NULL},
    {"data_listen", CK_HOSTPORT, OWNER_F(data_listen), 0, 0, NULL},
    {"data_advertise", CK_HOSTPORT_OPT, OWNER_F(data_advertise), 0, 0, NULL},
    {"log_level", CK_LOGLEVEL, OWNER_F(log_level), 0, 0, NULL},
    {"cluster_secret_file", CK_STR_OPT, OWNER_F(cluster_secret_file), 0, 0, NULL},
    {"max_client_connections", CK_COUNT, OWNER_F(max_client_connections), 0, 1, NULL},
    {"max_peer_connections", CK_COUNT, OWNER_F(max_peer_connections), 0, 1, NULL},
    {"get_threads", CK_COUNT, OWNER_F(get_threads), 0, 0, NULL},
    {"handshake_timeout", CK_DURATION, OWNER_F(handshake_timeout_ms), 0, 1, NULL},
    {"receive_buffer_budget", CK_SIZE, OWNER_F(receive_buffer_budget), 0, 1, NULL},
    {"master_wait", CK_DURATION, OWNER_F(master_wait_ms), 0, 1, NULL},
    {"fluxonkv_spec", CK_MAP, 0, 0, 0, NULL},
    {"fluxonkv_spec.memory_size", CK_SIZE, OWNER_F(memory_size), 0, 1, NULL},
    {"fluxonkv_spec.put_pool_size", CK_SIZE, OWNER_F(put_pool_size), 0, 0, NULL},
    {"fluxonkv_spec.client_socket", CK_STR, OWNER_F(client_socket), 0, 0, NULL},
    {"fluxonkv_spec.client_socket_mode", CK_STR_OPT, OWNER_F(client_socket_mode), 0, 0, NULL},
    {"fluxonkv_spec.client_socket_group", CK_STR_OPT, OWNER_F(client_socket_group), 0, 0, NULL},
    {"fluxonkv_spec.prefault", CK_BOOL, OWNER_F(prefault), 0, 0, NULL},
    {"fluxonkv_spec.use_hugepages", CK_BOOL, OWNER_F(use_hugepages), 0, 0, NULL},
    {"fluxonkv_spec.large_file_paths", CK_STRLIST, OWNER_F(large_file_paths),
     OWNER_F(n_large_file_paths), 0, NULL},
    {"fluxonkv_spec.large_limit_size", CK_SIZELIST, OWNER_F(large_limit_size),
     OWNER_F(n_large_limit_size), FX_SSD_MIN_LIMIT, NULL},
};

static const struct cfg_schema owner_schema = {owner_keys, CFG_NKEYS(owner_keys),
                                               sizeof(owner_config), NULL};

void owner_config_init(owner_config *c)
{
    memset(c, 0, sizeof *c);
    c->cluster_name = strdup("fluxon"); /* NULL on OOM: validate reports it */
    c->data_listen = strdup("127.0.0.1:0");
    c->log_level = -1;
    c->max_client_connections = 4096;
    c->max_peer_connections = 4096;
    c->get_threads = 2;
    c->handshake_timeout_ms = 5000;
    c->receive_buffer_budget = 256ull << 20;
    c->master_wait_ms = 10000;
    c->put_pool_size = OWNER_PUT_POOL_AUTO;
    c->prefault = true;
    c->use_hugepages = true;
}

int owner_config_load(owner_config *c, const char *path, char *err, size_t errlen)
{
    return cfg_load(c, &owner_schema, path, err, errlen);
}

int owner_config_set(owner_config *c, const char *key, const char *value, char *err,
                     size_t errlen)
{
    return cfg_set(c, &owner_schema, key, value, err, errlen);
}

#define SOCKET_MODE_DEFAULT 0600u

/* The octal mode in text ("0660", "660"), or -1 when it is not one. */
static long parse_mode(const char *text)
{
    size_t n = strlen(text);
    if (n < 3 || n > 4 || strspn(text, "01234567") != n)
        return -1;
    long m = strtol(text, NULL, 8);
    return m <= 0777 ? m : -1;
}

unsigned owner_config_socket_mode(const owner_config *c)
{
    long m = c->client_socket_mode ? parse_mode(c->client_socket_mode) : -1;
    return m < 0 ? SOCKET_MODE_DEFAULT : (unsigned)m;
}

int owner_config_socket_group(const owner_config *c, gid_t *gid)
{
    *gid = (gid_t)-1;
    if (!c->client_socket_group)
        return 0;
    struct group gr, *found = NULL;
    char buf[4096];
    int r = getgrnam_r(c->client_socket_group, &gr, buf, sizeof buf, &found);
    if (r != 0)
        return -r;
    if (!found)
        return -ENOENT;
    *gid = gr.gr_gid;
    return 0;
}

/* 0 when the socket settings are usable, else -1 with the key in err. */
static int check_socket_access(const owner_config *c, char *err, size_t errlen)
{
    if (c->client_socket_mode) {
        long m = parse_mode(c->client_socket_mode);
        if (m < 0)
            return cfg_err(err, errlen,
                           "fluxonkv_spec.client_socket_mode: '" CFG_QUOTE
                           "' is not an octal mode such as 0600 or 0660",
                           c->client_socket_mode);
        if ((m & 0600) != 0600)
            return cfg_err(err, errlen,
                           "fluxonkv_spec.client_socket_mode: %04lo leaves the owner's own user "
                           "without read and write (keep 0600)",
                           m);
    }
    gid_t gid;
    int r = owner_config_socket_group(c, &gid);
    if (r < 0)
        return cfg_err(err, errlen,
                       "fluxonkv_spec.client_socket_group: no group named '" CFG_QUOTE "'%s%s",
                       c->client_socket_group, r != -ENOENT ? ": " : "",
                       r != -ENOENT ? strerror(-r) : "");
    return 0;
}

int owner_config_validate(const owner_config *c, char *err, size_t errlen)
{
    if (!c)
        return cfg_err(err, errlen, "config: missing");
    if (cfg_check_name("cluster_name", c->cluster_name, true, err, errlen) < 0 ||
        (c->master && owner_master_is_etcd(c->master)
             ? owner_master_etcd_check(c->master, err, errlen)
             : cfg_check_hostport("master", c->master, true, err, errlen)) < 0 ||
        cfg_check_name("node_name", c->node_name, false, err, errlen) < 0 ||
        cfg_check_hostport("data_listen", c->data_listen, true, err, errlen) < 0 ||
        cfg_check_hostport("data_advertise", c->data_advertise, false, err, errlen) < 0 ||
        cfg_check_log_level(c->log_level, err, errlen) < 0)
        return -1;
    if (c->get_threads > OWNER_GET_THREADS_MAX)
        return cfg_err(err, errlen, "get_threads: %u is more than %u", c->get_threads,
                       OWNER_GET_THREADS_MAX);
    if (c->data_advertise && addr_hostport_is_wildcard(c->data_advertise))
        return cfg_err(err, errlen,
                       "data_advertise: '" CFG_QUOTE "' is a wildcard address; peers need one "
                       "they can dial",
                       c->data_advertise);
    if (c->node_name && strlen(c->node_name) > OWNER_NODE_NAME_MAX)
        return cfg_err(err, errlen, "node_name: longer than %d bytes", OWNER_NODE_NAME_MAX);
    if (c->memory_size == 0)
        return cfg_err(err, errlen, "fluxonkv_spec.memory_size: missing (required, > 0)");
    if (cfg_check_name("fluxonkv_spec.client_socket", c->client_socket, true, err, errlen) < 0)
        return -1;
    if (strlen(c->client_socket) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return cfg_err(err, errlen,
                       "fluxonkv_spec.client_socket: path is longer than %zu bytes",
                       sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
    if (check_socket_access(c, err, errlen) < 0)
        return -1;

    for (size_t i = 0; i < c->n_large_file_paths; i++) {
        const char *p = c->large_file_paths[i];
        if (!p || !*p)
            return cfg_err(err, errlen, "fluxonkv_spec.large_file_paths[%zu]: must not be empty",
                           i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->large_file_paths[j], p) == 0)
                return cfg_err(err, errlen,
                               "fluxonkv_spec.large_file_paths[%zu]: duplicate path '" CFG_QUOTE
                               "'",
                               i, p);
    }
    if (c->large_limit_size) {
        if (c->n_large_limit_size != c->n_large_file_paths)
            return cfg_err(err, errlen,
                           "fluxonkv_spec.large_limit_size: has %zu entries but "
                           "fluxonkv_spec.large_file_paths has %zu",
                           c->n_large_limit_size, c->n_large_file_paths);
        for (size_t i = 0; i < c->n_large_limit_size; i++)
            if (c->large_limit_size[i] < FX_SSD_MIN_LIMIT)
                return cfg_err(err, errlen,
                               "fluxonkv_spec.large_limit_size[%zu]: %" PRIu64
                               " bytes is below the minimum of %u",
                               i, c->large_limit_size[i], FX_SSD_MIN_LIMIT);
    }
    return 0;
}

void owner_config_free(owner_config *c)
{
    cfg_free(c, &owner_schema);
}
