#!/usr/bin/env bash
# Offline statistical tests of the bytes the gateway serves (ent, rngtest, dieharder) on a fresh
# dev gateway and a fresh simulator -> collector -> gateway diode, after a self-check that the
# thresholds fail deliberately bad samples. A thin wrapper around scripts/quality/quality.py:
#
#   bench/quality.sh [quick|full] [scripts/quality/quality.py options]
#
# quick: 32 MiB per system for ent and rngtest, dieharder -d 0, 8 and 15 on a live stream; under
#        a minute here; writes nothing unless given --out DIR.
# full:  1 GiB per system and `dieharder -a` on a live stream (hours: see bench/README.md);
#        writes bench/results/<date>-quality/quality.md and quality.json (raw/ is git-ignored).
#        A shorter full run: --bytes 256MiB --dieharder-tests 0,1,2
#
# BIN_DIR: the binaries to use; unset, target/release is built here first (the release
# packages of bench/run.sh, so the tree keeps one feature set: scripts/cargo/feature_sets.py).
# Installs ent, rng-tools5 (rngtest) and dieharder with apt-get when missing. Exits 1 on any FAIL.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh

mode=quick
case "${1:-}" in quick|full) mode=$1; shift ;; esac
command="bench/quality.sh $mode${*:+ $*}"
if [ -n "${BIN_DIR:-}" ]; then
  command="BIN_DIR=$BIN_DIR $command"
else
  BIN_DIR=target/release
  build_release -q
fi
out=()
if [ "$mode" = full ]; then out=(--out "bench/results/$(date -u +%F)-quality"); fi
QUALITY_COMMAND="$command" \
  exec python3 scripts/quality/quality.py "$mode" --bin-dir "$BIN_DIR" "${out[@]}" "$@"
