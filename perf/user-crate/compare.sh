#!/usr/bin/env bash
# Side by side: the user crate built against an older commit and against
# this checkout, run alternately in one session on one machine, so that a
# change's cost is a ratio measured under the same conditions.
#
# Usage (from anywhere):
#
#   perf/user-crate/compare.sh <old-rev> [case ...]
#
# e.g. `perf/user-crate/compare.sh 4e8e9a0 wrapper wrapper_rejected try_enter
# try_enter_rejected`. Builds <old-rev>'s user crate in a temporary git
# worktree (its own target directory) and this checkout's, then runs
# old, new, old, new, old, new (BULKHEAD_PAIRS overrides 3), each run
# with the binary's own rounds (BULKHEAD_ROUNDS, BULKHEAD_CALLS honoured).
# Cases the old commit does not have print nothing on its side.
set -euo pipefail
old=${1:?usage: compare.sh <old-rev> [case ...]}
shift
here="$(cd "$(dirname "$0")" && pwd)"
root="$(git -C "$here" rev-parse --show-toplevel)"
tree="$(mktemp -d /tmp/bulkhead-compare.XXXXXX)"
trap 'git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || true' EXIT
git -C "$root" worktree add --detach --quiet "$tree" "$old"
old_target="${COMPARE_OLD_TARGET:-/tmp/bulkhead-compare-target-old}"
new_target="${COMPARE_NEW_TARGET:-/tmp/bulkhead-compare-target-new}"
(cd "$tree/perf/user-crate" && CARGO_TARGET_DIR="$old_target" cargo build --release --quiet)
(cd "$here" && CARGO_TARGET_DIR="$new_target" cargo build --release --quiet)
echo "old: $(git -C "$root" rev-parse --short "$old")  new: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD || echo ' (with local changes)')"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) vCPUs"
echo "rustc: $(rustc -V)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for pair in $(seq "${BULKHEAD_PAIRS:-3}"); do
    for side in old new; do
        target=$old_target
        [ "$side" = new ] && target=$new_target
        echo
        echo "## $side, pair $pair"
        "$target/release/bulkhead-user-crate" "$@"
    done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
