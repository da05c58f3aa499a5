#!/usr/bin/env bash
# test_cli.sh - the `fluxon` command as a user runs it: up, put (file and
# stdin), get (-o, -v, miss), del, stat, down; pid and socket files; startup
# errors of fluxon-owner naming the key with exit code 2; nothing left running.
# Then `up --owners 3`: three sockets, pid files and processes, stat listing
# three owners, put/get through one socket, and a down that stops them all.
# A get through another owner than the put's reads the same value.
set -u
bin=${1:?usage: test_cli.sh BUILD_DIR}
dir=$(mktemp -d /tmp/fx-cli-XXXXXX)
pass=0 fail=0
check() { # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $what"; fi
}
cleanup() {
  "$bin/fluxon" down --dir "$dir" >/dev/null 2>&1
  "$bin/fluxon" down --dir "$dir/multi" >/dev/null 2>&1
  "$bin/fluxon" down --dir "$dir/failing" >/dev/null 2>&1
  rm -rf "$dir"
}
trap cleanup EXIT
# A process counts as running unless it is gone or a zombie (in some sandboxes
# pid 1 does not reap the daemons that `fluxon up` leaves to it).
running() { [ -r "/proc/$1/stat" ] && ! awk '{ exit ($3 == "Z") ? 0 : 1 }' "/proc/$1/stat"; }
# Prints the pids of running fluxon-* daemons with an argument under DIR.
daemons_in() {
  local p
  for p in /proc/[0-9]*; do
    case "$(cat "$p/comm" 2>/dev/null)" in fluxon-*) ;; *) continue ;; esac
    tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -q "^$1/" && running "${p#/proc/}" && echo "${p#/proc/}"
  done
}

sock=$("$bin/fluxon" up --dir "$dir" --dram 256MB)
check "up prints the socket path" test "$sock" = "$dir/owner0.sock"
check "up writes master.pid" test -s "$dir/master.pid"
check "up writes owner0.pid" test -s "$dir/owner0.pid"
check "up creates owner0.sock" test -S "$dir/owner0.sock"
mpid=$(cat "$dir/master.pid"); opid=$(cat "$dir/owner0.pid")
check "master is running" running "$mpid"
check "owner is running" running "$opid"
export FLUXON_SOCKET=$sock

head -c 3000000 /dev/urandom > "$dir/value.bin"
check "put from a file" "$bin/fluxon" put big "$dir/value.bin"
check "get -o writes the same bytes" bash -c "'$bin/fluxon' get big -o '$dir/out.bin' && cmp -s '$dir/value.bin' '$dir/out.bin'"
printf 'hello\n' | "$bin/fluxon" put greeting -
check "get to stdout" test "$("$bin/fluxon" get greeting)" = "hello"
src=$("$bin/fluxon" get -v greeting 2>&1 >/dev/null)
check "get -v prints source=memory" test "$src" = "source=memory"
check "--socket flag works" bash -c "FLUXON_SOCKET= '$bin/fluxon' get --socket '$sock' greeting >/dev/null"
printf '' | "$bin/fluxon" put empty -
check "empty value round trip" bash -c "'$bin/fluxon' get empty -o '$dir/empty.out' && test ! -s '$dir/empty.out'"

err=$("$bin/fluxon" get missing 2>&1 >/dev/null); rc=$?
check "get miss exits 1" test $rc -eq 1
check "get miss prints KeyNotFound" grep -q KeyNotFound <<<"$err"
"$bin/fluxon" del missing 2>/dev/null; rc=$?
check "del miss exits 1" test $rc -eq 1
for k in big greeting empty; do check "del $k" "$bin/fluxon" del "$k"; done
check "get after del misses" bash -c "! '$bin/fluxon' get greeting >/dev/null 2>&1"

used=""
for _ in $(seq 100); do
  used=$("$bin/fluxon" stat | sed -n 's/.*memory_used=\([0-9]*\).*/\1/p')
  [ "$used" = "0" ] && break
  sleep 0.05
done
check "stat shows memory_used=0 after deleting everything (got '$used')" test "$used" = "0"
check "stat shows the capacity" bash -c "'$bin/fluxon' stat | grep -q 'memory_capacity=268435456'"

# Owner startup errors: a clear message naming the key, exit code 2.
owner_err() { # owner_err KEY YAML_BODY
  printf '%s\n' "$2" > "$dir/bad.yaml"
  out=$("$bin/fluxon-owner" --config "$dir/bad.yaml" 2>&1); rc=$?
  check "bad $1: exit 2 (got $rc)" test $rc -eq 2
  check "bad $1: names the key ($out)" grep -q "$1" <<<"$out"
}
base='cluster_name: t
master: 127.0.0.1:1'
owner_err memory_size "$base
fluxonkv_spec:
  memory_size: 12XB
  client_socket: $dir/x.sock"
owner_err large_limit_size "$base
fluxonkv_spec:
  memory_size: 1MB
  client_socket: $dir/x.sock
  large_file_paths: [/tmp/a, /tmp/b]
  large_limit_size: [\"1GB\"]"
owner_err large_limit_size "$base
fluxonkv_spec:
  memory_size: 1MB
  client_socket: $dir/x.sock
  large_file_paths: [/tmp/a]
  large_limit_size: [100]"
owner_err bogus_key "$base
bogus_key: 1
fluxonkv_spec:
  memory_size: 1MB
  client_socket: $dir/x.sock"
out=$("$bin/fluxon-master" --listen nonsense 2>&1); rc=$?
check "master bad --listen exits 2" test $rc -eq 2
check "master bad --listen names the key" grep -q listen <<<"$out"

check "down succeeds" "$bin/fluxon" down --dir "$dir"
sleep 0.1
check "master stopped" eval "! running $mpid"
check "owner stopped" eval "! running $opid"
check "pid files removed" test ! -e "$dir/master.pid" -a ! -e "$dir/owner0.pid"
"$bin/fluxon" down --dir "$dir" >/dev/null 2>&1; rc=$?
check "down without a cluster exits 1" test $rc -eq 1

# ---- several owners ------------------------------------------------------------
mdir="$dir/multi"
out=$("$bin/fluxon" up --dir "$mdir" --owners 3 --dram 64MB); rc=$?
check "up --owners 3 exits 0 (got $rc)" test $rc -eq 0
mapfile -t socks <<<"$out"
check "up --owners 3 prints 3 lines (got '$out')" test "${#socks[@]}" -eq 3
opids=()
for i in 0 1 2; do
  check "line $i is owner$i's socket (got '${socks[$i]:-}')" test "${socks[$i]:-}" = "$mdir/owner$i.sock"
  check "owner$i.sock exists" test -S "$mdir/owner$i.sock"
  check "owner$i.pid written" test -s "$mdir/owner$i.pid"
  check "owner$i.yaml names owner$i" grep -q "^node_name: owner$i\$" "$mdir/owner$i.yaml"
  p=$(cat "$mdir/owner$i.pid" 2>/dev/null); opids+=("${p:-0}")
  check "owner$i (pid ${p:-none}) is running" running "${p:-0}"
done
check "each owner is its own process" test "$(printf '%s\n' "${opids[@]}" | sort -u | wc -l)" -eq 3
mpid3=$(cat "$mdir/master.pid")
check "the master of the 3-owner cluster is running" running "$mpid3"

st=""
for _ in $(seq 100); do
  st=$("$bin/fluxon" stat --socket "$mdir/owner1.sock")
  [ "$(grep -c ' live=1 ' <<<"$st")" -eq 3 ] && break
  sleep 0.05
done
check "stat lists 3 live owners (got '$st')" test "$(grep -c ' live=1 ' <<<"$st")" -eq 3
for i in 0 1 2; do check "stat lists owner$i" grep -q "^owner$i " <<<"$st"; done
check "--dram is per owner" test "$(grep -c ' memory_capacity=67108864 ' <<<"$st")" -eq 3

for i in 0 2; do
  printf 'value%s\n' "$i" | "$bin/fluxon" put --socket "$mdir/owner$i.sock" "key$i" -
  got=$("$bin/fluxon" get --socket "$mdir/owner$i.sock" "key$i")
  check "put and get through owner$i (got '$got')" test "$got" = "value$i"
done
got=$("$bin/fluxon" get --socket "$mdir/owner2.sock" key0)
check "get through owner2 of a put through owner0 (got '$got')" test "$got" = "value0"

out=$("$bin/fluxon" up --dir "$mdir" --owners 2 2>&1); rc=$?
check "up over a running cluster exits 1 (got $rc)" test $rc -eq 1
check "up over a running cluster says so" grep -q "already running" <<<"$out"

check "down stops the 3-owner cluster" "$bin/fluxon" down --dir "$mdir"
sleep 0.1
check "its master stopped" eval "! running $mpid3"
for i in 0 1 2; do
  check "owner$i stopped" eval "! running ${opids[$i]}"
  check "owner$i.pid removed" test ! -e "$mdir/owner$i.pid"
  check "owner$i.sock removed" test ! -e "$mdir/owner$i.sock"
done
check "master.pid removed" test ! -e "$mdir/master.pid"
check "no daemon of the 3-owner cluster is left" test -z "$(daemons_in "$mdir")"

# One owner of three fails at startup: up exits 1, shows that owner's log and
# stops the master and the other owners.
fdir="$dir/failing"; fbin="$dir/fakebin"
mkdir -p "$fbin"
ln -s "$bin/fluxon-master" "$fbin/fluxon-master"
printf '#!/bin/bash\ncase "$*" in *owner1.yaml*) echo "boom: owner1 refuses to start" >&2; exit 3 ;; esac\nexec "%s/fluxon-owner" "$@"\n' "$bin" > "$fbin/fluxon-owner"
chmod +x "$fbin/fluxon-owner"
out=$("$bin/fluxon" up --dir "$fdir" --owners 3 --dram 64MB --bin-dir "$fbin" 2>&1); rc=$?
check "up with a failing owner exits 1 (got $rc)" test $rc -eq 1
check "up names the failing owner ($out)" grep -q "owner1" <<<"$out"
check "up shows the failing owner's log" grep -q "boom: owner1 refuses to start" <<<"$out"
check "up prints no socket when it fails" bash -c "! grep -q '^$fdir/owner.\.sock\$' <<<'$out'"
sleep 0.1
check "no daemon is left after a failed up ($(daemons_in "$fdir"))" test -z "$(daemons_in "$fdir")"
check "no pid file is left after a failed up" bash -c "! ls '$fdir'/*.pid >/dev/null 2>&1"

out=$("$bin/fluxon" up --dir "$mdir" --owners 0 2>&1); rc=$?
check "--owners 0 is a usage error (got $rc)" test $rc -eq 2

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
