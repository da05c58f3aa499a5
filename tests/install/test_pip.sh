#!/usr/bin/env bash
# test_pip.sh - `pip install .` of the repository into a venv, offline and
# without build isolation (Debian's python3-venv, -pip, -setuptools, -wheel),
# as a user runs it, in T=/tmp/fx-test-pip-*:
#   - python3 -m venv --system-site-packages T/venv, then
#     T/venv/bin/python -m pip install --no-build-isolation --no-index REPO
#     exits 0 and writes nothing into the source tree (no egg-info, no
#     setuptools build folders, nothing in build/);
#   - from T (outside the source tree, PYTHONPATH unset) `import fluxon`
#     loads the venv's package: fluxon.__file__ and fluxon._native.__file__ in
#     the venv, every .py of python/fluxon there, libfluxon.so.MAJOR bundled
#     beside the extension, which finds it there ($ORIGIN, no path into the
#     temporary build) and nowhere else;
#   - with it, put, get (MemHolder: memoryview, access), delete and a
#     KeyNotFound against a cluster of this build's `fluxon up`; and the value
#     its put left reads back through this build's CLI;
#   - pip show names the project's version; pip uninstall removes every file
#     (the bundled library too).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${1:?usage: test_pip.sh SOURCE_DIR BUILD_DIR}" && pwd) || exit 2
bin=$(cd "${2:?usage: test_pip.sh SOURCE_DIR BUILD_DIR}" && pwd) || exit 2
. "$here/lib.sh"
install_skip_sanitized
py=/usr/bin/python3
if ! "$py" -c 'import venv, ensurepip, setuptools, wheel, pip' 2>/dev/null; then
  echo "skip: $py lacks venv, ensurepip, setuptools, wheel or pip (scripts/deps.sh installs them)"
  exit 77
fi
install_tmp pip
venv=$tmp/venv
logs="$tmp/pip.log $tmp/cluster/master.log $tmp/cluster/owner0.log"
version=$(sed -n 's/^project(fluxon VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
major=${version%%.*}

# What pip might leave in the tree: egg-info, setuptools' folders (in build/ too).
tree_litter() {
  find "$src" -maxdepth 3 \( -name '*.egg-info' -o -path "$src/build/lib*" -o -path "$src/build/temp*" \
       -o -path "$src/build/bdist*" -o -path "$src/python/build" -o -path "$src/dist" \) -print 2>/dev/null | sort
}
litter_before=$(tree_litter)

"$py" -m venv --system-site-packages "$venv"
check "the venv is made" test -x "$venv/bin/python"
(cd "$tmp" && env -u PYTHONPATH -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null "$venv/bin/python" -m pip install \
   --no-build-isolation --no-index --no-cache-dir "$src") >"$tmp/pip.log" 2>&1
rc=$?
check "pip install --no-build-isolation --no-index REPO exits 0 (got $rc)" test $rc -eq 0
[ $rc -eq 0 ] || exit 1
check "pip wrote nothing into the source tree ($(tree_litter | tr '\n' ' '))" test "$(tree_litter)" = "$litter_before"

# ---- the package, from outside the tree ---------------------------------------
vpy() { (cd "$tmp" && env -u PYTHONPATH "$venv/bin/python" "$@"); }
where=$(vpy -c 'import fluxon, fluxon._native as n; print(fluxon.__file__); print(n.__file__)' 2>&1)
pkg=$(dirname "$(head -n 1 <<<"$where")")
check "fluxon comes from the venv ($where)" bash -c "[[ '$pkg' == '$venv'/lib/python3*/site-packages/fluxon ]]"
check "fluxon._native too" bash -c "[[ '$(tail -n 1 <<<"$where")' == '$pkg'/_native*.so ]]"
want=$(cd "$src/python" && find fluxon -name '*.py' -not -path '*/__pycache__/*' | sort)
have=$(cd "$pkg/.." && find fluxon -name '*.py' -not -path '*/__pycache__/*' | sort)
check "every .py of python/fluxon is in the venv ($(wc -l <<<"$want") files)" test "$want" = "$have"
check "libfluxon.so.$major is bundled in the package" test -f "$pkg/libfluxon.so.$major"
ext=$(ls "$pkg"/_native*.so 2>/dev/null)
runpath=$(readelf -d "$ext" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
check "the extension looks for libfluxon beside itself only (RUNPATH $runpath)" test "$runpath" = '$ORIGIN'
check "and finds it there" bash -c "ldd '$ext' | grep -q 'libfluxon.so.$major => $pkg/libfluxon.so.$major'"
shown=$(vpy -m pip show fluxon 2>/dev/null | sed -n 's/^Version: //p')
check "pip show names version $version ($shown)" test "$shown" = "$version"

# ---- against a cluster --------------------------------------------------------
sock=$tmp/cluster/owner0.sock
on_exit_down "$bin/fluxon" "$tmp/cluster"
out=$("$bin/fluxon" up --dir "$tmp/cluster" --dram 64MB 2>&1)
check "fluxon up prints the socket ($out)" grep -qx "$sock" <<<"$out"
got=$(vpy - "$sock" <<'EOF' 2>&1
import sys
import fluxon
with fluxon.Client(sys.argv[1]) as c:
    c.put("pip-key", b"put from the venv")
    h = c.get("pip-key")
    assert bytes(memoryview(h)) == b"put from the venv", bytes(memoryview(h))
    assert h.access() == b"put from the venv"
    h.release()
    c.delete("pip-key")
    try:
        c.get("pip-key")
        raise SystemExit("a get after the delete found the key")
    except fluxon.KeyNotFound:
        pass
    c.put("from-pip", b"left by the venv")
print("ok")
EOF
)
check "put, get, delete and a miss from the venv ($got)" test "$got" = "ok"
got=$("$bin/fluxon" get --socket "$sock" from-pip 2>&1)
check "the CLI reads what it left ($got)" test "$got" = "left by the venv"
"$bin/fluxon" down --dir "$tmp/cluster" >/dev/null 2>&1
check "fluxon down stops it" test -z "$(daemons_in "$tmp/cluster")"

vpy -m pip uninstall -y fluxon >>"$tmp/pip.log" 2>&1
rc=$?
check "pip uninstall exits 0 (got $rc)" test $rc -eq 0
left=$(find "$venv"/lib/python3*/site-packages -path '*fluxon*' ! -type d 2>/dev/null)
check "and leaves no file of it ($left)" test -z "$left"
install_finish
