#!/usr/bin/env bash
# The scaled-out run with its longer throughput points (60,000 calls each), its numbers kept:
#
#   bench/scaleout.sh [--gateway-cpu 0.1]
#
# Builds release, the reader programs of every client language, then runs
# scripts/lab/scaleout.py --mode full and writes bench/results/<date>-scaleout.md and .json. Needs
# root (network namespaces, cgroups), haproxy (apt-get install haproxy), ghz and grpcurl
# (go install; scripts/test.sh installs both). Speed is reported, never asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$(go env GOPATH)/bin:$PATH"
. scripts/lib/setup.sh
apt_install haproxy
build_release -q
out="bench/results/$(date -u +%F)-scaleout"
python3 scripts/lab/scaleout.py target/release --mode full --report "$out.json" --markdown "$out.md" "$@"
echo "numbers: $out.md"
