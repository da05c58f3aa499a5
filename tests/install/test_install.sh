#!/usr/bin/env bash
# test_install.sh - `make install` into a DESTDIR and `make uninstall`, as a
# packager runs them (PREFIX=/usr, a build folder of its own under T=/tmp/fx-test-install-*):
#   - make install puts under T/root: fluxon, fluxon-master, fluxon-owner;
#     libfluxon.so.VERSION with the soname libfluxon.so.MAJOR (and the .so
#     link) exporting nothing but fx_*; include/fluxon/fluxon.h; fluxon.pc of
#     the project's version; the Python package (every .py of python/fluxon and
#     the extension); fluxon-master.service and fluxon-owner@.service; the
#     example configs in /etc/fluxon, next to a config already there, left as it was;
#   - a C program built with nothing but `pkg-config --cflags --libs fluxon`
#     (PKG_CONFIG_LIBDIR and PKG_CONFIG_SYSROOT_DIR into T/root) puts, gets and
#     deletes on a cluster that the installed `fluxon up` started from the
#     installed daemons (their /proc/PID/exe); the installed CLI, which finds
#     the installed libfluxon (ldd), and the installed Python package, imported
#     outside the source tree, read the value it left;
#   - the units start the installed binaries on /etc/fluxon/master.yaml and
#     /etc/fluxon/owner-%i.yaml, and systemd-analyze verify (where it exists)
#     has nothing to say about them;
#   - the examples name every key of the daemons' config tables; the daemons
#     started as the units start them, on copies of the examples (addresses and
#     paths filled in), serve a put and a get, and so they do with every
#     optional key of the examples set (the SSD tier and the secret included);
#   - make uninstall removes all it installed (Python's byte code too) and
#     leaves the config that was there, and with it /etc/fluxon only.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${1:?usage: test_install.sh SOURCE_DIR}" && pwd) || exit 2
. "$here/lib.sh"
install_skip_sanitized
for tool in make pkg-config cc readelf ldd nm; do
  command -v "$tool" >/dev/null || { echo "skip: no $tool"; exit 77; }
done
install_tmp install
root=$tmp/root build=$tmp/build
version=$(sed -n 's/^project(fluxon VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
major=${version%%.*}
logs="$tmp/install.log $tmp/uninstall.log $tmp/cluster/master.log $tmp/cluster/owner0.log
      $tmp/unit-master.log $tmp/unit-owner.log $tmp/all-master.log $tmp/all-owner.log"
check "the project has a version ($version)" test -n "$version"

# A config of the admin's, there before the install.
mkdir -p "$root/etc/fluxon"
echo "# the admin's own" > "$root/etc/fluxon/owner-0.yaml"

# Never outside T: the recipes must hand DESTDIR on before anything runs.
dry=$(sub_make -C "$src" -n install uninstall BUILD="$build" PREFIX=/usr DESTDIR="$root")
if ! grep -q "DESTDIR=\"$root\" cmake --install" <<<"$dry" ||
   ! grep -q "DESTDIR=\"$root\" cmake .*uninstall.cmake" <<<"$dry"; then
  echo "FAIL: make install / uninstall do not pass DESTDIR on; not running them"
  exit 1
fi
sub_make -C "$src" install BUILD="$build" PREFIX=/usr DESTDIR="$root" >"$tmp/install.log" 2>&1
rc=$?
check "make install PREFIX=/usr DESTDIR=... exits 0 (got $rc)" test $rc -eq 0
[ $rc -eq 0 ] || exit 1

# ---- what is where ----------------------------------------------------------
lib=$(find "$root" -name "libfluxon.so.$version")
libdir=$(dirname "$lib")
check "libfluxon.so.$version is under /usr/lib ($lib)" bash -c "[[ '$lib' == '$root'/usr/lib/* ]]"
for b in fluxon fluxon-master fluxon-owner; do
  check "bin/$b is installed" test -x "$root/usr/bin/$b"
done
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
check "the soname is libfluxon.so.$major ($soname)" test "$soname" = "libfluxon.so.$major"
check "libfluxon.so.$major links to libfluxon.so.$version" \
  test "$(readlink "$libdir/libfluxon.so.$major")" = "libfluxon.so.$version"
check "libfluxon.so links to libfluxon.so.$major" \
  test "$(readlink "$libdir/libfluxon.so")" = "libfluxon.so.$major"
exported=$(nm -D --defined-only "$lib" | awk '{ print $3 }' | grep -v '^fx_' | grep -v '^$')
check "libfluxon exports only fx_* (version script; others: ${exported:-none})" test -z "$exported"
check "libfluxon exports fx_connect" bash -c "nm -D --defined-only '$lib' | grep -qw fx_connect"
check "include/fluxon/fluxon.h is installed" cmp -s "$src/include/fluxon/fluxon.h" "$root/usr/include/fluxon/fluxon.h"
check "fluxon-master.service is installed" test -f "$root/usr/lib/systemd/system/fluxon-master.service"
check "fluxon-owner@.service is installed" test -f "$root/usr/lib/systemd/system/fluxon-owner@.service"
check "master.yaml.example is in /etc/fluxon" test -f "$root/etc/fluxon/master.yaml.example"
check "owner.yaml.example is in /etc/fluxon" test -f "$root/etc/fluxon/owner.yaml.example"
check "the admin's owner-0.yaml is left as it was" \
  test "$(cat "$root/etc/fluxon/owner-0.yaml")" = "# the admin's own"
check "no real config comes with the install" test ! -e "$root/etc/fluxon/master.yaml"
pydir=$root/usr/lib/python3/dist-packages/fluxon
want=$(cd "$src/python" && find fluxon -name '*.py' -not -path '*/__pycache__/*' | sort)
have=$(cd "$pydir/.." && find fluxon -name '*.py' -not -path '*/__pycache__/*' | sort)
check "every .py of python/fluxon is installed ($(wc -l <<<"$want") files)" test "$want" = "$have"
found() { realpath "$(ldd "$1" | sed -n "s/.*libfluxon.so.$major => \([^ ]*\).*/\1/p")" 2>/dev/null; }
check "the CLI finds the installed libfluxon ($(found "$root/usr/bin/fluxon"))" \
  test "$(found "$root/usr/bin/fluxon")" = "$lib"
ext=$(ls "$pydir"/_native*.so 2>/dev/null)
check "the extension is installed ($ext)" test -f "$ext"
check "the extension finds the installed libfluxon ($(found "$ext"))" test "$(found "$ext")" = "$lib"

# ---- pkg-config and a C program ---------------------------------------------
export PKG_CONFIG_LIBDIR=$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
unset PKG_CONFIG_PATH
check "pkg-config knows fluxon $version" test "$(pkg-config --modversion fluxon)" = "$version"
flags=$(pkg-config --cflags --libs fluxon)
check "its flags point into the install ($flags)" \
  bash -c "grep -q -- '-I$root/usr/include' <<<'$flags' && grep -q -- '-L$libdir ' <<<'$flags '"
cat >"$tmp/client.c" <<'EOF'
/* A libfluxon client built with pkg-config's flags only: put, get, delete,
 * a miss, then one value left for the others to read. */
#include <fluxon/fluxon.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what, int rc)
{
    fprintf(stderr, "%s: %s\n", what, fx_strerror(rc));
    return 1;
}

int main(int argc, char **argv)
{
    static const char val[] = "installed, put from C";
    int err = 0;
    fx_client *c = fx_connect(argc > 1 ? argv[1] : NULL, &err);
    if (!c)
        return fail("fx_connect", err);
    int rc = fx_put(c, "c-key", 5, val, sizeof val - 1);
    if (rc != 0)
        return fail("fx_put", rc);
    fx_holder *h;
    if ((rc = fx_get(c, "c-key", 5, &h)) != 0)
        return fail("fx_get", rc);
    int same = fx_holder_len(h) == sizeof val - 1 && memcmp(fx_holder_data(h), val, sizeof val - 1) == 0;
    fx_holder_release(h);
    if (!same)
        return fail("fx_get: other bytes", 0);
    if ((rc = fx_delete(c, "c-key", 5)) != 0)
        return fail("fx_delete", rc);
    if ((rc = fx_get(c, "c-key", 5, &h)) != FX_ENOTFOUND)
        return fail("fx_get after fx_delete", rc);
    if ((rc = fx_put(c, "from-c", 6, val, sizeof val - 1)) != 0)
        return fail("fx_put from-c", rc);
    fx_close(c);
    puts("ok");
    return 0;
}
EOF
# shellcheck disable=SC2086 # the flags are words
cc -Wall -Werror -o "$tmp/client" "$tmp/client.c" $flags 2>"$tmp/cc.log"
check "the C program builds with pkg-config's flags alone ($(head -c 300 "$tmp/cc.log"))" test -x "$tmp/client"

# ---- a cluster of the installed binaries ------------------------------------
cli=$root/usr/bin/fluxon
sock=$tmp/cluster/owner0.sock
on_exit_down "$cli" "$tmp/cluster"
out=$("$cli" up --dir "$tmp/cluster" --dram 64MB 2>&1)
check "the installed fluxon up prints the socket ($out)" grep -qx "$sock" <<<"$out"
exe_of() { readlink "/proc/$(cat "$1" 2>/dev/null)/exe"; }
check "the master is the installed one ($(exe_of "$tmp/cluster/master.pid"))" \
  test "$(exe_of "$tmp/cluster/master.pid")" = "$root/usr/bin/fluxon-master"
check "the owner is the installed one ($(exe_of "$tmp/cluster/owner0.pid"))" \
  test "$(exe_of "$tmp/cluster/owner0.pid")" = "$root/usr/bin/fluxon-owner"
got=$(LD_LIBRARY_PATH=$libdir "$tmp/client" "$sock" 2>&1)
check "the C program puts, gets and deletes ($got)" test "$got" = "ok"
got=$("$cli" get --socket "$sock" from-c 2>&1)
check "the installed CLI reads what it left ($got)" test "$got" = "installed, put from C"
# Outside the source tree, with byte code written (the uninstall must take it too).
got=$(cd "$tmp" && env -u PYTHONDONTWRITEBYTECODE PYTHONPATH="$pydir/.." /usr/bin/python3 -c "
import fluxon, sys
assert fluxon.__file__.startswith('$pydir/'), fluxon.__file__
import fluxon.tensor
with fluxon.Client('$sock') as c:
    h = c.get('from-c'); sys.stdout.write(h.access().decode()); h.release()
" 2>&1)
check "the installed Python package reads it too ($got)" test "$got" = "installed, put from C"
check "and Python wrote its byte code there" test -d "$pydir/__pycache__"
"$cli" down --dir "$tmp/cluster" >/dev/null 2>&1
check "the installed fluxon down stops it" test -z "$(daemons_in "$tmp/cluster")"

# ---- the units --------------------------------------------------------------
units=$root/usr/lib/systemd/system
exec_of() { sed -n 's/^ExecStart=//p' "$units/$1"; }
check "fluxon-master.service starts the installed master on /etc/fluxon/master.yaml ($(exec_of fluxon-master.service))" \
  test "$(exec_of fluxon-master.service)" = "/usr/bin/fluxon-master --config /etc/fluxon/master.yaml"
check "fluxon-owner@.service starts owner %i on /etc/fluxon/owner-%i.yaml ($(exec_of fluxon-owner@.service))" \
  test "$(exec_of fluxon-owner@.service)" = "/usr/bin/fluxon-owner --config /etc/fluxon/owner-%i.yaml"
check "the units restart on failure" \
  bash -c "grep -qx Restart=on-failure '$units/fluxon-master.service' && grep -qx Restart=on-failure '$units/fluxon-owner@.service'"
check "the owner's socket folder /run/fluxon is its RuntimeDirectory" \
  grep -qx RuntimeDirectory=fluxon "$units/fluxon-owner@.service"
check "the owner example puts its socket there" \
  grep -q '^  client_socket: /run/fluxon/owner-0.sock$' "$root/etc/fluxon/owner.yaml.example"
if command -v systemd-analyze >/dev/null; then
  # The DESTDIR's binaries in place of /usr/bin's, which are not installed.
  mkdir -p "$tmp/units"
  for u in fluxon-master.service fluxon-owner@.service; do
    sed "s#^ExecStart=/usr/bin/#ExecStart=$root/usr/bin/#" "$units/$u" >"$tmp/units/$u"
  done
  said=$(systemd-analyze verify --man=no "$tmp/units/fluxon-master.service" \
           "$tmp/units/fluxon-owner@.service" 2>&1); rc=$?
  check "systemd-analyze verify passes the units (rc $rc: $said)" test $rc -eq 0 -a -z "$said"
else
  echo "skip: no systemd-analyze, the units are not verified"
fi

# ---- the example configs ------------------------------------------------------
# Every key of the daemons' config tables is in its example (set or "#key:").
keys_of() { grep -o '{"[a-z_.]*", CK_' "$1" | sed 's/{"\(.*\)", CK_/\1/; s/.*\.//'; }
missing=""
for k in $(keys_of "$src/src/owner/owner_config.c"); do
  grep -Eq "^ *#?$k:" "$root/etc/fluxon/owner.yaml.example" || missing="$missing owner:$k"
done
for k in $(keys_of "$src/src/master/master_config.c"); do
  grep -Eq "^ *#?$k:" "$root/etc/fluxon/master.yaml.example" || missing="$missing master:$k"
done
check "the examples document every key (missing:${missing:- none})" test -z "$missing"

# Starts both daemons as the units do, on CONFDIR/master.yaml and
# CONFDIR/owner-0.yaml, then a put and a get through the owner.
serve_as_units() { # serve_as_units NAME CONFDIR [STAT_PATTERN]
  local name=$1 conf=$2 want_stat=${3:-live=1} m o mpid opid addr got
  read -r -a m <<<"$(exec_of fluxon-master.service | sed "s#^/usr/bin/#$root/usr/bin/#; s#/etc/fluxon#$conf#g")"
  read -r -a o <<<"$(exec_of fluxon-owner@.service | sed "s#^/usr/bin/#$root/usr/bin/#; s#/etc/fluxon#$conf#g; s#%i#0#g")"
  "${m[@]}" --port-file "$tmp/$name.port" >"$tmp/$name-master.log" 2>&1 &
  mpid=$!; on_exit_kill $mpid
  wait_for 10 test -s "$tmp/$name.port"
  addr=$(cat "$tmp/$name.port" 2>/dev/null)
  check "$name: the master starts on its config ($addr)" test -n "$addr"
  sed -i "s#^master: .*#master: $addr#" "$conf/owner-0.yaml"
  "${o[@]}" >"$tmp/$name-owner.log" 2>&1 &
  opid=$!; on_exit_kill $opid
  wait_for 15 bash -c "'$cli' stat --socket '$conf/owner-0.sock' >/dev/null 2>&1 || ! kill -0 $opid 2>/dev/null"
  echo "served as the units start it ($name)" | "$cli" put --socket "$conf/owner-0.sock" units-key - 2>&1
  got=$("$cli" get --socket "$conf/owner-0.sock" units-key 2>&1)
  check "$name: the owner serves a put and a get ($got)" test "$got" = "served as the units start it ($name)"
  # What stat must show (capacities come with the next heartbeat).
  wait_for 10 bash -c "'$cli' stat --socket '$conf/owner-0.sock' >'$tmp/$name.stat' 2>&1 &&
                       grep -q -- '$want_stat' '$tmp/$name.stat'"
  kill -TERM $opid; wait $opid; rc=$?
  check "$name: the owner stops on SIGTERM (rc $rc)" test $rc -eq 0
  kill -TERM $mpid; wait $mpid; rc=$?
  check "$name: the master stops on SIGTERM (rc $rc)" test $rc -eq 0
  kills=()
}
fill_owner() { # fill_owner CONFDIR: this test's socket and a small segment
  sed -i "s#^  client_socket: .*#  client_socket: $1/owner-0.sock#; s#^  memory_size: .*#  memory_size: 64MB#" \
    "$1/owner-0.yaml"
}
conf=$tmp/unit
mkdir -p "$conf"
sed 's#^listen: .*#listen: 127.0.0.1:0#' "$root/etc/fluxon/master.yaml.example" >"$conf/master.yaml"
cp "$root/etc/fluxon/owner.yaml.example" "$conf/owner-0.yaml"
fill_owner "$conf"
serve_as_units unit "$conf"

# Every "#key: value" set, with this machine's values where the example has
# another's. etcd: stays out: it needs an etcd to campaign on.
conf=$tmp/all
mkdir -p "$conf"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$conf/cluster.secret")
uncomment() { sed -E 's/^( *)#([a-z_]+:)/\1\2/' "$1"; }
uncomment "$root/etc/fluxon/master.yaml.example" | sed "/^etcd:/d
  s#^listen: .*#listen: 127.0.0.1:0#; s#^advertise: .*#advertise: 127.0.0.1:0#
  s#^http: .*#http: 127.0.0.1:0#; s#^secret_file: .*#secret_file: $conf/cluster.secret#" >"$conf/master.yaml"
uncomment "$root/etc/fluxon/owner.yaml.example" | sed "
  s#^data_advertise: .*#data_advertise: 127.0.0.1:0#
  s#^cluster_secret_file: .*#cluster_secret_file: $conf/cluster.secret#
  s#^  client_socket_group: .*#  client_socket_group: $(id -gn)#
  s#^  large_file_paths: .*#  large_file_paths: [$conf/ssd0]#
  s#^  large_limit_size: .*#  large_limit_size: [\"64MB\"]#" >"$conf/owner-0.yaml"
fill_owner "$conf"
check "every optional key is set (none commented)" \
  test -z "$(grep -E '^ *#[a-z_]+:' "$conf/master.yaml" "$conf/owner-0.yaml")"
serve_as_units all "$conf" " ssd_capacity=67108864 "
check "all: the owner had its SSD tier of large_limit_size ($(grep -o 'ssd_capacity=[^ ]*' "$tmp/all.stat"))" \
  grep -q ' ssd_capacity=67108864 ' "$tmp/all.stat"

# ---- uninstall --------------------------------------------------------------
sub_make -C "$src" uninstall BUILD="$build" DESTDIR="$root" >"$tmp/uninstall.log" 2>&1
rc=$?
check "make uninstall exits 0 (got $rc)" test $rc -eq 0
left=$(cd "$root" && find . ! -type d | sort)
check "nothing installed is left but the admin's config ($(tr '\n' ' ' <<<"$left"))" \
  test "$left" = "./etc/fluxon/owner-0.yaml"
check "the admin's config is as it was" test "$(cat "$root/etc/fluxon/owner-0.yaml")" = "# the admin's own"
dirs=$(cd "$root" && find . -type d -path '*fluxon*' | sort)
check "of fluxon's folders only /etc/fluxon stays, holding it ($(tr '\n' ' ' <<<"$dirs"))" \
  test "$dirs" = "./etc/fluxon"
check "no daemon is left running" test -z "$(daemons_in "$tmp")"
install_finish
