#!/usr/bin/env bash
# The benchmark suite in one command: builds release, installs its tools, runs the scenarios
# with the server on CPU 0 and load generators on CPU 1, writes a report with tables and charts.
#
#   bench/run.sh [smoke|quick|full] [SCENARIO ...]   (default: quick, every scenario)
#   bench/run.sh sweep [--only CASE]                  the resource sweep, every shape at larger
#                                                    counts (bench/sweep.py --full; the test
#                                                    command runs --quick); full runs it too
#   bench/run.sh report [DIR]                        re-render DIR (default: the newest results
#                                                    dir) and BENCHMARKS.md from its CSVs
#
# Scenarios: baselines sustained burst concurrency payload streaming rtt ingest e2e micro.
# quick and full write bench/results/<date>-<suite>/ and update BENCHMARKS.md (only when every
# scenario ran); smoke writes to a temporary directory (or $BENCH_OUT) and exits non-zero when a
# scenario produced no data or calls failed. Speed is never asserted.
# Needs Rust, Go and Python 3; installs ghz (go install), h2load/nghttp and valgrind (apt-get
# install nghttp2-client valgrind) and matplotlib (pip, into bench/.venv).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh

GHZ_VERSION=v0.120.0
MATPLOTLIB_VERSION=3.10.8
export PATH="$(go env GOPATH)/bin:$PATH"
VENV=bench/.venv
PY="$VENV/bin/python"

step() { printf '\n==> %s\n' "$*"; }

tools() {
  step "tools"
  # `go install` builds report "dev" as their version: read the module version instead.
  if ! go version -m "$(command -v ghz || echo /nonexistent)" 2>/dev/null | grep -q "bojand/ghz\s*$GHZ_VERSION"; then
    go install "github.com/bojand/ghz/cmd/ghz@${GHZ_VERSION}"
  fi
  # h2load and nghttp (nghttp2-client); valgrind for the profile where perf cannot count
  # instructions (most VMs).
  missing=()
  command -v h2load >/dev/null && command -v nghttp >/dev/null || missing+=(nghttp2-client)
  command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null || missing+=(valgrind)
  if [ ${#missing[@]} != 0 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y "${missing[@]}" >/dev/null || {
      $SUDO apt-get update >/dev/null && $SUDO apt-get install -y "${missing[@]}" >/dev/null; }
  fi
  if [ ! -x "$PY" ]; then python3 -m venv "$VENV"; fi
  if ! "$PY" -c "import matplotlib; assert matplotlib.__version__ == '$MATPLOTLIB_VERSION'" 2>/dev/null; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "matplotlib==$MATPLOTLIB_VERSION"
  fi
  echo "ghz $GHZ_VERSION, $(h2load --version | head -1), matplotlib $MATPLOTLIB_VERSION"
}

if [ "${1:-}" = report ]; then
  newest="$(ls -d bench/results/*-quick bench/results/*-full 2>/dev/null | sort | tail -1 || true)"
  dir="${2:-$newest}"
  [ -n "$dir" ] || { echo "no results directory to report" >&2; exit 1; }
  tools
  "$PY" bench/driver/report.py "$dir" --benchmarks BENCHMARKS.md
  exit 0
fi

if [ "${1:-}" = sweep ]; then
  shift
  step "build (release)"
  cargo build --release --locked -q -p entropy-gateway -p entropy-bench
  exec python3 bench/sweep.py --full --findings "$@"
fi

suite=quick
case "${1:-}" in smoke|quick|full) suite=$1; shift ;; esac
scenarios=("$@")

tools
step "build (release)"
build_release -q
if [ "$suite" != smoke ]; then
  # The servers measured, as they ship: profile dist (fat LTO, Cargo.toml). Several minutes more
  # than release on two cores; smoke (the test command's) measures nothing and skips it.
  step "build (dist: the gateway, echo-server and rest-baseline as measured)"
  cargo build --profile dist --locked -q -p entropy-gateway -p entropy-bench \
    --bin entropy-gateway --bin echo-server --bin rest-baseline
  export ENTROPY_BENCH_SERVER_BIN="${CARGO_TARGET_DIR:-$PWD/target}/dist"
fi
if [ ${#scenarios[@]} = 0 ] || printf '%s\n' "${scenarios[@]}" | grep -qx micro; then
  # Only the three benches `micro` runs: without `--bench`, cargo also builds every binary of
  # entropy-bench as a bench harness and the metrics bench (minutes on two cores, for nothing).
  micro_benches=(-p entropy-bench --bench pool --bench stages --bench micro)
  cargo bench --locked -q --no-run "${micro_benches[@]}" 2>/dev/null ||
    cargo bench --locked --no-run "${micro_benches[@]}"
fi

if [ "$suite" = smoke ]; then
  out="${BENCH_OUT:-$(mktemp -d)/smoke}"
else
  out="bench/results/$(date -u +%Y-%m-%d-%H%M)-$suite"
fi
mkdir -p "$out"
step "suite $suite -> $out"
status=0
"$PY" bench/driver/bench.py "$suite" "${scenarios[@]}" --out "$out" || status=$?

step "report"
if [ "$suite" != smoke ] && [ ${#scenarios[@]} = 0 ]; then
  "$PY" bench/driver/report.py "$out" --benchmarks BENCHMARKS.md
else
  "$PY" bench/driver/report.py "$out"
fi
echo "report: $out/REPORT.md"
if [ "$suite" = full ] && [ ${#scenarios[@]} = 0 ]; then
  step "resource sweep (full)"
  python3 bench/sweep.py --full --findings | tee "$out/sweep.txt" || status=$?
fi
if [ "$status" != 0 ]; then echo "bench: some scenarios failed or produced no data (see PROBLEM lines)" >&2; fi
exit "$status"
