#!/usr/bin/env bash
# Hostile input, for longer than CI gives it:
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [PROPTEST_CASES]
#
# 1. the cargo-fuzz targets of fuzz/ (the wire codec in every connection
#    state), each for SECONDS_PER_TARGET (default 60; .ci/run uses 30),
#    after replaying the inputs kept in fuzz/regressions/<target>/;
# 2. the property tests of tests/integration/hostile.rs with PROPTEST_CASES
#    cases (default 300, as in `cargo test`) and a seed that changes with
#    every run (printed, so a failure can be replayed with
#    PGACCEL_PROPTEST_SEED=<seed>).
#
# A crash leaves its input in fuzz/artifacts/<target>/: copy it to
# fuzz/regressions/<target>/ once fixed, so every later run replays it.
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
cases="${2:-300}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install --locked cargo-fuzz
fi
for target in frontend startup; do
    regressions="fuzz/regressions/$target"
    mkdir -p "$regressions" "fuzz/corpus/$target"
    if compgen -G "$regressions/*" >/dev/null; then
        echo "fuzz: replaying $regressions"
        cargo +nightly fuzz run "$target" "$regressions"/* -- -runs=0
    fi
    echo "fuzz: $target for ${seconds}s"
    cargo +nightly fuzz run "$target" "fuzz/corpus/$target" -- -max_total_time="$seconds"
done

if [[ "$cases" != 0 ]]; then
    seed="${PGACCEL_PROPTEST_SEED:-$RANDOM$RANDOM}"
    echo "proptest: $cases cases, PGACCEL_PROPTEST_SEED=$seed"
    PGACCEL_PROPTEST_CASES="$cases" PGACCEL_PROPTEST_SEED="$seed" \
        cargo test --test integration -- hostile::arbitrary
fi
