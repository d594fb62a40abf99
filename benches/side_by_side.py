#!/usr/bin/env python3
"""Prints the table of `benches/side_by_side.sh`: for each case, each
label's median of its rounds' medians and their range, in ns.

Usage: side_by_side.py CRITERION_HOME ROUNDS LABEL [LABEL ...]
"""

import json
import statistics
import sys
from pathlib import Path


def main():
    home, rounds, labels = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    cases = sorted(
        {p.parent.parent.relative_to(home).as_posix() for p in home.glob("*/*/*/estimates.json")}
    )
    print("| case | " + " | ".join(labels) + " |")
    print("|---|" + "---:|" * len(labels))
    for case in cases:
        cells = []
        for label in labels:
            medians = []
            for run in range(1, rounds + 1):
                path = home / case / f"{label}-{run}" / "estimates.json"
                if path.exists():
                    medians.append(json.loads(path.read_text())["median"]["point_estimate"])
            if medians:
                cells.append(
                    f"{statistics.median(medians):.2f} [{min(medians):.2f} - {max(medians):.2f}]"
                )
            else:
                cells.append("")
        print(f"| `{case}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
