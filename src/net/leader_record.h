/*
 * leader_record.h - what the leading master writes under its etcd key
 * (/fluxon/<cluster_name>/leader), read by owners to find it and by
 * `fluxon stat`: its advertised address, its process id and host name, as
 * JSON ({"addr":"HOST:PORT","pid":N,"host":"NAME"}). The term is not in the
 * value: it is the key's create_revision, which etcd raises each time a new
 * leader creates the key.
 */
#ifndef FX_NET_LEADER_RECORD_H
#define FX_NET_LEADER_RECORD_H

#include <stddef.h>
#include <stdint.h>

typedef struct leader_record {
    char addr[300];
    int64_t pid;
    char host[256];
} leader_record;

/* The etcd key of cluster's leader, in buf. Returns 0, or -1 when it does
 * not fit. */
int leader_key(const char *cluster_name, char *buf, size_t cap);
/* JSON for r in buf (NUL-terminated). Returns its length, or -1. */
int leader_record_encode(const leader_record *r, char *buf, size_t cap);
/* Parses len bytes of JSON into *r. Returns 0, or -1 (not a record). */
int leader_record_decode(const void *json, size_t len, leader_record *r);

#endif
