/*
 * election.c - leadership on etcd: which of several masters serves.
 *
 * With --etcd, a master campaigns for the key /fluxon/<cluster_name>/leader
 * with a lease of etcd_lease_ttl (src/net/etcd_client.h: a txn that creates
 * the key only when it is absent). The winner's key holds its advertised
 * address, pid and host (leader_record.h); its term is the key's
 * create_revision, which rises with every new leader. A standby keeps its
 * own lease alive and polls the key every ELECTION_POLL_MS; when the
 * leader's lease ends (its process died or froze, or it shut down and
 * revoked it) the key goes, and the standby's next campaign wins. The new
 * leader then runs the recovery phase (recovery.c): owners find it through
 * etcd and report.
 *
 * Fencing. The leader renews its lease every quarter TTL and keeps a local
 * deadline: the time its last successful renewal was sent plus the TTL etcd
 * granted. Before the deadline passes etcd cannot have given the key to
 * anyone else (the lease outlives it at etcd); once it passes the master
 * stops serving at once (master_serving() is checked before every frame is
 * handled and before anything is sent), and it exits when the renewal thread
 * confirms the loss. Owners refuse requests from a master of an older term
 * than the one they know (src/owner/master_locator.c), which covers a master
 * that does not get to check (frozen between the check and the send).
 *
 * Test hook: FLUXON_TEST_STALE_LEADER_MS=N (tests only) makes a leader that
 * lost its lease act on the loss N ms late and ignore its local deadline
 * meanwhile, so that a test can watch the owners refuse what a stale leader
 * sends (the fencing on their side).
 *
 * Threads: the etcd calls block, so they run on one election thread with its
 * own etcd client; it talks to the loop through a uv_async_t and a mutex.
 * The deadline is an atomic the loop reads without the lock.
 */
#include "master/master.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "net/etcd_client.h"
#include "net/leader_record.h"

#define ELECTION_POLL_MS 100u
#define ETCD_CALL_TIMEOUT_MS 1000

struct election {
    master *m; /* loop side only */
    uv_async_t wake;
    uv_timer_t stale_timer;  /* the test hook's delay */
    uint64_t stale_ms;       /* FLUXON_TEST_STALE_LEADER_MS, 0: off */
    char lost_why[512];
    pthread_t thread;
    bool thread_started;
    char *endpoints;
    char key[300];
    char value[700];
    int64_t ttl_s;
    _Atomic uint64_t deadline_ms; /* CLOCK_MONOTONIC; 0: not leading */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    bool stop;
    bool won, lost, told_won;
    int64_t term;
    char why[512];
};

uint64_t election_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Sleeps up to ms unless asked to stop; returns true when asked. */
static bool sleep_or_stop(election *e, uint64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&e->mu);
    while (!e->stop && pthread_cond_timedwait(&e->cv, &e->mu, &until) != ETIMEDOUT)
        ;
    bool stop = e->stop;
    pthread_mutex_unlock(&e->mu);
    return stop;
}

static void post_won(election *e, int64_t term)
{
    pthread_mutex_lock(&e->mu);
    e->won = true;
    e->term = term;
    pthread_mutex_unlock(&e->mu);
    uv_async_send(&e->wake);
}

static void post_lost(election *e, const char *why)
{
    atomic_store(&e->deadline_ms, 1); /* in the past: stop serving now */
    pthread_mutex_lock(&e->mu);
    e->lost = true;
    snprintf(e->why, sizeof e->why, "%.500s", why);
    pthread_mutex_unlock(&e->mu);
    uv_async_send(&e->wake);
}

/* Leading: renew every quarter TTL until the lease is gone or we stop
 * (then revoked, so that a standby takes over at once). */
static void lead(election *e, etcd_client *c, int64_t lease)
{
    uint64_t every = (uint64_t)e->ttl_s * 1000u / 4;
    if (every < 100)
        every = 100;
    for (;;) {
        if (sleep_or_stop(e, every)) {
            etcd_client_lease_revoke(c, lease);
            return;
        }
        uint64_t sent = election_mono_ms();
        int64_t left = 0;
        int rc = etcd_client_lease_keepalive(c, lease, &left);
        if (rc == 0 && left > 0) {
            atomic_store(&e->deadline_ms, sent + (uint64_t)left * 1000u);
            continue;
        }
        if (rc == 0) {
            post_lost(e, "the etcd lease expired");
            return;
        }
        if (election_mono_ms() >= atomic_load(&e->deadline_ms)) {
            char why[600];
            snprintf(why, sizeof why, "the etcd lease could not be renewed before it ran out: %s",
                     etcd_client_error(c));
            post_lost(e, why);
            return;
        }
    }
}

static void *election_main(void *arg)
{
    election *e = arg;
    etcd_client_conf conf = {.connect_timeout_ms = ETCD_CALL_TIMEOUT_MS,
                             .request_timeout_ms = ETCD_CALL_TIMEOUT_MS};
    char err[512];
    int code = 0;
    etcd_client *c = etcd_client_new(e->endpoints, &conf, &code, err, sizeof err);
    if (!c) {
        post_lost(e, err);
        return NULL;
    }
    int64_t lease = 0, granted = 0;
    uint64_t lease_sent = 0;
    unsigned failures = 0;
    while (!sleep_or_stop(e, lease ? ELECTION_POLL_MS : 0)) {
        if (!lease) {
            lease_sent = election_mono_ms();
            if (etcd_client_lease_grant(c, e->ttl_s, &lease, &granted) < 0) {
                if (failures++ % 50 == 0)
                    FX_LOG(WARN, "election: %s", etcd_client_error(c));
                lease = 0;
                sleep_or_stop(e, 200);
                continue;
            }
        } else {
            /* A standby keeps its lease alive while it waits. */
            int64_t left = 0;
            lease_sent = election_mono_ms();
            if (etcd_client_lease_keepalive(c, lease, &left) < 0 || left <= 0) {
                lease = 0;
                continue;
            }
            granted = left;
        }
        bool found = true;
        etcd_kv kv;
        if (etcd_client_get(c, e->key, &found, &kv) < 0 || found)
            continue; /* a leader holds the key (or etcd did not answer) */
        etcd_campaign out;
        int rc = etcd_client_campaign(c, e->key, e->value, strlen(e->value), lease, &out);
        if (rc == -ENOENT) {
            lease = 0;
            continue;
        }
        if (rc < 0 || !out.won)
            continue;
        failures = 0;
        atomic_store(&e->deadline_ms, lease_sent + (uint64_t)granted * 1000u);
        post_won(e, out.holder.create_revision);
        lead(e, c, lease);
        break;
    }
    etcd_client_free(c);
    return NULL;
}

static void on_stale_timer(uv_timer_t *t)
{
    election *e = t->data;
    master_lost_leadership(e->m, e->lost_why);
}

static void on_wake(uv_async_t *a)
{
    election *e = a->data;
    master *m = e->m;
    pthread_mutex_lock(&e->mu);
    bool won = e->won && !e->told_won, lost = e->lost;
    e->told_won = e->told_won || won;
    int64_t term = e->term;
    char why[sizeof e->why];
    memcpy(why, e->why, sizeof why);
    pthread_mutex_unlock(&e->mu);
    if (won && !m->stopping) {
        m->term = (uint64_t)term;
        m->leading = true;
        FX_LOG(WARN, "leading the cluster at term %lld (etcd key %s)", (long long)term, e->key);
        master_recovery_begin(m);
    }
    if (lost && !m->stopping) {
        if (e->stale_ms && !uv_is_active((uv_handle_t *)&e->stale_timer)) {
            FX_LOG(WARN, "test hook: acting as a stale leader for %llu ms (%s)",
                   (unsigned long long)e->stale_ms, why);
            memcpy(e->lost_why, why, sizeof e->lost_why);
            uv_timer_start(&e->stale_timer, on_stale_timer, e->stale_ms, 0);
        } else if (!e->stale_ms) {
            master_lost_leadership(m, why);
        }
    }
}

int master_election_start(master *m, const char *advertised, char *err, size_t errlen)
{
    election *e = calloc(1, sizeof *e);
    if (!e || !(e->endpoints = strdup(m->cfg.etcd))) {
        free(e);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    e->m = m;
    e->ttl_s = (int64_t)((m->cfg.etcd_lease_ttl_ms + 999) / 1000);
    leader_record rec = {.pid = getpid()};
    snprintf(rec.addr, sizeof rec.addr, "%s", advertised);
    gethostname(rec.host, sizeof rec.host - 1);
    if (leader_key(m->cfg.cluster_name, e->key, sizeof e->key) < 0 ||
        leader_record_encode(&rec, e->value, sizeof e->value) < 0) {
        snprintf(err, errlen, "etcd: the cluster name or address is too long for the leader key");
        free(e->endpoints);
        free(e);
        return -1;
    }
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    uv_async_init(m->loop, &e->wake, on_wake);
    e->wake.data = e;
    uv_timer_init(m->loop, &e->stale_timer);
    e->stale_timer.data = e;
    const char *stale = getenv("FLUXON_TEST_STALE_LEADER_MS");
    e->stale_ms = stale ? strtoull(stale, NULL, 10) : 0;
    if (e->stale_ms)
        FX_LOG(WARN, "test hook FLUXON_TEST_STALE_LEADER_MS=%llu: a lost lease is acted on late",
               (unsigned long long)e->stale_ms);
    m->election = e;
    if (pthread_create(&e->thread, NULL, election_main, e) != 0) {
        snprintf(err, errlen, "cannot start the election thread");
        return -1;
    }
    e->thread_started = true;
    FX_LOG(INFO, "standing for election on etcd %s (key %s, lease %llds)", m->cfg.etcd, e->key,
           (long long)e->ttl_s);
    return 0;
}

bool master_serving(const master *m)
{
    if (!m->election)
        return true;
    if (m->election->stale_ms)
        return m->leading; /* the test hook: a stale leader that does not check */
    return m->leading && election_mono_ms() < atomic_load(&m->election->deadline_ms);
}

static void on_wake_closed(uv_handle_t *h)
{
    election *e = h->data;
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e->endpoints);
    free(e);
}

void master_election_stop(master *m)
{
    election *e = m->election;
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    e->stop = true;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (e->thread_started)
        pthread_join(e->thread, NULL); /* a leader revokes its lease on the way out */
    m->election = NULL;
    uv_close((uv_handle_t *)&e->stale_timer, NULL);
    uv_close((uv_handle_t *)&e->wake, on_wake_closed);
}
