#!/usr/bin/env python3
"""Fails when a package in Cargo.lock declares a higher rust-version than ours.

No other toolchain can be installed here, so the declared minimum is checked
against what every dependency (normal, build and dev) declares: the
workspace's `rust-version` must be at least the highest of them.
"""
import json
import subprocess
import sys


def version(text):
    """`1.88` and `1.88.0` alike, as (major, minor, patch)."""
    parts = [int(part) for part in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    metadata = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    members = set(metadata["workspace_members"])
    ours = {
        package["rust_version"]
        for package in metadata["packages"]
        if package["id"] in members
    }
    if len(ours) != 1 or None in ours:
        sys.exit(f"every workspace member must declare one rust-version, found {ours}")
    ours = ours.pop()
    higher = sorted(
        (version(package["rust_version"]), package["name"], package["version"])
        for package in metadata["packages"]
        if package["id"] not in members
        and package.get("rust_version")
        and version(package["rust_version"]) > version(ours)
    )
    if higher:
        for needed, name, release in higher:
            print(f"{name} {release} needs Rust {'.'.join(map(str, needed))}")
        sys.exit(f"rust-version = {ours} is lower than what the dependencies above need")
    print(f"rust-version = {ours}: no dependency in Cargo.lock needs more")


if __name__ == "__main__":
    main()
