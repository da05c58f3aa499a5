/*
 * test_etcd_client.c - the etcd client (src/net/etcd_client.c) against a
 * real etcd (tests/util/etcd_proc.c); skips (77) only when /usr/bin/etcd is
 * absent.
 *
 * What it shows:
 *  - leases: a grant gets an id and the TTL asked for; a keepalive reports
 *    the TTL left; revoke deletes the lease's keys at once, and a second
 *    revoke or a put on a gone lease is -ENOENT;
 *  - keys: put / get / delete of a binary value (every byte 0..255), with
 *    revisions and version as etcd keeps them; an over-long value is refused
 *    before anything is sent;
 *  - the campaign: two clients on two threads campaign on one key at once:
 *    exactly one wins, the other sees the winner's value, lease and term
 *    (create_revision). For 3 s, longer than the 2 s TTL, the winner keeps
 *    its lease alive and each new campaign of the loser still loses to the
 *    same term; then the winner stops: the key goes when the lease runs out
 *    (not before a second, within 8 s), the winner's keepalive says the
 *    lease is gone (TTL 0) and a campaign on it is -ENOENT, while the loser,
 *    which kept its own lease alive, wins with a strictly higher term.
 *    A campaign repeated by the holder counts as won, same term. After a
 *    revoke the key is gone at once and the next winner's term is higher;
 *  - endpoints: with "http://127.0.0.1:1,<etcd>" the client fails over to
 *    etcd and stays there; with a first endpoint that accepts but never
 *    answers it fails over after its request timeout; with only a dead
 *    endpoint, or only a silent one, a call fails within its timeout with
 *    an error naming the endpoint and the call; malformed lists are refused.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "etcd_proc.h"
#include "net/etcd_client.h"
#include "testlib.h"

#define KEY "/fluxon-test/leader"
#define TTL_S 2

static etcd_client *client(const char *endpoints, int timeout_ms)
{
    etcd_client_conf conf = {.connect_timeout_ms = timeout_ms, .request_timeout_ms = timeout_ms};
    int code = 0;
    char err[512] = "";
    etcd_client *c = etcd_client_new(endpoints, &conf, &code, err, sizeof err);
    REQUIRE(c != NULL, "client for %s: %s", endpoints, err);
    return c;
}

static bool same_value(const etcd_kv *kv, const void *value, size_t len)
{
    return kv->value_len == len && memcmp(kv->value, value, len) == 0;
}

static void test_leases(const char *ep)
{
    etcd_client *c = client(ep, 0);
    int64_t id = 0, ttl = 0, left = 0;
    CHECK(etcd_client_lease_grant(c, 10, &id, &ttl) == 0 && id > 0 && ttl == 10, "grant: %s",
          etcd_client_error(c));
    CHECK(etcd_client_lease_keepalive(c, id, &left) == 0 && left >= 9 && left <= 10,
          "keepalive: %lld left (%s)", (long long)left, etcd_client_error(c));
    CHECK(etcd_client_lease_revoke(c, id) == 0, "revoke: %s", etcd_client_error(c));
    CHECK(etcd_client_lease_keepalive(c, id, &left) == 0 && left == 0,
          "keepalive of a revoked lease: %lld left (%s)", (long long)left, etcd_client_error(c));
    CHECK(etcd_client_lease_revoke(c, id) == -ENOENT && strstr(etcd_client_error(c), "not found"),
          "second revoke: %s", etcd_client_error(c));
    CHECK(etcd_client_lease_grant(c, 0, &id, NULL) == -EINVAL, "TTL 0 refused");
    etcd_client_free(c);
}

static void test_keys(const char *ep)
{
    etcd_client *c = client(ep, 0);
    uint8_t value[300];
    for (size_t i = 0; i < sizeof value; i++)
        value[i] = (uint8_t)i;
    static etcd_kv kv;
    bool found = true;
    int64_t deleted = -1;
    const char *key = "/fluxon-test/plain";

    CHECK(etcd_client_get(c, key, &found, &kv) == 0 && !found, "no key yet");
    CHECK(etcd_client_put(c, key, value, sizeof value, 0) == 0, "put: %s", etcd_client_error(c));
    CHECK(etcd_client_get(c, key, &found, &kv) == 0 && found, "get: %s", etcd_client_error(c));
    CHECK(same_value(&kv, value, sizeof value), "every byte 0..255 read back");
    CHECK(kv.lease == 0 && kv.version == 1 && kv.mod_revision == kv.create_revision,
          "a new key: no lease, version 1");
    int64_t created = kv.create_revision;
    CHECK(etcd_client_put(c, key, "", 0, 0) == 0, "put an empty value: %s", etcd_client_error(c));
    CHECK(etcd_client_get(c, key, &found, &kv) == 0 && found && kv.value_len == 0 &&
              kv.version == 2 && kv.create_revision == created && kv.mod_revision > created,
          "overwritten: version 2, same create_revision, higher mod_revision");
    CHECK(etcd_client_delete(c, key, &deleted) == 0 && deleted == 1, "delete: %s",
          etcd_client_error(c));
    CHECK(etcd_client_get(c, key, &found, &kv) == 0 && !found, "gone after delete");
    CHECK(etcd_client_delete(c, key, &deleted) == 0 && deleted == 0, "delete of no key: 0");

    CHECK(etcd_client_put(c, key, "v", 1, 12345) == -ENOENT, "put on a lease that is not: %s",
          etcd_client_error(c));
    static uint8_t big[ETCD_VALUE_MAX + 1];
    CHECK(etcd_client_put(c, key, big, sizeof big, 0) == -EMSGSIZE &&
              strstr(etcd_client_error(c), "value over"),
          "over-long value refused: %s", etcd_client_error(c));
    CHECK(etcd_client_get(c, "", &found, &kv) == -EINVAL, "empty key refused");
    etcd_client_free(c);
}

/* One side of the race: its own client and lease, on its own thread. */
typedef struct contender {
    etcd_client *c;
    int64_t lease;
    const char *value;
    size_t len;
    pthread_barrier_t *go;
    int rc;
    etcd_campaign got;
} contender;

static void *campaign_thread(void *arg)
{
    contender *k = arg;
    pthread_barrier_wait(k->go);
    k->rc = etcd_client_campaign(k->c, KEY, k->value, k->len, k->lease, &k->got);
    return NULL;
}

/* Both campaign at once; returns the winner's index (0 or 1), or -1. */
static int race(contender k[2])
{
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        k[i].go = &go;
        REQUIRE(pthread_create(&t[i], NULL, campaign_thread, &k[i]) == 0, "thread");
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&go);
    for (int i = 0; i < 2; i++)
        CHECK(k[i].rc == 0, "campaign %d: %s", i, etcd_client_error(k[i].c));
    CHECK(k[0].got.won != k[1].got.won, "exactly one wins (%d, %d)", k[0].got.won, k[1].got.won);
    return k[0].got.won ? 0 : k[1].got.won ? 1 : -1;
}

static void test_campaign(const char *ep)
{
    /* Values are bytes: a NUL and a 0xff inside. */
    static contender k[2] = {{.value = "10.0.0.1:7700\0\xff" "a", .len = 16},
                             {.value = "10.0.0.2:7700\0\xff" "b", .len = 16}};
    for (int i = 0; i < 2; i++) {
        k[i].c = client(ep, 0);
        REQUIRE(etcd_client_lease_grant(k[i].c, TTL_S, &k[i].lease, NULL) == 0, "grant %d: %s", i,
                etcd_client_error(k[i].c));
    }
    int w = race(k);
    REQUIRE(w >= 0, "a winner");
    contender *win = &k[w], *lose = &k[1 - w];
    int64_t term = win->got.holder.create_revision;
    CHECK(term > 0 && same_value(&win->got.holder, win->value, win->len) &&
              win->got.holder.lease == win->lease,
          "the winner holds its value and lease at term %lld", (long long)term);
    CHECK(lose->got.holder.create_revision == term &&
              same_value(&lose->got.holder, win->value, win->len) &&
              lose->got.holder.lease == win->lease,
          "the loser sees the winner's value, lease and term");

    /* 3 s, past the 2 s TTL: the winner's keepalives keep the key. */
    static etcd_campaign again;
    uint64_t start = test_now_ms(), last_keepalive = 0;
    int rounds = 0;
    while (test_now_ms() - start < 3000) {
        int64_t left = 0;
        CHECK(etcd_client_lease_keepalive(win->c, win->lease, &left) == 0 && left > 0,
              "keepalive: %lld left (%s)", (long long)left, etcd_client_error(win->c));
        last_keepalive = test_now_ms();
        CHECK(etcd_client_lease_keepalive(lose->c, lose->lease, &left) == 0 && left > 0,
              "the loser keeps its own lease: %s", etcd_client_error(lose->c));
        CHECK(etcd_client_campaign(lose->c, KEY, lose->value, lose->len, lose->lease, &again) == 0 &&
                  !again.won && again.holder.create_revision == term &&
                  again.holder.lease == win->lease,
              "a later campaign still loses to term %lld (%s)", (long long)term,
              etcd_client_error(lose->c));
        rounds++;
        test_sleep_ms(300);
    }
    CHECK(rounds >= 5, "%d rounds of keepalive and campaign", rounds);
    CHECK(etcd_client_campaign(win->c, KEY, win->value, win->len, win->lease, &again) == 0 &&
              again.won && again.holder.create_revision == term,
          "the holder's own campaign counts as won, same term");

    /* The winner goes quiet: its lease runs out and the key goes with it. */
    static etcd_kv kv;
    bool found = true;
    while (found && test_now_ms() - last_keepalive < 8000) {
        CHECK(etcd_client_get(lose->c, KEY, &found, &kv) == 0, "get: %s",
              etcd_client_error(lose->c));
        int64_t left = 0;
        CHECK(etcd_client_lease_keepalive(lose->c, lose->lease, &left) == 0 && left > 0,
              "the loser keeps its own lease: %s", etcd_client_error(lose->c));
        if (found)
            test_sleep_ms(100);
    }
    uint64_t gone_after = test_now_ms() - last_keepalive;
    CHECK(!found, "the key is gone within 8 s of the last keepalive");
    CHECK(gone_after >= 1000, "not before the lease ran out (%llu ms)",
          (unsigned long long)gone_after);
    int64_t left = -1;
    CHECK(etcd_client_lease_keepalive(win->c, win->lease, &left) == 0 && left == 0,
          "the winner's keepalive now says its lease is gone (%lld)", (long long)left);
    CHECK(etcd_client_campaign(win->c, KEY, win->value, win->len, win->lease, &again) == -ENOENT,
          "a campaign on the gone lease: -ENOENT (%s)", etcd_client_error(win->c));
    CHECK(etcd_client_campaign(lose->c, KEY, lose->value, lose->len, lose->lease, &again) == 0 &&
              again.won && again.holder.create_revision > term,
          "the other wins with a higher term (%lld > %lld): %s",
          (long long)again.holder.create_revision, (long long)term, etcd_client_error(lose->c));
    int64_t term2 = again.holder.create_revision;
    CHECK(etcd_client_get(win->c, KEY, &found, &kv) == 0 && found &&
              kv.create_revision == term2 && same_value(&kv, lose->value, lose->len),
          "the old winner reads the new holder and term");

    /* Revoke: the key goes at once, and the next term is higher again. */
    CHECK(etcd_client_lease_revoke(lose->c, lose->lease) == 0, "revoke: %s",
          etcd_client_error(lose->c));
    CHECK(etcd_client_get(win->c, KEY, &found, &kv) == 0 && !found, "the key went with the lease");
    REQUIRE(etcd_client_lease_grant(win->c, TTL_S, &win->lease, NULL) == 0, "grant: %s",
            etcd_client_error(win->c));
    CHECK(etcd_client_campaign(win->c, KEY, win->value, win->len, win->lease, &again) == 0 &&
              again.won && again.holder.create_revision > term2,
          "a new campaign wins with a higher term (%lld > %lld)",
          (long long)again.holder.create_revision, (long long)term2);
    CHECK(etcd_client_lease_revoke(win->c, win->lease) == 0, "revoke: %s",
          etcd_client_error(win->c));
    for (int i = 0; i < 2; i++)
        etcd_client_free(k[i].c);
}

/* A TCP listener on 127.0.0.1 that never accepts: connections complete in
 * the kernel's backlog and then hear nothing. Returns the fd; *port. */
static int silent_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    REQUIRE(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 16) == 0 &&
                getsockname(fd, (struct sockaddr *)&sa, &len) == 0,
            "silent listener");
    *port = ntohs(sa.sin_port);
    return fd;
}

static void test_endpoints(const char *ep)
{
    char list[256];
    static etcd_kv kv;
    bool found;

    snprintf(list, sizeof list, "http://127.0.0.1:1,%s", ep);
    etcd_client *c = client(list, 0);
    int64_t id = 0;
    CHECK(etcd_client_lease_grant(c, 5, &id, NULL) == 0, "fails over past a dead endpoint: %s",
          etcd_client_error(c));
    CHECK(strcmp(etcd_client_endpoint(c), ep) == 0, "and stays on %s (%s)", ep,
          etcd_client_endpoint(c));
    CHECK(etcd_client_lease_revoke(c, id) == 0, "revoke there: %s", etcd_client_error(c));
    etcd_client_free(c);

    int port = 0;
    int fd = silent_listener(&port);
    snprintf(list, sizeof list, "http://127.0.0.1:%d,%s", port, ep);
    c = client(list, 500);
    uint64_t t0 = test_now_ms();
    CHECK(etcd_client_get(c, KEY, &found, &kv) == 0, "fails over past a silent endpoint: %s",
          etcd_client_error(c));
    uint64_t first = test_now_ms() - t0;
    CHECK(first >= 450 && first < 3000, "after the 500 ms timeout (%llu ms)",
          (unsigned long long)first);
    t0 = test_now_ms();
    CHECK(etcd_client_get(c, KEY, &found, &kv) == 0 && test_now_ms() - t0 < 450,
          "the next call goes straight to the endpoint that answered");
    etcd_client_free(c);

    snprintf(list, sizeof list, "http://127.0.0.1:%d", port);
    c = client(list, 500);
    t0 = test_now_ms();
    int rc = etcd_client_get(c, KEY, &found, &kv);
    uint64_t took = test_now_ms() - t0;
    CHECK(rc == -ETIMEDOUT, "a silent endpoint times out: %d", rc);
    CHECK(took >= 450 && took < 1500, "within its 500 ms timeout (%llu ms)",
          (unsigned long long)took);
    CHECK(strstr(etcd_client_error(c), list) && strstr(etcd_client_error(c), "get") &&
              strstr(etcd_client_error(c), "timed out"),
          "the error names the call, the endpoint and the timeout: %s", etcd_client_error(c));
    etcd_client_free(c);
    close(fd);

    c = client("http://127.0.0.1:1", 0);
    t0 = test_now_ms();
    rc = etcd_client_lease_grant(c, 5, &id, NULL);
    took = test_now_ms() - t0;
    CHECK(rc == -ECONNREFUSED, "a dead endpoint: %d", rc);
    CHECK(took < ETCD_TIMEOUT_DEFAULT_MS, "fails within the default timeout (%llu ms)",
          (unsigned long long)took);
    CHECK(strstr(etcd_client_error(c), "http://127.0.0.1:1") &&
              strstr(etcd_client_error(c), "lease grant"),
          "the error names the endpoint and the call: %s", etcd_client_error(c));
    etcd_client_free(c);

    const char *bad[] = {"", "https://127.0.0.1:2379", "127.0.0.1:2379", "http://127.0.0.1",
                         "http://127.0.0.1:2379,,http://127.0.0.1:2380"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int code = 0;
        char err[512] = "";
        etcd_client *x = etcd_client_new(bad[i], NULL, &code, err, sizeof err);
        CHECK(!x && code == -EINVAL && err[0], "'%s' refused: %s", bad[i], err);
        etcd_client_free(x);
    }
}

int main(void)
{
    if (!etcd_proc_available()) {
        printf("skip: %s is not installed (Debian package etcd-server)\n", ETCD_PROC_BIN);
        return 77;
    }
    static etcd_proc etcd;
    REQUIRE(etcd_proc_start(&etcd) == 0, "etcd starts");
    test_leases(etcd.endpoint);
    test_keys(etcd.endpoint);
    test_campaign(etcd.endpoint);
    test_endpoints(etcd.endpoint);
    CHECK(etcd_proc_stop(&etcd) == 0, "etcd stops on SIGTERM");
    return test_finish();
}
