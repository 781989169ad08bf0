#!/usr/bin/env bash
# End-to-end test of entropy-mcp with real MCP clients against real gateways (see e2e.py).
#
#   clients/mcp/tests/run.sh
#
# Builds what it runs (release: entropy-gateway, entropy-mcp, and the `entropy` CLI as a direct
# caller), installs the official MCP Python SDK (pinned, into tests/.venv) and the MCP Inspector
# (pinned by tests/inspector/package-lock.json, with `npm ci`). Needs Python 3.10+ with venv;
# Node and npm for the Inspector: when it cannot be installed, only the Inspector check is
# skipped, and the output says why.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
cd "$ROOT"

# The same packages as the test command's release build, so this is a no-op after it (one
# feature set for the release tree).
cargo build --release --locked -q -p entropy-gateway -p entropy-collector -p entropy-bench -p entropy-mcp \
  -p entropy-diode-cli

VENV="$HERE/.venv"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"

unset INSPECTOR_UNAVAILABLE
if ! command -v npm >/dev/null; then
  export INSPECTOR_UNAVAILABLE="npm is not installed"
elif [ ! -x "$HERE/inspector/node_modules/.bin/mcp-inspector" ] \
  || [ "$HERE/inspector/package-lock.json" -nt "$HERE/inspector/node_modules/.package-lock.json" ]; then
  if ! log="$(cd "$HERE/inspector" && npm ci --no-audit --no-fund 2>&1)"; then
    export INSPECTOR_UNAVAILABLE="npm ci failed: $(tail -n 3 <<<"$log" | tr '\n' ' ')"
  fi
fi

cd "$HERE"
exec "$VENV/bin/python" e2e.py
