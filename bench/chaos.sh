#!/usr/bin/env bash
# Every chaos row at full length and the appliance-rate load test, their table kept:
#
#   bench/chaos.sh [--only rust,python,go,typescript,java]
#
# Builds release and the reader programs of the client languages, then runs
# scripts/chaos/chaos.py full and writes bench/results/<date>-chaos/chaos.md and chaos.json. Needs
# ghz (go install; scripts/test.sh installs it), faketime (apt-get install faketime; installed
# here when missing) and Go for toxiproxy (installed by chaos.py into target/tools/). About 12
# minutes on 2 cores. Recovery times are reported against their 5 s target, never asserted; a
# byte served twice or a client that does not recover fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$(go env GOPATH)/bin:$PATH"
. scripts/lib/setup.sh
apt_install faketime
build_release -q
python3 scripts/chaos/chaos.py full target/release --out "bench/results/$(date -u +%F)-chaos" "$@"
