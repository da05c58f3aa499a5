#!/usr/bin/env bash
# test_http.sh - the master's HTTP endpoint as an operator meets it, from a
# cluster started by `fluxon up --owners 2` (which prints its URL):
#   - /metrics passes `promtool check metrics` (HELP and TYPE for every family,
#     the lint included), before and after traffic; the get, put and delete
#     counters, the bytes and the latency histograms match the operations made;
#   - a Prometheus server (Debian's prometheus) started here on a free loopback
#     port scrapes the master every second, and its query API returns the
#     fluxon get counter equal to the gets this test made;
#   - /api/v1/cluster is JSON naming both owners with their figures;
#   - the web page at / loads in headless Chromium, refreshes from
#     /api/v1/cluster (at least twice within its virtual time), and its DOM has
#     a row per owner with the memory bar's use and capacity, the hits and the
#     latencies; a screenshot goes to BUILD_DIR/web_page.png (docs/web_page.png
#     is one of these);
#   - nothing but GET and HEAD is served, and unknown paths are 404.
# Exits 77 when curl or python3 is missing; without promtool, prometheus or
# chromium only the parts that need it are skipped (and named), and the test
# exits 77 at the end if it skipped any.
set -u
bin=$(cd "${1:?usage: test_http.sh BUILD_DIR}" && pwd) || exit 2
for tool in curl python3; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/deps.sh)"; exit 77; }
done
skipped=0
have() { # have TOOL: true when installed, else names the skipped part
  command -v "$1" >/dev/null && return 0
  echo "SKIP: $1 is not installed (scripts/deps.sh): its checks are skipped"; skipped=1; return 1
}
promcheck() { # promtool check metrics on the last scrape, when promtool is there
  if command -v promtool >/dev/null; then promtool check metrics <"$dir/metrics.txt"; fi
}
dir=$(mktemp -d /tmp/fx-http-XXXXXX)
pass=0 fail=0 prom_pid=""
check() { # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $what"; fi
}
cleanup() {
  [ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
  "$bin/fluxon" down --dir "$dir/c" >/dev/null 2>&1
  [ -n "${FX_TEST_KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# The value of the one sample of /metrics matching the regex $1 (whole line).
sample() { grep -E "^$1 " "$dir/metrics.txt" | awk '{ print $2 }'; }
scrape() { curl -sf --max-time 5 "${url}metrics" >"$dir/metrics.txt"; }

out=$("$bin/fluxon" up --dir "$dir/c" --owners 2 --dram 64MB) || { echo "FAIL: fluxon up"; exit 1; }
sock=$(sed -n 1p <<<"$out")
url=$(sed -n 3p <<<"$out")
check "up prints the URL after the two sockets ($url)" \
  bash -c "[[ '$url' =~ ^http://127\\.0\\.0\\.1:[0-9]+/\$ ]]"
hostport=${url#http://}; hostport=${hostport%/}

# ---- /metrics before traffic ------------------------------------------------------
scrape
have promtool
check "promtool check metrics passes on an idle master" promcheck
for fam in fluxon_routes fluxon_inflight_puts fluxon_inflight_gets fluxon_members fluxon_gets_total \
           fluxon_owner_puts_total fluxon_deletes_total fluxon_evictions_total fluxon_bytes_total \
           fluxon_dataplane_bytes_total fluxon_errors_total fluxon_ssd_queue_depth \
           fluxon_op_latency_seconds; do
  check "/metrics has # HELP and # TYPE for $fam" \
    bash -c "grep -q '^# HELP $fam ' '$dir/metrics.txt' && grep -q '^# TYPE $fam ' '$dir/metrics.txt'"
done
check "both members ready" test "$(sample 'fluxon_members\{state="ready"\}')" = 2

# ---- traffic: puts, gets (hits and misses), a delete --------------------------------
puts=5 gets=12
head -c 100000 /dev/urandom >"$dir/value"
for i in $(seq 1 $puts); do check "put k$i" "$bin/fluxon" put --socket "$sock" "k$i" "$dir/value"; done
for i in $(seq 1 $gets); do
  check "get $i" "$bin/fluxon" get --socket "$sock" -o "$dir/got" "k$(( (i - 1) % puts + 1 ))"
done
check "the value read back is the value put" cmp -s "$dir/value" "$dir/got"
check "a missing key is a miss" bash -c "! '$bin/fluxon' get --socket '$sock' -o '$dir/none' missing-key >/dev/null 2>&1"
check "del k1" "$bin/fluxon" del --socket "$sock" k1
# The owners report with their heartbeats (1 s): wait until owner0's gets show.
for _ in $(seq 1 50); do
  scrape && [ "$(sample 'fluxon_gets_total\{owner="owner0",result="hit",source="memory"\}')" = $gets ] && break
  sleep 0.2
done
o='owner="owner0"'
check "promtool check metrics passes after traffic" promcheck
check "gets: $gets memory hits on owner0 (got $(sample "fluxon_gets_total\{$o,result=\"hit\",source=\"memory\"\}"))" \
  test "$(sample "fluxon_gets_total\{$o,result=\"hit\",source=\"memory\"\}")" = $gets
check "gets: 1 miss (got $(sample "fluxon_gets_total\{$o,result=\"miss\",source=\"none\"\}"))" \
  test "$(sample "fluxon_gets_total\{$o,result=\"miss\",source=\"none\"\}")" = 1
check "puts: $puts published through owner0" test "$(sample "fluxon_owner_puts_total\{$o\}")" = $puts
check "bytes in: $puts x 100000" test "$(sample "fluxon_bytes_total\{$o,direction=\"in\"\}")" = $((puts * 100000))
check "bytes out: $gets x 100000" test "$(sample "fluxon_bytes_total\{$o,direction=\"out\"\}")" = $((gets * 100000))
check "deletes: 1" test "$(sample "fluxon_deletes_total\{$o\}")" = 1
check "put latency histogram counts the $puts puts" \
  test "$(sample "fluxon_op_latency_seconds_count\{$o,op=\"put\"\}")" = $puts
# Every get went to owner0's socket: each lands in exactly one of its get histograms.
timed=0
for op in get_memory get_ssd get_remote; do
  n=$(sample "fluxon_op_latency_seconds_count\{$o,op=\"$op\"\}")
  inf=$(sample "fluxon_op_latency_seconds_bucket\{$o,op=\"$op\",le=\"\\+Inf\"\}")
  check "$op: its +Inf bucket ($inf) is its count ($n)" test "$inf" = "$n"
  timed=$((timed + ${n:-0}))
done
check "the get histograms count the $gets gets (got $timed)" test "$timed" = $gets
check "routes: $((puts - 1)) keys" test "$(sample fluxon_routes)" = $((puts - 1))

# ---- a Prometheus server scrapes the master ------------------------------------------
if have prometheus && have promtool; then
pport=$(free_port)
cat >"$dir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: fluxon
    static_configs:
      - targets: ['$hostport']
YML
check "promtool check config" promtool check config "$dir/prometheus.yml" >/dev/null
prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
  --web.listen-address="127.0.0.1:$pport" >"$dir/prometheus.log" 2>&1 &
prom_pid=$!
query='fluxon_gets_total{owner="owner0",result="hit",source="memory"}'
got=""
for _ in $(seq 1 100); do
  got=$(curl -sf --max-time 2 -G "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$query" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null)
  [ "$got" = $gets ] && break
  sleep 0.3
done
check "Prometheus' query API returns the $gets gets this test made (got '${got}')" test "$got" = $gets
up=$(curl -sf --max-time 2 -G "http://127.0.0.1:$pport/api/v1/query" --data-urlencode 'query=up{job="fluxon"}' |
  python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null)
check "and the scrape target is up (got '$up')" test "$up" = 1
kill "$prom_pid" 2>/dev/null; wait "$prom_pid" 2>/dev/null; prom_pid=""
fi

# ---- /api/v1/cluster ---------------------------------------------------------------
curl -sf --max-time 5 "${url}api/v1/cluster" >"$dir/cluster.json"
check "/api/v1/cluster names owner0 and owner1 with their figures" python3 - "$dir/cluster.json" $gets <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
gets = int(sys.argv[2])
owners = {o["name"]: o for o in doc["owners"]}
assert sorted(owners) == ["owner0", "owner1"], owners.keys()
o = owners["owner0"]
assert o["state"] == "ready", o
assert o["memory_capacity"] == 64 << 20, o["memory_capacity"]
assert o["hits_memory"] == gets and o["misses"] == 1, o
lat = o["latency_us"]
assert lat["get"]["count"] == gets, lat
assert sum(lat[k]["count"] for k in ("get_memory", "get_ssd", "get_remote")) == gets, lat
assert 0 < lat["get"]["p50"] <= lat["get"]["p99"], lat
assert lat["put"]["count"] == 5, lat
PY

# ---- the web page in headless Chromium -----------------------------------------------
if have chromium; then
chrome=(chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage
        --no-first-run --user-data-dir="$dir/chrome" --virtual-time-budget=6000)
timeout 60 "${chrome[@]}" --dump-dom "$url" >"$dir/dom.html" 2>"$dir/chrome.log"
check "Chromium rendered the page" grep -q 'id="owner-rows"' "$dir/dom.html"
check "the DOM has the owners and their figures after refreshes" python3 - "$dir/dom.html" $gets <<'PY'
import html.parser, sys
page = open(sys.argv[1]).read()
gets = str(sys.argv[2])
rows, cells, status = {}, {}, {}
class P(html.parser.HTMLParser):
    row = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-owner" in a:
            self.row = a["data-owner"]; rows[self.row] = {}
        if tag == "td" and self.row and "data-field" in a:
            rows[self.row][a["data-field"]] = a
        if a.get("id") == "status":
            status.update(a)
P().feed(page)
assert sorted(rows) == ["owner0", "owner1"], rows.keys()
assert int(status.get("data-refreshes", "0")) >= 2, status
mem = rows["owner0"]["memory"]
assert int(mem["data-capacity"]) == 64 << 20 and int(mem["data-used"]) > 0, mem
assert rows["owner0"]["hits"]["data-memory"] == gets, rows["owner0"]["hits"]
assert rows["owner0"]["get_latency"]["data-count"] == gets, rows["owner0"]["get_latency"]
assert "data-ops-total" in rows["owner0"]["ops"], rows["owner0"]["ops"]
PY
rm -f "$bin/web_page.png"
timeout 60 "${chrome[@]}" --window-size=1400,300 --screenshot="$bin/web_page.png" "$url" \
  >/dev/null 2>>"$dir/chrome.log"
check "a screenshot of the page ($bin/web_page.png)" test -s "$bin/web_page.png"
fi

# ---- methods and paths -----------------------------------------------------------------
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "${url}metrics")
check "POST is refused with 405 (got $code)" test "$code" = 405
check "the 405 names the methods served (Allow)" \
  bash -c "curl -s -o /dev/null -D - -X POST '${url}metrics' | grep -qi '^allow: GET, HEAD'"
code=$(curl -s -o /dev/null -w '%{http_code}' "${url}nothing-here")
check "an unknown path is 404 (got $code)" test "$code" = 404
check "the page may load nothing from elsewhere (CSP)" \
  bash -c "curl -sfI '$url' | grep -qi \"^content-security-policy: default-src 'self'\""

check "down" "$bin/fluxon" down --dir "$dir/c"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] || exit 1
[ "$skipped" -eq 0 ] || exit 77
