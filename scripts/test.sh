#!/usr/bin/env bash
# Runs every test of the project. Installs the tools it needs (Go tools via `go install`,
# Python packages into a venv via pip, npm packages from the lock file), so a fresh machine with
# Rust, Go, Python 3 and Node 20 needs nothing else.
#
#   scripts/test.sh            everything
#   SKIP_LINT=1 scripts/test.sh   skip fmt/clippy/buf (quicker local loop)
set -euo pipefail
cd "$(dirname "$0")/.."

GRPCURL_VERSION=v1.9.3
BUF_VERSION=v1.61.0
export PATH="$(go env GOPATH)/bin:$PATH"

step() { printf '\n==> %s\n' "$*"; }

step "tools"
for component in rustfmt clippy; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
    rustup component add "$component"
  fi
done
if ! grpcurl -version 2>&1 | grep -q "${GRPCURL_VERSION#v}"; then
  go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@${GRPCURL_VERSION}"
fi
if ! buf --version 2>/dev/null | grep -q "${BUF_VERSION#v}"; then
  go install "github.com/bufbuild/buf/cmd/buf@${BUF_VERSION}"
fi
grpcurl -version
buf --version

if [ -z "${SKIP_LINT:-}" ]; then
  step "cargo fmt --check"
  cargo fmt --all -- --check
  step "cargo clippy -D warnings"
  cargo clippy --workspace --all-targets --locked -- -D warnings
  step "buf lint (STANDARD)"
  (cd proto && buf lint)
fi

step "MAC test vector (independent Python implementation)"
python3 proto/testdata/mac_vector.py --check

step "cargo test"
cargo test --workspace --locked

cargo build --release --locked -p entropy-gateway -p entropy-collector

step "smoke test: a real --dev gateway, grpcurl and the README recipes"
python3 scripts/smoke_dev.py target/release/entropy-gateway

step "smoke test: the diode demo (simulator -> collector -> gateway)"
python3 scripts/smoke_diode.py target/release

step "clients: generated code in sync, Python/Go/TypeScript suites, conformance of all languages"
GATEWAY_BIN=target/release/entropy-gateway clients/test.sh
