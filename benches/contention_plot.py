#!/usr/bin/env python3
"""Draws the CSV of `benches/contention.rs` as an SVG: throughput against
threads, one panel per flavor (sync, async) and case, one line per
semaphore. Hand-written SVG, no plotting library.

Usage (from the repository root):

    BULKHEAD_CONTENTION_CSV=target/contention.csv cargo bench --bench contention
    python3 benches/contention_plot.py target/contention.csv docs/contention.svg "subtitle"
    python3 benches/contention_plot.py target/contention.csv docs/contention-33.svg "subtitle" \
        priority,keyed

The optional fourth argument names the cases to draw, one column each, by
name or by the prefix before `_` (`priority`, `keyed`), separated by commas;
without it, the plain bulkhead's three (free, reject, saturated). A case
missing from the CSV is skipped. Under the `priority_saturated` panels, the
share of the slot's calls that were `Critical`, by threads.
"""

import csv
import math
import sys
from collections import defaultdict
from xml.sax.saxutils import escape

FLAVORS = ["sync", "async"]
CASES = [
    ("free", "free slots"),
    ("reject", "full, rejecting"),
    ("saturated", "saturated, handing off (1 slot, 1 \u00b5s held)"),
    ("priority_free", "classes, free slots (Critical / Sheddable)"),
    ("priority_saturated", "classes, saturated (1 slot, 1 \u00b5s held)"),
    ("keyed_same_key", "keyed, one key for all, free"),
    ("keyed_own_key", "keyed, a key per thread, free"),
    ("keyed_rejected", "keyed, the key full, rejecting"),
]
DEFAULT_CASES = ["free", "reject", "saturated"]
COLORS = {
    "ours": "#1f77b4",
    "ours_fifo": "#9ecae1",
    "tokio": "#d62728",
    "mutex_condvar": "#2ca02c",
    "ours_untagged": "#17becf",
    "tokio_dashmap": "#ff7f0e",
    "tokio_dashmap_global": "#9467bd",
}
LABELS = {
    "ours": "ours (bounded barging, the default)",
    "ours_fifo": "ours, strict FIFO hand-off (barging 0)",
    "tokio": "tokio::sync::Semaphore",
    "mutex_condvar": "Mutex + Condvar",
    "ours_untagged": "ours, no class set (the plain path)",
    "tokio_dashmap": "tokio Semaphore per key in a DashMap",
    "tokio_dashmap_global": "the same, and a global tokio Semaphore",
}
DASHES = {"ours_fifo": "5,3", "ours_untagged": "5,3", "tokio_dashmap_global": "5,3"}

PANEL_W, PANEL_H = 300, 210
LEFT, TOP, GAP_X, GAP_Y = 70, 80, 70, 80


def nice_max(value):
    """The smallest 1, 2 or 5 times a power of ten at or above `value`."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


def chosen_cases(arg):
    """The (name, title) of the cases `arg` names (see the module's docs)."""
    if not arg:
        return [c for c in CASES if c[0] in DEFAULT_CASES]
    wanted = [w.strip() for w in arg.split(",") if w.strip()]
    return [
        (name, title)
        for name, title in CASES
        if any(name == w or name.startswith(w + "_") for w in wanted)
    ]


def main():
    source, target = sys.argv[1], sys.argv[2]
    subtitle = sys.argv[3] if len(sys.argv) > 3 else ""
    points = defaultdict(list)
    shares = defaultdict(dict)
    threads_seen = set()
    with open(source, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["flavor"], row["case"], row["semaphore"])
            threads = int(row["threads"])
            threads_seen.add(threads)
            points[key].append((threads, float(row["ops_per_sec"]) / 1e6))
            if row.get("critical_share"):
                shares[key][threads] = float(row["critical_share"])
    present = {c for (_, c, _) in points}
    cases = [c for c in chosen_cases(sys.argv[4] if len(sys.argv) > 4 else "") if c[0] in present]
    if not cases:
        sys.exit("none of the cases named is in the CSV")
    threads = sorted(threads_seen)
    names = {name for name, _ in cases}
    drawn = [s for s in COLORS if any(c in names and s == s2 for (_, c, s2) in points)]
    # Room under each row of panels for the Critical shares.
    share_lines = 2 if any(name == "priority_saturated" for name, _ in cases) else 0
    gap_y = GAP_Y + 16 * share_lines
    width = max(LEFT + len(cases) * (PANEL_W + GAP_X), 900)
    legend_rows = []
    row, x = [], LEFT
    for name in drawn:
        step = 40 + 7 * len(LABELS[name])
        if row and x + step > width:
            legend_rows.append(row)
            row, x = [], LEFT
        row.append((name, x))
        x += step
    legend_rows.append(row)
    height = TOP + len(FLAVORS) * (PANEL_H + gap_y) + 40 + 22 * len(legend_rows)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{LEFT}" y="28" font-size="17" font-weight="bold">'
        "Bulkhead throughput under contention (millions of operations per second, all threads)</text>",
        f'<text x="{LEFT}" y="50" fill="#444">{escape(subtitle)}</text>',
    ]
    x_of = lambda i, x0: x0 + 10 + i * (PANEL_W - 20) / max(1, len(threads) - 1)
    for row, flavor in enumerate(FLAVORS):
        for col, (case, title) in enumerate(cases):
            x0 = LEFT + col * (PANEL_W + GAP_X)
            y0 = TOP + row * (PANEL_H + gap_y)
            series = {s: sorted(v) for (f, c, s), v in points.items() if f == flavor and c == case}
            if not series:
                continue
            top = nice_max(max(y for v in series.values() for _, y in v))
            y_of = lambda y: y0 + PANEL_H - y / top * PANEL_H
            out.append(
                f'<text x="{x0}" y="{y0 - 12}" font-weight="bold">{flavor}: {escape(title)}</text>'
            )
            out.append(
                f'<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" '
                'fill="none" stroke="#999"/>'
            )
            for k in range(5):
                value = top * k / 4
                y = y_of(value)
                out.append(
                    f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PANEL_W}" y2="{y:.1f}" stroke="#eee"/>'
                )
                label = f"{value:g}" if value >= 1 or value == 0 else f"{value:.2g}"
                out.append(
                    f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#444">{label}</text>'
                )
            for i, t in enumerate(threads):
                x = x_of(i, x0)
                out.append(
                    f'<text x="{x:.1f}" y="{y0 + PANEL_H + 16}" text-anchor="middle" fill="#444">{t}</text>'
                )
            out.append(
                f'<text x="{x0 + PANEL_W / 2}" y="{y0 + PANEL_H + 34}" text-anchor="middle" fill="#444">'
                f'{"threads" if flavor == "sync" else "tasks (and runtime workers)"}</text>'
            )
            if case == "priority_saturated":
                for k, name in enumerate(s for s in COLORS if s in series):
                    by_threads = shares.get((flavor, case, name), {})
                    text = " ".join(f"{by_threads[t]:.2f}" if t in by_threads else "-" for t in threads)
                    out.append(
                        f'<text x="{x0}" y="{y0 + PANEL_H + 54 + 16 * k}" fill="{COLORS[name]}">'
                        f"Critical share, {escape(name)}: {text}</text>"
                    )
            for name in COLORS:
                if name not in series:
                    continue
                coords = [
                    (x_of(threads.index(t), x0), y_of(y)) for t, y in series[name] if t in threads
                ]
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
                dash = f' stroke-dasharray="{DASHES[name]}"' if name in DASHES else ""
                out.append(
                    f'<polyline points="{path}" fill="none" stroke="{COLORS[name]}" '
                    f'stroke-width="2"{dash}/>'
                )
                for x, y in coords:
                    out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLORS[name]}"/>')
    legend_y = TOP + len(FLAVORS) * (PANEL_H + gap_y) + 10
    for k, row in enumerate(legend_rows):
        y = legend_y + 22 * k
        for name, x in row:
            color = COLORS[name]
            dash = f' stroke-dasharray="{DASHES[name]}"' if name in DASHES else ""
            out.append(
                f'<line x1="{x}" y1="{y}" x2="{x + 28}" y2="{y}" stroke="{color}" '
                f'stroke-width="2"{dash}/>'
            )
            out.append(f'<text x="{x + 34}" y="{y + 4}">{escape(LABELS[name])}</text>')
    note = "The x axis is logarithmic (1 to 16 on a 2-vCPU machine: oversubscribed from 4)."
    if "mutex_condvar" in drawn:
        note += " Mutex + Condvar has no async form."
    out.append(
        f'<text x="{LEFT}" y="{legend_y + 22 * (len(legend_rows) - 1) + 28}" fill="#444">'
        f"{escape(note)}</text>"
    )
    out.append("</svg>")
    with open(target, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
