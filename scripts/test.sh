#!/usr/bin/env bash
# Runs every test of the project. Installs the tools it needs (Debian packages via apt-get, Go
# tools via `go install`, cargo tools via `cargo install`, Python packages into a venv via pip,
# npm packages from the lock file), so a fresh Debian machine with Rust, Go, Python 3 and Node
# 20 needs nothing else.
#
#   scripts/test.sh            everything
#   SKIP_LINT=1 scripts/test.sh   skip fmt/clippy/buf (quicker local loop)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh

GRPCURL_VERSION=v1.9.3
BUF_VERSION=v1.61.0
GHZ_VERSION=v0.120.0 # the README's ghz recipes (smoke test); the same as bench/run.sh
export PATH="$(go env GOPATH)/bin:$PATH"

# Each step says when it started (minutes:seconds since the start), so a slow run shows where.
step() { printf '\n==> [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

# Disk: a full run from a clean clone writes a few GiB (debug, release and fuzz builds). A linker
# killed by SIGBUS is what a full disk looks like, so say up front how much room there is.
disk_report() { df -h . | awk 'NR == 2 { print "disk: " $4 " free of " $2 " (" $5 " used) at " $6 }'; }
step "tools"
disk_report
# Debian packages: prometheus (promtool and the scrape test), nftables and iputils-ping (the
# network-namespace diode test), iproute2 (namespaces), nghttp2-client (h2load, bench smoke),
# haproxy (the balancer of the scaled-out run), faketime (the chaos rows with a skewed clock),
# ent, rng-tools5 (rngtest) and dieharder (the statistical tests of the served bytes), shellcheck
# (actionlint lints each workflow step's script with it).
APT_PACKAGES=(prometheus nftables iputils-ping iproute2 nghttp2-client haproxy faketime ent rng-tools5 dieharder shellcheck)
missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  # The prometheus and haproxy packages may start their services; the tests run their own.
  # rng-tools5 brings rngd, of which only rngtest is wanted.
  for service in prometheus haproxy rngd; do
    if command -v systemctl >/dev/null && systemctl is-active --quiet "$service" 2>/dev/null; then
      $sudo systemctl disable --now "$service"
    elif [ -x "/etc/init.d/$service" ]; then
      $sudo "/etc/init.d/$service" stop >/dev/null 2>&1 || true
    fi
  done
fi
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
# `go install` builds report "dev" as their version: read the module version instead.
if ! go version -m "$(command -v ghz || echo /nonexistent)" 2>/dev/null | grep -q "bojand/ghz\s*$GHZ_VERSION"; then
  go install "github.com/bojand/ghz/cmd/ghz@${GHZ_VERSION}"
fi
grpcurl -version
buf --version
ghz --version

if [ -z "${SKIP_LINT:-}" ]; then
  step "cargo fmt --check"
  cargo fmt --all -- --check
  step "cargo clippy -D warnings"
  cargo clippy --workspace --all-targets --locked -- -D warnings
  step "buf lint (STANDARD)"
  (cd proto && buf lint)
fi

step "supply chain: cargo deny check bans licenses sources (offline) and the policy self-test"
scripts/cargo/deny.sh

step "MAC test vector (independent Python implementation)"
python3 proto/testdata/mac_vector.py --check

step "cargo test"
cargo test --workspace --locked

step "fuzz: every cargo-fuzz target for ${FUZZ_SECONDS:-20}s from the committed seeds (unoptimized build; long runs: fuzz/README.md)"
FUZZ_PROFILE=dev scripts/cargo/fuzz.sh "${FUZZ_SECONDS:-20}"

# With entropy-bench in the same invocation, so the bench smoke below reuses this build (one set
# of features for the release tree; see bench/tools/Cargo.toml). The benches and the Rust
# conformance reader, built later on their own, must resolve the same features:
python3 scripts/cargo/feature_sets.py
build_release

step "release: actionlint (with ShellCheck) on .github/workflows/; the .debs from the release build installed into a scratch root, their units verified, removed and purged"
ACTIONLINT_VERSION=v1.7.12
if ! actionlint -version 2>/dev/null | grep -qx "$ACTIONLINT_VERSION"; then
  go install "github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}"
fi
actionlint -no-color
scripts/release/preflight.sh --quick

step "smoke test: a real --dev gateway, grpcurl and the README recipes (grpcurl, ghz)"
python3 scripts/smoke/dev.py target/release/entropy-gateway

step "smoke test: Connect (JSON over HTTP): the README's curl and buf curl recipes"
python3 scripts/smoke/connect.py target/release/entropy-gateway

step "smoke test: verifiable draws: the README's walkthrough with the entropy CLI (a draw, a redraw, the auditor's checks)"
python3 scripts/smoke/receipts.py target/release

step "smoke test: the diode demo (simulator -> collector -> gateway)"
python3 scripts/smoke/diode.py target/release

step "quality of the served bytes: ent, rngtest and dieharder on 32 MiB from a dev gateway and from the diode, after a self-check that bad samples fail"
python3 scripts/quality/quality.py quick --bin-dir target/release --no-install

step "the diode in network namespaces: only the collector side can open a connection (root only; SKIP elsewhere)"
python3 scripts/lab/diode.py target/release

step "the host feeder: a QEMU guest (TCG) reads its virtio-rng, fed by entropy-feeder's EGD socket from a dev gateway; every byte one the gateway sent, none twice (SKIP only where QEMU cannot be installed)"
python3 scripts/lab/qemu_guest.py --feeder-bin target/release/entropy-feeder \
  --gateway-bin target/release/entropy-gateway

step "deploy: promtool (config, rules, rule unit tests), deploy configs, compose.yaml schema and policy, the feeder's systemd units"
scripts/deploy/configs.sh

step "Kubernetes: the Helm chart linted and rendered, decoded strictly into the k8s.io/api types, configs and policy checked"
scripts/deploy/helm.sh

step "a real Prometheus scrapes simulator -> collector -> gateway"
python3 scripts/deploy/prometheus_scrape.py target/release

step "compose rehearsal: the compose services in namespaces, as compose runs them (root only; SKIP elsewhere)"
python3 scripts/lab/compose_rehearsal.py target/release

step "resource sweep: hostile HTTP/2 of many shapes under the default and a tight config, each checked against the bound the gateway states (--print-bounds; full: bench/run.sh sweep)"
python3 bench/sweep.py --quick --bin-dir target/release

step "bench smoke: every benchmark scenario for a few seconds, and the report (speed is never asserted)"
bench/run.sh smoke

step "clients: generated code in sync, every language's suite, conformance with the restart rows, a throughput smoke"
GATEWAY_BIN=target/release/entropy-gateway clients/test.sh

step "MCP: entropy-mcp with the official Python MCP SDK (stdio, Streamable HTTP) and the Inspector CLI"
clients/mcp/tests/run.sh

step "scaled out: HAProxy before three gateways and two collectors in namespaces; a gateway killed and one drained under every reader (root only; SKIP elsewhere)"
python3 scripts/lab/scaleout.py target/release --no-build

step "chaos smoke: gateway, collector and links broken under every language's reader and a unary caller; nothing served twice, every client recovers (full: bench/chaos.sh)"
python3 scripts/chaos/chaos.py quick target/release --no-build

step "client packages: cargo package, python -m build, npm pack, go get from a tag, mvn package; each install line tried from a scratch project"
scripts/package_check.sh

step "done"
disk_report
du -sh target fuzz/target 2>/dev/null || true
