#!/usr/bin/env bash
# The whole diode on one machine: entropy-simulator (a stand-in Quantis appliance, HTTPS)
# -> entropy-collector (health tests, signing; listens on nothing) -> entropy-gateway
# (public gRPC on 127.0.0.1:50051, ingest on 127.0.0.1:50052).
#
# The client API key is $ENTROPY_DEV_API_KEY (generated and printed when unset), as in dev
# mode. Keys and certificates are made fresh in a temporary directory, removed on exit.
# Ctrl-C or SIGTERM stops all three programs.
#
# Ports: PUBLIC_PORT (50051), INGEST_PORT (50052), SIM_PORT (8443), metrics and health HTTP
# GATEWAY_METRICS_PORT (9464) and COLLECTOR_METRICS_PORT (9465), on loopback. Binaries: BIN_DIR
# (target/release; built if missing). SIM_RATE: simulator bytes/s (80000, like an appliance).
set -euo pipefail
cd "$(dirname "$0")/.."

PUBLIC_PORT=${PUBLIC_PORT:-50051}
INGEST_PORT=${INGEST_PORT:-50052}
SIM_PORT=${SIM_PORT:-8443}
GATEWAY_METRICS_PORT=${GATEWAY_METRICS_PORT:-9464}
COLLECTOR_METRICS_PORT=${COLLECTOR_METRICS_PORT:-9465}
SIM_RATE=${SIM_RATE:-80000}
BIN_DIR=${BIN_DIR:-target/release}

if [ ! -x "$BIN_DIR/entropy-gateway" ] || [ ! -x "$BIN_DIR/entropy-collector" ] || [ ! -x "$BIN_DIR/entropy-simulator" ]; then
  cargo build --release --locked -p entropy-gateway -p entropy-collector
fi

random_hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

key_from_env=1
if [ -z "${ENTROPY_DEV_API_KEY:-}" ]; then
  ENTROPY_DEV_API_KEY="demo-$(random_hex 16)"
  key_from_env=0
fi

work=$(mktemp -d)
pids=()
cleanup() {
  trap - EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
  echo "diode demo stopped"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Keys: the client key's SHA-256 for the gateway; one MAC key shared by collector and gateway.
umask 077
mkdir "$work/mac-keys"
mac=$(random_hex 32)
echo "$mac" > "$work/mac-keys/demo.key"
echo "$mac" > "$work/collector-mac.key"
digest=$(printf '%s' "$ENTROPY_DEV_API_KEY" | sha256sum | cut -d' ' -f1)
# The scopes the recipes use: entropy (raw and DRBG), status and the quality check.
printf '[[key]]\nname = "demo"\nsha256 = "%s"\nscopes = ["entropy:read", "entropy:drbg", "status:read", "quality:check"]\n' "$digest" > "$work/api-keys.toml"

"$BIN_DIR/entropy-simulator" --listen-addr "127.0.0.1:$SIM_PORT" --tls \
  --cert-out "$work/simulator.pem" --rate-bytes-per-s "$SIM_RATE" > "$work/simulator.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/simulator.pem" ] && break; sleep 0.1; done
[ -s "$work/simulator.pem" ] || { echo "simulator did not start:"; cat "$work/simulator.log"; exit 1; }

"$BIN_DIR/entropy-gateway" --api-keys-file "$work/api-keys.toml" --ingest-keys-dir "$work/mac-keys" \
  --gateway-id demo --state-dir "$work/gateway-state" \
  --listen-addr "127.0.0.1:$PUBLIC_PORT" --ingest-listen-addr "127.0.0.1:$INGEST_PORT" \
  --pool-low-watermark-bytes 8192 --metrics-listen-addr "127.0.0.1:$GATEWAY_METRICS_PORT" &
pids+=($!)

cat > "$work/collector.toml" <<TOML
collector_id = "demo-collector"
key_id = "demo"
key_file = "$work/collector-mac.key"
chunk_bytes = 16384
mixing = "xor"
min_sources = 1
metrics_listen_addr = "127.0.0.1:$COLLECTOR_METRICS_PORT"

[[gateway]]
id = "demo"
endpoint = "http://127.0.0.1:$INGEST_PORT"

[[source]]
name = "quantis-sim"
type = "quantis"
url = "https://127.0.0.1:$SIM_PORT"
ca_file = "$work/simulator.pem"
TOML
# The gateway refuses chunks sealed before its start plus max_future_skew_ms (2 s: its restart
# rule, "before_start"), so the collector starts once that has passed, not into refusals.
for _ in $(seq 100); do
  curl -sf "127.0.0.1:$GATEWAY_METRICS_PORT/healthz" > /dev/null && break
  sleep 0.1
done
sleep 2.2
"$BIN_DIR/entropy-collector" --config "$work/collector.toml" &
pids+=($!)

key_shown=$([ "$key_from_env" = 1 ] && echo '$ENTROPY_DEV_API_KEY' || echo "$ENTROPY_DEV_API_KEY")
cat <<TEXT

Entropy Diode demo: simulator (https://127.0.0.1:$SIM_PORT, ${SIM_RATE} B/s) -> collector -> gateway (127.0.0.1:$PUBLIC_PORT)
API key: $([ "$key_from_env" = 1 ] && echo "from ENTROPY_DEV_API_KEY" || echo "$ENTROPY_DEV_API_KEY")
The pool fills at the simulator's rate; the gateway reports SERVING once it holds 8 KiB.

  grpcurl -plaintext -H "authorization: Bearer $key_shown" -d '{"num_bytes": 32, "encoding": "ENCODING_HEX"}' 127.0.0.1:$PUBLIC_PORT entropy.v1.EntropyService/GetRandom
  grpcurl -plaintext -H "authorization: Bearer $key_shown" -d '{}' 127.0.0.1:$PUBLIC_PORT entropy.v1.EntropyService/GetStatus
  curl -s 127.0.0.1:$GATEWAY_METRICS_PORT/metrics     # gateway series; /healthz, /readyz
  curl -s 127.0.0.1:$COLLECTOR_METRICS_PORT/metrics     # collector series; /healthz, /readyz

Ctrl-C stops all three.
TEXT

# Exit (and clean up) as soon as any of the three dies, or on a signal.
wait -n "${pids[@]}" || true
echo "a component exited; stopping the demo"
exit 1
