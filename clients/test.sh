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
# missing. Steps, stopping at the first that fails:
#   1. regenerate all generated code and fail if it differs from what is checked in
#   2-6. side by side (each suite starts its own dev gateways; all five run to the end):
#   2. Python: mypy --strict, pytest
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

# The five language suites run side by side: each is mostly waiting (on its gateways, on
# timeouts and backoffs it tests), about 100 s of CPU in 280 s one after another. Each draws its
# ports from a range of its own (TEST_PORT_RANGE, read by every harness's picker), so no two
# suites pick the same port at once. Each suite's output is shown when all are done, in order.
python_suite() {
  cd "$CLIENTS/python"
  .venv/bin/pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps -e .
  .venv/bin/mypy
  .venv/bin/pytest -q -p no:cacheprovider
}
go_suite() {
  cd "$CLIENTS/go"
  local unformatted
  unformatted="$(gofmt -l .)"
  if [ -n "$unformatted" ]; then
    echo "gofmt would change: $unformatted" >&2
    return 1
  fi
  go vet ./...
  go test -count=1 ./...
}
typescript_suite() { cd "$CLIENTS/typescript" && npm test --silent; }
java_suite() { cd "$CLIENTS/java" && mvn -B -ntp test; }
browser_suite() { cd "$CLIENTS/web" && npm test --silent; }

CHROMIUM_BIN="${CHROMIUM_BIN:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM_BIN" ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium
fi
export CHROMIUM_BIN

SUITES=(
  "python|python: install, mypy --strict, pytest|10000-14999"
  "go|go: gofmt, vet, test|15000-19999"
  "typescript|typescript: tsc --strict, node --test|20000-24999"
  "java|java: mvn test (each suite starts its own dev gateway)|25000-29999"
  "browser|browser: tsc --strict, esbuild, node --test (Node and headless Chromium)|30000-32767"
)
step "the language suites, side by side: python, go, typescript, java, browser"
logs="$snapshot/logs"
mkdir -p "$logs"
pids=()
for entry in "${SUITES[@]}"; do
  IFS='|' read -r name _ range <<<"$entry"
  (
    started=$SECONDS
    set +e
    # A plain command (not under || or if), so errexit holds inside the suite's function.
    (
      set -e
      export TEST_PORT_RANGE="$range"
      "${name}_suite"
    )
    status=$?
    echo "$status $((SECONDS - started))" >"$logs/$name.result"
  ) >"$logs/$name.log" 2>&1 &
  pids+=($!)
done
failed=()
for i in "${!SUITES[@]}"; do
  wait "${pids[i]}" || true
  IFS='|' read -r name title _ <<<"${SUITES[i]}"
  read -r status took <"$logs/$name.result" || { status=1; took="?"; }
  printf '\n==> %s (%s s, exit %s)\n' "$title" "$took" "$status"
  cat "$logs/$name.log"
  [ "$status" = 0 ] || failed+=("$name")
done
if [ "${#failed[@]}" != 0 ]; then
  echo "clients: failed: ${failed[*]}" >&2
  exit 1
fi

step "conformance: every language against one gateway, then the restart rows"
python3 "$CLIENTS/conformance/run.py" --gateway "$GATEWAY_BIN"

step "stream throughput smoke: every reader and raw stub against a pre-filled pool (the table in README.md comes from a full run)"
python3 "$CLIENTS/conformance/throughput.py" --skip-build --total-mib 16 --reps 1
