#!/usr/bin/env bash
# bench_micro_ab.sh - fx_bench_micro of two builds side by side in one run:
# the p50 latency of every row, paired run by run (a change's cost on puts
# and gets, e.g. issue 20's replica index against the commit before it).
#
# usage: scripts/bench_micro_ab.sh BASE_BUILD NEW_BUILD [RUNS]
#   BASE_BUILD: a build of the commit to compare against, e.g.
#               git worktree add /tmp/fx-base cf30b8f && cmake -S /tmp/fx-base -B
#               /tmp/fx-base/build && cmake --build /tmp/fx-base/build --target
#               fx_bench_micro fluxon-master fluxon-owner
#   NEW_BUILD:  this build (build/)
#   RUNS:       runs per side (default 5), alternating base, new, base, ...
#   env FX_BENCH_SECONDS: seconds per row (default 1 here)
# Prints per row: each side's median p50 with its range, new/base as the
# median of the per-pair ratios with their range (above 1: the new build is
# slower), and base/base of consecutive base runs (A/A: the machine's spread).
set -euo pipefail
base=$(cd "${1:?usage: bench_micro_ab.sh BASE_BUILD NEW_BUILD [RUNS]}" && pwd)
new=$(cd "${2:?usage: bench_micro_ab.sh BASE_BUILD NEW_BUILD [RUNS]}" && pwd)
runs=${3:-5}
export FX_BENCH_SECONDS=${FX_BENCH_SECONDS:-1}
out=$(mktemp -d /tmp/fx-micro-ab-XXXXXX)
. "$(dirname "$0")/ab_runs.sh"
run_side() { # AB_SIDE: base or new, each its own build's fx_bench_micro
  if [ "$AB_SIDE" = base ]; then "$base/bench/fx_bench_micro" --json "$AB_JSON"
  else "$new/bench/fx_bench_micro" --json "$AB_JSON"; fi
}
ab_runs "$out" "$runs" base new run_side
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def rows(path):
    r = {}
    for line in open(path):
        j = json.loads(line)
        if j.get("kind") == "row" and j["op"] not in ("memcpy",):
            r[(j["op"], j["size"], j["threads"])] = j["p50_us"]
    return r
base = [rows("%s/base%d.jsonl" % (out, i)) for i in range(1, runs + 1)]
new = [rows("%s/new%d.jsonl" % (out, i)) for i in range(1, runs + 1)]
print("%-13s %8s %3s  %-24s %-24s %-26s %s" % ("row", "size", "thr", "base p50 us med [range]",
      "new p50 us med [range]", "new/base paired med [rng]", "A/A base/base med [rng]"))
for key in sorted(base[0], key=lambda k: (k[0], k[1], k[2])):
    if any(key not in r for r in base + new):
        continue
    a = [r[key] for r in base]
    b = [r[key] for r in new]
    ratios = [y / x for x, y in zip(a, b) if x > 0]
    aa = [y / x for x, y in zip(a, a[1:]) if x > 0] or [1.0]
    print("%-13s %8d %3d  %7.1f [%6.1f, %6.1f]  %7.1f [%6.1f, %6.1f]  %.2f [%.2f, %.2f]"
          "          %.2f [%.2f, %.2f]" % (
              key[0], key[1], key[2], statistics.median(a), min(a), max(a),
              statistics.median(b), min(b), max(b), statistics.median(ratios), min(ratios),
              max(ratios), statistics.median(aa), min(aa), max(aa)))
print("JSON rows in %s" % out)
PY
