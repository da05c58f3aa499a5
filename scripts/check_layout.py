#!/usr/bin/env python3
"""Checks the shape of the source tree against the rules of docs/architecture.md.

The rules (STYLE.md, "Layout" and "State and context"):
  1. No folder of src/ holds a group of more than MAX_CIRCLE files that call each
     other in a circle. "A calls B" means A's object file uses a symbol B's object
     file defines (read with `nm` from the build tree, so it is what the linker sees,
     not a guess from the text); a circle is a strongly connected component of that
     graph between the .c files of one folder.
  2. No .c file in src/ is over MAX_LINES lines.
  3. No file-scope pointer to a daemon's state (`static master *`, `static owner *`,
     with or without `struct`): callbacks reach it through a context pointer.

Usage: scripts/check_layout.py [BUILD_DIR] [--verbose]. It prints every circle it
finds (also the allowed small ones) and exits 1 when a rule is broken, 0 otherwise,
2 when the build tree holds no object files to read.
"""
import glob
import os
import re
import subprocess
import sys

MAX_CIRCLE = 4
MAX_LINES = 1000
# The build's targets whose objects are read. fx_ssd_fp is fx_ssd with failpoints,
# and the executables' main.c files are read from their own targets.
TARGETS = ["fx_common", "fx_proto", "fx_addr", "fx_net", "fx_etcd", "fx_master", "fluxon-master", "fx_ssd",
           "fx_dataplane", "fx_owner", "fluxon-owner", "fluxon", "fluxon-cli", "fluxon_py"]
DAEMON_STATE = re.compile(r"^static\s+(?:struct\s+)?(master|owner)\s*\*", re.M)


def symbols(objs, flag):
    """{object: global symbols nm lists for it}: defined ones (flag --defined-only)
    or undefined ones (-u), read with one nm call for all objects."""
    out = subprocess.run(["nm", "-g", "-A", flag] + list(objs), capture_output=True, text=True,
                         check=True)
    syms = {obj: set() for obj in objs}
    for line in out.stdout.splitlines():
        obj, _, rest = line.partition(":")
        if obj in syms and rest.split():
            syms[obj].add(rest.split()[-1])
    return syms


def source_objects(build, repo):
    """{source path relative to repo: object file}, one object per source."""
    objs = {}
    for target in TARGETS:
        root = os.path.join(build, "CMakeFiles", target + ".dir")
        for obj in sorted(glob.glob(os.path.join(root, "**", "*.c.o"), recursive=True)):
            rel = os.path.relpath(obj, root)[:-2]  # drop ".o"
            # CMake mirrors the source path below the target dir; sources outside
            # the repo (generated code) appear under a mangled path and are skipped.
            if rel.startswith("src/") and os.path.exists(os.path.join(repo, rel)):
                objs.setdefault(rel, obj)
    return objs


def circles(nodes, edges):
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    verbose = "--verbose" in sys.argv
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = os.path.abspath(args[0] if args else os.path.join(repo, "build"))
    objs = source_objects(build, repo)
    if not objs:
        print(f"check_layout: no object files under {build}/CMakeFiles: build first")
        return 2
    broken = 0

    folders = {}
    for src in objs:
        folders.setdefault(os.path.dirname(src), []).append(src)
    for folder in sorted(folders):
        files = folders[folder]
        by_obj_defined = symbols([objs[f] for f in files], "--defined-only")
        by_obj_used = symbols([objs[f] for f in files], "-u")
        defined = {f: by_obj_defined[objs[f]] for f in files}
        used = {f: by_obj_used[objs[f]] for f in files}
        edges = {a: {b for b in files if b != a and used[a] & defined[b]} for a in files}
        if verbose:
            for a in sorted(files):
                for b in sorted(edges[a]):
                    print(f"  {a} -> {b}: {', '.join(sorted(used[a] & defined[b]))}")
        for comp in circles(files, edges):
            bad = len(comp) > MAX_CIRCLE
            broken += bad
            names = ", ".join(os.path.basename(f) for f in comp)
            print(f"{'FAIL' if bad else 'ok  '} circle of {len(comp)} in {folder}/: {names}")

    for src in sorted(glob.glob(os.path.join(repo, "src", "**", "*.c"), recursive=True)):
        rel = os.path.relpath(src, repo)
        with open(src, encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > MAX_LINES:
            broken += 1
            print(f"FAIL {rel}: {lines} lines (at most {MAX_LINES})")
        for m in DAEMON_STATE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            broken += 1
            print(f"FAIL {rel}:{line}: file-scope pointer to the {m.group(1)}'s state")

    print(f"check_layout: {len(objs)} sources in {len(folders)} folders, "
          f"{'rules broken: ' + str(broken) if broken else 'all rules hold'}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
