#!/usr/bin/env bash
# bench_auth_ab.sh - remote get and put bandwidth with cluster authentication
# on, side by side with it off, in one run (issue 19: authentication is per
# connection, not per byte).
#
# usage: scripts/bench_auth_ab.sh OFF_BUILD ON_BUILD [RUNS]
#   OFF_BUILD: a build of the commit before authentication (no handshake on the
#              master link, the static data token on the data plane), e.g.
#              git worktree add /tmp/fx-base 6542925 && cmake ... && make fx_bench_cluster
#              fluxon-master fluxon-owner
#   ON_BUILD:  this build; its clusters run with FX_CLUSTER_SECRET=1 (the owners
#              prove the secret to the master, and every data-plane connection
#              runs the pair-key handshake)
#   RUNS:      runs of fx_bench_cluster per side (default 5), alternating
#              off, on, off, on, ...
# Prints, per row (get-pull and put-push, size, threads): the median GiB/s of
# each side with its range, on/off as the median of the per-pair ratios with
# their range, and the machine's own spread: off/off of consecutive "off" runs
# (the same build against itself, A/A), median and range.
set -euo pipefail
off=$(cd "${1:?usage: bench_auth_ab.sh OFF_BUILD ON_BUILD [RUNS]}" && pwd)
on=$(cd "${2:?usage: bench_auth_ab.sh OFF_BUILD ON_BUILD [RUNS]}" && pwd)
runs=${3:-5}
out=$(mktemp -d /tmp/fx-auth-ab-XXXXXX)
. "$(dirname "$0")/ab_runs.sh"
run_side() { # AB_SIDE: off or on
  if [ "$AB_SIDE" = off ]; then
    FX_CLUSTER_SECRET=0 "$off/bench/fx_bench_cluster" --json "$AB_JSON"
  else
    FX_CLUSTER_SECRET=1 "$on/bench/fx_bench_cluster" --json "$AB_JSON"
  fi
}
ab_runs "$out" "$runs" off on run_side
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def rows(path):
    r = {}
    for line in open(path):
        j = json.loads(line)
        if j.get("kind") == "row" and j["op"] in ("get-pull", "put-push"):
            if j["failed"]:
                sys.exit("%s: %s %d B x%d FAILED" % (path, j["op"], j["size"], j["threads"]))
            r[(j["op"], j["size"], j["threads"])] = j["gib_per_s"]
    return r
off = [rows("%s/off%d.jsonl" % (out, i)) for i in range(1, runs + 1)]
on = [rows("%s/on%d.jsonl" % (out, i)) for i in range(1, runs + 1)]
print("%-9s %6s %3s  %-22s %-22s %-27s %s" % ("row", "MiB", "thr", "off GiB/s med [range]",
                                              "on GiB/s med [range]",
                                              "on/off paired med [range]", "A/A off/off med [range]"))
for key in sorted(off[0]):
    a = [r[key] for r in off]
    b = [r[key] for r in on]
    ratios = [y / x for x, y in zip(a, b) if x > 0]
    aa = [y / x for x, y in zip(a, a[1:]) if x > 0] or [1.0]
    print("%-9s %6d %3d  %6.2f [%5.2f, %5.2f]   %6.2f [%5.2f, %5.2f]   %.3f [%.3f, %.3f]"
          "       %.3f [%.3f, %.3f]" % (
              key[0], key[1] >> 20, key[2], statistics.median(a), min(a), max(a),
              statistics.median(b), min(b), max(b), statistics.median(ratios), min(ratios),
              max(ratios), statistics.median(aa), min(aa), max(aa)))
print("JSON rows in %s" % out)
PY
