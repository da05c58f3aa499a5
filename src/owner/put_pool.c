/*
 * put_pool.c - the owner's put pool: small puts start without the master.
 *
 * A put costs its client two round trips through the owner, and each used to
 * cost the owner one to the master: PutStart for a range and a put_id, PutDone
 * to install it. The pool takes PutStart off that path for values of up to
 * POOL_MAX_LEN without options: the master grants ranges on this segment in
 * advance (PutGrant, src/master/put_grant.c), by size class (4 KiB doubling
 * to POOL_MAX_LEN), and ExternalPutStart / ExternalPut take one at once.
 * PutDone then names the grant and the value's length, and the master gives
 * the put its put_id as it installs it, so a put's order and its visibility
 * when it returns are those of a put that started through the master.
 *
 * A class asks for POOL_REFILL grants when it holds fewer than POOL_LOW (one
 * PutGrant in flight at a time), within put_pool_size bytes held in all; the
 * first put of a class goes through PutStart and starts the refill. A grant is
 * used only within a quarter of the master's in-flight TTL of its arrival
 * (older ones go back by PutRevoke on the next heartbeat), and every grant is
 * forgotten when the master link is lost: a new master knows none of them.
 * A master that refuses (placement not local) is not asked again on that link.
 */
#include "owner/put_pool.h"

#include <stdlib.h>

#include "common/log.h"
#include "fluxon/fluxon.h"

#define POOL_MIN_LEN 4096u
#define POOL_CLASSES 7 /* 4 KiB .. 256 KiB */
#define POOL_MAX_LEN (POOL_MIN_LEN << (POOL_CLASSES - 1))
#define POOL_REFILL 16u
#define POOL_LOW 4u
#define POOL_AUTO_MAX (8ull << 20)
#define POOL_RETRY_MS 1000u

typedef struct pool_class {
    put_grant *grants; /* a stack: the newest on top */
    size_t n, cap;
    bool asking;             /* a PutGrant is in flight */
    uint64_t retry_after_ms; /* after a refusal for room */
} pool_class;

typedef struct put_pool {
    owner *o;
    uint64_t budget;  /* bytes the pool may hold (put_pool_size) */
    uint64_t held;    /* bytes of the grants held and asked for */
    uint64_t epoch;   /* o->master_epoch of the grants held */
    bool refused;     /* the master does not grant on this link */
    pool_class cls[POOL_CLASSES];
} put_pool;

typedef struct grant_ask {
    put_pool *pool;
    int cls;
    uint32_t count;
    uint64_t epoch;
} grant_ask;

static uint64_t class_len(int cls)
{
    return (uint64_t)POOL_MIN_LEN << cls;
}

/* The class whose grants hold len bytes with the least to spare, or -1. */
static int class_of(uint64_t len)
{
    if (len == 0 || len > POOL_MAX_LEN)
        return -1;
    int cls = 0;
    while (class_len(cls) < len)
        cls++;
    return cls;
}

int owner_put_pool_init(owner *o)
{
    put_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return FX_ENOMEM;
    pool->o = o;
    pool->budget = o->cfg.put_pool_size;
    if (pool->budget == OWNER_PUT_POOL_AUTO) {
        pool->budget = o->cfg.memory_size / 32;
        if (pool->budget > POOL_AUTO_MAX)
            pool->budget = POOL_AUTO_MAX;
    }
    o->put_pool = pool;
    return 0;
}

void owner_put_pool_free(owner *o)
{
    put_pool *pool = o->put_pool;
    if (!pool)
        return;
    for (int i = 0; i < POOL_CLASSES; i++)
        free(pool->cls[i].grants);
    free(pool);
    o->put_pool = NULL;
}

/* Forgets every grant held (they were the lost master's). */
static void forget_all(put_pool *pool)
{
    for (int i = 0; i < POOL_CLASSES; i++) {
        pool->held -= pool->cls[i].n * class_len(i);
        pool->cls[i].n = 0;
    }
}

void owner_put_pool_master_lost(owner *o)
{
    put_pool *pool = o->put_pool;
    if (!pool)
        return;
    forget_all(pool);
    pool->refused = false;
    pool->epoch = o->master_epoch;
}

static void on_grant_resp(int status, ProtobufCMessage *msg, void *ud)
{
    grant_ask *ask = ud;
    put_pool *pool = ask->pool;
    owner *o = pool->o;
    pool_class *pc = &pool->cls[ask->cls];
    pc->asking = false;
    pool->held -= ask->count * class_len(ask->cls);
    if (ask->epoch != o->master_epoch) {
        free(ask);
        return; /* a lost link's answer: its grants mean nothing now */
    }
    int st = status ? status : msg_status(msg);
    if (st) {
        if (st == FX_ENOTSUP || st == FX_EINVAL) {
            pool->refused = true;
            FX_LOG(INFO, "put pool off on this master link: %s",
                   status ? fx_strerror(status) : msg_detail(msg));
        } else {
            pc->retry_after_ms = uv_now(o->loop) + POOL_RETRY_MS;
        }
        free(ask);
        return;
    }
    Fx__PutGrantResp *r = (Fx__PutGrantResp *)msg;
    uint64_t len = class_len(ask->cls);
    uint64_t usable_until = uv_now(o->loop) + r->ttl_ms / 4;
    free(ask);
    if (r->len != len || r->n_grants > POOL_REFILL) {
        FX_LOG(ERROR, "master answered PutGrant with %zu grants of %llu bytes (asked %u of %llu)",
               r->n_grants, (unsigned long long)r->len, POOL_REFILL, (unsigned long long)len);
        return; /* its TTL gives them back */
    }
    if (pc->cap < pc->n + r->n_grants) {
        size_t cap = pc->n + r->n_grants;
        put_grant *g = realloc(pc->grants, cap * sizeof *g);
        if (!g)
            return;
        pc->grants = g;
        pc->cap = cap;
    }
    for (size_t i = 0; i < r->n_grants; i++) {
        const Fx__PutGrant *w = r->grants[i];
        /* Checked like any range from a socket: it must lie in our segment. */
        if (!w->grant_id || !segment_contains(&o->seg, w->offset, len)) {
            FX_LOG(ERROR, "master granted a range outside this segment (%llu+%llu); ignored",
                   (unsigned long long)w->offset, (unsigned long long)len);
            continue;
        }
        pc->grants[pc->n++] = (put_grant){.time_ms = w->grant_id->time_ms,
                                          .version = w->grant_id->version,
                                          .offset = w->offset,
                                          .len = len,
                                          .usable_until_ms = usable_until};
        pool->held += len;
    }
}

/* Asks for more grants of class cls when it runs low and the budget allows. */
static void maybe_refill(put_pool *pool, int cls)
{
    owner *o = pool->o;
    pool_class *pc = &pool->cls[cls];
    if (pool->refused || pc->asking || pc->n >= POOL_LOW || !o->master_ready || !o->mrpc ||
        uv_now(o->loop) < pc->retry_after_ms)
        return;
    uint64_t len = class_len(cls);
    uint64_t room = pool->budget > pool->held ? pool->budget - pool->held : 0;
    uint32_t count = room / len < POOL_REFILL ? (uint32_t)(room / len) : POOL_REFILL;
    if (count == 0)
        return;
    grant_ask *ask = malloc(sizeof *ask);
    if (!ask)
        return;
    *ask = (grant_ask){.pool = pool, .cls = cls, .count = count, .epoch = o->master_epoch};
    Fx__PutGrantReq req = FX__PUT_GRANT_REQ__INIT;
    req.len = len;
    req.count = count;
    if (rpc_call(o->mrpc, MSG_PUT_GRANT, &req.base, OWNER_RPC_TIMEOUT_MS, on_grant_resp, ask) <
        0) {
        free(ask);
        return;
    }
    pc->asking = true;
    pool->held += count * len;
}

bool owner_put_pool_take(owner *o, uint64_t len, put_grant *out)
{
    put_pool *pool = o->put_pool;
    int cls = class_of(len);
    if (!pool || cls < 0 || pool->budget == 0)
        return false;
    pool_class *pc = &pool->cls[cls];
    uint64_t now = uv_now(o->loop);
    bool got = false;
    while (!got && pc->n > 0 && o->master_ready) {
        put_grant g = pc->grants[--pc->n];
        pool->held -= g.len;
        if (g.usable_until_ms <= now) {
            owner_put_pool_revoke(o, &g);
            continue;
        }
        *out = g;
        got = true;
    }
    maybe_refill(pool, cls);
    return got;
}

void owner_put_pool_revoke(owner *o, const put_grant *g)
{
    if (!o->mrpc || !o->master_ready)
        return; /* the master that gave it is gone: it forgets it too */
    Fx__PutRevokeReq rv = FX__PUT_REVOKE_REQ__INIT;
    Fx__PutId pid = FX__PUT_ID__INIT;
    pid.time_ms = g->time_ms;
    pid.version = g->version;
    rv.put_id = &pid; /* no key: a grant */
    rpc_notify(o->mrpc, MSG_PUT_REVOKE, &rv.base);
}

void owner_put_pool_tick(owner *o)
{
    put_pool *pool = o->put_pool;
    if (!pool)
        return;
    uint64_t now = uv_now(o->loop);
    for (int i = 0; i < POOL_CLASSES; i++) {
        pool_class *pc = &pool->cls[i];
        size_t keep = 0;
        for (size_t j = 0; j < pc->n; j++) {
            if (pc->grants[j].usable_until_ms > now) {
                pc->grants[keep++] = pc->grants[j];
                continue;
            }
            pool->held -= pc->grants[j].len;
            owner_put_pool_revoke(o, &pc->grants[j]);
        }
        pc->n = keep;
    }
}
