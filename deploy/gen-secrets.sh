#!/usr/bin/env bash
# Makes the throwaway secrets compose.yaml mounts, for a local demo:
#
#   deploy/gen-secrets.sh [DIR]        (DIR defaults to deploy/secrets; refuses to overwrite)
#
#   mac.key              chunk MAC key (hex, 32 bytes), shared by collector and gateway
#   api-keys.toml        the gateway's keys file: one client key named "demo" (SHA-256 only)
#   client-api-key       the "demo" client's secret, for grpcurl and the clients
#   ca.pem               a throwaway CA (its private key is not kept)
#   gateway.pem/.key     gateway certificate for "gateway", "gateway-2", "gateway-3" (the
#                        `scale` profile's gateways, dialled by name), "localhost", "127.0.0.1"
#   lb.pem               gateway.pem and gateway.key in one file: HAProxy's LB_CERT (`scale`)
#   collector.pem/.key   collector client certificate (mTLS on the ingest listener)
#   grafana-admin-password
#
# Uses `entropy-gateway keygen` and `entropy-gateway dev-certs` (ENTROPY_GATEWAY_BIN, else
# target/release/entropy-gateway, else `entropy-gateway` on PATH).
#
# Permissions: DIR is 0700, so other users of this host cannot reach the files; the files
# themselves are 0444 because compose bind-mounts file secrets with the host's owner and mode,
# and the containers run as other unprivileged users (10001, nobody, grafana, haproxy) that must read
# them. For production use real secret storage and a real CA.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${1:-$ROOT/deploy/secrets}"

BIN="${ENTROPY_GATEWAY_BIN:-$ROOT/target/release/entropy-gateway}"
if [ ! -x "$BIN" ]; then
  BIN="$(command -v entropy-gateway || true)"
fi
if [ -z "$BIN" ]; then
  echo "gen-secrets: no entropy-gateway binary: cargo build --release -p entropy-gateway" >&2
  exit 1
fi

if [ -e "$DIR/mac.key" ]; then
  echo "gen-secrets: $DIR already holds secrets; remove them first to make new ones" >&2
  exit 1
fi
mkdir -p "$DIR"
chmod 0700 "$DIR"

random_hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

random_hex 32 > "$DIR/mac.key"
random_hex 16 > "$DIR/grafana-admin-password"

# keygen prints the secret on stdout and the keys-file entry (after some advice) on stderr.
"$BIN" keygen --name demo > "$DIR/client-api-key" 2> "$DIR/keygen.err"
sed -n '/^\[\[key\]\]/,$p' "$DIR/keygen.err" > "$DIR/api-keys.toml"
rm "$DIR/keygen.err"
grep -q '^sha256 = ' "$DIR/api-keys.toml" || { echo "gen-secrets: keygen gave no entry" >&2; exit 1; }

"$BIN" dev-certs --out "$DIR" --host gateway --host gateway-2 --host gateway-3 \
  --host localhost --host 127.0.0.1 > /dev/null
# HAProxy reads its certificate chain and private key from one PEM.
cat "$DIR/gateway.pem" "$DIR/gateway.key" > "$DIR/lb.pem"

chmod 0444 "$DIR"/*
echo "secrets written to $DIR"
echo "client key: \$(cat $DIR/client-api-key)   CA for grpcurl -cacert: $DIR/ca.pem"
