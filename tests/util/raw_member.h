/*
 * raw_member.h - a test-side member of a cluster that speaks the master
 * protocol directly over a blocking TCP socket.
 *
 * Tests use it to ask the master what it knows (RouteInfo), to hold master
 * state (a GetStart that never ends takes a durable slot), and to obtain a
 * registered identity and the data-plane pair keys (from its copy of the
 * member table) for probing an owner's data plane. One-way pushes from the
 * master (MemberTable, invalidations) are skipped while waiting for a
 * response; the last MemberTable is kept.
 */
#ifndef FX_TESTS_RAW_MEMBER_H
#define FX_TESTS_RAW_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/auth_key.h"
#include "net/msg.h"

typedef struct raw_member {
    int fd;
    uint32_t node_id;
    uint64_t tomb_tag;
    uint64_t next_req;
    Fx__MemberTableReq *members; /* the last table pushed, or NULL */
} raw_member;

/* Connects to master_addr ("HOST:PORT": a name, IPv4 or [IPv6]) and
 * registers with a segment of segment_size bytes. Returns 0 or -1 (after
 * printing why). */
int raw_member_register(raw_member *rm, const char *master_addr, const char *cluster_name,
                        const char *name, uint64_t segment_size);
/* The same through the cluster's handshake first when secret_file is
 * neither NULL nor "" (a cluster started with FX_CLUSTER_SECRET=1). */
int raw_member_register_secret(raw_member *rm, const char *master_addr, const char *cluster_name,
                               const char *name, uint64_t segment_size, const char *secret_file);
/* Sends a request and waits up to timeout_ms for its response; NULL on a
 * transport failure. Free the result with msg_free. */
ProtobufCMessage *raw_member_call(raw_member *rm, uint16_t type, const ProtobufCMessage *req,
                                  int timeout_ms);
/* What the master's route of a key says (RouteInfo). Node ids of 64 and up
 * are left out of the masks. */
typedef struct raw_route {
    bool found;             /* the master answered with status 0 */
    uint64_t len;           /* the value's length */
    uint64_t pid_time;      /* the committed put id (0, 0 without one) */
    uint32_t pid_version;
    uint64_t mem, ssd;      /* bitmasks of node ids with a memory / SSD replica */
    uint32_t durable_slots; /* durable get slots in use */
} raw_route;

/* Asks the master for the route of key. Returns 0, the master's status
 * (a negative FX_E* code, e.g. FX_ENOTFOUND), or FX_ECONN without an answer;
 * on failure *out is all zero (found false). */
int raw_member_route(raw_member *rm, const char *key, raw_route *out);
/* The data-plane address of node_id from the last member table ("" if unknown). */
const char *raw_member_data_addr(raw_member *rm, uint32_t node_id);
/* The pair key the last member table gave us for node_id, and node_id's
 * tomb tag: true, or false when the table does not list node_id or carries
 * no key of AUTH_KEY_LEN bytes for it (our own entry never does). */
bool raw_member_pair_key(const raw_member *rm, uint32_t node_id, uint64_t *tomb_tag,
                         auth_key *key);
/* Reads pushes for up to ms (to pick up a member table). */
void raw_member_poll(raw_member *rm, int ms);
/* Sends one heartbeat (the master drops members that stay silent). */
int raw_member_heartbeat(raw_member *rm);
void raw_member_close(raw_member *rm);

#endif
