#!/usr/bin/env bash
# Builds every cargo-fuzz target in fuzz/ and runs each for SECONDS (default 20) from its
# committed seed corpus (fuzz/corpus/<target>/). Fails when a target crashes, panics (an
# invariant broke) or hangs; the input is left in fuzz/artifacts/<target>/.
#
#   scripts/cargo/fuzz.sh [SECONDS]
#   FUZZ_PROFILE=dev scripts/cargo/fuzz.sh [SECONDS]
#   FUZZ_JOBS=1 scripts/cargo/fuzz.sh [SECONDS]     # one target at a time (default: one per core)
#
# FUZZ_PROFILE=dev (what the test command uses for its short run) builds the targets without
# optimizations: about 40% less build time, fewer executions a second. Long runs use the
# default, an optimized build.
#
# Installs what it needs: a nightly toolchain (rustup, minimal profile) and cargo-fuzz
# (pinned). Where no nightly can be installed, it uses the stable toolchain with
# RUSTC_BOOTSTRAP=1 (cargo-fuzz supports that). Long runs: fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_TARGET="${1:-20}"
CARGO_FUZZ_VERSION=0.13.2

if ! cargo fuzz --version 2>/dev/null | grep -qx "cargo-fuzz ${CARGO_FUZZ_VERSION}"; then
  # ~30 s on 2 cores.
  cargo install cargo-fuzz --version "${CARGO_FUZZ_VERSION}" --locked
fi

toolchain=()
if rustup run nightly rustc --version >/dev/null 2>&1 \
  || rustup toolchain install nightly --profile minimal; then
  toolchain=(+nightly)
else
  echo "fuzz: no nightly toolchain could be installed; using stable with RUSTC_BOOTSTRAP=1"
  export RUSTC_BOOTSTRAP=1
fi
cargo "${toolchain[@]}" --version

cd fuzz
# No sanitizer: the code is safe Rust (unsafe is forbidden), and the run is 2-3x faster.
# Debug assertions on: overflow checks and debug_assert! count as findings.
flags=(--sanitizer none --debug-assertions)
case "${FUZZ_PROFILE:-release}" in
  dev) flags+=(--dev) ;;
  release) ;;
  *) echo "fuzz: FUZZ_PROFILE must be dev or release, not ${FUZZ_PROFILE}" >&2; exit 64 ;;
esac
cargo "${toolchain[@]}" fuzz build "${flags[@]}"

mapfile -t targets < <(cargo "${toolchain[@]}" fuzz list)
# Each run is one process on one core: FUZZ_JOBS (default: the number of cores) run at a time.
jobs="${FUZZ_JOBS:-$(nproc)}"
run_target() {
  local target="$1"
  # New inputs go to a scratch corpus under target/, so the committed seeds stay as they are.
  local scratch="target/fuzz-corpus/${target}"
  mkdir -p "$scratch" "corpus/${target}"
  cargo "${toolchain[@]}" fuzz run "${flags[@]}" "$target" "$scratch" "corpus/${target}" -- \
    -max_total_time="${SECONDS_PER_TARGET}" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 2>"target/fuzz-${target}.log"
}
report() {
  local target="$1" status="$2"
  if [ "$status" != 0 ]; then
    tail -n 60 "target/fuzz-${target}.log" >&2
    echo "fuzz: ${target} FAILED; reproduce with:" >&2
    echo "  (cd fuzz && cargo ${toolchain[*]} fuzz run ${flags[*]} ${target} artifacts/${target}/<file>)" >&2
    return 1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|Done [0-9]+ runs" \
    "target/fuzz-${target}.log" | sed "s/^/  ${target}: /"
}
failed=0
for ((i = 0; i < ${#targets[@]}; i += jobs)); do
  batch=("${targets[@]:i:jobs}")
  echo "==> fuzz ${batch[*]} for ${SECONDS_PER_TARGET}s (side by side)"
  pids=()
  for target in "${batch[@]}"; do
    run_target "$target" &
    pids+=($!)
  done
  for j in "${!batch[@]}"; do
    status=0
    wait "${pids[j]}" || status=$?
    report "${batch[j]}" "$status" || failed=1
  done
  [ "$failed" = 0 ] || exit 1
done
echo "fuzz: ${#targets[@]} targets, ${SECONDS_PER_TARGET}s each, no failure"
