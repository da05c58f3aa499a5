# lib.sh - what the install tests share (sourced by test_install.sh and
# test_pip.sh): checks and their tally, the temporary folder and its cleanup
# (clusters stopped by `fluxon down`, daemons by pid, logs' tails shown on a
# failure), waiting and the daemons of a folder.
#
# A test sets $tmp with install_tmp, registers what to stop with on_exit_down
# (CLI DIR) and on_exit_kill (PID), adds log files to $logs, and ends with
# install_finish.
pass=0 fail=0 logs="" downs=() kills=()

check() { # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $what"; fi
}

# The sanitizer builds configure nothing these tests could use (they build
# their own tree without sanitizers): they skip there.
install_skip_sanitized() {
  if [ -n "${FX_TEST_SANITIZED:-}" ]; then
    echo "skip: the install tests build their own unsanitized tree; not under FX_SANITIZE/FX_TSAN"
    exit 77
  fi
}

install_tmp() { # install_tmp NAME: $tmp = a new /tmp/fx-test-NAME-XXXXXX
  tmp=$(mktemp -d "/tmp/fx-test-$1-XXXXXX") || exit 2
  trap install_cleanup EXIT
}

on_exit_down() { downs+=("$1|$2"); } # on_exit_down FLUXON_CLI CLUSTER_DIR
on_exit_kill() { kills+=("$1"); }    # on_exit_kill PID

install_cleanup() {
  local d p
  for d in "${downs[@]}"; do "${d%%|*}" down --dir "${d#*|}" >/dev/null 2>&1; done
  for p in "${kills[@]}"; do kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  if [ "$fail" -ne 0 ]; then
    for p in $logs; do
      [ -s "$p" ] && { echo "--- tail of $p"; tail -n 30 "$p"; }
    done
  fi
  if [ -n "${FX_TEST_KEEP:-}" ] && [ "$fail" -ne 0 ]; then
    echo "kept $tmp"
  else
    rm -rf "$tmp"
  fi
}

install_finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}

. "$(dirname "${BASH_SOURCE[0]}")/../util/daemons.sh" # running, daemons_in

wait_for() { # wait_for SECONDS COMMAND...: 0 once COMMAND succeeds, 1 at the deadline
  local end=$((SECONDS + $1)); shift
  until "$@"; do
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 0.1
  done
}

# make without what a calling make handed down (jobserver, its variables).
sub_make() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory "$@"; }
