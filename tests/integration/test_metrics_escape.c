/*
 * test_metrics_escape.c - a member's node_name cannot add samples of its own
 * to /metrics, and the page stays valid Prometheus text.
 *
 * A master with HTTP and one owner; a test-side member registers with the
 * node_name  b\x"} 1<LF>fluxon_routes 999999<LF>#  (a backslash, a double
 * quote and two line feeds). Copied into the owner="..." labels as it was,
 * it closed the label and put a line "fluxon_routes 999999" on the page
 * (and "\x" is an invalid escape). Now: no line of /metrics is that sample,
 * the label carries the name escaped (\\, \", \n), and `promtool check
 * metrics` passes, its lint included (exit 0: HELP and TYPE for every
 * family). The member then sends a heartbeat whose metrics hold a good put
 * histogram and one of an unknown operation with 3 buckets: the master keeps
 * the counters and the good one, drops the other (no op="unknown" on the
 * page) and the page still passes promtool. The promtool steps are skipped,
 * with a note, when promtool is not installed (scripts/deps.sh installs it
 * with the prometheus package).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "common/op_metrics.h"
#include "raw_member.h"
#include "sock_probe.h"
#include "testlib.h"

#define SEG (64ull << 20)
#define EVIL_NAME "b\\x\"} 1\nfluxon_routes 999999\n#"
#define EVIL_LABEL "owner=\"b\\\\x\\\"} 1\\nfluxon_routes 999999\\n#\""

/* Runs promtool check metrics on page; returns its exit status (-1 when it
 * could not run) with its output in out. */
static int promtool_check(const char *dir, const char *page, char *out, size_t cap)
{
    char path[512], cmd[1200];
    snprintf(path, sizeof path, "%s/metrics.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(page, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "promtool check metrics < '%s' 2>&1", path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void)
{
    static test_cluster tc;
    char http[64];
    int hport = probe_free_port();
    REQUIRE(hport > 0, "a free port for HTTP");
    snprintf(http, sizeof http, "127.0.0.1:%d", hport);
    const char *margs[] = {"--http", http, "--heartbeat-timeout", "600s", NULL};
    REQUIRE(cluster_start_args(&tc, SEG, margs) == 0, "cluster starts");
    raw_member rm;
    REQUIRE(raw_member_register(&rm, tc.master_addr, "test", EVIL_NAME, 1 << 20) == 0,
            "a member with a hostile node_name registers");

    char *page = NULL;
    for (int t = 0; t < 50; t++) { /* the page is rebuilt every 100 ms */
        free(page);
        page = NULL;
        REQUIRE(probe_http_get(http, "/metrics", 2000, &page) == 200, "GET /metrics");
        if (strstr(page, "fluxon_routes 999999") || strstr(page, EVIL_LABEL))
            break;
        usleep(100 * 1000);
    }
    CHECK(strstr(page, EVIL_LABEL) != NULL, "the node_name is in the labels, escaped:\n%s", page);
    int injected = 0, samples = 0;
    for (char *line = strtok(page, "\n"); line; line = strtok(NULL, "\n")) {
        injected += strcmp(line, "fluxon_routes 999999") == 0;
        samples += strncmp(line, "fluxon_routes ", 14) == 0;
    }
    CHECK(injected == 0, "the node_name added its own fluxon_routes sample");
    CHECK(samples == 1, "one fluxon_routes sample (%d)", samples);
    free(page);

    /* A heartbeat with metrics, one histogram of a shape the master drops. */
    uint64_t errs[OP_METRICS_ERRORS] = {0, 0, 0, 3};
    uint64_t buckets[OP_METRICS_BUCKETS];
    for (size_t b = 0; b < OP_METRICS_BUCKETS; b++)
        buckets[b] = b + 1; /* 210 in all */
    Fx__LatencyHistogram good = FX__LATENCY_HISTOGRAM__INIT, bad = FX__LATENCY_HISTOGRAM__INIT;
    good.op = OP_PUT;
    good.n_buckets = OP_METRICS_BUCKETS;
    good.buckets = buckets;
    good.sum_us = 2100000;
    bad.op = OP_KINDS + 5;
    bad.n_buckets = 3;
    bad.buckets = buckets;
    Fx__LatencyHistogram *hists[] = {&bad, &good};
    Fx__OwnerMetrics om = FX__OWNER_METRICS__INIT;
    om.puts = 5;
    om.n_errors = OP_METRICS_ERRORS;
    om.errors = errs;
    om.n_latency = 2;
    om.latency = hists;
    Fx__HeartbeatReq hb = FX__HEARTBEAT_REQ__INIT;
    hb.metrics = &om;
    ProtobufCMessage *resp = raw_member_call(&rm, MSG_HEARTBEAT, &hb.base, 2000);
    CHECK(resp && msg_status(resp) == 0, "the heartbeat is answered OK");
    msg_free(resp);
    char want_puts[256], want_count[256];
    snprintf(want_puts, sizeof want_puts, "fluxon_owner_puts_total{%s} 5", EVIL_LABEL);
    snprintf(want_count, sizeof want_count,
             "fluxon_op_latency_seconds_count{%s,op=\"put\"} 210", EVIL_LABEL);
    page = NULL;
    for (int t = 0; t < 50; t++) {
        free(page);
        page = NULL;
        REQUIRE(probe_http_get(http, "/metrics", 2000, &page) == 200, "GET /metrics");
        if (strstr(page, want_puts))
            break;
        usleep(100 * 1000);
    }
    CHECK(strstr(page, want_puts) != NULL, "the heartbeat's puts are on the page");
    CHECK(strstr(page, want_count) != NULL, "the good histogram is kept (210 in all)");
    CHECK(!strstr(page, "op=\"unknown\""), "the histogram of an unknown op is dropped");
    free(page);

    if (system("command -v promtool >/dev/null 2>&1") != 0) {
        printf("note: promtool is not installed; the format check is skipped\n");
    } else {
        page = NULL;
        REQUIRE(probe_http_get(http, "/metrics", 2000, &page) == 200, "GET /metrics again");
        char out[4096];
        int rc = promtool_check(tc.dir, page, out, sizeof out);
        CHECK(rc == 0, "promtool check metrics exits %d (0: no parse error, no lint):\n%s", rc,
              out);
        printf("promtool check metrics: exit %d\n", rc);
        free(page);
    }
    raw_member_close(&rm);
    CHECK(cluster_stop(&tc) == 0, "cluster stops cleanly");
    return test_finish();
}
