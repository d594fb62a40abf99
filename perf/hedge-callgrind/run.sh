#!/usr/bin/env bash
# Instructions per call of each case of src/main.rs under callgrind: builds
# the crate (release, no LTO), runs each case alone with collection on only
# inside its loop (`--toggle-collect=*case_<name>*`) and prints the loop's
# instructions divided by the calls.
#
# Usage: perf/hedge-callgrind/run.sh [case...]   (default: every case)
# BULKHEAD_CALLS overrides 100,000; CARGO_TARGET_DIR is honoured.
set -euo pipefail
cd "$(dirname "$0")"
cargo build --release --quiet
target=${CARGO_TARGET_DIR:-target}
calls=${BULKHEAD_CALLS:-100000}
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(wrapper_hedge wrapper_retry pipeline_hedge pipeline_retry pipeline_bulkhead pipeline_none)
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- ../.. || echo ' (with local changes)')"
out=$(mktemp -d)
for case in "${cases[@]}"; do
    BULKHEAD_CALLS=$calls valgrind --tool=callgrind --callgrind-out-file="$out/$case" \
        --toggle-collect="*case_${case}*" \
        "$target/release/bulkhead-hedge-callgrind" "$case" >/dev/null 2>&1
    total=$(grep -m1 '^summary:' "$out/$case" | awk '{print $2}')
    echo "$case: $(( total / calls )) instructions/call ($total over $calls calls)"
done
rm -rf "$out"
