#!/usr/bin/env bash
# The client packages build the way users install them, from outside the repository: each
# language's own tools build the package, then a scratch project in a temporary directory does
# what its README's install line says and runs a program using it. Nothing is published.
#
#   scripts/package_check.sh                    every language
#   scripts/package_check.sh python go          some (rust, python, go, typescript, web, java)
#   GO_MODULE_VERSION=v0.2.0 scripts/package_check.sh go     the made-up Go tag (v0.1.0)
#
# One function a language (check_<language>), all on the same plumbing: one scratch directory
# outside the repository (removed on exit), `scratch NAME` for a project in it, `step`, `fail`,
# and `tree_state` to show a check wrote nothing into the checkout. Each runs in a subshell, so
# its directory changes and exports (GOMODCACHE, git and Maven settings) stay its own. The Rust
# check compiles the client from scratch (minutes of CPU) while the others mostly wait on their
# package tools, so it runs beside them and its output is printed once it is done.
#
# Needs: cargo; python3 (3.10+) and PyPI (grpcio, protobuf, flit_core); Go and its module proxy
# for the other modules; `npm ci` done in clients/typescript and clients/web (as clients/test.sh
# does) and the npm registry; a JDK 17+, Maven and Maven Central (or ~/.m2).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SCRATCH="$(mktemp -d)"
cleanup() {
  chmod -R u+w "$SCRATCH" 2>/dev/null || true # Go's module cache is read-only
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
case "$SCRATCH/" in "$ROOT"/*) echo "package_check: $SCRATCH is inside the repository" >&2; exit 1 ;; esac

LANGUAGES=(rust python go typescript web java)
step() { printf '\n==> %s\n' "$*"; }
fail() { printf 'package_check: FAIL: %s\n' "$*" >&2; exit 1; }

# scratch NAME: a new empty directory $SCRATCH/NAME, printed.
scratch() {
  mkdir -p "$SCRATCH/$1"
  printf '%s\n' "$SCRATCH/$1"
}

# tree_state DIR [IGNORED_SUBDIR...]: git's view of DIR (relative to the repository), ignored
# files included, less the listed ignored subdirectories the check itself may use (a venv,
# node_modules). Compared before and after a check: building must not write into the checkout.
tree_state() {
  local dir="$1" sub excludes=()
  shift
  for sub in "$@"; do excludes+=(-e "^!! $dir/$sub/"); done
  git -C "$ROOT" status --porcelain --ignored --untracked-files=all -- "$dir" \
    | { if [ ${#excludes[@]} -gt 0 ]; then grep -v "${excludes[@]}"; else cat; fi; } || true
}

# same_tree DIR BEFORE [IGNORED_SUBDIR...]: fails when tree_state DIR differs from BEFORE.
same_tree() {
  local dir="$1" before="$2" after
  shift 2
  after="$(tree_state "$dir" "$@")"
  if [ "$before" != "$after" ]; then
    diff <(echo "$before") <(echo "$after") >&2 || true
    fail "building or installing wrote into $dir"
  fi
  echo "$dir: nothing written into the checkout"
}

# --- Rust ----------------------------------------------------------------------------------------
# `cargo package` of entropy-proto, entropy-receipts, entropy-diode-client and entropy-diode-cli (the .crate files,
# metadata and the dependency on each other resolved as crates.io would), then the README's
# install line (`cargo add entropy-diode-client --path ...`) in a scratch project that builds and
# runs a program using it.
check_rust() (
  step "rust: cargo package (entropy-proto, entropy-receipts, entropy-diode-client, entropy-diode-cli)"
  # --no-verify: the workspace build and tests already compile these sources; the scratch
  # project below compiles the client outside the workspace.
  cd "$ROOT"
  cargo package --quiet --locked --allow-dirty --no-verify \
    --target-dir "$SCRATCH/package-target" \
    -p entropy-proto -p entropy-receipts -p entropy-diode-client -p entropy-diode-cli
  for crate in entropy-proto entropy-receipts entropy-diode-client entropy-diode-cli; do
    file="$SCRATCH/package-target/package/$crate-0.1.0.crate"
    [ -s "$file" ] || fail "no $file"
    tar -tzf "$file" | grep -x "$crate-0.1.0/README.md" >/dev/null \
      || [ "$crate" = entropy-proto ] || fail "$crate: README.md not packaged"
    echo "packaged $(basename "$file") ($(stat -c %s "$file") bytes)"
  done

  step "rust: the README's install line in a scratch project"
  cd "$(scratch rust)"
  cargo new --quiet --vcs none app
  cd app
  cargo add --quiet entropy-diode-client --path "$ROOT/clients/rust"
  cargo add --quiet tokio --features macros,rt-multi-thread
  cat >src/main.rs <<'RS'
use entropy_diode_client::{ClientBuilder, Endpoint};

#[tokio::main]
async fn main() {
    let endpoint = Endpoint::parse("gw.example", false).expect("endpoint");
    assert_eq!(endpoint.uri(), "https://gw.example:50051");
    let err = ClientBuilder::new("127.0.0.1:50051", "key\n").connect().await.unwrap_err();
    assert!(err.to_string().contains("line break"), "{err}");
    println!("scratch project: built against entropy-diode-client, endpoint {endpoint}");
}
RS
  # A cache outside the scratch directory, so a second run compiles only this program.
  CARGO_TARGET_DIR="$ROOT/target/package-check" cargo run --quiet
)

# --- Python --------------------------------------------------------------------------------------
# `python -m build` (sdist, then the wheel from the sdist); the wheel's metadata complete
# (license, readme, urls, keywords, classifiers); a scratch venv installs the wheel by file and
# imports it, then runs the README's install line (`pip install <path to clients/python>`) and
# imports it again; the checkout is unchanged (flit-core writes no build/ or *.egg-info). The
# frontend is `build` from clients/python/.venv (pinned in requirements-dev.txt) when that venv
# exists, else it is installed into the scratch space.
check_python() (
  local here="$ROOT/clients/python" rel=clients/python python="${PYTHON:-python3}" work
  work="$(scratch python)"
  before="$(tree_state "$rel" .venv .mypy_cache)"

  step "python: python -m build -> $work/dist"
  if [ -x "$here/.venv/bin/python" ] && "$here/.venv/bin/python" -c 'import build' 2>/dev/null; then
    frontend="$here/.venv/bin/python"
  else
    "$python" -m venv "$work/buildenv"
    "$work/buildenv/bin/pip" install --quiet --disable-pip-version-check build==1.6.1
    frontend="$work/buildenv/bin/python"
  fi
  "$frontend" -m build --outdir "$work/dist" "$here" >"$work/build.log" 2>&1 \
    || { cat "$work/build.log" >&2; fail "python -m build failed"; }
  wheel="$(ls "$work"/dist/*.whl)"
  sdist="$(ls "$work"/dist/*.tar.gz)"
  echo "built $(basename "$wheel") and $(basename "$sdist")"

  step "python: wheel metadata"
  meta="$("$frontend" - "$wheel" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    print(z.read(name).decode())
PY
  )"
  for field in "Name: entropy-diode" "License-Expression: Apache-2.0" "Summary: " "Keywords: " \
    "Classifier: Typing :: Typed" "Project-URL: Repository, https://github.com/" \
    "Description-Content-Type: text/markdown" "Requires-Python: >=3.10" "Requires-Dist: grpcio" "Provides-Extra: receipts"; do
    grep -qF "$field" <<<"$meta" || fail "METADATA has no '$field'"
  done
  grep -qF "## Install" <<<"$meta" || fail "METADATA does not carry the README"
  echo "metadata complete"

  # import_check VENV: the installed copy, not the checkout, with its type information.
  import_check() {
    (cd "$work/scratch" && "$1/bin/python" - "$here" <<'PY'
import os, sys
import entropy_diode
from entropy_diode import EntropyClient, InvalidArgumentError, StreamOptions, parse_endpoint
here = sys.argv[1]
path = os.path.dirname(entropy_diode.__file__)
assert not path.startswith(here), f"imported from the checkout: {path}"
assert os.path.exists(os.path.join(path, "py.typed")), "py.typed missing"
assert os.path.exists(os.path.join(path, "_gen/entropy/v1/entropy_pb2.pyi")), "stubs missing"
assert parse_endpoint("example.com").tls and StreamOptions().reconnect_budget == 30
try:
    EntropyClient("127.0.0.1:1", "")
except InvalidArgumentError:
    pass
else:
    raise AssertionError("an empty key was accepted")
print("imported", entropy_diode.__name__, "from", path)
PY
    )
  }

  mkdir -p "$work/scratch"
  step "python: scratch venv, pip install the wheel by file"
  "$python" -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet --disable-pip-version-check "$wheel"
  import_check "$work/venv"

  step "python: the README's install line, pip install $here"
  "$work/venv/bin/pip" uninstall --quiet --yes entropy-diode
  (cd "$work/scratch" && "$work/venv/bin/pip" install --quiet --disable-pip-version-check "$here")
  import_check "$work/venv"

  same_tree "$rel" "$before" .venv .mypy_cache
)

# --- Go ------------------------------------------------------------------------------------------
# That `go get github.com/entropy-diode/entropy-diode/clients/go@vX.Y.Z` resolves and builds
# once the repository is public and tagged `clients/go/vX.Y.Z` (Go's rule for a module in a
# subdirectory), using the working tree as it is now:
#   0. module hygiene: `go mod tidy -diff` (go.mod and go.sum exact; it may download grpc's
#      test-only modules into your module cache, as tidy does) and `go vet ./...`;
#   1. a scratch git repository holds clients/go's files (tracked and new, not ignored), tagged
#      clients/go/$GO_MODULE_VERSION; git is pointed at it in place of the GitHub URL
#      (url.insteadOf, in a scratch git config only);
#   2. a scratch module runs `go get MODULE@VERSION` straight from that git repository
#      (GOPRIVATE: no proxy or checksum database for this module; the others come from the
#      local module cache, or the usual proxy) and builds and runs a program importing it;
#   3. a second scratch module does the same through GOPROXY=file://..., a proxy directory
#      (list, .info, .mod, .zip) made by step 2's download: what proxy.golang.org would serve.
# Every download goes to a scratch GOMODCACHE, so the made-up version never enters your cache.
check_go() (
  local here="$ROOT/clients/go" module=github.com/entropy-diode/entropy-diode/clients/go
  local repo_url=https://github.com/entropy-diode/entropy-diode version="${GO_MODULE_VERSION:-v0.1.0}"
  local tag="clients/go/$version" work
  work="$(scratch go)"

  step "go: go mod tidy -diff, go vet"
  (cd "$here" && go mod tidy -diff && go vet ./...)

  step "go: scratch repository at $repo_url, tag $tag, from the working tree"
  local repo="$work/entropy-diode.git" checkout="$work/checkout"
  mkdir -p "$checkout/clients/go"
  (cd "$here" && git ls-files -z --cached --others --exclude-standard . |
    while IFS= read -r -d '' f; do
      if [ -f "$f" ]; then # a tracked file deleted in the working tree is not released
        mkdir -p "$checkout/clients/go/$(dirname "$f")"
        cp -p "$f" "$checkout/clients/go/$f"
      fi
    done)
  export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$work/gitconfig" GIT_TERMINAL_PROMPT=0
  git config --global user.name "module check"
  git config --global user.email "module-check@invalid"
  git config --global init.defaultBranch main
  git config --global protocol.file.allow always
  git config --global url."file://$repo".insteadOf "$repo_url"
  git -C "$checkout" init -q
  git -C "$checkout" add -A
  git -C "$checkout" commit -q -m "clients/go as in the working tree"
  git -C "$checkout" tag "$tag"
  git clone -q --bare "$checkout" "$repo"
  echo "$(git -C "$repo" ls-tree -r --name-only "$tag" | wc -l) files at $tag"

  local real_cache upstream_proxy
  real_cache="$(go env GOMODCACHE)"
  upstream_proxy="$(go env GOPROXY)"
  export GOWORK=off GOTOOLCHAIN=local GOFLAGS=-mod=mod GOMODCACHE="$work/modcache"
  export GONOSUMDB="$module" # not public yet: the checksum database has never seen it

  # app DIR: a module that imports the entropy package and prints a parsed endpoint.
  app() {
    mkdir -p "$1"
    cat >"$1/go.mod" <<EOF
module example.com/modulecheck

go 1.26.0
EOF
    cat >"$1/main.go" <<'EOF'
package main

import (
	"fmt"
	"log"

	"github.com/entropy-diode/entropy-diode/clients/go/entropy"
)

func main() {
	ep, err := entropy.ParseEndpoint("gw.example.com", false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ep)
}
EOF
    # The hashes this repository already trusts, so the other modules need no checksum lookup.
    cp "$here/go.sum" "$1/go.sum"
  }

  check_app() {
    (cd "$1" &&
      go get "$module@$version" &&
      go build -o modulecheck . &&
      got="$(./modulecheck)" &&
      [ "$got" = "https://gw.example.com:50051" ] &&
      [ "$(go list -m -f '{{.Version}}' "$module")" = "$version" ] &&
      echo "built and ran it: $got; go.mod requires $module $version")
  }

  step "go: go get $module@$version from git (tag $tag), outside the repository"
  app "$work/app-git"
  GOPRIVATE="$module" GOPROXY="file://$real_cache/cache/download,$upstream_proxy" \
    check_app "$work/app-git"

  step "go: go get $module@$version through GOPROXY=file:// (list, .info, .mod, .zip)"
  local proxy="$work/proxy"
  mkdir -p "$proxy"
  cp -R "$GOMODCACHE/cache/download/." "$proxy/"
  local at="$proxy/$module/@v" f
  for f in list "$version.info" "$version.mod" "$version.zip"; do
    [ -s "$at/$f" ] || fail "proxy layout lacks $at/$f"
  done
  chmod -R u+w "$GOMODCACHE"
  rm -rf "$GOMODCACHE" # start empty: everything must come from the proxy directory
  app "$work/app-proxy"
  GOPROXY="file://$proxy,file://$real_cache/cache/download,$upstream_proxy" \
    check_app "$work/app-proxy"
  echo "$module@$version resolves from tag $tag and from a module proxy"
)

# --- TypeScript ----------------------------------------------------------------------------------
# @entropy-diode/client as a user outside this repository gets it, a dual package (an ES module
# build for `import`, a CommonJS one for `require`):
#   1. `npm pack`: the tarball holds both built libraries (dist/esm, dist/cjs, each with its
#      .d.ts and the package.json marking its format), package.json and README.md, and no
#      sources, tests or examples;
#   2. a scratch project installs the tarball; another runs the README's install line,
#      `npm install <path to clients/typescript>`, which must build both itself (the `prepare`
#      script);
#   3. in each, an ES module (.mjs) and a CommonJS script (.cjs) import the package, each loading
#      its own build (checked by where the package resolves), construct clients for loopback,
#      and draw bytes from a live dev gateway ($GATEWAY_BIN, default target/release/
#      entropy-gateway); `tsc --strict` type-checks a TypeScript user of it, as an ES module
#      (.mts) and as CommonJS (.cts), each against its build's types;
#   4. the checkout is unchanged apart from the library `prepare` rebuilt (dist/).
check_typescript() (
  local here="$ROOT/clients/typescript" rel=clients/typescript work
  local tsc="$here/node_modules/.bin/tsc"
  local gateway="${GATEWAY_BIN:-$ROOT/target/release/entropy-gateway}"
  [ -x "$tsc" ] || fail "run 'npm ci' in $here first"
  [ -x "$gateway" ] || fail "no gateway binary at $gateway (cargo build --release -p entropy-gateway, or set GATEWAY_BIN)"
  work="$(scratch typescript)"
  before="$(tree_state "$rel" node_modules dist)"

  # A dev gateway on a free loopback port for the scripts to draw from (stopped on return).
  local port key="package-check-$RANDOM$RANDOM"
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  ENTROPY_DEV_API_KEY="$key" "$gateway" --dev --listen-addr "127.0.0.1:$port" --metrics-listen-addr "" \
    >"$work/gateway.log" 2>&1 &
  local gateway_pid=$!
  trap 'kill "$gateway_pid" 2>/dev/null || true; wait "$gateway_pid" 2>/dev/null || true' EXIT
  export ENTROPY_ENDPOINT="127.0.0.1:$port" ENTROPY_API_KEY="$key"

  step "typescript: npm pack"
  mkdir "$work/pack"
  (cd "$here" && npm pack --silent --pack-destination "$work/pack" >"$work/pack.out")
  tarball="$(ls "$work"/pack/*.tgz)"
  echo "$(basename "$tarball"): $(tar -tzf "$tarball" | wc -l) files"
  listing="$(tar -tzf "$tarball" | sed 's|^package/||' | sort)"
  for build in esm cjs; do
    for f in index.js index.d.ts stream.js gen/entropy/v1/entropy_pb.js package.json; do
      grep -qx "dist/$build/$f" <<<"$listing" || fail "the tarball lacks dist/$build/$f"
    done
  done
  for f in package.json README.md; do
    grep -qx "$f" <<<"$listing" || fail "the tarball lacks $f"
  done
  if grep -v -e '^package.json$' -e '^README.md$' -e '^dist/esm/' -e '^dist/cjs/' <<<"$listing"; then
    fail "the tarball holds files beyond dist/esm, dist/cjs, package.json and README.md (listed above)"
  fi

  # What a user writes: ESM, CommonJS and TypeScript, each constructing a client for loopback.
  write_users() {
    cat >"$1/check.mjs" <<'EOF'
import { fileURLToPath } from "node:url";
import { EntropyClient, InvalidArgumentError, parseEndpoint } from "@entropy-diode/client";
const c = new EntropyClient("127.0.0.1:50051", "a-key");
if (c.endpoint !== "http://127.0.0.1:50051") throw new Error(`endpoint ${c.endpoint}`);
c.close();
const d = EntropyClient.fromEnv({}, { ENTROPY_API_KEY: "a-key", ENTROPY_ENDPOINT: "[::1]:7" });
if (d.endpoint !== "http://[::1]:7") throw new Error(`endpoint ${d.endpoint}`);
d.close();
if (!parseEndpoint("gw.example.com").tls) throw new Error("remote endpoints must be TLS");
try {
  new EntropyClient("127.0.0.1", "bad key\n");
  throw new Error("a bad key was accepted");
} catch (e) {
  if (!(e instanceof InvalidArgumentError)) throw e;
}
// import loads the ES module build, and draws from the live gateway (ENTROPY_* from the check).
const entry = fileURLToPath(import.meta.resolve("@entropy-diode/client"));
if (!entry.endsWith("/dist/esm/index.js")) throw new Error(`import loaded ${entry}, not dist/esm`);
const live = EntropyClient.fromEnv();
try {
  const bytes = await live.getBytes(32);
  if (bytes.length !== 32) throw new Error(`drew ${bytes.length} bytes`);
  const read = await live.stream({ totalBytes: 4096, chunkBytes: 1024 }).read(4096);
  if (read.length !== 4096) throw new Error(`streamed ${read.length} bytes`);
} finally {
  live.close();
}
console.log("esm ok: 32 bytes and a 4096-byte stream, from dist/esm");
EOF
    cat >"$1/check.cjs" <<'EOF'
const { EntropyClient, InvalidArgumentError } = require("@entropy-diode/client");
const c = new EntropyClient("localhost", "a-key");
if (c.endpoint !== "http://localhost:50051") throw new Error(`endpoint ${c.endpoint}`);
c.close();
if (require("@entropy-diode/client/package.json").name !== "@entropy-diode/client") throw new Error("name");
try {
  new EntropyClient("127.0.0.1", "bad key\n");
  throw new Error("a bad key was accepted");
} catch (e) {
  if (!(e instanceof InvalidArgumentError)) throw e;
}
// require loads the CommonJS build, and draws from the live gateway (ENTROPY_* from the check).
const entry = require.resolve("@entropy-diode/client");
if (!entry.endsWith("/dist/cjs/index.js")) throw new Error(`require loaded ${entry}, not dist/cjs`);
const live = EntropyClient.fromEnv();
(async () => {
  const bytes = await live.getBytes(32);
  if (bytes.length !== 32) throw new Error(`drew ${bytes.length} bytes`);
  const read = await live.stream({ totalBytes: 4096, chunkBytes: 1024 }).read(4096);
  if (read.length !== 4096) throw new Error(`streamed ${read.length} bytes`);
  console.log("cjs ok: 32 bytes and a 4096-byte stream, from dist/cjs");
})()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => live.close());
EOF
    cat >"$1/check.mts" <<'EOF'
import { EntropyClient, type RandomStream, type StreamOptions } from "@entropy-diode/client";
const options: StreamOptions = { totalBytes: 1024, reconnectBudgetMs: 0, attemptTimeoutMs: 2000 };
const client: EntropyClient = new EntropyClient("127.0.0.1:50051", "a-key");
const stream: RandomStream = client.stream(options);
const read: Promise<Buffer> = stream.read(16);
void read.catch(() => {});
stream.cancel();
client.close();
EOF
    # The same user as CommonJS: TypeScript gives it the `require` condition's types.
    cat >"$1/check.cts" <<'EOF'
import entropy = require("@entropy-diode/client");
const options: entropy.StreamOptions = { totalBytes: 1024, reconnectBudgetMs: 0, attemptTimeoutMs: 2000 };
const client: entropy.EntropyClient = new entropy.EntropyClient("127.0.0.1:50051", "a-key");
const stream: entropy.RandomStream = client.stream(options);
void stream.read(16).catch(() => {});
stream.cancel();
client.close();
EOF
  }

  run_users() {
    (
      cd "$1"
      node check.mjs
      node check.cjs
      local flags=(--module node16 --moduleResolution node16 --target es2022 --skipLibCheck
        --types node --typeRoots "$here/node_modules/@types")
      "$tsc" --strict --noEmit "${flags[@]}" check.mts check.cts
      # Each user got its own build's types.
      "$tsc" --noEmit "${flags[@]}" --traceResolution check.mts check.cts >trace.txt
      grep -q "'@entropy-diode/client' was successfully resolved to '.*/dist/esm/index.d.ts'" trace.txt \
        || fail "check.mts did not get dist/esm's types"
      grep -q "'@entropy-diode/client' was successfully resolved to '.*/dist/cjs/index.d.ts'" trace.txt \
        || fail "check.cts did not get dist/cjs's types"
      echo "tsc ok: an ES module and a CommonJS user, each with its build's types"
    )
  }

  new_project() {
    mkdir -p "$1"
    (cd "$1" && npm init -y >/dev/null)
  }

  step "typescript: install the tarball in a scratch project"
  new_project "$work/from-tarball"
  (cd "$work/from-tarball" && npm install --silent --no-audit --no-fund "$tarball")
  write_users "$work/from-tarball"
  run_users "$work/from-tarball"

  step "typescript: the README's install line, npm install $here"
  new_project "$work/from-path"
  marker="$work/before-install"
  touch "$marker"
  sleep 1
  (cd "$work/from-path" && npm install --silent --no-audit --no-fund "$here")
  # The link points at this folder, whose `prepare` must have built the library just now.
  for build in esm cjs; do
    [ "$here/dist/$build/index.js" -nt "$marker" ] || fail "npm install <path> did not build dist/$build (prepare)"
  done
  write_users "$work/from-path"
  run_users "$work/from-path"

  same_tree "$rel" "$before" node_modules dist
)

# --- Browser -------------------------------------------------------------------------------------
# @entropy-diode/web as a web developer outside this repository gets it:
#   1. `npm run build` then `npm pack`: the tarball holds the built library (dist/src, its
#      .d.ts), package.json and README.md, and no sources, tests or the example page;
#   2. a scratch project installs the tarball (the README's install line, with the tarball);
#   3. an ES module imports the package and constructs a client (Node has fetch), esbuild
#      bundles it for browsers, and `tsc --strict` type-checks a TypeScript user of it;
#   4. the checkout is unchanged apart from the build (dist/).
# No gateway needed: nothing connects.
check_web() (
  local here="$ROOT/clients/web" rel=clients/web work
  local tsc="$here/node_modules/.bin/tsc" esbuild="$here/node_modules/.bin/esbuild"
  [ -x "$tsc" ] && [ -x "$esbuild" ] || fail "run 'npm ci' in $here first"
  work="$(scratch web)"
  before="$(tree_state "$rel" node_modules dist)"

  step "web: npm run build, npm pack"
  mkdir "$work/pack"
  (cd "$here" && npm run --silent build && npm pack --silent --pack-destination "$work/pack" >"$work/pack.out")
  tarball="$(ls "$work"/pack/*.tgz)"
  echo "$(basename "$tarball"): $(tar -tzf "$tarball" | wc -l) files"
  listing="$(tar -tzf "$tarball" | sed 's|^package/||' | sort)"
  for f in package.json README.md dist/src/index.js dist/src/index.d.ts dist/src/client.js \
    dist/src/gen/entropy/v1/entropy_pb.js; do
    grep -qx "$f" <<<"$listing" || fail "the tarball lacks $f"
  done
  if grep -v -e '^package.json$' -e '^README.md$' -e '^dist/src/' <<<"$listing"; then
    fail "the tarball holds files beyond dist/src, package.json and README.md (listed above)"
  fi

  step "web: install the tarball in a scratch project; import, bundle for browsers, type-check"
  mkdir -p "$work/app"
  (cd "$work/app" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund "$tarball")
  cat >"$work/app/check.mjs" <<'EOF2'
import { EntropyClient, baseUrl } from "@entropy-diode/web";
if (baseUrl("gw.example.com:50051") !== "http://gw.example.com:50051") throw new Error(baseUrl("gw.example.com:50051"));
if (baseUrl("https://gw.example.com") !== "https://gw.example.com:50051") throw new Error("https default port");
new EntropyClient("https://gw.example.com:50051", "a-key");
let refused = false;
try { new EntropyClient("https://gw.example.com", "bad key\n"); } catch { refused = true; }
if (!refused) throw new Error("a bad key was accepted");
console.log("esm ok");
EOF2
  cat >"$work/app/check.mts" <<'EOF2'
import { EntropyClient, type Draw } from "@entropy-diode/web";
const client: EntropyClient = new EntropyClient("https://gw.example.com:50051", "a-key");
const draw: Promise<Draw> = client.draw(32);
void draw.catch(() => {});
EOF2
  (
    cd "$work/app"
    node check.mjs
    "$esbuild" check.mjs --bundle --platform=browser --format=esm --log-level=warning --outfile=bundle.js
    echo "bundle ok: $(wc -c <bundle.js) bytes"
    "$tsc" --strict --noEmit --module node16 --moduleResolution node16 --target es2022 \
      --skipLibCheck --lib es2022,dom check.mts
    echo "tsc ok"
  )

  same_tree "$rel" "$before" node_modules dist
)

# --- Java ----------------------------------------------------------------------------------------
# `mvn install` of io.github.entropy-diode:entropy-client:0.1.0 into a throw-away local repository
# (dependencies from ~/.m2 or Maven Central), then a scratch Maven project depends on it,
# compiles and runs a program that checks the endpoint syntax and the key rule offline.
check_java() (
  local here="$ROOT/clients/java" work
  work="$(scratch java)"

  step "java: mvn package, install into a scratch local repository"
  cd "$here"
  mvn -B -q -ntp -DskipTests package
  mvn -B -q -ntp install:install-file -Dfile=target/entropy-client-0.1.0.jar -DpomFile=pom.xml \
    -DlocalRepositoryPath="$work/repo"
  echo "installed $(find "$work/repo" -name '*.jar' -printf '%P\n')"

  step "java: a scratch project depending on io.github.entropy-diode:entropy-client:0.1.0"
  mkdir -p "$work/app/src/main/java/app"
  cat >"$work/app/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>app</groupId>
  <artifactId>app</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <repositories>
    <repository><id>scratch</id><url>file://$work/repo</url></repository>
    <repository><id>user-cache</id><url>file://$HOME/.m2/repository</url></repository>
  </repositories>
  <dependencies>
    <dependency>
      <groupId>io.github.entropy-diode</groupId>
      <artifactId>entropy-client</artifactId>
      <version>0.1.0</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.14.0</version>
      </plugin>
    </plugins>
  </build>
</project>
POM
  cat >"$work/app/src/main/java/app/Main.java" <<'JAVA'
package app;

import io.github.entropydiode.client.Endpoint;
import io.github.entropydiode.client.EntropyClient;

public class Main {
  public static void main(String[] args) {
    if (!Endpoint.parse("gw.example", false).toString().equals("https://gw.example:50051")) {
      throw new AssertionError("endpoint syntax: " + Endpoint.parse("gw.example", false));
    }
    try {
      EntropyClient.builder().endpoint("127.0.0.1:50051").apiKey("key\n").build();
      throw new AssertionError("a key with a newline was accepted");
    } catch (IllegalArgumentException e) {
      if (!e.getMessage().contains("line break")) throw new AssertionError(e.getMessage());
    }
    System.out.println("scratch project: built against io.github.entropy-diode:entropy-client:0.1.0");
  }
}
JAVA
  cd "$work/app"
  # Its own local repository: an entropy-client installed earlier in ~/.m2 must not stand in for
  # the one just built. Dependencies are copied from ~/.m2 (a file repository), else Central.
  export MAVEN_OPTS="${MAVEN_OPTS:-} -Dmaven.repo.local=$work/m2"
  mvn -B -q -ntp package
  mvn -B -q -ntp org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath \
    -Dmdep.outputFile=cp.txt
  java -cp "target/classes:$(cat cp.txt)" app.Main
)

# --- run -----------------------------------------------------------------------------------------

wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=("${LANGUAGES[@]}")
for language in "${wanted[@]}"; do
  [[ " ${LANGUAGES[*]} " == *" $language "* ]] || fail "unknown language '$language' (${LANGUAGES[*]})"
done
is_wanted() { [[ " ${wanted[*]} " == *" $1 "* ]]; }

rust_pid=""
if is_wanted rust; then
  check_rust >"$SCRATCH/rust.log" 2>&1 &
  rust_pid=$!
fi
for language in python go typescript web java; do
  if is_wanted "$language"; then "check_$language"; fi
done
if [ -n "$rust_pid" ]; then
  rust_status=0
  wait "$rust_pid" || rust_status=$?
  cat "$SCRATCH/rust.log"
  [ "$rust_status" = 0 ] || fail "rust failed ($rust_status)"
fi
step "package_check: ok (${wanted[*]})"
