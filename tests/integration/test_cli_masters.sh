#!/usr/bin/env bash
# test_cli_masters.sh - `fluxon up --masters M`: standby masters on a local
# etcd, as a user runs them (needs Debian's etcd-server, else it skips).
#   - --masters 0 and --masters x are usage errors (exit 2) naming the flag;
#   - --masters 1 is today's cluster: master.pid / master.addr, no etcd, the
#     owner dials the master's address, stat says term=0 and its pid;
#   - --masters 2: DIR/etcd.pid (an etcd on loopback), master0.pid and
#     master1.pid, all running; the owner's YAML says master: etcd://; put and
#     get work; stat's first line names the leader (one of the two pids) with
#     a term > 0; a second up over it is refused;
#   - kill -9 the leader: within 10 s stat names the other master with a
#     higher term, the value put before still reads back, and a new put works;
#   - down stops every one of them (etcd included: nothing listens on its
#     port after), removes the pid files and etcd's data; up again works;
#   - an up whose owner fails stops the etcd and the masters it started.
set -u
bin=$(cd "${1:?usage: test_cli_masters.sh BUILD_DIR}" && pwd) || exit 2
if ! command -v etcd >/dev/null 2>&1; then
  echo "SKIP: no etcd in PATH (Debian package etcd-server)"
  exit 77
fi
dir=$(mktemp -d /tmp/fx-cli-masters-XXXXXX)
pass=0 fail=0
check() { # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $what"; fi
}
cleanup() {
  local d
  for d in one two failing; do "$bin/fluxon" down --dir "$dir/$d" >/dev/null 2>&1; done
  if [ -n "${FX_TEST_KEEP:-}" ] && [ "$fail" -ne 0 ]; then
    echo "kept $dir"
  else
    rm -rf "$dir"
  fi
}
trap cleanup EXIT
# A process counts as running unless it is gone or a zombie.
running() { [ -r "/proc/$1/stat" ] && ! awk '{ exit ($3 == "Z") ? 0 : 1 }' "/proc/$1/stat"; }
# Prints the pids of running fluxon-* daemons and etcds with an argument under DIR.
procs_in() {
  local p
  for p in /proc/[0-9]*; do
    case "$(cat "$p/comm" 2>/dev/null)" in fluxon-* | etcd) ;; *) continue ;; esac
    { tr '\0' '\n' <"$p/cmdline"; } 2>/dev/null | grep -q "^$1/" && running "${p#/proc/}" &&
      echo "${p#/proc/}"
  done
}
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# The first line of `fluxon stat` through SOCKET (a stat waits for a master
# that is being replaced: bounded here).
leader_line() { timeout 5 "$bin/fluxon" stat --socket "$1" 2>/dev/null | head -n 1; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; } # field NAME LINE

# ---- usage errors -----------------------------------------------------------------
for bad in 0 x -1 2x; do
  out=$("$bin/fluxon" up --dir "$dir/bad" --masters "$bad" 2>&1); rc=$?
  check "--masters $bad is a usage error (got $rc)" test $rc -eq 2
  check "--masters $bad: the message names the flag ($out)" grep -q -- "invalid --masters '$bad'" <<<"$out"
done
check "a refused --masters started nothing" test -z "$(procs_in "$dir/bad")"

# ---- --masters 1: today's cluster ------------------------------------------------------
one="$dir/one"
out=$("$bin/fluxon" up --dir "$one" --dram 64MB --masters 1); rc=$?
check "up --masters 1 exits 0 (got $rc)" test $rc -eq 0
sock=$(sed -n 1p <<<"$out")
check "it prints owner0's socket ($sock)" test "$sock" = "$one/owner0.sock"
check "then the master's URL ($out)" test "$(sed -n 2p <<<"$out")" = "http://$(cat "$one/master.http")/"
check "it writes master.pid and master.addr" test -s "$one/master.pid" -a -s "$one/master.addr"
check "and no etcd.pid, no master0.pid" test ! -e "$one/etcd.pid" -a ! -e "$one/master0.pid"
check "the owner dials the master's address" \
  grep -qx "master: $(cat "$one/master.addr")" "$one/owner0.yaml"
line=$(leader_line "$sock")
check "stat: term=0 and the pid of master.pid ($line)" \
  test "$line" = "master leader=$(cat "$one/master.addr") term=0 pid=$(cat "$one/master.pid")"
check "down --masters 1 cluster" "$bin/fluxon" down --dir "$one"
check "leaves no process" test -z "$(procs_in "$one")"

# ---- --masters 2 ----------------------------------------------------------------------
two="$dir/two"
out=$("$bin/fluxon" up --dir "$two" --dram 64MB --masters 2 2>&1); rc=$?
check "up --masters 2 exits 0 (got $rc: $out)" test $rc -eq 0
check "it prints owner0's socket ($out)" test "$(sed -n 1p <<<"$out")" = "$two/owner0.sock"
url=$(sed -n 2p <<<"$out")
check "then the URL of a master's HTTP ($url)" \
  bash -c "test '$url' = \"http://\$(cat '$two/master0.http')/\" -o '$url' = \"http://\$(cat '$two/master1.http')/\""
check "that master serves (leading)" \
  bash -c "curl -sf --max-time 5 '${url}metrics' | grep -qx 'fluxon_master_leading 1'"
sock=$two/owner0.sock
for f in etcd master0 master1 owner0; do check "$f.pid written" test -s "$two/$f.pid"; done
check "no master.pid beside master0/1.pid" test ! -e "$two/master.pid"
epid=$(cat "$two/etcd.pid" 2>/dev/null); m0=$(cat "$two/master0.pid" 2>/dev/null)
m1=$(cat "$two/master1.pid" 2>/dev/null); opid=$(cat "$two/owner0.pid" 2>/dev/null)
check "etcd ($epid) is running" running "${epid:-0}"
check "it is etcd, with its data in DIR/etcd.data" \
  bash -c "test \"\$(cat /proc/$epid/comm)\" = etcd && tr '\\0' '\\n' </proc/$epid/cmdline | grep -qx '$two/etcd.data'"
check "master0 ($m0) is running" running "${m0:-0}"
check "master1 ($m1) is running" running "${m1:-0}"
check "the masters are two processes" test "$m0" != "$m1"
check "the owner ($opid) is running" running "${opid:-0}"
etcd_port=$(sed -n 's|^master: etcd://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$two/owner0.yaml")
check "the owner finds the master through etcd ($(grep '^master:' "$two/owner0.yaml"))" \
  test -n "$etcd_port"
check "etcd listens on that port" listening "${etcd_port:-1}"
for m in master0 master1; do
  check "$m campaigns on that etcd" \
    bash -c "tr '\\0' '\\n' </proc/$(cat "$two/$m.pid")/cmdline | grep -qx 'http://127.0.0.1:$etcd_port'"
done

printf 'before failover\n' | "$bin/fluxon" put --socket "$sock" kept -
got=$("$bin/fluxon" get --socket "$sock" kept)
check "put and get through the etcd-located master (got '$got')" test "$got" = "before failover"
line=$(leader_line "$sock")
check "stat's first line has the format ($line)" \
  grep -Eq '^master leader=127\.0\.0\.1:[0-9]+ term=[0-9]+ pid=[0-9]+$' <<<"$line"
term1=$(field term "$line"); leader=$(field pid "$line")
check "the term is above 0 ($term1)" test "${term1:-0}" -gt 0
check "the leader is one of the two masters ($leader; $m0, $m1)" \
  test -n "$leader" -a \( "$leader" = "$m0" -o "$leader" = "$m1" \)
if [ "$leader" = "$m0" ]; then other=$m1 other_name=master1; else other=$m0 other_name=master0; fi
check "the leader's address is its port file's" \
  test "$(field leader "$line")" = "$(cat "$two/$([ "$leader" = "$m0" ] && echo master0 || echo master1).addr")"

out=$("$bin/fluxon" up --dir "$two" --masters 2 2>&1); rc=$?
check "up over a running standby cluster exits 1 (got $rc)" test $rc -eq 1
check "and says it is running ($out)" grep -q "already running" <<<"$out"

# The leader dies: the standby takes over within 10 s, the owner follows it.
kill -9 "$leader"
line2="" t0=$SECONDS
while [ $((SECONDS - t0)) -lt 10 ]; do
  line2=$(leader_line "$sock")
  [ "$(field pid "$line2")" = "$other" ] && break
  sleep 0.2
done
check "within 10 s stat names the other master, $other_name ($line2, $((SECONDS - t0)) s)" \
  test "$(field pid "$line2")" = "$other"
term2=$(field term "$line2")
check "with a higher term ($term1 -> ${term2:-none})" test "${term2:-0}" -gt "${term1:-0}"
check "and its own address" \
  test "$(field leader "$line2")" = "$(cat "$two/$other_name.addr")"
got=$("$bin/fluxon" get --socket "$sock" kept 2>&1)
check "the value put before the failover reads back (got '$got')" test "$got" = "before failover"
printf 'after failover\n' | "$bin/fluxon" put --socket "$sock" later -
got=$("$bin/fluxon" get --socket "$sock" later 2>&1)
check "a put after the failover works (got '$got')" test "$got" = "after failover"

out=$("$bin/fluxon" down --dir "$two" 2>&1); rc=$?
check "down exits 0 (got $rc: $out)" test $rc -eq 0
for p in "$epid" "$m0" "$m1" "$opid"; do check "pid $p stopped" eval "! running ${p:-0}"; done
check "no process of the cluster is left ($(procs_in "$two" | xargs))" test -z "$(procs_in "$two")"
check "nothing listens on etcd's port $etcd_port" eval "! listening ${etcd_port:-1}"
check "no pid file is left ($(ls "$two"))" bash -c "! ls '$two'/*.pid >/dev/null 2>&1"
check "no port file is left" bash -c "! ls '$two'/*.addr >/dev/null 2>&1"
check "etcd's data is removed" test ! -e "$two/etcd.data"
check "the logs stay" test -s "$two/etcd.log" -a -s "$two/master0.log" -a -s "$two/master1.log"

out=$("$bin/fluxon" up --dir "$two" --dram 64MB --masters 3 2>&1); rc=$?
check "up --masters 3 in the same directory again exits 0 (got $rc: $out)" test $rc -eq 0
check "three masters run" test "$(ls "$two"/master?.pid 2>/dev/null | wc -l)" -eq 3
printf 'again\n' | "$bin/fluxon" put --socket "$sock" again -
check "and serve (put/get)" test "$("$bin/fluxon" get --socket "$sock" again 2>&1)" = "again"
check "down again" "$bin/fluxon" down --dir "$two"
check "leaves no process" test -z "$(procs_in "$two")"

# ---- a failed up stops etcd and the masters --------------------------------------------
fdir="$dir/failing"; fbin="$dir/fakebin"
mkdir -p "$fbin"
ln -s "$bin/fluxon-master" "$fbin/fluxon-master"
printf '#!/bin/bash\necho "boom: this owner refuses to start" >&2\nexit 3\n' > "$fbin/fluxon-owner"
chmod +x "$fbin/fluxon-owner"
out=$("$bin/fluxon" up --dir "$fdir" --masters 2 --dram 64MB --bin-dir "$fbin" 2>&1); rc=$?
check "up --masters 2 with a failing owner exits 1 (got $rc)" test $rc -eq 1
check "it shows the owner's log ($out)" grep -q "boom: this owner refuses to start" <<<"$out"
sleep 0.1
check "no etcd or master is left ($(procs_in "$fdir" | xargs))" test -z "$(procs_in "$fdir")"
check "no pid file is left ($(ls "$fdir"))" bash -c "! ls '$fdir'/*.pid >/dev/null 2>&1"
check "no etcd data is left" test ! -e "$fdir/etcd.data"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
