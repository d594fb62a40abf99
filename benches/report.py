#!/usr/bin/env python3
"""Prints the medians of `cargo bench --bench bulkhead` as markdown tables.

Usage (from the repository root):

    cargo bench --bench bulkhead -- --save-baseline run1
    cargo bench --bench bulkhead -- --save-baseline run2
    python3 benches/report.py run1 run2

With no argument it reads criterion's latest run (`new`). Each argument is a
baseline saved with `--save-baseline`; each gets its own column, and the
ratios are given for each run. With several runs a last column, `min`, holds
each case's lowest median (load from other processes only ever adds time).
"""

import json
import sys
from pathlib import Path

CRITERION = Path(__file__).resolve().parent.parent / "target" / "criterion"

# (group, bench, what it measures), in the order of BENCHMARKS.md.
CASES = [
    ("enter_exit_free", "floor_atomic_add_sub", "floor: `fetch_add(1)` + `fetch_sub(1)` on one atomic"),
    ("enter_exit_free", "bulkhead_try_enter", "ours: `try_enter()` + drop, free slot"),
    ("enter_exit_free", "bulkhead_enter", "ours: `enter()` (max_wait 0) + drop, free slot"),
    ("enter_exit_free", "tokio_try_acquire", "tokio: `try_acquire()` + drop, free permit"),
    ("rejection", "bulkhead_try_enter", "ours: `try_enter()` rejected"),
    ("rejection", "bulkhead_enter", "ours: `enter()` (max_wait 0) rejected"),
    ("rejection", "bulkhead_enter_async", "ours: `enter_async()` polled once, rejected"),
    ("rejection", "tokio_try_acquire", "tokio: `try_acquire()` failed"),
    ("async_free", "bulkhead_enter_async", "ours: `enter_async()` polled once + drop, free slot"),
    ("async_free", "tokio_acquire", "tokio: `acquire()` polled once + drop, free permit"),
    ("contended_2_threads", "floor_atomic_add_sub", "floor, 2 threads on one atomic"),
    ("contended_2_threads", "bulkhead_try_enter", "ours: `try_enter()` + drop, 2 threads"),
    ("contended_2_threads", "tokio_try_acquire", "tokio: `try_acquire()` + drop, 2 threads"),
    ("pipeline", "direct_call", "the closure called directly"),
    ("pipeline", "execute_bulkhead", "`Pipeline::execute`, bulkhead with a free slot"),
    ("pipeline", "execute_rejected", "`Pipeline::execute`, bulkhead full (rejected)"),
    ("adaptive_free", "bulkhead_try_enter", "ours, static: `try_enter()` + drop, free slot"),
    ("adaptive_free", "bulkhead_try_enter_two_readings", "ours, static, + two recent clock readings"),
    ("adaptive_free", "sized_try_enter", "ours, timed for sizing: `try_enter()` + drop"),
    ("adaptive_free", "adaptive_try_enter", "ours, adaptive (Gradient2): `try_enter()` + drop"),
    ("adaptive_free", "bulkhead_try_enter_2_threads", "ours, static, 2 threads"),
    ("adaptive_free", "adaptive_try_enter_2_threads", "ours, adaptive (Gradient2), 2 threads"),
]

# (label, numerator, denominator, target ratio or None)
RATIOS = [
    ("ours try_enter+drop / floor", ("enter_exit_free", "bulkhead_try_enter"), ("enter_exit_free", "floor_atomic_add_sub"), None),
    ("ours enter+drop / floor", ("enter_exit_free", "bulkhead_enter"), ("enter_exit_free", "floor_atomic_add_sub"), None),
    ("ours try_enter+drop / tokio try_acquire+drop", ("enter_exit_free", "bulkhead_try_enter"), ("enter_exit_free", "tokio_try_acquire"), None),
    ("ours rejection / tokio failed try_acquire", ("rejection", "bulkhead_try_enter"), ("rejection", "tokio_try_acquire"), None),
    ("ours async free / tokio acquire+drop", ("async_free", "bulkhead_enter_async"), ("async_free", "tokio_acquire"), 0.5),
    ("contended: ours / tokio", ("contended_2_threads", "bulkhead_try_enter"), ("contended_2_threads", "tokio_try_acquire"), None),
    ("contended: ours / floor", ("contended_2_threads", "bulkhead_try_enter"), ("contended_2_threads", "floor_atomic_add_sub"), None),
]

# (label, case, target in ns)
ABSOLUTE = [
    ("ours `try_enter()` rejected", ("rejection", "bulkhead_try_enter"), 1.5),
    ("ours `enter()` rejected", ("rejection", "bulkhead_enter"), 1.5),
]


def median_ns(group, bench, baseline):
    path = CRITERION / group / bench / baseline / "estimates.json"
    try:
        with open(path) as f:
            return json.load(f)["median"]["point_estimate"]
    except FileNotFoundError:
        return None


def fmt(value, digits=2):
    return "n/a" if value is None else f"{value:.{digits}f}"


def main(baselines):
    medians = {
        b: {(g, n): median_ns(g, n, b) for g, n, _ in CASES} for b in baselines
    }
    if len(baselines) > 1:
        # Other load on the machine only ever adds time: the lowest median
        # of several runs is the best estimate of each case on its own.
        # Not so under contention: a busy machine descheduling the rival
        # thread lowers contention and so the time, so `min` leaves it out.
        medians["min"] = {
            case: None
            if case[0] == "contended_2_threads"
            else min((m[case] for m in medians.values() if m[case] is not None), default=None)
            for case in medians[baselines[0]]
        }
        baselines = baselines + ["min"]
    header = " | ".join(f"{b} (ns)" for b in baselines)
    print(f"| group / bench | what | {header} |")
    print("|---|---|" + "---:|" * len(baselines))
    for group, bench, what in CASES:
        cells = " | ".join(fmt(medians[b][(group, bench)]) for b in baselines)
        print(f"| `{group}/{bench}` | {what} | {cells} |")

    print()
    header = " | ".join(baselines)
    print(f"| ratio of medians | {header} | target |")
    print("|---|" + "---:|" * len(baselines) + "---|")
    for label, num, den, target in RATIOS:
        cells = []
        for b in baselines:
            n, d = medians[b][num], medians[b][den]
            cells.append("n/a" if n is None or not d else f"{n / d:.2f}x")
        goal = f"<= {target}x" if target is not None else "-"
        print(f"| {label} | {' | '.join(cells)} | {goal} |")
    cells = []
    for b in baselines:
        n, d = medians[b][("pipeline", "execute_bulkhead")], medians[b][("pipeline", "direct_call")]
        cells.append("n/a" if n is None or d is None else f"{n - d:.2f} ns")
    print(f"| pipeline execute - direct call | {' | '.join(cells)} | - |")

    print()
    print("| absolute | " + " | ".join(baselines) + " | target |")
    print("|---|" + "---:|" * len(baselines) + "---|")
    for label, case, target in ABSOLUTE:
        cells = " | ".join(f"{fmt(medians[b][case])} ns" for b in baselines)
        print(f"| {label} | {cells} | <= {target} ns |")


if __name__ == "__main__":
    main(sys.argv[1:] or ["new"])
