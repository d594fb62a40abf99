#!/usr/bin/env python3
"""Draws the CSV of `benches/contention.rs` as an SVG: throughput against
threads, one panel per flavor (sync, async) and case (free, reject,
saturated), one line per semaphore. Hand-written SVG, no plotting library.

Usage (from the repository root):

    BULKHEAD_CONTENTION_CSV=target/contention.csv cargo bench --bench contention
    python3 benches/contention_plot.py target/contention.csv docs/contention.svg "subtitle"
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
]
COLORS = {
    "ours": "#1f77b4",
    "ours_fifo": "#9ecae1",
    "tokio": "#d62728",
    "mutex_condvar": "#2ca02c",
}
LABELS = {
    "ours": "ours (bounded barging, the default)",
    "ours_fifo": "ours, strict FIFO hand-off (barging 0)",
    "tokio": "tokio::sync::Semaphore",
    "mutex_condvar": "Mutex + Condvar",
}
DASHES = {"ours_fifo": "5,3"}

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


def main():
    source, target = sys.argv[1], sys.argv[2]
    subtitle = sys.argv[3] if len(sys.argv) > 3 else ""
    points = defaultdict(list)
    threads_seen = set()
    with open(source, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["flavor"], row["case"], row["semaphore"])
            threads = int(row["threads"])
            threads_seen.add(threads)
            points[key].append((threads, float(row["ops_per_sec"]) / 1e6))
    threads = sorted(threads_seen)
    width = LEFT + len(CASES) * (PANEL_W + GAP_X)
    height = TOP + len(FLAVORS) * (PANEL_H + GAP_Y) + 60
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
        for col, (case, title) in enumerate(CASES):
            x0 = LEFT + col * (PANEL_W + GAP_X)
            y0 = TOP + row * (PANEL_H + GAP_Y)
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
    legend_y = TOP + len(FLAVORS) * (PANEL_H + GAP_Y) + 10
    x = LEFT
    for name, color in COLORS.items():
        dash = f' stroke-dasharray="{DASHES[name]}"' if name in DASHES else ""
        out.append(
            f'<line x1="{x}" y1="{legend_y}" x2="{x + 28}" y2="{legend_y}" stroke="{color}" '
            f'stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{x + 34}" y="{legend_y + 4}">{escape(LABELS[name])}</text>')
        x += 40 + 7 * len(LABELS[name])
    out.append(
        f'<text x="{LEFT}" y="{legend_y + 28}" fill="#444">The x axis is logarithmic (1 to 16 on a '
        "2-vCPU machine: oversubscribed from 4). Mutex + Condvar has no async form.</text>"
    )
    out.append("</svg>")
    with open(target, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
