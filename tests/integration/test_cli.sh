#!/usr/bin/env bash
# test_cli.sh - the `fluxon` command as a user runs it: up, put (file and
# stdin), get (-o, -v, miss), del, stat, down; pid and socket files; startup
# errors of fluxon-owner naming the key with exit code 2; nothing left running.
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
  rm -rf "$dir"
}
trap cleanup EXIT
# A process counts as running unless it is gone or a zombie (in some sandboxes
# pid 1 does not reap the daemons that `fluxon up` leaves to it).
running() { [ -r "/proc/$1/stat" ] && ! awk '{ exit ($3 == "Z") ? 0 : 1 }' "/proc/$1/stat"; }

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

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
