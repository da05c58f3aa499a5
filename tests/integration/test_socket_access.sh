#!/usr/bin/env bash
# test_socket_access.sh - who may reach an owner's client socket (issue 19,
# local access). Started under umask 000, an owner's socket is still 0600 (the
# owner's user only), and a process of another uid cannot connect to it; with
# fluxonkv_spec.client_socket_mode "0660" and client_socket_group, that group
# (here nogroup, whose member is nobody) can; a mode that drops the owner's own
# rw bits and an unknown group are refused at startup with exit 2 naming the
# key. The owner also checks each peer's credentials (SO_PEERCRED) by the
# configured rule, so widening the file afterwards lets no one else in: with
# the default socket chmod'ed to 0666, nobody's connection is accepted by the
# kernel and closed by the owner at once (within 2 s, well before the 5 s
# handshake deadline), and logged with nobody's uid; with 0660 and the group,
# a process of that group as its primary group or only as a supplementary
# one is served, and one outside it is refused even after a chmod 0666.
# Needs root (to act as nobody through setpriv): exits 77 otherwise.
set -u
bin=$(cd "${1:?usage: test_socket_access.sh BUILD_DIR}" && pwd) || exit 2
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! getent group nogroup >/dev/null; then
  echo "skip: needs root, setpriv and the group nogroup"
  exit 77
fi
dir=$(mktemp -d /tmp/fx-sock-XXXXXX)
chmod 755 "$dir" # nobody must reach the sockets' directory to be refused by the socket alone
pass=0 fail=0
check() { # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $what"; fi
}
owner_pid=
cleanup() {
  if [ -n "$owner_pid" ]; then kill "$owner_pid" 2>/dev/null; wait "$owner_pid" 2>/dev/null; fi
  "$bin/fluxon" down --dir "$dir/c" >/dev/null 2>&1
  [ -n "${FX_TEST_KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
# Connects to the Unix socket $1 as nobody (uid and gid 65534, no other group).
as_nobody_connect() {
  (cd / && setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c \
    'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' "$1") 2>/dev/null
}
# as_uid_kept_open SOCKET SETPRIV-ARGS...: connects to SOCKET as uid 65534 with
# the given group arguments and succeeds when the owner neither closes nor
# answers the silent connection within 2 s (it was let in); fails when the
# connect is refused or the owner hangs up (it was kept out).
as_uid_kept_open() {
  local sock=$1; shift
  (cd / && setpriv --reuid=65534 "$@" /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(2)
try:
    sys.exit(1 if s.recv(1) == b"" else 2)
except socket.timeout:
    sys.exit(0)
except ConnectionResetError:
    sys.exit(1)' "$sock") 2>/dev/null
}

mkdir -m 755 "$dir/c"
sock=$( (umask 000 && "$bin/fluxon" up --dir "$dir/c" --dram 64MB) ) || { echo "FAIL: up"; exit 1; }
sock=${sock%%$'\n'*} # the socket; the master's URL follows
check "the default socket is 0600 under umask 000" test "$(stat -c %a "$sock")" = 600
not() { ! "$@"; }
check "another uid cannot connect to a default socket" not as_nobody_connect "$sock"
check "the owner's own user still can" bash -c "FLUXON_SOCKET='$sock' '$bin/fluxon' stat >/dev/null"
chmod 0666 "$sock"
check "the file widened to 0666 lets nobody connect" as_nobody_connect "$sock"
check "... but the owner closes nobody's connection at once (SO_PEERCRED)" \
  not as_uid_kept_open "$sock" --regid=65534 --clear-groups
check "... and logs the refusal with nobody's uid" \
  grep -q "client socket: refused a connection from uid 65534" "$dir/c/owner0.log"
check "the owner's own user is still served" bash -c "FLUXON_SOCKET='$sock' '$bin/fluxon' stat >/dev/null"
chmod 0600 "$sock"

master=$(sed -n 's/^master: //p' "$dir/c/owner0.yaml")
write_owner() { # write_owner FILE MODE GROUP
  printf '%s\n' "cluster_name: fluxon" "master: $master" "node_name: shared" \
    "data_listen: 127.0.0.1:0" "cluster_secret_file: $dir/c/cluster.secret" \
    "fluxonkv_spec:" "  memory_size: 64MB" \
    "  client_socket: $dir/shared.sock" "  client_socket_mode: \"$2\"" \
    "  client_socket_group: $3" > "$1"
}
write_owner "$dir/bad-mode.yaml" 0066 nogroup
out=$("$bin/fluxon-owner" --config "$dir/bad-mode.yaml" 2>&1); rc=$?
check "a mode without the owner's rw exits 2" test "$rc" = 2
check "... naming client_socket_mode" grep -q "fluxonkv_spec.client_socket_mode" <<<"$out"
write_owner "$dir/bad-group.yaml" 0660 no-such-group-fx
out=$("$bin/fluxon-owner" --config "$dir/bad-group.yaml" 2>&1); rc=$?
check "an unknown group exits 2" test "$rc" = 2
check "... naming client_socket_group" grep -q "fluxonkv_spec.client_socket_group" <<<"$out"

write_owner "$dir/shared.yaml" 0660 nogroup
(umask 000 && exec "$bin/fluxon-owner" --config "$dir/shared.yaml" 2>"$dir/shared.log") &
owner_pid=$!
for _ in $(seq 100); do [ -S "$dir/shared.sock" ] && FLUXON_SOCKET="$dir/shared.sock" \
  "$bin/fluxon" stat >/dev/null 2>&1 && break; sleep 0.1; done
check "client_socket_mode 0660 is applied" test "$(stat -c %a "$dir/shared.sock")" = 660
check "client_socket_group is applied" test "$(stat -c %G "$dir/shared.sock")" = nogroup
check "a member of the group can connect" as_nobody_connect "$dir/shared.sock"
check "... and is let in by the owner" as_uid_kept_open "$dir/shared.sock" --regid=65534 --clear-groups
check "a process with the group only as a supplementary group is let in" \
  as_uid_kept_open "$dir/shared.sock" --regid=100 --groups=65534
chmod 0666 "$dir/shared.sock"
check "a process outside the group is kept out, even with the file at 0666" \
  not as_uid_kept_open "$dir/shared.sock" --regid=100 --clear-groups
chmod 0660 "$dir/shared.sock"
check "and the owner serves it" bash -c "echo v | FLUXON_SOCKET='$dir/shared.sock' '$bin/fluxon' put k - &&
  test \"\$(FLUXON_SOCKET='$dir/shared.sock' '$bin/fluxon' get k)\" = v"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
