#!/usr/bin/env bash
# Tests every client library: the one entry point for the project's test command.
#
#   clients/test.sh                       uses target/release/entropy-gateway
#   GATEWAY_BIN=/path/to/entropy-gateway clients/test.sh
#
# Needs Go, Node 20+ (npm), Python 3.10+ (with venv), a JDK 17+ and Maven; installs everything
# else itself, pinned: generators (clients/generate.sh), Python packages into python/.venv, npm
# packages from typescript/ and web/package-lock.json, Go modules from go/go.sum, Maven artifacts
# from java/pom.xml (into ~/.m2), and Debian's chromium (apt-get) when /usr/bin/chromium is
# missing. Steps, in order, stopping at the first failure:
#   1. regenerate all generated code and fail if it differs from what is checked in
#   2. Python: mypy --strict, pytest        (each suite starts its own dev gateway)
#   3. Go: gofmt, go vet, go test
#   4. TypeScript: tsc --strict, node --test
#   5. Java: mvn test (code generated from proto/ at build time)
#   6. Browser: tsc --strict, esbuild, node --test (the client in Node, the page in headless
#      Chromium), each against a dev gateway with gRPC-Web on
#   7. conformance: every language against ONE gateway, then the restart rows (restart.py);
#      its last line is the summary
#   8. a throughput smoke (throughput.py): every language's reader and raw stub run
set -euo pipefail

CLIENTS="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$CLIENTS")"
GATEWAY_BIN="${GATEWAY_BIN:-$ROOT/target/release/entropy-gateway}"
case "$GATEWAY_BIN" in /*) ;; *) GATEWAY_BIN="$PWD/$GATEWAY_BIN" ;; esac # the suites chdir
export GATEWAY_BIN

step() { printf '\n==> [clients %d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

for tool in go node npm python3 java mvn; do
  command -v "$tool" >/dev/null || { echo "clients/test.sh needs $tool on PATH" >&2; exit 1; }
done
export PATH="$(go env GOPATH)/bin:$PATH"
if [ ! -x "$GATEWAY_BIN" ]; then
  echo "no gateway binary at $GATEWAY_BIN: build it (cargo build --release -p entropy-gateway)" \
    "or set GATEWAY_BIN" >&2
  exit 1
fi

step "generated code matches proto/ (clients/generate.sh)"
# web/src/gen, web/src/status.ts and web/src/provenance.ts are copies of typescript's, made by
# generate.sh.
GENERATED=(python/src/entropy_diode/_gen go/gen typescript/src/gen web/src/gen web/src/status.ts web/src/provenance.ts)
snapshot="$(mktemp -d)"
trap 'rm -rf "$snapshot"' EXIT
for path in "${GENERATED[@]}"; do
  mkdir -p "$snapshot/$(dirname "$path")"
  if [ -e "$CLIENTS/$path" ]; then cp -a "$CLIENTS/$path" "$snapshot/$path"; fi
done
"$CLIENTS/generate.sh" # also installs the pinned generators and each language's packages
stale=0
for path in "${GENERATED[@]}"; do
  diff -ruN "$snapshot/$path" "$CLIENTS/$path" || stale=1
done
if [ "$stale" != 0 ]; then
  echo "generated code was out of date with proto/: the tree now holds the regenerated code;" \
    "review and commit it" >&2
  exit 1
fi

step "python: install, mypy --strict, pytest"
cd "$CLIENTS/python"
# Editable, without build isolation: flit-core is pinned in requirements-dev.txt, so this needs
# no index and tests run against the source tree.
.venv/bin/pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps -e .
.venv/bin/mypy
.venv/bin/pytest -q -p no:cacheprovider

step "go: gofmt, vet, test"
cd "$CLIENTS/go"
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...
go test -count=1 ./...

step "typescript: tsc --strict, node --test"
cd "$CLIENTS/typescript"
npm test --silent

step "java: mvn test (each suite starts its own dev gateway)"
cd "$CLIENTS/java"
# -ntp: no download progress lines; artifacts are cached in ~/.m2 after the first run.
mvn -B -ntp test

step "browser: tsc --strict, esbuild, node --test (Node and headless Chromium)"
CHROMIUM_BIN="${CHROMIUM_BIN:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM_BIN" ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium
fi
export CHROMIUM_BIN
cd "$CLIENTS/web"
npm test --silent

step "conformance: every language against one gateway, then the restart rows"
python3 "$CLIENTS/conformance/run.py" --gateway "$GATEWAY_BIN"

step "stream throughput smoke: every reader and raw stub against a pre-filled pool (the table in README.md comes from a full run)"
python3 "$CLIENTS/conformance/throughput.py" --skip-build --total-mib 16 --reps 1
