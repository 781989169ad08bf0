#!/usr/bin/env bash
# Maximum publish throughput of entropy-collector with the OS source, and its CPU cost per MB.
#
# Starts a gateway (pinned to CPU 0) with a pool large enough not to fill during the run, and
# a collector (pinned to CPU 1) with one `os` source, then samples the gateway's ingested bytes
# (GetStatus) and both processes' CPU time (/proc/PID/stat) over DURATION seconds.
#
#   bench/collector_throughput.sh [DURATION_S] [CHUNK_BYTES]     (defaults: 5, 65536)
#
# Prints one Markdown table row per run; bench/results/collector.md keeps the numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-5}
CHUNK=${2:-65536}
POOL=$((4 << 30))
export PATH="$(go env GOPATH)/bin:$PATH"
cargo build --release --locked -q -p entropy-gateway -p entropy-collector

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# Two distinct ports from the repo's one picker (scripts/lib/ports.py).
read -r PUB ING < <(python3 -c 'import sys; sys.path.insert(0, "scripts/lib"); from ports import free_port; print(free_port(), free_port())')
KEY=bench-key
mkdir "$work/mac"; mac=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
echo "$mac" > "$work/mac/k1.key"; echo "$mac" > "$work/k1.key"
printf '[[key]]\nname = "bench"\nsha256 = "%s"\n' "$(printf %s "$KEY" | sha256sum | cut -d' ' -f1)" > "$work/keys.toml"
cat > "$work/collector.toml" <<TOML
collector_id = "bench"
key_id = "k1"
key_file = "$work/k1.key"
chunk_bytes = $CHUNK
mixing = "none"
buffer_chunks = 16
metrics_listen_addr = ""
[[gateway]]
id = "bench"
endpoint = "http://127.0.0.1:$ING"
[[source]]
name = "os"
type = "os"
min_entropy_per_byte = 8.0
TOML

taskset -c 0 target/release/entropy-gateway --api-keys-file "$work/keys.toml" --ingest-keys-dir "$work/mac" \
  --gateway-id bench --state-dir "$work/gateway-state" \
  --listen-addr "127.0.0.1:$PUB" --ingest-listen-addr "127.0.0.1:$ING" --pool-capacity-bytes "$POOL" \
  --max-chunk-bytes $((CHUNK > 1048576 ? CHUNK : 1048576)) --log-filter warn --metrics-listen-addr "" &
gw=$!; pids+=("$gw")
sleep 0.5
taskset -c 1 target/release/entropy-collector --config "$work/collector.toml" 2> "$work/collector.log" &
col=$!; pids+=("$col")

ingested() {
  grpcurl -plaintext -H "authorization: Bearer $KEY" -d '{}' "127.0.0.1:$PUB" entropy.v1.EntropyService/GetStatus |
    python3 -c 'import json,sys; print(json.load(sys.stdin).get("ingestedBytesTotal", 0))'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

sleep 1 # start-up test and connection set-up
b0=$(ingested); c0=$(cpu_ticks "$col"); g0=$(cpu_ticks "$gw"); t0=$(date +%s.%N)
sleep "$DURATION"
b1=$(ingested); c1=$(cpu_ticks "$col"); g1=$(cpu_ticks "$gw"); t1=$(date +%s.%N)

python3 - "$b0" "$b1" "$c0" "$c1" "$g0" "$g1" "$t0" "$t1" "$CHUNK" "$(getconf CLK_TCK)" <<'PY'
import sys
b0, b1, c0, c1, g0, g1 = map(int, sys.argv[1:7])
t0, t1 = map(float, sys.argv[7:9])
chunk, hz = int(sys.argv[9]), int(sys.argv[10])
mb = (b1 - b0) / 1e6
secs = t1 - t0
col_cpu, gw_cpu = (c1 - c0) / hz, (g1 - g0) / hz
print("| chunk bytes | MB/s published | collector CPU (cores) | collector CPU ms per MB | gateway CPU (cores) | gateway CPU ms per MB |")
print("|---|---|---|---|---|---|")
print(f"| {chunk} | {mb / secs:.0f} | {col_cpu / secs:.2f} | {1000 * col_cpu / mb:.2f} | {gw_cpu / secs:.2f} | {1000 * gw_cpu / mb:.2f} |")
PY
