#!/usr/bin/env bash
# run.sh - the pressure benchmark of spec 000 §8 (issue 8): for each case a
# fresh server (Fluxon, memcached with or without extstore, redis), a serial
# bootstrap of ~2.5 GiB with single puts, a get-only window, then everything
# stopped. Rows go to OUT/summary.jsonl (fx_bench_pressure), charts and a
# table to OUT (charts.py), the per-case comparison with memcached against
# the issue's targets to OUT/pressure_compare.md (compare.py).
#
#   bench/pressure/run.sh BUILD_DIR [--smoke] [--out DIR] [--systems "fluxon memcached redis"]
#       [--payloads "1 4 8 16"] [--layouts "c1 c2 c4"] [--modes "holder bytes"]
#       [--ssd "off on"] [--warmup S] [--window S] [--dram-mib N] [--ssd-gib N]
#       [--get-threads N]
#
# Cases: payload P MiB - 128 B, keys = 2560 / P (about 2.5 GiB); 2 GiB of DRAM
# per system (Fluxon: the owner's segment, all of it for replicas with
# --cache-budget 100; memcached -m 2048; redis maxmemory 2gb, allkeys-lru); SSD on: 16
# GiB (Fluxon's SSD tier; memcached extstore); redis is DRAM-only (SSD off).
# Layouts cN = procs x threads: c1=1x1, c2=1x2, c4=1x4, c8=2x4, c16=4x4.
# Bootstrap paces puts at ~160 MiB/s as the spec does (6.25 ms per MiB).
# --smoke: payload 4, c1, holder, 1 s warmup, 5 s window, no pacing.
# --get-threads N: Fluxon's owners run N get threads (fluxon up --get-threads;
# default: the owner's own), for A/B runs of them.
set -uo pipefail

build=${1:?usage: run.sh BUILD_DIR [options]}
shift
here=$(cd "$(dirname "$0")" && pwd)
out=$build/pressure
systems="fluxon memcached redis"
payloads="1 4 8 16"
layouts="c1 c2 c4"
modes="holder bytes"
ssds="off on"
warmup=5
window=30
dram_mib=2048
ssd_gib=16
pace=1
get_threads=""
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) payloads=4; layouts=c1; modes=holder; warmup=1; window=5; pace=0 ;;
    --out) out=$2; shift ;;
    --systems) systems=$2; shift ;;
    --payloads) payloads=$2; shift ;;
    --layouts) layouts=$2; shift ;;
    --modes) modes=$2; shift ;;
    --ssd) ssds=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --window) window=$2; shift ;;
    --dram-mib) dram_mib=$2; shift ;;
    --ssd-gib) ssd_gib=$2; shift ;;
    --get-threads) get_threads=$2; shift ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

bench=$build/bench/fx_bench_pressure
fluxon=$build/fluxon
[ -x "$bench" ] && [ -x "$fluxon" ] || { echo "run.sh: build first ($bench)" >&2; exit 2; }
mkdir -p "$out"
summary=$out/summary.jsonl
[ -s "$summary" ] && mv "$summary" "$summary.$(date +%Y%m%d-%H%M%S)" # one run per file
work=$(mktemp -d /tmp/fx-pressure.XXXXXX)
server_pids=""
fluxon_dir=""
failed=0

cleanup() {
  stop_servers
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

stop_servers() {
  if [ -n "$fluxon_dir" ]; then
    "$fluxon" down --dir "$fluxon_dir" >/dev/null 2>&1
    fluxon_dir=""
  fi
  local pid
  for pid in $server_pids; do
    kill "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  server_pids=""
  rm -rf "${work:?}"/case
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Waits until host:port accepts connections (10 s).
wait_port() {
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# start_SYSTEM SSD: starts the server, sets addr and server_pids; non-zero on failure.
start_fluxon() {
  fluxon_dir=$work/case/fluxon
  mkdir -p "$fluxon_dir"
  # The whole segment may hold replicas, as memcached's -m and redis'
  # maxmemory let their memory: the same 2 GiB for values on every system.
  local args=(up --dir "$fluxon_dir" --dram "${dram_mib}MB" --cache-budget 100)
  [ "$1" = on ] && args+=(--ssd "${ssd_gib}GB")
  [ -n "$get_threads" ] && args+=(--get-threads "$get_threads")
  "$here/../../scripts/hugepages.sh" $((dram_mib * 1048576)) >/dev/null 2>&1
  addr=$("$fluxon" "${args[@]}" | head -1) || return 1
  server_pids="$(cat "$fluxon_dir/master.pid") $(cat "$fluxon_dir/owner0.pid")"
  server_pids=${server_pids% }
}

start_memcached() {
  command -v memcached >/dev/null || { echo "memcached is not installed (scripts/deps.sh)"; return 1; }
  local port; port=$(free_port)
  local args=(-p "$port" -l 127.0.0.1 -U 0 -m "$dram_mib" -I 16m -t 4 -c 1024)
  [ "$(id -u)" -eq 0 ] && args+=(-u root) # memcached refuses root without it
  if [ "$1" = on ]; then
    mkdir -p "$work/case"
    # ext_wbuf_size >= -I in MiB; ext_max_sleep: the flusher keeps up with
    # the bootstrap (memcached 1.6.18, see adapter_memcached.c).
    args+=(-o "ext_path=$work/case/extstore:${ssd_gib}G,ext_wbuf_size=16,ext_threads=2,ext_max_sleep=1000")
  fi
  memcached "${args[@]}" >"$work/memcached.log" 2>&1 &
  server_pids=$!
  addr=127.0.0.1:$port
  wait_port "$port" || { tail -3 "$work/memcached.log"; return 1; }
}

start_redis() {
  command -v redis-server >/dev/null || { echo "redis-server is not installed (scripts/deps.sh)"; return 1; }
  [ "$1" = off ] || return 1
  local port; port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --maxmemory "${dram_mib}mb" --maxmemory-policy allkeys-lru --proto-max-bulk-len 64mb \
    >"$work/redis.log" 2>&1 &
  server_pids=$!
  addr=127.0.0.1:$port
  wait_port "$port" || { tail -3 "$work/redis.log"; return 1; }
}

layout_of() { # cN -> "procs threads"
  case $1 in
    c1) echo "1 1" ;; c2) echo "1 2" ;; c4) echo "1 4" ;; c8) echo "2 4" ;; c16) echo "4 4" ;;
    *) echo "run.sh: unknown layout $1" >&2; return 1 ;;
  esac
}

echo "pressure: systems [$systems] payloads [$payloads] MiB layouts [$layouts] modes [$modes]" \
     "ssd [$ssds] warmup ${warmup}s window ${window}s -> $summary"
for sys in $systems; do
  for ssd in $ssds; do
    [ "$sys" = redis ] && [ "$ssd" = on ] && continue
    for p in $payloads; do
      payload=$((p * 1048576 - 128))
      keys=$((2560 / p))
      pace_ms=0
      [ "$pace" = 1 ] && pace_ms=$(awk "BEGIN {print $p * 6.25}")
      for layout in $layouts; do
        read -r procs threads < <(layout_of "$layout") || exit 2
        for mode in $modes; do
          label="$sys ssd=$ssd ${p}MiB $layout $mode"
          if ! "start_$sys" "$ssd" >"$work/start.log" 2>&1; then
            echo "  $label: FAILED to start: $(tail -1 "$work/start.log")"
            printf '{"system": "%s", "ssd": %s, "mode": "%s", "payload_mib": %s, "layout": "%s", "status": "FAILED", "error": "server did not start: %s"}\n' \
              "$sys" "$([ "$ssd" = on ] && echo true || echo false)" "$mode" "$p" "$layout" \
              "$(tail -1 "$work/start.log" | tr -d '"\\')" >>"$summary"
            failed=$((failed + 1))
            stop_servers
            continue
          fi
          pids=${server_pids// /,}
          common=(--system "$sys" --addr "$addr" --payload "$payload" --keys "$keys")
          if ! "$bench" bootstrap "${common[@]}" --pace-ms "$pace_ms" 2>"$work/boot.log"; then
            echo "  $label: FAILED in bootstrap: $(tail -1 "$work/boot.log")"
            printf '{"system": "%s", "ssd": %s, "mode": "%s", "payload_mib": %s, "layout": "%s", "status": "FAILED", "error": "bootstrap: %s"}\n' \
              "$sys" "$([ "$ssd" = on ] && echo true || echo false)" "$mode" "$p" "$layout" \
              "$(tail -1 "$work/boot.log" | tr -d '"\\')" >>"$summary"
            failed=$((failed + 1))
            stop_servers
            continue
          fi
          row=$("$bench" run "${common[@]}" --threads "$threads" --procs "$procs" --mode "$mode" \
                --warmup "$warmup" --window "$window" --ssd "$([ "$ssd" = on ] && echo 1 || echo 0)" \
                --server-pids "$pids" --json "$summary")
          rc=$?
          [ $rc -ne 0 ] && failed=$((failed + 1))
          echo "  $label: $(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["status"], "hit %.1f%%" % (100*r["hit_rate"]), "dram %.2f GiB/s" % r["dram_gib_s"], "ssd %.2f GiB/s" % r["ssd_gib_s"], "p50 %.2f ms" % r["p50_ms"], r["error"])' "$row" 2>/dev/null || echo "$row")"
          stop_servers
        done
      done
    done
  done
done

if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 "$here/charts.py" "$summary" "$out" \
    --title "$(nproc) vCPU $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), ${dram_mib} MiB DRAM, ${window} s window"
else
  echo "run.sh: python3-matplotlib missing: no charts (scripts/deps.sh installs it)" >&2
  failed=$((failed + 1))
fi
# Fluxon against memcached per case: ratios, targets, hit rates and resident mass.
python3 "$here/compare.py" "$summary" "$out" >/dev/null || failed=$((failed + 1))
echo "pressure: $failed failed case(s); rows in $summary"
[ "$failed" -eq 0 ]
