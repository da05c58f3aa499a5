/*
 * master_locator.c - where the master is: a fixed HOST:PORT, or the leader
 * that etcd names (owner YAML `master: etcd://HOST:PORT[,HOST:PORT...]`).
 *
 * With etcd, a thread with its own etcd client (src/net/etcd_client.h, the
 * calls block) reads the leader key /fluxon/<cluster_name>/leader every
 * LOCATOR_POLL_MS and hands what it found to the loop (uv_async_t): the
 * leader's address (leader_record.h) and its term (the key's
 * create_revision). The loop keeps the newest term it knows (known_term).
 * When it learns of a newer term than the master it is linked to, the link
 * is fenced (master_link.c): every request still coming from that master is
 * refused, and the owner connects to the new leader. A master also fences
 * itself (src/master/election.c: it stops at its lease's local deadline);
 * this side covers one that does not get to check.
 */
#include "owner/owner.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/log.h"
#include "net/etcd_client.h"
#include "net/etcd_endpoints.h"
#include "net/leader_record.h"

#define LOCATOR_POLL_MS 100u
#define LOCATOR_CALL_TIMEOUT_MS 1000

struct master_locator {
    owner *o; /* loop side only */
    uv_async_t wake;
    pthread_t thread;
    bool thread_started;
    char endpoints[ETCD_ENDPOINTS_MAX * ETCD_ENDPOINT_TEXT_MAX];
    char key[300];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    bool stop;
    bool fresh; /* a reading the loop has not taken yet */
    bool found;
    char addr[300];
    uint64_t term;
};

int owner_master_is_etcd(const char *master)
{
    return strncmp(master, "etcd://", 7) == 0;
}

/* "etcd://A:1,B:2" -> "http://A:1,http://B:2". */
static int to_http_list(const char *master, char *out, size_t cap)
{
    const char *p = master + 7;
    size_t n = 0;
    out[0] = '\0';
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int w = snprintf(out + n, cap - n, "%shttp://%.*s", n ? "," : "", (int)len, p);
        if (w < 0 || (size_t)w >= cap - n)
            return -1;
        n += (size_t)w;
        p += len + (comma ? 1 : 0);
    }
    return n ? 0 : -1;
}

int owner_master_etcd_check(const char *master, char *err, size_t errlen)
{
    char list[ETCD_ENDPOINTS_MAX * ETCD_ENDPOINT_TEXT_MAX];
    etcd_endpoints eps;
    char why[384];
    if (to_http_list(master, list, sizeof list) < 0) {
        snprintf(err, errlen, "master: '%s' names no etcd endpoint (etcd://HOST:PORT[,...])",
                 master);
        return -1;
    }
    if (etcd_endpoints_parse(list, &eps, why, sizeof why) < 0) {
        snprintf(err, errlen, "master: %s", why);
        return -1;
    }
    return 0;
}

static bool sleep_or_stop(master_locator *l, unsigned ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)ms * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&l->mu);
    while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &until) != ETIMEDOUT)
        ;
    bool stop = l->stop;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

static void *locator_main(void *arg)
{
    master_locator *l = arg;
    etcd_client_conf conf = {.connect_timeout_ms = LOCATOR_CALL_TIMEOUT_MS,
                             .request_timeout_ms = LOCATOR_CALL_TIMEOUT_MS};
    char err[512];
    int code = 0;
    etcd_client *c = etcd_client_new(l->endpoints, &conf, &code, err, sizeof err);
    if (!c) {
        FX_LOG(ERROR, "master locator: %s", err);
        return NULL;
    }
    char last_addr[300] = "";
    uint64_t last_term = 0;
    unsigned failures = 0;
    do {
        bool found = false;
        etcd_kv kv;
        if (etcd_client_get(c, l->key, &found, &kv) < 0) {
            if (failures++ % 100 == 0)
                FX_LOG(WARN, "master locator: %s", etcd_client_error(c));
            continue;
        }
        failures = 0;
        leader_record rec;
        if (found && leader_record_decode(kv.value, kv.value_len, &rec) < 0) {
            FX_LOG_LIMITED(WARN, "master locator: %s does not hold a leader record", l->key);
            found = false;
        }
        uint64_t term = found ? (uint64_t)kv.create_revision : 0;
        const char *addr = found ? rec.addr : "";
        if (term == last_term && strcmp(addr, last_addr) == 0)
            continue;
        last_term = term;
        snprintf(last_addr, sizeof last_addr, "%s", addr);
        pthread_mutex_lock(&l->mu);
        l->fresh = true;
        l->found = found;
        l->term = term;
        snprintf(l->addr, sizeof l->addr, "%s", addr);
        pthread_mutex_unlock(&l->mu);
        uv_async_send(&l->wake);
    } while (!sleep_or_stop(l, LOCATOR_POLL_MS));
    etcd_client_free(c);
    return NULL;
}

static void on_wake(uv_async_t *a)
{
    master_locator *l = a->data;
    owner *o = l->o;
    pthread_mutex_lock(&l->mu);
    bool fresh = l->fresh, found = l->found;
    uint64_t term = l->term;
    char addr[300];
    memcpy(addr, l->addr, sizeof addr);
    l->fresh = false;
    pthread_mutex_unlock(&l->mu);
    if (!fresh || o->stopping)
        return;
    if (!found) {
        FX_LOG(INFO, "master locator: no leader in etcd right now");
        return;
    }
    char host[256];
    int port = 0;
    if (config_parse_hostport(addr, host, sizeof host, &port) < 0) {
        FX_LOG_LIMITED(WARN, "master locator: the leader's address '%s' is not HOST:PORT", addr);
        return;
    }
    if (term < o->known_term)
        return; /* an older reading */
    bool moved = term > o->known_term || strcmp(host, o->master_host) != 0 ||
                 port != o->master_port;
    o->known_term = term;
    snprintf(o->master_host, sizeof o->master_host, "%s", host);
    o->master_port = port;
    o->leader_known = true;
    if (moved) {
        FX_LOG(INFO, "master locator: the leader is %s at term %llu", addr,
               (unsigned long long)term);
        owner_master_moved(o);
    }
}

int owner_locator_start(owner *o, char *err, size_t errlen)
{
    if (!owner_master_is_etcd(o->cfg.master)) {
        o->leader_known = true; /* a fixed address */
        return 0;
    }
    master_locator *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    l->o = o;
    if (to_http_list(o->cfg.master, l->endpoints, sizeof l->endpoints) < 0 ||
        leader_key(o->cfg.cluster_name, l->key, sizeof l->key) < 0) {
        snprintf(err, errlen, "master: '%s' cannot be used", o->cfg.master);
        free(l);
        return -1;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    uv_async_init(o->loop, &l->wake, on_wake);
    l->wake.data = l;
    o->locator = l;
    if (pthread_create(&l->thread, NULL, locator_main, l) != 0) {
        snprintf(err, errlen, "cannot start the master locator thread");
        return -1;
    }
    l->thread_started = true;
    FX_LOG(INFO, "finding the master through etcd %s (key %s)", l->endpoints, l->key);
    return 0;
}

static void on_closed(uv_handle_t *h)
{
    master_locator *l = h->data;
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}

void owner_locator_stop(owner *o)
{
    master_locator *l = o->locator;
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (l->thread_started)
        pthread_join(l->thread, NULL);
    o->locator = NULL;
    uv_close((uv_handle_t *)&l->wake, on_closed);
}
