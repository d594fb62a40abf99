#!/usr/bin/env python3
"""The files that name a policy (issue 27's walk of a policy's name).

For each policy (or those given: `python3 tools/size/policy_files.py hedge`),
lists the library files (every crate's `src/`, comments and test code
aside) and the docs that name it: its types (`Hedge`, `HedgeConfig`,
`HedgeHandle`, `HedgeEvent`, ...), its kind (`PolicyKind::Hedge`) and its
snake-case name as a word (`hedge`: a `mod hedge`, a method, a key
`[hedge]`), and the files named after it (`table/hedge.rs`). Its own folder in
core counts as one entry, and so do the facade's generated docs. These are
the files a new policy touches; ARCHITECTURE.md, *Adding a policy*, lists
them and why. Run from the repository's root.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import size  # noqa: E402

POLICIES = {
    "bulkhead": "Bulkhead",
    "retry": "Retry",
    "circuit_breaker": "CircuitBreaker",
    "timeout": "Timeout",
    "rate_limiter": "RateLimiter",
    "hedge": "Hedge",
    "fallback": "Fallback",
    "chaos": "Chaos",
}
DOCS = ["README.md", "ARCHITECTURE.md", "docs"]


def code(path):
    """The library code of a `.rs` file: its lines before its test module,
    comments aside."""
    if size.is_test_file(path):
        return ""
    lines = size.before_tests(open(path).read().split("\n"))
    return "\n".join(l.split("//")[0] for l in lines)


def names(snake, camel, text):
    words = re.split(r"[^A-Za-z0-9_]+", text)
    return any(w == snake or w == camel or (w.startswith(camel) and w[len(camel):len(camel) + 1].isupper())
               for w in words)


def walk(snake):
    camel = POLICIES[snake]
    own = os.path.join("bulkhead-core", "src", snake)
    found = set()
    for crate in size.CRATES:
        for root, _, files in os.walk(crate):
            for f in files:
                path = os.path.join(root, f)
                if not f.endswith(".rs"):
                    continue
                if path.startswith(own + os.sep) or path == own + ".rs":
                    found.add(own + "/")
                elif f == snake + ".rs" or names(snake, camel, code(path)):
                    found.add(path)
    for doc in DOCS:
        paths = [doc] if os.path.isfile(doc) else [
            os.path.join(r, f) for r, _, fs in os.walk(doc) for f in fs if f.endswith(".md")]
        for path in paths:
            if names(snake, camel, open(path).read()):
                found.add(path)
    return sorted(found)


def main(args):
    for snake in args or POLICIES:
        files = walk(snake)
        code_files = [f for f in files if not f.endswith(".md")]
        print(f"{snake}: {len(code_files)} code files (its core folder as one), "
              f"{len(files) - len(code_files)} docs")
        for f in files:
            print(f"  {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
