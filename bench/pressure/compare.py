#!/usr/bin/python3
"""Fluxon against memcached (+ extstore) per case, from a pressure summary.

The issue's bar for the pressure benchmark, checked row by row from the
records the runner wrote (SUMMARY.jsonl), into OUTDIR/pressure_compare.md and
stdout:

  1. SSD on: Fluxon's hit payload GiB/s (DRAM + SSD) over memcached +
     extstore's in the same layout, mode and payload, against the target
     (>= 3x in holder mode, >= 1.2x in bytes mode); Fluxon's hit rate must be
     100 % (the dataset fits DRAM + SSD). Beside each ratio, where Fluxon's
     workers spent their operation time: memory hits, SSD hits (with the
     median SSD-hit latency) and the servers' CPU use over the window against
     the machine's cores, so a case short of its target names the stage
     that bounds it from measured figures.
  2. SSD off: the hit rates of both with the same memory. Two figures: the
     window's hit rate (hits / gets, as the spec counts it) and the resident
     Zipf mass (the probability mass of the keys each system still held
     before the window, probed key by key). With SSD off no key enters during
     a get-only window, so the mass is what every window converges to; the
     window samples it with as many gets as the system completed (memcached
     completes far fewer at large payloads), so its hit rate carries a
     sampling error, given as one binomial standard error.

Usage:  /usr/bin/python3 compare.py SUMMARY.jsonl OUTDIR [--cores N]
Exit status 0 (it reports; it does not judge the run).
"""

import argparse
import json
import math
import os
import sys

TARGET = {"holder": 3.0, "bytes": 1.2}
MODES = ["holder", "bytes"]


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    print(f"compare.py: skipping a line that is not JSON in {path}",
                          file=sys.stderr)
    return rows


def index(rows):
    """(system, ssd, mode, payload_mib, layout) -> the row (last one wins)."""
    out = {}
    for r in rows:
        key = (r.get("system"), bool(r.get("ssd")), r.get("mode"), r.get("payload_mib"),
               r.get("layout"))
        out[key] = r
    return out


def ok(r):
    return r is not None and r.get("status") == "SUCCESS"


def gib_s(r):
    return (r.get("dram_gib_s") or 0.0) + (r.get("ssd_gib_s") or 0.0)


def layouts_of(rows):
    return sorted({r.get("layout") for r in rows if r.get("layout")},
                  key=lambda s: int(s[1:]) if s[1:].isdigit() else 0)


def payloads_of(rows):
    return sorted({r.get("payload_mib") for r in rows if r.get("payload_mib") is not None})


def pct(v, digits=2):
    return "-" if v is None else f"{100 * v:.{digits}f}"


def pairs(idx, payloads, layouts, ssd):
    """(mode, payload, layout, fluxon row, memcached row) for every case that
    either system ran with this SSD setting; a row is None when absent."""
    for mode in MODES:
        for p in payloads:
            for lay in layouts:
                f = idx.get(("fluxon", ssd, mode, p, lay))
                m = idx.get(("memcached", ssd, mode, p, lay))
                if f is not None or m is not None:
                    yield mode, p, lay, f, m


def ssd_on_table(idx, payloads, layouts, cores):
    lines = ["| mode | payload MiB | layout | Fluxon GiB/s | memcached+extstore GiB/s | ratio | "
             "target | met | Fluxon hit % | memcached hit % | Fluxon time in memory hits / SSD "
             "hits % | SSD hit p50 ms | server CPU % of cores |",
             "|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    short = []
    for mode, p, lay, f, m in pairs(idx, payloads, layouts, True):
        if not ok(f) or not ok(m):
            lines.append(f"| {mode} | {p} | {lay} | "
                         f"{'%.3f' % gib_s(f) if ok(f) else 'FAILED'} | "
                         f"{'%.3f' % gib_s(m) if ok(m) else 'FAILED'} | - | "
                         f"{TARGET[mode]}x | no (a case failed) | | | | | |")
            short.append((mode, p, lay, "a case failed"))
            continue
        ratio = gib_s(f) / gib_s(m) if gib_s(m) > 0 else math.inf
        met = ratio >= TARGET[mode] and f.get("hit_rate", 0) >= 1.0
        cpu = f.get("server_cpu_window_s")
        cpu_pct = (100 * cpu / (f.get("window_s", 1) * cores)
                   if cpu is not None and cpu >= 0 else None)
        share = (f"{pct(f.get('mem_hit_time_share'), 0)} / "
                 f"{pct(f.get('ssd_hit_time_share'), 0)}")
        lines.append(
            f"| {mode} | {p} | {lay} | {gib_s(f):.3f} | {gib_s(m):.3f} | {ratio:.2f}x | "
            f"{TARGET[mode]}x | {'yes' if met else 'no'} | {pct(f.get('hit_rate'))} | "
            f"{pct(m.get('hit_rate'))} | {share} | "
            f"{f.get('ssd_hit_p50_ms') if f.get('ssd_hit_p50_ms') is not None else '-'} | "
            f"{'-' if cpu_pct is None else '%.0f' % cpu_pct} |")
        if not met:
            short.append((mode, p, lay, f"{ratio:.2f}x"))
    return lines, short


def ssd_off_table(idx, payloads, layouts):
    lines = ["| mode | payload MiB | layout | Fluxon hit % (window) | memcached hit % (window) | "
             "memcached window SE % | Fluxon resident mass % (keys) | memcached resident mass % "
             "(keys) | Fluxon >= memcached (resident) | Fluxon >= memcached (window) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---|---|"]
    below = []
    for mode, p, lay, f, m in pairs(idx, payloads, layouts, False):
        if not ok(f) or not ok(m):
            lines.append(f"| {mode} | {p} | {lay} | {'' if ok(f) else 'FAILED'} | "
                         f"{'' if ok(m) else 'FAILED'} | | | | no (a case failed) | |")
            below.append((mode, p, lay, "a case failed"))
            continue
        fh, mh = f.get("hit_rate"), m.get("hit_rate")
        n = m.get("gets") or 0
        se = math.sqrt(mh * (1 - mh) / n) if n and mh is not None else None
        fr, mr = f.get("resident_mass"), m.get("resident_mass")
        res_ok = fr is not None and mr is not None and fr >= mr
        win_ok = fh is not None and mh is not None and fh >= mh
        lines.append(
            f"| {mode} | {p} | {lay} | {pct(fh)} | {pct(mh)} | {pct(se)} | "
            f"{pct(fr)} ({f.get('resident_keys', '-')}) | "
            f"{pct(mr)} ({m.get('resident_keys', '-')}) | "
            f"{'yes' if res_ok else 'no'} | {'yes' if win_ok else 'no'} |")
        if not res_ok:
            below.append((mode, p, lay, "resident"))
    return lines, below


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("summary")
    ap.add_argument("outdir")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    rows = load(a.summary)
    idx = index(rows)
    payloads, layouts = payloads_of(rows), layouts_of(rows)
    on, short = ssd_on_table(idx, payloads, layouts, a.cores)
    off, below = ssd_off_table(idx, payloads, layouts)
    text = ["# Fluxon against memcached (+ extstore), per case", "",
            f"From `{os.path.basename(a.summary)}`; {a.cores} cores. Targets with SSD on: "
            ">= 3x in holder mode, >= 1.2x in bytes mode, Fluxon hit rate 100 %.", "",
            "## SSD on: hit payload GiB/s (DRAM + SSD)", ""] + on + [
            "", f"Cases short of the target: {len(short)}"
            + ("" if not short else " (" + ", ".join(f"{m} {p} MiB {l}: {w}"
                                                    for m, p, l, w in short) + ")"),
            "", "## SSD off: hit rate with the same 2 GiB", ""] + off + [
            "", f"Cases where Fluxon kept less Zipf mass than memcached: {len(below)}"
            + ("" if not below else " (" + ", ".join(f"{m} {p} MiB {l}"
                                                    for m, p, l, _ in below) + ")"), ""]
    os.makedirs(a.outdir, exist_ok=True)
    path = os.path.join(a.outdir, "pressure_compare.md")
    with open(path, "w") as f:
        f.write("\n".join(text))
    print("\n".join(text))
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
