#!/usr/bin/env bash
# test_three_hosts.sh - a cluster spread over three "hosts" (issue 19): the
# master in one network namespace and an owner in each of two others, joined
# by a Linux bridge that lives in a fourth namespace, each host reaching it
# through a veth pair and holding one private address of 10.201.N.0/24.
# Nothing is configured in the root namespace. The owners listen for the data
# plane on 0.0.0.0:0 and say nothing of their address, so they must advertise
# the one of the interface that reaches the master; another owner could not
# reach 0.0.0.0 or 127.0.0.1 (FX_TEST_EXPLICIT_DATA_LISTEN=1 makes each owner
# listen on its own 10.201.N.x instead: a debugging aid, not the real case).
#
# Owner A has an SSD tier and a small memory segment; owner B has neither, so
# every value is placed on A (a value goes where it can be persisted), and
# the master's placement is `remote`. Then:
#   1. values of 1 KiB, 1 MiB + 7 and 8 MiB put through A (local to A) are
#      read through B byte for byte: B pulls them across the bridge;
#   2. values of the same sizes put through B are pushed to A across the
#      bridge and read back through A and through B byte for byte;
#   3. more values put through B than A's memory holds: A evicts the older
#      ones to its SSD, and B reads those back byte for byte from A's SSD
#      (`get -v` says source=ssd; stat counts A's evictions and B's SSD hits).
# Each cross-host step also checks that its bytes went through B's veth (its
# kernel byte counters), so it cannot pass by serving everything locally.
# The daemons' clients run in the root namespace and reach each owner by its
# Unix socket path (the file system is shared by every namespace).
#
# Needs root and `ip netns`: exits 77 otherwise. On exit every daemon is
# stopped by pid, every namespace (and with it every veth and the bridge) is
# deleted, and the temporary directory removed (kept with FX_TEST_KEEP=1).
set -u
bin=$(cd "${1:?usage: test_three_hosts.sh BUILD_DIR}" && pwd) || exit 2
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! ip netns list >/dev/null 2>&1; then
  echo "skip: needs root and ip netns"
  exit 77
fi

run_id=$$
subnet=10.201.$((run_id % 250 + 1))  # each run has its own bridge: a clash is harmless
ns_master=fxm-$run_id ns_a=fxa-$run_id ns_b=fxb-$run_id ns_bridge=fxbr-$run_id
ip_master=$subnet.1 ip_a=$subnet.2 ip_b=$subnet.3
cli_timeout=30  # seconds any one `fluxon` command may take

dir=$(mktemp -d /tmp/fx-3hosts-XXXXXX)
pass=0 fail=0
check() { # check STEP: DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok: $what"; else fail=$((fail + 1)); echo "FAIL: $what"; fi
}
# Stops the test at a step nothing after it can do without.
die() { echo "FAIL: $*"; fail=$((fail + 1)); exit 1; }

made_ns=() daemon_pids=()
# Stops a daemon: TERM, at most 10 s for it to exit, then KILL; reaps it.
stop_daemon() {
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return; }
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
show_logs() {
  local f
  for f in "$dir"/*.log; do
    [ -s "$f" ] || continue
    echo "--- last lines of $(basename "$f")"
    tail -n 15 "$f"
  done
}
cleanup() {
  local rc=$? p ns
  trap - EXIT
  [ "$fail" != 0 ] && show_logs
  for p in "${daemon_pids[@]}"; do stop_daemon "$p"; done
  for ns in "${made_ns[@]}"; do ip netns del "$ns" 2>/dev/null; done
  # What must be gone: our namespaces, and any link of ours in the root one
  # (there should never have been one: every veth is made inside a namespace).
  local left_ns left_links
  left_ns=$(ip netns list 2>/dev/null | grep -E "^fx(m|a|b|br)-$run_id( |$)")
  left_links=$(ip -o link show type veth 2>/dev/null | grep -E "^[0-9]+: to-[mab]@")
  if [ -n "$left_ns" ] || [ -n "$left_links" ]; then
    echo "FAIL: cleanup: left behind: ${left_ns:-} ${left_links:-}"
    rc=1
  fi
  if [ -n "${FX_TEST_KEEP:-}" ]; then echo "kept $dir"; else rm -rf "$dir"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- the network: four namespaces, one bridge, three veth pairs ----------
add_ns() { ip netns add "$1" && made_ns+=("$1") && ip -n "$1" link set lo up; }
if ! add_ns "$ns_bridge"; then
  echo "skip: cannot create a network namespace here"
  exit 77
fi
for ns in "$ns_master" "$ns_a" "$ns_b"; do
  add_ns "$ns" || die "setup: creating the namespace $ns"
done
if ! ip -n "$ns_bridge" link add br0 type bridge || ! ip -n "$ns_bridge" link set br0 up; then
  die "setup: creating the bridge in $ns_bridge"
fi
# join_host NS IP SIDE: a veth pair made inside the bridge namespace (to-SIDE
# there, on the bridge) whose other end, eth0, moves straight into NS.
join_host() {
  ip -n "$ns_bridge" link add "to-$3" type veth peer name eth0 netns "$1" &&
    ip -n "$ns_bridge" link set "to-$3" master br0 &&
    ip -n "$ns_bridge" link set "to-$3" up &&
    ip -n "$1" addr add "$2/24" dev eth0 &&
    ip -n "$1" link set eth0 up
}
join_host "$ns_master" "$ip_master" m || die "setup: joining the master's namespace to the bridge"
join_host "$ns_a" "$ip_a" a || die "setup: joining owner A's namespace to the bridge"
join_host "$ns_b" "$ip_b" b || die "setup: joining owner B's namespace to the bridge"
# answers NS IP: a TCP connection from NS to IP's port 9 (no one listens
# there) is refused, so IP answered across the bridge (no ping here). At most
# 1 s a try, 10 tries: at most 30 s in all when nothing answers.
answers() {
  ip netns exec "$1" timeout 1 bash -c "exec 3<>/dev/tcp/$2/9" 2>&1 | grep -q refused
}
reach_all() { answers "$ns_a" "$ip_b" && answers "$ns_b" "$ip_master" && answers "$ns_a" "$ip_master"; }
for _ in $(seq 10); do reach_all && break; sleep 0.1; done
reach_all ||
  die "setup: hosts A, B and the master do not reach each other across the bridge"

# ---- the daemons ------------------------------------------------------------
# The master's command line, built here only (--secret-file goes here).
# The cluster secret: every host reads the same file (the file system is shared).
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$dir/cluster.secret")
master_command=("$bin/fluxon-master" --listen "$ip_master:0" --port-file "$dir/master.addr"
  --cluster-name fluxon --placement remote --log-level info --secret-file "$dir/cluster.secret")
# owner_yaml NAME HOST_IP MEMORY [SSD_DIR]: an owner's YAML, built here only.
owner_yaml() {
  local listen=0.0.0.0:0
  [ -n "${FX_TEST_EXPLICIT_DATA_LISTEN:-}" ] && listen=$2:0
  printf '%s\n' "cluster_name: fluxon" "master: $master_addr" "node_name: host-$1" \
    "data_listen: $listen" "log_level: info" "cluster_secret_file: $dir/cluster.secret" \
    "fluxonkv_spec:" "  memory_size: $3" \
    "  client_socket: $dir/$1.sock" "  prefault: false" "  use_hugepages: false"
  if [ -n "${4:-}" ]; then
    printf '%s\n' "  large_file_paths: [$4]" "  large_limit_size: [256MB]"
  fi
}
# start_in NS LOG COMMAND...: runs a daemon in a namespace (`ip netns exec`
# execs it, so $! is the daemon itself).
start_in() {
  local ns=$1 log=$2; shift 2
  ip netns exec "$ns" "$@" 2>"$log" >&2 &
  started_pid=$!
  daemon_pids+=("$started_pid")
}
# alive PID NAME: dies naming the daemon when it has exited.
alive() { kill -0 "$1" 2>/dev/null || die "$2: exited at startup (see its log below)"; }

start_in "$ns_master" "$dir/master.log" "${master_command[@]}"
master_pid=$started_pid
master_addr=
for _ in $(seq 100); do
  alive "$master_pid" master
  [ -s "$dir/master.addr" ] && master_addr=$(cat "$dir/master.addr") && break
  sleep 0.1
done
[ -n "$master_addr" ] || die "master: no port file after 10 s"
case $master_addr in "$ip_master":*) ;; *) die "master: listens on $master_addr, not $ip_master" ;; esac

mkdir -p "$dir/ssd-a"
owner_yaml a "$ip_a" 48MB "$dir/ssd-a" >"$dir/a.yaml"
owner_yaml b "$ip_b" 64MB >"$dir/b.yaml"
start_in "$ns_a" "$dir/owner-a.log" "$bin/fluxon-owner" --config "$dir/a.yaml"
owner_a_pid=$started_pid
start_in "$ns_b" "$dir/owner-b.log" "$bin/fluxon-owner" --config "$dir/b.yaml"
owner_b_pid=$started_pid
sock_a=$dir/a.sock sock_b=$dir/b.sock

fx() { timeout "$cli_timeout" "$bin/fluxon" "$@"; }
# The line of `fluxon stat` (through SOCKET) for owner NAME.
stat_of() { fx stat --socket "$1" 2>/dev/null | grep "^host-$2 "; }
stat_field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$2"; }
ready=
for _ in $(seq 200); do
  alive "$owner_a_pid" "owner A" && alive "$owner_b_pid" "owner B"
  if [ -n "$(stat_of "$sock_a" b)" ] && [ -n "$(stat_of "$sock_b" a)" ]; then ready=1; break; fi
  sleep 0.1
done
[ -n "$ready" ] || die "cluster: owners A and B did not both register within 20 s"
for o in a b; do
  echo "owner $o: $(grep -m1 -o 'data plane on .*' "$dir/owner-$o.log")"
done
ssd_capacity=  # reported with A's heartbeats (one a second)
for _ in $(seq 50); do
  ssd_capacity=$(stat_field ssd_capacity "$(stat_of "$sock_b" a)")
  [ "${ssd_capacity:-0}" -gt 0 ] && break
  sleep 0.1
done
check "cluster: owner A reports its SSD tier (ssd_capacity=${ssd_capacity:-?})" \
  test "${ssd_capacity:-0}" -gt 0

# ---- values and byte counters -------------------------------------------
# B's eth0 byte counters: every byte between B and A goes through them.
b_bytes() { ip netns exec "$ns_b" cat "/sys/class/net/eth0/statistics/$1_bytes"; }
make_value() { head -c "$2" /dev/urandom >"$dir/$1.in"; }
sizes=(1024 $((1048576 + 7)) 8388608)

# put_all STEP SOCKET KEY...: puts each KEY's value ($dir/KEY.in); the step
# stops at its first failure.
put_all() {
  local step=$1 sock=$2 k; shift 2
  for k in "$@"; do
    fx put --socket "$sock" "$k" "$dir/$k.in" 2>"$dir/err" ||
      { check "$step: put $k: $(cat "$dir/err")" false; return 1; }
  done
  check "$step: $# values" true
}
# get_all STEP SOCKET KEY...: reads each KEY back and compares it with what
# was put, recording each get's source in $dir/KEY.src; the step stops at its
# first failure.
get_all() {
  local step=$1 sock=$2 k; shift 2
  for k in "$@"; do
    fx get -v --socket "$sock" "$k" -o "$dir/$k.out" 2>"$dir/$k.src" ||
      { check "$step: get $k: $(cat "$dir/$k.src")" false; return 1; }
    cmp -s "$dir/$k.in" "$dir/$k.out" ||
      { check "$step: $k read back differs from what was put" false; return 1; }
  done
  check "$step: $# values byte for byte" true
}
total_of() { local k t=0; for k in "$@"; do t=$((t + $(stat -c %s "$dir/$k.in"))); done; echo $t; }
skipped() { echo "skipped: $* (its values were not put)"; }

# ---- 1. put through A, get through B: B pulls from A ---------------------
keys_a=()
for s in "${sizes[@]}"; do make_value "from-a-$s" "$s"; keys_a+=("from-a-$s"); done
if put_all "A->B: put through A" "$sock_a" "${keys_a[@]}"; then
  rx0=$(b_bytes rx)
  if get_all "A->B: get through B (pull from A)" "$sock_b" "${keys_a[@]}"; then
    got=$(($(b_bytes rx) - rx0)) want=$(total_of "${keys_a[@]}")
    check "A->B: the values crossed the bridge into B ($got bytes received, want >= $want)" \
      test "$got" -ge "$want"
  fi
else
  skipped "A->B: get through B"
fi

# ---- 2. put through B, pushed to A; get through A and B ------------------
keys_b=()
for s in "${sizes[@]}"; do make_value "from-b-$s" "$s"; keys_b+=("from-b-$s"); done
tx0=$(b_bytes tx)
if put_all "B->A: put through B (push to A)" "$sock_b" "${keys_b[@]}"; then
  got=$(($(b_bytes tx) - tx0)) want=$(total_of "${keys_b[@]}")
  check "B->A: the values crossed the bridge out of B ($got bytes sent, want >= $want)" \
    test "$got" -ge "$want"
  get_all "B->A: get through A" "$sock_a" "${keys_b[@]}"
  get_all "B->A: get through B (pull from A)" "$sock_b" "${keys_b[@]}"
else
  skipped "B->A: gets through A and B"
fi

# ---- 3. SSD refill across hosts ----------------------------------------------
# 16 x 4 MiB pushed to A, whose 48 MiB segment keeps at most 80 % for values:
# the older ones live only on A's SSD afterwards.
keys_ssd=()
for i in $(seq 16); do make_value "ssd-$i" $((4194304 + i)); keys_ssd+=("ssd-$i"); done
if put_all "ssd: put through B (push to A)" "$sock_b" "${keys_ssd[@]}"; then
  evictions=$(stat_field evictions "$(stat_of "$sock_b" a)")
  check "ssd: A evicted values from memory (evictions=${evictions:-?})" \
    test "${evictions:-0}" -gt 0
  # SSD hits count on the owner that answers the client: B, asked itself.
  hits0=$(stat_field hits_ssd "$(stat_of "$sock_b" b)")
  rx0=$(b_bytes rx)
  if get_all "ssd: get through B" "$sock_b" "${keys_ssd[@]}"; then
    from_ssd=()
    for k in "${keys_ssd[@]}"; do grep -q source=ssd "$dir/$k.src" && from_ssd+=("$k"); done
    check "ssd: some gets through B came from A's SSD (${#from_ssd[@]} of ${#keys_ssd[@]})" \
      test "${#from_ssd[@]}" -gt 0
    hits1=$(stat_field hits_ssd "$(stat_of "$sock_b" b)")
    check "ssd: B's stat counts SSD hits (${hits0:-?} -> ${hits1:-?})" \
      test "${hits1:-0}" -gt "${hits0:-0}"
    got=$(($(b_bytes rx) - rx0)) want=$(total_of "${from_ssd[@]}")
    check "ssd: the refilled values crossed the bridge into B ($got bytes, want >= $want)" \
      test "$got" -ge "$want"
  fi
else
  skipped "ssd: get through B"
fi
check "ssd: no SSD errors on A" test "$(stat_field ssd_errors "$(stat_of "$sock_b" a)")" = 0

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
