/*
 * etcd_local.h - the etcd member of a local cluster with standby masters
 * (`fluxon up --masters N`): its command line, on loopback ports that were
 * free a moment before, and the two questions `up` asks it through the
 * fx_etcd client (src/net/etcd_client.h): does it serve yet, and which
 * master leads.
 *
 * One member, listening for clients and peers on 127.0.0.1 only, its data
 * in DIR/etcd.data (the argument that marks it as this directory's etcd,
 * cluster_dir.h). Starting, waiting and stopping are up.c's, as for the
 * masters and owners (proc.h); nothing here starts a process.
 */
#ifndef FX_CLI_ETCD_LOCAL_H
#define FX_CLI_ETCD_LOCAL_H

#include <limits.h>
#include <stdint.h>

#include "net/etcd_client.h"
#include "net/leader_record.h"

/* The member's name in its own cluster (--name, --initial-cluster). */
#define ETCD_LOCAL_NAME "fluxon"

typedef struct etcd_local {
    char data_dir[PATH_MAX]; /* DIR/etcd.data */
    int client_port, peer_port;
    char endpoint[64];    /* "http://127.0.0.1:CLIENT": the masters' --etcd, our client's */
    char locator[64];     /* "etcd://127.0.0.1:CLIENT": the owners' `master:` */
    char peer_url[64];    /* "http://127.0.0.1:PEER" */
    char cluster[128];    /* "fluxon=http://127.0.0.1:PEER" */
    char *argv[20];       /* for proc_spawn; points into this struct and bin */
} etcd_local;

/* Fills e for the binary bin with its data in data_dir, on two loopback
 * ports that are free now (another process may take one before etcd binds
 * it: etcd then exits, and the caller prepares again). bin and e must stay
 * valid while e->argv is used. Returns 0, or -errno (no port, a path too
 * long: -ENAMETOOLONG). */
int etcd_local_prepare(etcd_local *e, const char *bin, const char *data_dir);

/* Who leads cluster_name's masters, read through c: 1 with the leader's
 * record in *rec and its term (the key's create_revision) in *term; 0 when
 * etcd serves and no master leads; or a negative errno when etcd did not
 * answer or the key holds no leader record, with a sentence in err. *rec
 * and *term are unchanged unless 1 is returned. */
int etcd_local_leader(etcd_client *c, const char *cluster_name, leader_record *rec,
                      int64_t *term, char *err, size_t errlen);

#endif
