#!/usr/bin/env bash
# Builds the user crate (release profile, no LTO, as a user's crate is
# built) and runs its loops: 15 interleaved rounds of 4 M calls per case,
# best round per case, then the ratios of the targets of issues 15 and 29
# and issue 29's gaps in ns. Prints the machine, the toolchain, the commit
# and the load average around the run first, since the figures depend on
# all four.
#
# Usage (from anywhere):
#
#   perf/user-crate/run.sh            # every case
#   perf/user-crate/run.sh wrapper floor_cas_call direct   # only these
#
# BULKHEAD_CALLS and BULKHEAD_ROUNDS override 4,000,000 and 15;
# CARGO_TARGET_DIR is honoured (default: perf/user-crate/target).
set -euo pipefail
cd "$(dirname "$0")"
cargo build --release --quiet
target=${CARGO_TARGET_DIR:-target}
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- ../.. || echo ' (with local changes)')"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) vCPUs"
echo "rustc: $(rustc -V)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$target/release/bulkhead-user-crate" "$@"
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
