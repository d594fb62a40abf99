#!/usr/bin/env python3
"""Sizes of the library code (issue 27's measures).

Counts, in every crate's `src/` (the facade's too, `extras` and `perf`
aside): non-blank, non-comment lines outside test modules and test files,
per crate and in all; and the files whose lines before their test module
number over 600. Run from the repository's root: `python3 tools/size/size.py`.
"""
import os
import re
import sys

CRATES = ["src", "bulkhead-keys/src", "bulkhead-core/src", "bulkhead-registry/src",
          "bulkhead-fleet/src", "bulkhead-macros/src"]
LIMIT = 600


def is_test_file(path):
    name = os.path.basename(path)
    return name == "tests.rs" or name.endswith("_tests.rs") or "/tests/" in path


def before_tests(lines):
    """The lines before a trailing `#[cfg(test)] mod name {` (or `all(test, ..)`)."""
    for i, line in enumerate(lines):
        if re.match(r"#\[cfg\((all\()?test", line) and i + 1 < len(lines) \
                and re.match(r"mod \w+ \{", lines[i + 1]):
            return lines[:i]
    return lines


def code_lines(lines):
    return sum(1 for l in lines if l.strip() and not l.strip().startswith("//"))


def main():
    total, big = 0, []
    for crate in CRATES:
        if not os.path.isdir(crate):
            continue
        count = 0
        for root, _, files in os.walk(crate):
            for f in sorted(files):
                path = os.path.join(root, f)
                if not f.endswith(".rs") or is_test_file(path):
                    continue
                lines = before_tests(open(path).read().split("\n"))
                count += code_lines(lines)
                if len(lines) > LIMIT:
                    big.append((len(lines), path))
        print(f"{count:7} {crate}")
        total += count
    print(f"{total:7} library code lines in all")
    print(f"files over {LIMIT} lines before their tests: {len(big)}")
    for n, path in sorted(big, reverse=True):
        print(f"{n:7} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
