#!/usr/bin/env bash
# Packaging check for @entropy-diode/client, as a user outside this repository gets it:
#   1. `npm pack` into a temporary directory; the tarball holds the built library (dist/src, its
#      .d.ts), package.json and README.md, and no sources, tests or examples;
#   2. a scratch project OUTSIDE the repository installs the tarball;
#   3. another one runs the README's install line, `npm install <path-to-clients/typescript>`,
#      which must build the library itself (the `prepare` script);
#   4. in each, an ES module and a CommonJS script import the package and construct a client for
#      a loopback endpoint, and `tsc --strict` type-checks a TypeScript user of it;
#   5. `git status --porcelain clients/typescript` is what it was before (clean).
# Needs `npm ci` done here first (as `npm test` does) and the npm registry for the scratch
# installs. No gateway needed: nothing connects.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(git -C "$HERE" rev-parse --show-toplevel)"
TSC="$HERE/node_modules/.bin/tsc"
[ -x "$TSC" ] || { echo "package_check: run 'npm ci' in $HERE first" >&2; exit 1; }

scratch="$(mktemp -d "${TMPDIR:-/tmp}/entropy-ts-package.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
case "$scratch/" in "$REPO"/*) echo "package_check: $scratch is inside the repository" >&2; exit 1 ;; esac

status_before="$(git -C "$REPO" status --porcelain -- clients/typescript)"
fail() { echo "package_check: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

step "npm pack"
mkdir "$scratch/pack"
(cd "$HERE" && npm pack --silent --pack-destination "$scratch/pack" >"$scratch/pack.out")
tarball="$(ls "$scratch"/pack/*.tgz)"
echo "$(basename "$tarball"): $(tar -tzf "$tarball" | wc -l) files"
listing="$(tar -tzf "$tarball" | sed 's|^package/||' | sort)"
for f in package.json README.md dist/src/index.js dist/src/index.d.ts dist/src/stream.js dist/src/gen/entropy/v1/entropy.js; do
  grep -qx "$f" <<<"$listing" || fail "the tarball lacks $f"
done
if grep -v -e '^package.json$' -e '^README.md$' -e '^dist/src/' <<<"$listing"; then
  fail "the tarball holds files beyond dist/src, package.json and README.md (listed above)"
fi

# What a user writes: ESM, CommonJS and TypeScript, each constructing a client for loopback.
write_users() {
  cat >"$1/check.mjs" <<'EOF'
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
console.log("esm ok");
EOF
  cat >"$1/check.cjs" <<'EOF'
const { EntropyClient } = require("@entropy-diode/client");
const c = new EntropyClient("localhost", "a-key");
if (c.endpoint !== "http://localhost:50051") throw new Error(`endpoint ${c.endpoint}`);
c.close();
if (require("@entropy-diode/client/package.json").name !== "@entropy-diode/client") throw new Error("name");
console.log("cjs ok");
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
}

run_users() {
  (
    cd "$1"
    node check.mjs
    node check.cjs
    "$TSC" --strict --noEmit --module node16 --moduleResolution node16 --target es2022 \
      --skipLibCheck --types node --typeRoots "$HERE/node_modules/@types" check.mts
    echo "tsc ok"
  )
}

new_project() {
  mkdir -p "$1"
  (cd "$1" && npm init -y >/dev/null)
}

step "install the tarball in a scratch project"
new_project "$scratch/from-tarball"
(cd "$scratch/from-tarball" && npm install --silent --no-audit --no-fund "$tarball")
write_users "$scratch/from-tarball"
run_users "$scratch/from-tarball"

step "the README's install line: npm install <path-to-clients/typescript>"
new_project "$scratch/from-path"
marker="$scratch/before-install"
touch "$marker"
sleep 1
(cd "$scratch/from-path" && npm install --silent --no-audit --no-fund "$HERE")
# The link points at this folder, whose `prepare` must have built the library just now.
[ "$HERE/dist/src/index.js" -nt "$marker" ] || fail "npm install <path> did not build dist/src (prepare)"
write_users "$scratch/from-path"
run_users "$scratch/from-path"

step "git status --porcelain clients/typescript"
status_after="$(git -C "$REPO" status --porcelain -- clients/typescript)"
if [ "$status_after" != "$status_before" ]; then
  echo "before:"; echo "$status_before"; echo "after:"; echo "$status_after"
  fail "the check changed files under clients/typescript"
fi
[ -z "$status_after" ] || echo "(not clean before the check either: uncommitted work)"
echo "package_check: ok"
