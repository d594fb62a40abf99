#!/usr/bin/env bash
# The macro corpus: each case in cases/ is the src/lib.rs of a small crate
# that depends on bulkhead, and is checked with `cargo check`. Not part of
# CI (it takes minutes); see README.md.
#
#   tools/macro-corpus/run.sh            every case
#   tools/macro-corpus/run.sh retry_     the cases whose name contains retry_
#
# A case's header comments say what it expects and how it is built:
#   // expect: pass            compiles without a warning
#   // expect: error ATR-012   fails, every error is coded, ATR-012 among them
#   // edition: 2018           (2021 by default; several, space-separated,
#                              check the case once in each: name@edition)
#   // dependency: bh = { package = "bulkhead", path = "ROOT" }
#                              replaces `bulkhead = { path = "ROOT" }`
#   // also: tokio = { version = "1", features = ["rt"] }
#                              another dependency (ROOT is this repository,
#                              SUPPORT is support/)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${CORPUS_DIR:-${CARGO_TARGET_DIR:-$root/target}/macro-corpus}
mkdir -p "$work/cases"
passed=0
failed=0
failures=()
for case in "$here"/cases/*.rs; do
  base=$(basename "$case" .rs)
  editions=$(sed -n 's|^// edition: ||p' "$case" | head -n1)
  for edition in ${editions:-2021}; do
    name=$base
    [[ $editions == *" "* ]] && name="$base@$edition"
    if [[ -n "${1:-}" && "$name" != *"$1"* ]]; then
        continue
    fi
    expect=$(sed -n 's|^// expect: ||p' "$case" | head -n1)
    dependency=$(sed -n 's|^// dependency: ||p' "$case" | head -n1)
    also=$(sed -n 's|^// also: ||p' "$case")
    dir="$work/cases/$name"
    mkdir -p "$dir/src"
    {
        printf '[package]\nname = "corpus_%s"\nversion = "0.0.0"\nedition = "%s"\npublish = false\n\n' \
            "${base//[^a-z0-9_]/_}" "$edition"
        printf '[dependencies]\n%s\n%s\n\n[workspace]\n' \
            "${dependency:-bulkhead = { path = \"ROOT\" \}}" "$also"
    } | sed -e "s|ROOT|$root|g" -e "s|SUPPORT|$here/support|g" >"$dir/Cargo.toml"
    cp "$case" "$dir/src/lib.rs"
    cp "$root/Cargo.lock" "$dir/Cargo.lock"
    (cd "$dir" && CARGO_TARGET_DIR="$work/target" cargo check --offline --quiet \
        --message-format=short >"$dir/stdout" 2>"$dir/stderr")
    status=$?
    # Error lines of the case's own crate, and those without a code.
    errors=$(grep -E '(^|: )error(\[E[0-9]+\])?: ' "$dir/stderr" \
        | grep -v -E 'error: could not compile|aborting due to' || true)
    uncoded=$(printf '%s\n' "$errors" | grep -v -E 'error(\[E[0-9]+\])?: ATR-[0-9]{3}: ' | grep . || true)
    verdict=ok
    case "$expect" in
        pass)
            if [[ $status -ne 0 ]]; then
                verdict="did not compile"
            elif grep -q 'warning' "$dir/stderr"; then
                verdict="compiled with warnings"
            fi
            ;;
        error\ ATR-*)
            code=${expect#error }
            if [[ $status -eq 0 ]]; then
                verdict="compiled, expected $code"
            elif [[ -n "$uncoded" ]]; then
                verdict="uncoded errors"
            elif ! grep -q "$code" "$dir/stderr"; then
                verdict="no $code"
            fi
            ;;
        *)
            verdict="no '// expect:' line"
            ;;
    esac
    if [[ $verdict == ok ]]; then
        passed=$((passed + 1))
        printf 'ok    %s\n' "$name"
    else
        failed=$((failed + 1))
        failures+=("$name")
        printf 'FAIL  %s: %s (see %s/stderr)\n' "$name" "$verdict" "$dir"
    fi
  done
done
printf '\n%d passed, %d failed\n' "$passed" "$failed"
for name in "${failures[@]}"; do
    printf '  %s\n' "$name"
done
[[ $failed -eq 0 ]]
