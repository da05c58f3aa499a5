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
echo "== fluxon up --dir $dir --dram 2GB"
sock=$("$bin/fluxon" up --dir "$dir" --dram 2GB)
echo "client socket: $sock"
echo "== demo workload"
"$bin/bench/fx_demo" "$sock" "${FX_DEMO_COUNT:-300}"
echo "== fluxon put / get / stat"
echo "hello from fluxon" | "$bin/fluxon" put --socket "$sock" greeting -
printf 'get greeting -> '; "$bin/fluxon" get --socket "$sock" -v greeting
"$bin/fluxon" stat --socket "$sock"
echo "== fluxon down"
"$bin/fluxon" down --dir "$dir"
echo "demo finished"
