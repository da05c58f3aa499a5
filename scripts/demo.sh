#!/usr/bin/env bash
# The main job: start a local cluster in a temporary directory, run the demo
# workload against it, show the cluster's figures, and stop it again, leaving
# no process or file behind (also on failure or Ctrl-C).
set -euo pipefail
build=${1:-build}
bin=$(cd "$build" && pwd)
dir=$(mktemp -d /tmp/fluxon-demo-XXXXXX)
cleanup() {
  "$bin/fluxon" down --dir "$dir" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
"$(dirname "$0")/hugepages.sh" $((2 << 30)) || true
echo "== fluxon up --dir $dir --owners 2 --dram 1GB"
socks=$("$bin/fluxon" up --dir "$dir" --owners 2 --dram 1GB)
sock=$(sed -n 1p <<<"$socks")
sock2=$(sed -n 2p <<<"$socks")
url=$(sed -n 3p <<<"$socks")
echo "client sockets: $sock $sock2"
echo "web page and /metrics: $url"
echo "== demo workload (puts through owner0, gets through owner0, then owner1)"
"$bin/bench/fx_demo" "$sock" "${FX_DEMO_COUNT:-300}" "$sock2"
echo "== fluxon put / get / stat"
echo "hello from fluxon" | "$bin/fluxon" put --socket "$sock" greeting -
printf 'get greeting -> '; "$bin/fluxon" get --socket "$sock" -v greeting
"$bin/fluxon" stat --socket "$sock"
echo "== fluxon down"
"$bin/fluxon" down --dir "$dir"
echo "demo finished"
