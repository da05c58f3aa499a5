#!/usr/bin/env bash
# test_cluster_auth.sh - only owners that know the cluster secret become
# members (issue 19, authentication). A master with --secret-file takes an
# owner with the same secret; an owner with another secret, or none, exits 2
# saying "authentication failed", is never listed by `fluxon stat` and so
# receives no put; an owner with a secret facing a master without one exits 2
# too; a connection that stops in the middle of the handshake is closed at
# the handshake deadline and receives nothing. Speaking the wire by hand: a Register sent without the handshake is
# answered AuthenticationFailed (-13), a proof made with another key is
# refused, and a peer that proved the name "alice" cannot register as
# "mallory". Nothing listens beyond loopback without a secret: a master on
# 0.0.0.0 and an owner with data_listen 0.0.0.0 exit 2 naming the setting;
# a secret file open to others is refused. A member reports no more SSD than
# it registered. `fluxon up` makes DIR/cluster.secret
# (0600) and its cluster works.
set -u
bin=$(cd "${1:?usage: test_cluster_auth.sh BUILD_DIR}" && pwd) || exit 2
here=$(cd "$(dirname "$0")" && pwd)
py=${FX_PYTHON3:-python3}
dir=$(mktemp -d /tmp/fx-auth-XXXXXX)
pass=0 fail=0
check() { # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $what"; fi
}
not() { ! "$@"; }
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  "$bin/fluxon" down --dir "$dir/up" >/dev/null 2>&1
  [ -n "${FX_TEST_KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT

make_secret() { # make_secret FILE
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$1" && echo >> "$1")
}
wait_file() { # wait_file PATH: up to 10 s
  for _ in $(seq 100); do [ -s "$1" ] || [ -S "$1" ] && return 0; sleep 0.1; done
  return 1
}
start_master() { # start_master NAME ARGS...: sets master_addr
  local name=$1; shift
  "$bin/fluxon-master" --listen 127.0.0.1:0 --port-file "$dir/$name.port" --log-level info \
    "$@" 2>"$dir/$name.log" &
  pids+=($!)
  wait_file "$dir/$name.port" || { echo "FAIL: master $name did not start"; cat "$dir/$name.log"; exit 1; }
  master_addr=$(cat "$dir/$name.port")
}
owner_yaml() { # owner_yaml NAME MASTER SECRET_FILE|"" [DATA_LISTEN]
  printf '%s\n' "cluster_name: fluxon" "master: $2" "node_name: $1" \
    "data_listen: ${4:-127.0.0.1:0}" "log_level: info"
  [ -n "$3" ] && echo "cluster_secret_file: $3"
  printf '%s\n' "fluxonkv_spec:" "  memory_size: 32MB" "  client_socket: $dir/$1.sock"
}

make_secret "$dir/s1"
make_secret "$dir/s2"
start_master m1 --secret-file "$dir/s1" --handshake-timeout 1s
m1=$master_addr

owner_yaml good "$m1" "$dir/s1" > "$dir/good.yaml"
"$bin/fluxon-owner" --config "$dir/good.yaml" 2>"$dir/good.log" &
pids+=($!)
check "an owner with the cluster secret starts" wait_file "$dir/good.sock"
export FLUXON_SOCKET=$dir/good.sock
head -c 100000 /dev/urandom > "$dir/v"
check "put through the member" "$bin/fluxon" put k1 "$dir/v"
check "get through the member, byte for byte" bash -c "'$bin/fluxon' get k1 | cmp -s - '$dir/v'"

owner_yaml wrong "$m1" "$dir/s2" > "$dir/wrong.yaml"
out=$(timeout 20 "$bin/fluxon-owner" --config "$dir/wrong.yaml" 2>&1); rc=$?
check "an owner with another secret exits 2 (got $rc)" test $rc = 2
check "... saying authentication failed" grep -q "authentication failed" <<<"$out"
check "... because the master could not prove our secret" \
  grep -q "does not know the cluster secret" <<<"$out"
owner_yaml nosecret "$m1" "" > "$dir/nosecret.yaml"
out=$(timeout 20 "$bin/fluxon-owner" --config "$dir/nosecret.yaml" 2>&1); rc=$?
check "an owner without the secret exits 2 (got $rc)" test $rc = 2
check "... saying authentication failed" grep -q "authentication failed" <<<"$out"
check "... and AuthenticationFailed from the master" grep -q "cluster secret" <<<"$out"
for i in 1 2 3 4 5 6; do "$bin/fluxon" put "after$i" "$dir/v" || echo "FAIL: put after$i"; done
check "fluxon stat lists the member only" test "$("$bin/fluxon" stat | grep -vc '^master ')" = 1
check "... which is 'good'" bash -c "'$bin/fluxon' stat | grep -q '^good '"
check "the master logged the refusals" grep -q "authentication failed" "$dir/m1.log"

start_master m2
out=$(timeout 20 "$bin/fluxon-owner" --config <(owner_yaml lost "$master_addr" "$dir/s1") 2>&1); rc=$?
check "an owner with a secret facing a master without one exits 2 (got $rc)" test $rc = 2
check "... saying authentication failed" grep -q "authentication failed" <<<"$out"
check "... because the master uses no secret" grep -q "uses no cluster secret" <<<"$out"

host=${m1%:*} port=${m1##*:}
check "a Register without the handshake is answered AuthenticationFailed" \
  test "$("$py" "$here/auth_raw_client.py" frame-first "$host" "$port" "$dir/s1")" = -13
check "a proof made with another key is refused" \
  test "$("$py" "$here/auth_raw_client.py" wrong-key "$host" "$port" "$dir/s1")" = refused
check "a peer that proved 'alice' cannot register as 'mallory'" \
  test "$("$py" "$here/auth_raw_client.py" other-name "$host" "$port" "$dir/s1")" = -13
check "... and registers as 'alice'" \
  test "$("$py" "$here/auth_raw_client.py" same-name "$host" "$port" "$dir/s1")" = 0
read -r secs sent < <("$py" "$here/auth_raw_client.py" stall "$host" "$port" "$dir/s1" 2>/dev/null)
check "a connection that stops mid-handshake is closed at the deadline (${secs}s)" \
  awk -v s="$secs" 'BEGIN { exit !(s >= 0.8 && s < 5) }'
check "... having received nothing ($sent bytes)" test "$sent" = 0
# A master at its connection cap hangs up on a joining owner before the
# handshake: that is no refusal, the owner retries and joins once a slot frees.
start_master m3 --secret-file "$dir/s1" --max-connections 1 --handshake-timeout 20s
m3_host=${master_addr%:*} m3_port=${master_addr##*:}
"$py" "$here/auth_raw_client.py" stall "$m3_host" "$m3_port" "$dir/s1" >/dev/null \
  2>"$dir/staller.err" &
staller=$!
for _ in $(seq 100); do grep -q connected "$dir/staller.err" && break; sleep 0.1; done
owner_yaml patient "$master_addr" "$dir/s1" > "$dir/patient.yaml"
"$bin/fluxon-owner" --config "$dir/patient.yaml" 2>"$dir/patient.log" &
pids+=($!)
for _ in $(seq 150); do
  grep -q "closed the connection during the handshake" "$dir/patient.log" && break; sleep 0.1
done
check "an owner turned away by a full master hears a hang-up, not a refusal" \
  grep -q "closed the connection during the handshake" "$dir/patient.log"
kill "$staller" 2>/dev/null; wait "$staller" 2>/dev/null # frees the master's one slot
check "... retries, and joins once a slot is free" wait_file "$dir/patient.sock"

# A "master" that accepts and never speaks: the owner's handshake gives up at
# its deadline and the owner retries, instead of waiting forever.
"$py" -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
conns = []
end = time.time() + 12
while time.time() < end:
    s.settimeout(max(0.1, end - time.time()))
    try:
        conns.append(s.accept()[0])
    except socket.timeout:
        pass
' > "$dir/mute.port" &
mute=$!
wait_file "$dir/mute.port"
owner_yaml waiting "127.0.0.1:$(cat "$dir/mute.port")" "$dir/s1" > "$dir/waiting.yaml"
"$bin/fluxon-owner" --config "$dir/waiting.yaml" 2>"$dir/waiting.log" &
waiting=$!
for _ in $(seq 80); do grep -q "did not answer the handshake" "$dir/waiting.log" && break; sleep 0.1; done
check "a master that never answers the handshake is given up at the deadline" \
  grep -q "did not answer the handshake within" "$dir/waiting.log"
check "... and the owner is still trying, not exited" kill -0 "$waiting"
kill "$waiting" "$mute" 2>/dev/null; wait "$waiting" "$mute" 2>/dev/null

"$py" "$here/auth_raw_client.py" claims "$host" "$port" "$dir/s1" > "$dir/claims.out" &
claimer=$!
for _ in $(seq 50); do grep -q sent "$dir/claims.out" && break; sleep 0.1; done
line=$("$bin/fluxon" stat | grep '^claimer ')
check "a heartbeat claiming SSD it did not register is not believed ($line)" \
  grep -q ' ssd_capacity=0 ' <<<"$line"
wait "$claimer"

out=$(timeout 10 "$bin/fluxon-master" --listen 0.0.0.0:0 --advertise 127.0.0.1:0 2>&1); rc=$?
check "a master on 0.0.0.0 without a secret exits 2 (got $rc)" test $rc = 2
check "... naming --secret-file" grep -q -- "--secret-file" <<<"$out"
cp "$dir/s1" "$dir/open"; chmod 644 "$dir/open"
out=$(timeout 10 "$bin/fluxon-master" --listen 127.0.0.1:0 --secret-file "$dir/open" 2>&1); rc=$?
check "a secret file open to others exits 2 (got $rc)" test $rc = 2
check "... saying chmod 600" grep -q "chmod 600" <<<"$out"
out=$(timeout 10 "$bin/fluxon-owner" --config <(owner_yaml wide "$m1" "" 0.0.0.0:0) 2>&1); rc=$?
check "an owner with data_listen 0.0.0.0 and no secret exits 2 (got $rc)" test $rc = 2
check "... naming cluster_secret_file" grep -q "cluster_secret_file" <<<"$out"

unset FLUXON_SOCKET
sock=$("$bin/fluxon" up --dir "$dir/up" --dram 32MB) || echo "FAIL: fluxon up"
sock=${sock%%$'\n'*} # the socket; the master's URL follows
check "fluxon up made DIR/cluster.secret 0600" test "$(stat -c %a "$dir/up/cluster.secret")" = 600
check "... and its owners prove it" grep -q "cluster_secret_file: .*cluster.secret" "$dir/up/owner0.yaml"
check "put and get on the up cluster" bash -c \
  "FLUXON_SOCKET='$sock' '$bin/fluxon' put k '$dir/v' && FLUXON_SOCKET='$sock' '$bin/fluxon' get k | cmp -s - '$dir/v'"

echo "test_cluster_auth: $pass passed, $fail failed"
[ "$fail" = 0 ]
