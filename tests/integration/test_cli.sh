#!/usr/bin/env bash
# test_cli.sh - the `fluxon` command as a user runs it: up, put (file and
# stdin), get (-o, -v, miss), del, stat, down; pid and socket files; startup
# errors of fluxon-owner naming the key with exit code 2; nothing left running.
# up prints the master's HTTP URL after the sockets; put of a large file or
# of stdin shows a progress bar on a terminal only; stat --human and --json.
# stat's first line names the master (address, term 0, the pid of master.pid).
# Then `up --owners 3`: three sockets, pid files and processes, stat listing
# three owners, put/get through one socket, and a down that stops them all.
# A get through another owner than the put's reads the same value.
# Then `up --ssd 256MB --owners 2`: each owner gets DIR/ssd<i> as its SSD
# tier, stat shows their SSD capacity, and down removes the tiers' files; one
# owner with less memory than its values reads the older ones from SSD.
set -u
bin=$(cd "${1:?usage: test_cli.sh BUILD_DIR}" && pwd) || exit 2
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
  "$bin/fluxon" down --dir "$dir/ssd" >/dev/null 2>&1
  "$bin/fluxon" down --dir "$dir/ssd1" >/dev/null 2>&1
  "$bin/fluxon" down --dir "$dir/race" >/dev/null 2>&1
  "$bin/fluxon" down --dir "$dir/updown" >/dev/null 2>&1
  "$bin/fluxon" down --dir "$dir/other-cluster" >/dev/null 2>&1
  for d in budget gt0 gt3; do "$bin/fluxon" down --dir "$dir/$d" >/dev/null 2>&1; done
  [ -n "${decoy:-}" ] && pkill -P "$decoy" 2>/dev/null && kill "$decoy" 2>/dev/null
  for p in ${direct_pids:-}; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  [ -n "${FX_TEST_KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
. "$(dirname "${BASH_SOURCE[0]}")/../util/daemons.sh" # running, daemons_in

upout=$("$bin/fluxon" up --dir "$dir" --dram 256MB)
sock=$(sed -n 1p <<<"$upout")
url=$(sed -n 2p <<<"$upout")
check "up prints the master's HTTP URL after the socket ($url)" \
  bash -c "[[ '$url' =~ ^http://127\.0\.0\.1:[0-9]+/\$ ]]"
check "up prints two lines (got '$upout')" test "$(wc -l <<<"$upout")" -eq 2
check "the URL serves the web page" bash -c "curl -sf --max-time 5 '$url' | grep -q '<title>Fluxon KV</title>'"
check "master.http holds that HOST:PORT" test "http://$(cat "$dir/master.http")/" = "$url"
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

out=$("$bin/fluxon" get 2>&1 >/dev/null); rc=$?
check "get without a KEY is a usage error (got $rc)" test $rc -eq 2
usage_short() { grep -q 'missing KEY' <<<"$1" && grep -q -- '--help' <<<"$1" && [ "$(wc -l <<<"$1")" -eq 2 ]; }
check "a usage error says what and points at --help, in two lines ($out)" usage_short "$out"
err=$("$bin/fluxon" get missing 2>&1 >/dev/null); rc=$?
check "get miss exits 1" test $rc -eq 1
check "get miss prints KeyNotFound" grep -q KeyNotFound <<<"$err"
"$bin/fluxon" del missing 2>/dev/null; rc=$?
check "del miss exits 1" test $rc -eq 1
# A value larger than any owner's memory is refused once that much has been
# read, so an endless stream cannot grow the command's memory (a 256 MB
# owner). The stream here ends at 1 GiB (no ulimit -v: ASan needs the address
# space), and the message shows that reading stopped at the limit.
out=$(yes | head -c 1073741824 | "$bin/fluxon" put endless - 2>&1); rc=$?
check "put of an endless stdin exits 1 (got $rc)" test $rc -eq 1
check "put of an endless stdin says NoSpace and the limit ($out)" \
  grep -q 'NoSpace: stdin holds more than 268435456 bytes' <<<"$out"
truncate -s 300M "$dir/sparse.bin"
out=$("$bin/fluxon" put sparse "$dir/sparse.bin" 2>&1); rc=$?
check "put of a file larger than the memory exits 1 (got $rc)" test $rc -eq 1
check "put of a file larger than the memory is refused by its size ($out)" \
  grep -q 'NoSpace: .*sparse.bin holds more than' <<<"$out"
rm -f "$dir/sparse.bin"
# A progress bar for a large put, on a terminal only: `script` gives the
# command a pty (util-linux); with stderr a file there is none.
head -c 20000000 /dev/urandom > "$dir/large.bin"
out=$("$bin/fluxon" put large "$dir/large.bin" 2>&1 >/dev/null); rc=$?
check "a large put with stderr not a terminal exits 0 and prints nothing (got $rc: '$out')" \
  test $rc -eq 0 -a -z "$out"
if command -v script >/dev/null; then
  script -qec "'$bin/fluxon' put large '$dir/large.bin'" "$dir/tty.log" >/dev/null 2>&1; rc=$?
  check "the same put on a terminal exits 0 (got $rc)" test $rc -eq 0
  check "and draws a bar that ends at 100% and the size ($(tr '\r' '\n' <"$dir/tty.log" | tail -2 | head -1))" \
    bash -c "tr '\r' '\n' <'$dir/tty.log' | grep -q '^large \[#\{30\}\] 100% 19.1 MiB / 19.1 MiB'"
  script -qec "cat '$dir/large.bin' | '$bin/fluxon' put large -" "$dir/tty2.log" >/dev/null 2>&1
  check "from stdin the bar counts the bytes read ($(tr '\r' '\n' <"$dir/tty2.log" | tail -2 | head -1))" \
    bash -c "tr '\r' '\n' <'$dir/tty2.log' | grep -q '^large 19.1 MiB'"
  check "the value put through the pty reads back the same" \
    bash -c "'$bin/fluxon' get large -o '$dir/large.out' && cmp -s '$dir/large.bin' '$dir/large.out'"
fi
rm -f "$dir/large.bin" "$dir/large.out"
# stat --human: an aligned table with sizes and hit rates; --json: one document.
human=$("$bin/fluxon" stat --human)
check "stat --human names the master and has a header ($human)" \
  bash -c "grep -q '^master  $(cat "$dir/master.addr"), pid $(cat "$dir/master.pid")' <<<'$human' && grep -q '^OWNER .*MEMORY .*HIT MEM' <<<'$human'"
check "stat --human shows owner0's memory in MiB and its hit rate in %" \
  bash -c "grep -Eq '^owner0 +[0-9]+ +live +[0-9.]+ [KM]iB / 256 MiB +[0-9.]+% .* [0-9.]+%' <<<'$human'"
json=$("$bin/fluxon" stat --json)
check "stat --json is one document with the key=value figures" python3 - "$json" "$(cat "$dir/master.addr")" <<'PY'
import json, sys
doc = json.loads(sys.argv[1])
assert doc["master"]["leader"] == sys.argv[2] and doc["master"]["term"] == 0, doc["master"]
(o,) = doc["owners"]
assert o["name"] == "owner0" and o["live"] is True and o["memory_capacity"] == 268435456, o
assert o["hits_memory"] >= 2 and "ssd_errors" in o, o
PY
"$bin/fluxon" stat --human --json >/dev/null 2>&1; rc=$?
check "stat --human --json is a usage error (got $rc)" test $rc -eq 2
for k in big greeting empty large; do check "del $k" "$bin/fluxon" del "$k"; done

# A second owner configured with a running owner's client socket is refused
# before it joins the cluster, and the running owner keeps its socket; so is a
# client_socket that is some other file, which stays as it was.
sed 's/^node_name: .*/node_name: intruder/' "$dir/owner0.yaml" > "$dir/intruder.yaml"
# (timeout: an owner that wrongly starts would otherwise run on)
out=$(timeout 20 "$bin/fluxon-owner" --config "$dir/intruder.yaml" 2>&1); rc=$?
check "an owner on a served socket exits 2 (got $rc)" test $rc -eq 2
check "it names client_socket and says it is served ($out)" \
  grep -q 'client_socket: .*another process' <<<"$out"
check "the running owner still serves its socket" bash -c "'$bin/fluxon' stat | grep -q '^owner0 '"
check "no second owner joined" test "$("$bin/fluxon" stat | grep -vc '^master ')" -eq 1
printf 'precious\n' > "$dir/not-a-socket"
out=$(timeout 20 "$bin/fluxon-owner" --config "$dir/intruder.yaml" --client-socket "$dir/not-a-socket" 2>&1)
rc=$?
check "a client_socket that is a plain file: exit 2 (got $rc)" test $rc -eq 2
check "it says the path is not a socket ($out)" grep -q 'client_socket: .*not a socket' <<<"$out"
check "the plain file is left alone" test "$(cat "$dir/not-a-socket")" = "precious"
# A cluster_name the master does not have: refused at registration, exit 2.
out=$(timeout 20 "$bin/fluxon-owner" --config "$dir/intruder.yaml" --client-socket "$dir/other.sock" \
  --cluster-name not-this-one 2>&1); rc=$?
check "a cluster_name the master refuses: exit 2 (got $rc)" test $rc -eq 2
check "it names cluster_name ($out)" grep -q "cluster_name 'not-this-one' does not match" <<<"$out"

check "get after del misses" bash -c "! '$bin/fluxon' get greeting >/dev/null 2>&1"

used=""
for _ in $(seq 100); do
  used=$("$bin/fluxon" stat | sed -n 's/.*memory_used=\([0-9]*\).*/\1/p')
  [ "$used" = "0" ] && break
  sleep 0.05
done
check "stat shows memory_used=0 after deleting everything (got '$used')" test "$used" = "0"
check "stat shows the capacity" bash -c "'$bin/fluxon' stat | grep -q 'memory_capacity=268435456'"
check "stat ends with the SSD error count" bash -c "'$bin/fluxon' stat | grep -q ' ssd_errors=0\$'"
# The first line names the master: without etcd, term 0 and (on this host)
# the pid of master.pid.
first=$("$bin/fluxon" stat | head -n 1)
check "stat's first line is the master's ($first)" \
  grep -Eq '^master leader=[^ ]+:[0-9]+ term=0 pid=[0-9]+$' <<<"$first"
check "with the pid of master.pid ($mpid)" test "${first##* pid=}" = "$mpid"
check "and its address from master.addr" test "${first%% term=*}" = "master leader=$(cat "$dir/master.addr")"

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
owner_err large_limit_size "$base
fluxonkv_spec:
  memory_size: 1MB
  client_socket: $dir/x.sock
  large_file_paths: [$dir/toobig]
  large_limit_size: [\"100000TB\"]"
check "a limit over the free space reserved nothing" \
  bash -c "! ls '$dir'/toobig/*/*/shard-* >/dev/null 2>&1"
owner_err bogus_key "$base
bogus_key: 1
fluxonkv_spec:
  memory_size: 1MB
  client_socket: $dir/x.sock"
# A segment larger than the machine's memory is refused before any of it is
# reserved (reserving it would wake the OOM killer). The file size limit makes a
# regression fail here (EFBIG; SIGXFSZ ignored) instead of filling the memory.
printf '%s\n' "$base
fluxonkv_spec:
  memory_size: 16TB
  client_socket: $dir/x.sock" > "$dir/big.yaml"
out=$(ulimit -f 1048576; trap '' XFSZ; "$bin/fluxon-owner" --config "$dir/big.yaml" 2>&1); rc=$?
check "memory_size over the machine: exit 2 (got $rc)" test $rc -eq 2
check "memory_size over the machine: says so ($out)" \
  grep -q "memory_size: .*16.00 TiB is more than this machine can give" <<<"$out"
# Owners check and reserve 4 KiB-page segments one at a time, under a lock, so
# that owners started together see each other's share: one waits while the lock
# is held and creates its segment only after it is released.
lock="$dir/reserve.lock"
flock "$lock" bash -c 'touch "$0"; sleep 1.5' "$dir/lock.held" &
holder=$!
for _ in $(seq 100); do [ -e "$dir/lock.held" ] && break; sleep 0.05; done
FLUXON_SEGMENT_LOCK="$lock" "$bin/fluxon-owner" --cluster-name t --master 127.0.0.1:1 \
  --memory-size 16MB --client-socket "$dir/lk.sock" --use-hugepages false --log-level info \
  2>"$dir/lk.log" &
lkpid=$!
held_at_segment=unknown
for _ in $(seq 200); do
  if grep -q "segment:" "$dir/lk.log"; then
    running "$holder" && held_at_segment=yes || held_at_segment=no
    break
  fi
  sleep 0.02
done
check "an owner waits for the reserve lock ($(grep -c waiting "$dir/lk.log") lines)" \
  grep -q "waiting for $lock" "$dir/lk.log"
check "and creates its segment only once it is released (held then: $held_at_segment)" \
  test "$held_at_segment" = no
kill "$lkpid" 2>/dev/null; wait "$lkpid" 2>/dev/null; wait "$holder" 2>/dev/null
# Something other than a file at the lock's path (a FIFO would block an open)
# is skipped with a warning, not waited on.
mkfifo "$dir/fifo.lock"
FLUXON_SEGMENT_LOCK="$dir/fifo.lock" "$bin/fluxon-owner" --cluster-name t --master 127.0.0.1:1 \
  --memory-size 16MB --client-socket "$dir/lf.sock" --use-hugepages false --log-level info \
  2>"$dir/lf.log" &
lfpid=$!
for _ in $(seq 200); do grep -q "segment:" "$dir/lf.log" && break; sleep 0.02; done
check "a FIFO at the lock's path is skipped ($(grep -c 'not a regular file' "$dir/lf.log") warnings)" \
  grep -q "not a regular file" "$dir/lf.log"
check "and the owner still creates its segment" grep -q "segment:" "$dir/lf.log"
kill "$lfpid" 2>/dev/null; wait "$lfpid" 2>/dev/null
# Two SSD paths on one file system make one tier (the first path's limit):
# the owner says that the second limit is not used.
"$bin/fluxon-owner" --cluster-name t --master 127.0.0.1:1 --memory-size 16MB \
  --client-socket "$dir/mp.sock" --large-file-paths "$dir/mp0,$dir/mp1" \
  --large-limit-size 2MB,1MB 2>"$dir/mp.log" &
mppid=$!
for _ in $(seq 200); do grep -q "same file system" "$dir/mp.log" && break; sleep 0.02; done
check "a second SSD path on the same file system is reported ($(head -c 300 "$dir/mp.log"))" \
  grep -q "large_file_paths\[1\] $dir/mp1 is on the same file system" "$dir/mp.log"
kill "$mppid" 2>/dev/null; wait "$mppid" 2>/dev/null

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
check "up --owners 3 prints 3 sockets and the URL (got '$out')" test "${#socks[@]}" -eq 4
check "the last line is the HTTP URL (got '${socks[3]:-}')" \
  test "${socks[3]:-}" = "http://$(cat "$mdir/master.http" 2>/dev/null)/"
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

# Two `up`s at once in one directory: one starts the cluster, the other finds
# it running (they take turns on DIR/cluster.lock); `down` then leaves nothing.
rdir="$dir/race"
"$bin/fluxon" up --dir "$rdir" --dram 64MB >"$dir/race1.out" 2>&1 & r1=$!
"$bin/fluxon" up --dir "$rdir" --dram 64MB >"$dir/race2.out" 2>&1 & r2=$!
wait $r1; rc1=$?; wait $r2; rc2=$?
check "of two concurrent ups exactly one succeeds (exits $rc1, $rc2)" test $((rc1 + rc2)) -eq 1
check "the other says a cluster is already running" \
  grep -q "already running" "$dir/race1.out" "$dir/race2.out"
check "one master and one owner run in the directory ($(daemons_in "$rdir" | xargs))" \
  test "$(daemons_in "$rdir" | wc -l)" -eq 2
"$bin/fluxon" down --dir "$rdir" >/dev/null
check "down after the race leaves no daemon" test -z "$(daemons_in "$rdir")"

# A down while an up is still starting waits for it (the lock), then stops
# everything it started: no daemon and no pid file is left. A master that
# takes 0.5 s to start holds the up between writing master.pid and starting
# the owners, the moment a down that read the pid files early would miss them.
wdir="$dir/updown"; sbin="$dir/slowbin"
mkdir -p "$sbin"
printf '#!/bin/bash\nsleep 0.5\nexec "%s/fluxon-master" "$@"\n' "$bin" > "$sbin/fluxon-master"
chmod +x "$sbin/fluxon-master"
ln -s "$bin/fluxon-owner" "$sbin/fluxon-owner"
"$bin/fluxon" up --dir "$wdir" --owners 2 --dram 64MB --bin-dir "$sbin" >/dev/null 2>&1 & u=$!
for _ in $(seq 500); do [ -e "$wdir/master.pid" ] && break; sleep 0.01; done
out=$("$bin/fluxon" down --dir "$wdir" 2>&1); rc=$?
wait $u
check "down during an up exits 0 (got $rc: $out)" test $rc -eq 0
sleep 0.1
check "it left no daemon of that up ($(daemons_in "$wdir" | xargs))" test -z "$(daemons_in "$wdir")"
check "and no pid file" bash -c "! ls '$wdir'/*.pid >/dev/null 2>&1"

# Stale pid files that name another cluster's daemons (as reused pids would):
# down signals only this directory's daemons, not theirs, and not a process
# that merely has an argument named fluxon-master.
edir="$dir/other-cluster"; sdir="$dir/stale-pids"
"$bin/fluxon" up --dir "$edir" --dram 64MB >/dev/null
emaster=$(cat "$edir/master.pid"); eowner=$(cat "$edir/owner0.pid")
mkdir -p "$sdir"
echo "$emaster" > "$sdir/master.pid"; echo "$eowner" > "$sdir/owner0.pid"
bash -c 'sleep 1000; true' decoy "$dir/fluxon-master" >/dev/null 2>&1 </dev/null & decoy=$!
echo "$decoy" > "$sdir/owner1.pid"
out=$("$bin/fluxon" down --dir "$sdir" 2>&1); rc=$?
check "down over stale pid files exits 0 (got $rc: $out)" test $rc -eq 0
check "it left the other cluster's master running" running "$emaster"
check "and the other cluster's owner" running "$eowner"
check "and a process that merely names fluxon-master" running "$decoy"
check "the stale pid files are gone" bash -c "! ls '$sdir'/*.pid >/dev/null 2>&1"
check "the other cluster still serves" bash -c "'$bin/fluxon' stat --socket '$edir/owner0.sock' >/dev/null"
pkill -P "$decoy" 2>/dev/null; kill "$decoy" 2>/dev/null; wait "$decoy" 2>/dev/null; decoy=
"$bin/fluxon" down --dir "$edir" >/dev/null

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
check "no owner config is left after a failed up" bash -c "! ls '$fdir'/owner*.yaml >/dev/null 2>&1"

# ---- the master's cache budget --------------------------------------------------
"$bin/fluxon" up --dir "$dir/budget-bad" --cache-budget 150 >/dev/null 2>&1; rc=$?
check "up --cache-budget 150 is a usage error (got $rc)" test $rc -eq 2
bdir="$dir/budget"
out=$("$bin/fluxon" up --dir "$bdir" --dram 64MB --cache-budget 50 2>&1); rc=$?
check "up --cache-budget 50 exits 0 (got $rc: $out)" test $rc -eq 0
st=$("$bin/fluxon" stat --socket "$bdir/owner0.sock")
check "stat shows half the segment as cache_budget ($st)" grep -q "cache_budget=33554432 " <<<"$st"
"$bin/fluxon" down --dir "$bdir" >/dev/null 2>&1

# ---- the owners' get threads ----------------------------------------------------
"$bin/fluxon" up --dir "$dir/gt-bad" --get-threads 17 >/dev/null 2>&1; rc=$?
check "up --get-threads 17 is a usage error (got $rc)" test $rc -eq 2
declare -A gt_tasks
for n in 0 3; do
  gdir="$dir/gt$n"
  out=$("$bin/fluxon" up --dir "$gdir" --dram 64MB --get-threads $n 2>&1); rc=$?
  check "up --get-threads $n exits 0 (got $rc: $out)" test $rc -eq 0
  gt_tasks[$n]=$(ls "/proc/$(cat "$gdir/owner0.pid")/task" 2>/dev/null | wc -l)
  "$bin/fluxon" down --dir "$gdir" >/dev/null 2>&1
done
check "--get-threads 3 runs 3 threads more than 0 (${gt_tasks[3]} vs ${gt_tasks[0]})" \
  test "$((gt_tasks[3] - gt_tasks[0]))" -eq 3

# ---- an SSD tier per owner ------------------------------------------------------
sdir="$dir/ssd"
out=$("$bin/fluxon" up --dir "$sdir" --owners 2 --dram 64MB --ssd 256MB 2>&1); rc=$?
check "up --ssd 256MB exits 0 (got $rc: $out)" test $rc -eq 0
for i in 0 1; do
  check "owner$i.yaml gives DIR/ssd$i" grep -q "large_file_paths: \[$sdir/ssd$i\]" "$sdir/owner$i.yaml"
  check "owner$i.yaml gives the SSD size" grep -q "large_limit_size: \[268435456\]" "$sdir/owner$i.yaml"
  check "ssd$i holds owner$i's tier" test -d "$sdir/ssd$i/fluxon_cluster_kv_ssd_storage/owner$i"
done
st=""
for _ in $(seq 100); do  # the capacity arrives with the first heartbeat
  st=$("$bin/fluxon" stat --socket "$sdir/owner0.sock")
  [ "$(grep -c ' ssd_capacity=268435456 ' <<<"$st")" -eq 2 ] && break
  sleep 0.05
done
check "stat shows each owner's SSD capacity (got '$st')" test "$(grep -c ' ssd_capacity=268435456 ' <<<"$st")" -eq 2
printf 'on ssd owners\n' | "$bin/fluxon" put --socket "$sdir/owner1.sock" skey -
got=$("$bin/fluxon" get --socket "$sdir/owner0.sock" skey)
check "put and get with SSD tiers (got '$got')" test "$got" = "on ssd owners"
spids=$(cat "$sdir"/owner*.pid "$sdir/master.pid")
check "down stops the SSD cluster" "$bin/fluxon" down --dir "$sdir"
sleep 0.1
for p in $spids; do check "pid $p stopped" eval "! running $p"; done
check "down removes the SSD directories ($(ls "$sdir"))" bash -c "! ls -d '$sdir'/ssd* >/dev/null 2>&1"
# One owner whose memory cannot hold every value: the older ones come back
# from its SSD tier (source=ssd), byte for byte.
s1dir="$dir/ssd1"
"$bin/fluxon" up --dir "$s1dir" --dram 16MB --ssd 64MB >/dev/null
for i in 1 2 3 4 5 6 7 8; do
  head -c 3000000 /dev/urandom > "$s1dir/v$i"
  "$bin/fluxon" put --socket "$s1dir/owner0.sock" "big$i" "$s1dir/v$i" || echo "put big$i failed"
done
same=0 from_ssd=0
for i in 1 2 3 4 5 6 7 8; do
  src=$("$bin/fluxon" get -v --socket "$s1dir/owner0.sock" "big$i" -o "$s1dir/out" 2>&1) &&
    cmp -s "$s1dir/v$i" "$s1dir/out" && same=$((same + 1))
  [ "$src" = "source=ssd" ] && from_ssd=$((from_ssd + 1))
done
check "24 MB through a 16 MB owner reads back intact ($same of 8)" test $same -eq 8
check "some gets report source=ssd ($from_ssd of 8)" test $from_ssd -gt 0
st=""
for _ in $(seq 60); do  # hits arrive with the next heartbeat
  st=$("$bin/fluxon" stat --socket "$s1dir/owner0.sock")
  grep -q ' hits_ssd=0 ' <<<"$st" || break
  sleep 0.05
done
check "stat counts the SSD hits (got '$st')" bash -c "! grep -q ' hits_ssd=0 ' <<<'$st'"
check "down stops the one-owner SSD cluster" "$bin/fluxon" down --dir "$s1dir"
check "and removes its SSD directory" test ! -e "$s1dir/ssd0"

out=$("$bin/fluxon" up --dir "$sdir" --ssd 100 2>&1); rc=$?
check "--ssd under 512 bytes is a usage error (got $rc)" test $rc -eq 2
check "--ssd error names the flag ($out)" grep -q -- "--ssd" <<<"$out"

out=$("$bin/fluxon" up --dir "$mdir" --owners 0 2>&1); rc=$?
check "--owners 0 is a usage error (got $rc)" test $rc -eq 2

# ---- the servers run directly, as the README shows --------------------------------
# A master with --cluster-name demo and --http, an owner from the README's YAML
# (plus an SSD tier); /metrics reports the owner's memory and SSD figures.
ddir="$dir/direct"
mkdir -p "$ddir"
http_get() { # http_get PORT PATH: the body of a plain HTTP/1.0 GET
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.0\r\n\r\n' "$2" >&3
  sed '1,/^\r\{0,1\}$/d' <&3
  exec 3<&-
}
mstarted=0
for _ in 1 2 3 4 5; do # an HTTP port picked at random may be taken
  hport=$((20000 + RANDOM % 30000))
  rm -f "$ddir/master.port"
  "$bin/fluxon-master" --listen 127.0.0.1:0 --port-file "$ddir/master.port" --cluster-name demo \
    --http "127.0.0.1:$hport" --heartbeat-interval 100ms 2>"$ddir/master.log" &
  dmpid=$!
  direct_pids="$dmpid"
  # The port file is written once the master is ready, HTTP included.
  for _ in $(seq 200); do [ -s "$ddir/master.port" ] && break; running "$dmpid" || break; sleep 0.05; done
  if [ -s "$ddir/master.port" ] && running "$dmpid"; then mstarted=1; break; fi
  kill -9 "$dmpid" 2>/dev/null
  wait "$dmpid" 2>/dev/null
done
check "master --cluster-name demo --http starts" test $mstarted -eq 1
mport=$(cat "$ddir/master.port" 2>/dev/null)
case "$mport" in *:*) maddr=$mport ;; *) maddr="127.0.0.1:$mport" ;; esac
printf '%s\n' "cluster_name: demo" "master: $maddr" "fluxonkv_spec:" "  memory_size: 64MB" \
  "  client_socket: ./var/owner0.sock" "  large_file_paths: [$ddir/ssd]" \
  '  large_limit_size: ["32MB"]' "data_listen: 127.0.0.1:0" > "$ddir/owner.yaml"
(cd "$ddir" && exec "$bin/fluxon-owner" --config owner.yaml 2>owner.log) &
dopid=$!
direct_pids="$dmpid $dopid"
for _ in $(seq 200); do [ -S "$ddir/var/owner0.sock" ] && break; running "$dopid" || break; sleep 0.05; done
check "the README's owner YAML starts and creates ./var/owner0.sock" test -S "$ddir/var/owner0.sock"
printf 'direct\n' | "$bin/fluxon" put --socket "$ddir/var/owner0.sock" dk -
check "put / get through the directly started owner" \
  test "$("$bin/fluxon" get --socket "$ddir/var/owner0.sock" dk)" = "direct"
metrics=""
for _ in $(seq 60); do # the figures arrive with a heartbeat
  metrics=$(http_get "$hport" /metrics 2>/dev/null)
  grep -q '^kv_ssd_capacity_bytes{owner=".*"} 33554432$' <<<"$metrics" && break
  sleep 0.1
done
check "/metrics reports the SSD capacity ($(grep kv_ssd_capacity <<<"$metrics"))" \
  grep -q '^kv_ssd_capacity_bytes{owner=".*"} 33554432$' <<<"$metrics"
check "/metrics reports the segment" \
  grep -q '^kvcache_segment_capacity_bytes{owner=".*"} 67108864$' <<<"$metrics"
check "/metrics reports the SSD error count (none)" \
  grep -q '^fluxon_ssd_errors_total{owner=".*"} 0$' <<<"$metrics"
check "the owner's SSD tier has its shard files" \
  bash -c "ls '$ddir'/ssd/demo_cluster_kv_ssd_storage/*/shard-000 >/dev/null 2>&1"
kill -TERM "$dopid"; wait "$dopid"; rc=$?
check "the owner exits 0 on SIGTERM (got $rc)" test $rc -eq 0
check "and removes its SSD shard files" \
  bash -c "! ls '$ddir'/ssd/demo_cluster_kv_ssd_storage/*/shard-* >/dev/null 2>&1"
kill -TERM "$dmpid"; wait "$dmpid"; rc=$?
check "the master exits 0 on SIGTERM (got $rc)" test $rc -eq 0
direct_pids=""

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
