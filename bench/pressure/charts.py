#!/usr/bin/python3
"""Charts and a table for the pressure benchmark (fluxon vs memcached vs redis).

The pressure runner writes one JSON object per case to a summary file
(SUMMARY.jsonl). This script turns that file into:

  pressure_<mode>.png  one figure per output mode (holder, bytes): one facet per
                       payload size; in each facet the x groups are the worker
                       layouts (c1, c2, c4 ...) and each group holds one bar per
                       (system, SSD on/off) in a fixed order. A bar is the hit
                       payload GiB/s, stacked as the DRAM part (light shade of the
                       system's colour) under the SSD part (dark shade). Red
                       points on the right axis (0..100 %) are the hit rate,
                       hits / (hits + misses); misses are not in the bar height.
                       SSD-on bars are hatched. Cases that did not succeed are
                       never drawn as bars; their slot shows a grey cross.
  pressure_table.md    every record, failed ones included with their error.

Usage:  /usr/bin/python3 charts.py SUMMARY.jsonl OUTDIR [--title TEXT]

It needs Debian's python3-matplotlib (apt-get install python3-matplotlib) and
runs under /usr/bin/python3. Unknown fields are ignored and every numeric field
is optional: a missing DRAM / SSD rate is derived from hits_memory / hits_ssd,
payload_bytes and window_s when those are present, otherwise left out.
"""

import argparse
import json
import math
import os
import re
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

GIB = float(1 << 30)
MIB = float(1 << 20)

MODE_ORDER = ["holder", "bytes"]
SYSTEM_ORDER = ["fluxon", "memcached", "redis"]
# (light = DRAM part, dark = SSD part) per system: blue, orange, cyan.
SYSTEM_COLOURS = {
    "fluxon": ("#9ecae1", "#08519c"),
    "memcached": ("#fdc48a", "#c44e00"),
    "redis": ("#9fe3e6", "#0a7f86"),
}
EXTRA_COLOURS = [("#c9b3e0", "#5b2a86"), ("#c7e9b4", "#2f7d32"),
                 ("#f4b6c2", "#a4123f")]
UNKNOWN_SOURCE_COLOUR = "#bdbdbd"
HIT_RATE_COLOUR = "#d62728"


def num(row, key):
    """Return row[key] as a finite float, or None when absent or not a number."""
    v = row.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def is_success(row):
    return row.get("status") == "SUCCESS"


def payload_mib(row):
    v = num(row, "payload_mib")
    if v is None:
        b = num(row, "payload_bytes")
        if b is None:
            return None
        # Payloads are "N MiB - 128 B" in the spec's setup: round to N.
        v = float(round(b / MIB)) if b >= MIB / 2 else b / MIB
    return int(v) if v == int(v) else v


def ssd_flag(row):
    v = row.get("ssd")
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "on", "yes")
    return bool(v)


def layout_key(layout):
    m = re.fullmatch(r"[A-Za-z]*(\d+)", str(layout))
    return (0, int(m.group(1)), "") if m else (1, 0, str(layout))


def order_index(order, value):
    return (order.index(value), "") if value in order else (len(order), str(value))


def hit_rate_pct(row):
    v = num(row, "hit_rate")
    if v is not None:
        return v * 100.0 if v <= 1.0 else v
    hits, misses, gets = num(row, "hits"), num(row, "misses"), num(row, "gets")
    if hits is not None and misses is not None and hits + misses > 0:
        return 100.0 * hits / (hits + misses)
    if hits is not None and gets:
        return 100.0 * hits / gets
    return None


def tier_rate(row, rate_key, hits_key):
    """GiB/s of hit payload from one tier: the recorded rate, else derived."""
    v = num(row, rate_key)
    if v is not None:
        return v
    hits, size, window = num(row, hits_key), num(row, "payload_bytes"), num(row, "window_s")
    if hits is None or size is None or not window:
        return None
    return hits * size / window / GIB


def system_colours(system, extra_systems):
    if system in SYSTEM_COLOURS:
        return SYSTEM_COLOURS[system]
    i = extra_systems.index(system) if system in extra_systems else 0
    return EXTRA_COLOURS[i % len(EXTRA_COLOURS)]


def load(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                print(f"{path}:{lineno}: skipped, not JSON: {e}", file=sys.stderr)
                continue
            if not isinstance(row, dict):
                print(f"{path}:{lineno}: skipped, not a JSON object", file=sys.stderr)
                continue
            rows.append(row)
    return rows


def sort_key(row):
    p = payload_mib(row)
    return (order_index(MODE_ORDER, row.get("mode")),
            (0, p) if p is not None else (1, 0),
            layout_key(row.get("layout", "")),
            order_index(SYSTEM_ORDER, row.get("system")),
            ssd_flag(row))


# ---------------------------------------------------------------- charts

def chart_mode(rows, mode, outdir, title):
    """Draw pressure_<mode>.png; return its path, or None if nothing to draw."""
    rows = [r for r in rows if r.get("mode") == mode and payload_mib(r) is not None
            and r.get("system") and r.get("layout")]
    if not any(is_success(r) for r in rows):
        return None

    payloads = sorted({payload_mib(r) for r in rows})
    extra_systems = sorted({r["system"] for r in rows} - set(SYSTEM_ORDER))
    ncol = len(payloads)
    fig_w = max(9.0, 4.0 * ncol + 0.5)
    fig, axes = plt.subplots(1, ncol, figsize=(fig_w, 6.0), squeeze=False)
    axes = axes[0]
    seen_combos, any_failed, any_unknown = set(), False, False

    for ax, payload in zip(axes, payloads):
        facet = [r for r in rows if payload_mib(r) == payload]
        layouts = sorted({str(r["layout"]) for r in facet}, key=layout_key)
        combos = sorted({(r["system"], ssd_flag(r)) for r in facet},
                        key=lambda c: (order_index(SYSTEM_ORDER, c[0]), c[1]))
        # Latest record wins if a case appears twice (reruns appended).
        cell = {}
        for r in facet:
            cell[(str(r["layout"]), r["system"], ssd_flag(r))] = r

        nbar = len(combos)
        width = 0.8 / nbar
        rax = ax.twinx()
        top = 0.0
        for gi, layout in enumerate(layouts):
            for bi, (system, ssd) in enumerate(combos):
                x = gi - 0.4 + width * (bi + 0.5)
                r = cell.get((layout, system, ssd))
                if r is None:
                    continue
                if not is_success(r):
                    ax.plot([x], [0], marker="x", color="#7f7f7f", markersize=7,
                            markeredgewidth=1.5, clip_on=False, zorder=4)
                    any_failed = True
                    continue
                seen_combos.add((system, ssd))
                light, dark = system_colours(system, extra_systems)
                hatch = "///" if ssd else None
                dram = tier_rate(r, "dram_gib_s", "hits_memory") or 0.0
                ssd_part = tier_rate(r, "ssd_gib_s", "hits_ssd") or 0.0
                unk = tier_rate(r, "unknown_gib_s", "hits_unknown") or 0.0
                bottom = 0.0
                for height, colour in ((dram, light), (ssd_part, dark),
                                       (unk, UNKNOWN_SOURCE_COLOUR)):
                    if height <= 0:
                        continue
                    ax.bar(x, height, width, bottom=bottom, color=colour,
                           edgecolor="#333333", linewidth=0.5, hatch=hatch, zorder=2)
                    bottom += height
                any_unknown = any_unknown or unk > 0
                top = max(top, bottom)
                hr = hit_rate_pct(r)
                if hr is not None:
                    rax.plot([x], [hr], marker="o", linestyle="none",
                             color=HIT_RATE_COLOUR, markeredgecolor="white",
                             markeredgewidth=0.6, markersize=6, zorder=5)

        ax.set_xticks(range(len(layouts)))
        ax.set_xticklabels(layouts)
        ax.set_xlim(-0.5, len(layouts) - 0.5)
        ax.set_ylim(0, top * 1.12 if top > 0 else 1.0)
        ax.set_title(f"{payload:g} MiB payload")
        ax.set_xlabel("worker layout")
        ax.grid(axis="y", color="#dddddd", linewidth=0.6, zorder=0)
        ax.set_axisbelow(True)
        for gi in range(1, len(layouts)):
            ax.axvline(gi - 0.5, color="#e6e6e6", linewidth=0.8, zorder=0)
        rax.set_ylim(0, 105)
        rax.set_yticks([0, 25, 50, 75, 100])
        rax.tick_params(axis="y", colors=HIT_RATE_COLOUR, labelsize=8)
        # Keep the hit-rate points above the bars.
        rax.set_zorder(ax.get_zorder() + 1)
        ax.patch.set_visible(False)
        if ax is axes[0]:
            ax.set_ylabel("hit payload GiB/s")
        if ax is axes[-1]:
            rax.set_ylabel("hit rate %", color=HIT_RATE_COLOUR)

    handles = []
    systems = sorted({s for s, _ in seen_combos},
                     key=lambda s: order_index(SYSTEM_ORDER, s))
    for system in systems:
        light, dark = system_colours(system, extra_systems)
        handles.append(Patch(facecolor=light, edgecolor="#333333", linewidth=0.5,
                             label=f"{system} DRAM"))
        if (system, True) in seen_combos:
            handles.append(Patch(facecolor=dark, edgecolor="#333333", linewidth=0.5,
                                 label=f"{system} SSD"))
    handles.append(Patch(facecolor="white", edgecolor="#333333", linewidth=0.5,
                         label="SSD off (plain)"))
    if any(ssd for _, ssd in seen_combos):
        handles.append(Patch(facecolor="white", edgecolor="#333333", linewidth=0.5,
                             hatch="///", label="SSD on (hatched)"))
    if any_unknown:
        handles.append(Patch(facecolor=UNKNOWN_SOURCE_COLOUR, edgecolor="#333333",
                             linewidth=0.5, label="source unknown"))
    handles.append(Line2D([], [], marker="o", linestyle="none", color=HIT_RATE_COLOUR,
                          label="hit rate (right axis)"))
    if any_failed:
        handles.append(Line2D([], [], marker="x", linestyle="none", color="#7f7f7f",
                              markeredgewidth=1.5, label="failed (see table)"))

    order = ", ".join(f"{s} SSD-{'on' if d else 'off'}" for s, d in sorted(
        seen_combos, key=lambda c: (order_index(SYSTEM_ORDER, c[0]), c[1])))
    heading = f"Pressure, output mode: {mode}"
    if title:
        heading = f"{title}\n{heading}"
    fig.suptitle(heading, fontsize=13)
    # Bottom to top: caption lines, legend rows, then the facets.
    caption = textwrap.wrap(f"bars left to right in each group: {order}; bar = hit "
                            "payload only (misses excluded); light = from DRAM, "
                            "dark = from SSD", width=int(fig_w * 15))
    fig.text(0.5, 0.005, "\n".join(caption), ha="center", va="bottom", fontsize=8,
             color="#555555")
    caption_h = 0.01 + 0.022 * len(caption)
    per_row = min(len(handles), max(4, int(fig_w / 1.6)))
    legend_rows = math.ceil(len(handles) / per_row)
    # Fill row by row (matplotlib fills column by column) so the order reads left to right.
    cols = [handles[i::per_row] for i in range(per_row)]
    fig.legend(handles=[h for c in cols for h in c], loc="lower center",
               ncol=per_row, fontsize=9, frameon=False, bbox_to_anchor=(0.5, caption_h),
               handlelength=1.6, columnspacing=1.4, borderaxespad=0.2)
    fig.tight_layout(rect=(0, caption_h + 0.045 * legend_rows + 0.01, 1, 1))
    path = os.path.join(outdir, f"pressure_{re.sub(r'[^A-Za-z0-9_.-]', '_', mode)}.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- table

def fmt(v, digits):
    return "-" if v is None else f"{v:.{digits}f}"


def cell_text(v):
    text = "" if v is None else str(v)
    return " ".join(text.split()).replace("|", "\\|")


def write_table(rows, outdir, title):
    columns = ["mode", "payload MiB", "layout", "system", "ssd", "status",
               "hit rate %", "DRAM GiB/s", "SSD GiB/s", "ops/s", "p50 ms", "p95 ms",
               "p99 ms", "server peak RSS MiB", "server CPU s", "error"]
    lines = []
    if title:
        lines += [f"# {title}", ""]
    lines += ["Pressure benchmark records. Hit rate is hits / (hits + misses); DRAM and "
              "SSD GiB/s count hit payload by the tier it came from.", ""]
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "|".join("---" if i < 6 or i == len(columns) - 1 else "---:"
                                for i in range(len(columns))) + "|")
    for r in sorted(rows, key=sort_key):
        p = payload_mib(r)
        ok = is_success(r)
        values = [
            cell_text(r.get("mode", "?")),
            "-" if p is None else f"{p:g}",
            cell_text(r.get("layout", "?")),
            cell_text(r.get("system", "?")),
            "on" if ssd_flag(r) else "off",
            cell_text(r.get("status", "?")),
            fmt(hit_rate_pct(r), 2),
            fmt(tier_rate(r, "dram_gib_s", "hits_memory"), 3),
            fmt(tier_rate(r, "ssd_gib_s", "hits_ssd"), 3),
            fmt(num(r, "ops_per_s"), 1),
            fmt(num(r, "p50_ms"), 2),
            fmt(num(r, "p95_ms"), 2),
            fmt(num(r, "p99_ms"), 2),
            fmt(num(r, "server_rss_peak_mib"), 1),
            fmt(num(r, "server_cpu_s"), 1),
            "" if ok else cell_text(r.get("error") or "(no error text)"),
        ]
        lines.append("| " + " | ".join(values) + " |")
    path = os.path.join(outdir, "pressure_table.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("summary", help="pressure summary, one JSON object per line")
    ap.add_argument("outdir", help="folder for the PNGs and pressure_table.md")
    ap.add_argument("--title", default=None,
                    help="figure title, e.g. the machine; default: the rows' machine field")
    args = ap.parse_args()

    rows = load(args.summary)
    title = args.title
    if title is None:
        machines = {r.get("machine") for r in rows if r.get("machine")}
        title = machines.pop() if len(machines) == 1 else ""
    os.makedirs(args.outdir, exist_ok=True)

    modes = sorted({r.get("mode") for r in rows if isinstance(r.get("mode"), str)},
                   key=lambda m: order_index(MODE_ORDER, m))
    for mode in MODE_ORDER:
        if mode not in modes:
            print(f"mode {mode}: no records, no chart")
    for mode in modes:
        path = chart_mode(rows, mode, args.outdir, title)
        print(path if path else f"mode {mode}: no successful records, no chart")
    print(write_table(rows, args.outdir, title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
