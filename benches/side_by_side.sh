#!/usr/bin/env bash
# Runs criterion bench binaries alternately, several rounds, and prints each
# case's median of medians (and their range) per binary: a side-by-side
# comparison that a busy machine distorts less than runs taken one after
# the other.
#
# Usage (from the repository root):
#
#   benches/side_by_side.sh FILTER ROUNDS LABEL=BINARY [LABEL=BINARY ...]
#
# FILTER is a criterion filter ("" for every case), each BINARY a bench
# executable (`cargo bench --bench policies --no-run` prints its path; copy
# it before building another commit, since the name stays the same). Results
# go to target/criterion-side-by-side, baselines named LABEL-ROUND.
set -euo pipefail
filter=$1
rounds=$2
shift 2
home=${CRITERION_SIDE_BY_SIDE:-target/criterion-side-by-side}
labels=()
for round in $(seq 1 "$rounds"); do
  for pair in "$@"; do
    label=${pair%%=*}
    binary=${pair#*=}
    [[ $round == 1 ]] && labels+=("$label")
    CRITERION_HOME=$home "$binary" --bench --warm-up-time 0.3 --measurement-time 1 \
      --noplot --save-baseline "$label-$round" "$filter" > /dev/null 2>&1
  done
done
python3 "$(dirname "$0")/side_by_side.py" "$home" "$rounds" "${labels[@]}"
