#!/usr/bin/env bash
# The client packages build the way users install them, from outside the repository.
#
#   scripts/package_check.sh            every language
#   scripts/package_check.sh rust       one (rust, python, go, typescript, java)
#
# Rust: `cargo package` of entropy-proto, entropy-diode-client and entropy-diode-cli (the
# .crate files, metadata and the dependency on each other resolved as crates.io would), then a
# scratch project in a temporary directory does the README's install line
# (`cargo add entropy-diode-client --path ...`), builds and runs a program using it. Each other
# language has its own clients/<language>/package_check.sh doing the same with its tools.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
step() { printf '\n==> %s\n' "$*"; }
only="${1:-all}"
wanted() { [ "$only" = all ] || [ "$only" = "$1" ]; }

# The Rust part compiles the client from scratch (minutes of CPU); the other languages mostly
# wait on their package tools. So it runs beside them, its output printed once it is done.
rust_check() {
  step "rust: cargo package (entropy-proto, entropy-diode-client, entropy-diode-cli)"
  # --no-verify: the workspace build and tests already compile these sources; the scratch
  # project below compiles the client outside the workspace.
  (cd "$ROOT" && cargo package --quiet --locked --allow-dirty --no-verify \
    --target-dir "$SCRATCH/package-target" \
    -p entropy-proto -p entropy-diode-client -p entropy-diode-cli)
  for crate in entropy-proto entropy-diode-client entropy-diode-cli; do
    file="$SCRATCH/package-target/package/$crate-0.1.0.crate"
    [ -s "$file" ] || { echo "no $file" >&2; exit 1; }
    tar -tzf "$file" | grep -x "$crate-0.1.0/README.md" >/dev/null \
      || [ "$crate" = entropy-proto ] || { echo "$crate: README.md not packaged" >&2; exit 1; }
    echo "packaged $(basename "$file") ($(stat -c %s "$file") bytes)"
  done

  step "rust: the README's install line in a scratch project"
  cd "$SCRATCH"
  cargo new --quiet --vcs none app
  cd app
  cargo add --quiet entropy-diode-client --path "$ROOT/clients/rust"
  cargo add --quiet tokio --features macros,rt-multi-thread
  cat > src/main.rs <<'RS'
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
}
rust_pid=""
if wanted rust; then
  rust_check >"$SCRATCH/rust.log" 2>&1 &
  rust_pid=$!
fi

for language in python go typescript java; do
  if wanted "$language" && [ -x "$ROOT/clients/$language/package_check.sh" ]; then
    step "$language: clients/$language/package_check.sh"
    "$ROOT/clients/$language/package_check.sh"
  fi
done

if [ -n "$rust_pid" ]; then
  rust_status=0
  wait "$rust_pid" || rust_status=$?
  cat "$SCRATCH/rust.log"
  [ "$rust_status" = 0 ] || { echo "package_check: rust failed ($rust_status)" >&2; exit "$rust_status"; }
fi
