#!/usr/bin/env bash
# Supply-chain checks with cargo-deny and deny.toml: banned crates, licenses, sources.
# Offline: no advisory database is fetched (see deny.toml for the advisory check).
#
#   scripts/cargo/deny.sh
#
# Installs cargo-deny (pinned) when missing. Then, to show the policy bites, runs the same
# checks on the real crate graph with one offender injected at a time (a banned TLS stack, a
# git dependency, a copyleft license) and fails unless each is refused.
set -euo pipefail
cd "$(dirname "$0")/../.."

CARGO_DENY_VERSION=0.20.2

if ! cargo deny --version 2>/dev/null | grep -qx "cargo-deny ${CARGO_DENY_VERSION}"; then
  # ~3 min on 2 cores.
  cargo install cargo-deny --version "${CARGO_DENY_VERSION}" --locked
fi

# Every crate of the lock file, every platform's (from crates.io; a no-op when cached), so
# the checks below run with --frozen: no network at all.
cargo fetch --locked --quiet

echo "cargo deny check bans licenses sources"
cargo deny --frozen check --hide-inclusion-graph bans licenses sources

echo "policy self-test: each injected offender must be refused"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cargo metadata --format-version 1 --frozen >"$tmp/metadata.json"

python3 - "$tmp" <<'PY'
"""Writes one metadata file per offender: the real graph, plus a package that
entropy-gateway depends on directly."""
import copy, json, sys

tmp = sys.argv[1]
real = json.load(open(f"{tmp}/metadata.json"))
CRATES_IO = "registry+https://github.com/rust-lang/crates.io-index"

offenders = {
    # name: (crate, version, source, license)
    "banned-aws-lc-rs": ("aws-lc-rs", "1.13.0", CRATES_IO, "ISC AND (Apache-2.0 OR ISC)"),
    "banned-openssl-sys": ("openssl-sys", "0.9.109", CRATES_IO, "MIT"),
    "banned-native-tls": ("native-tls", "0.2.14", CRATES_IO, "MIT OR Apache-2.0"),
    "git-source": ("some-crate", "0.1.0",
                   "git+https://example.invalid/some-crate?branch=main#0123456789abcdef0123456789abcdef01234567",
                   "MIT"),
    "other-registry": ("some-crate", "0.1.0", "registry+https://example.invalid/index", "MIT"),
    "gpl-license": ("some-crate", "0.1.0", CRATES_IO, "GPL-3.0-only"),
}

for case, (name, version, source, license) in offenders.items():
    meta = copy.deepcopy(real)
    pkg_id = f"{source}#{name}@{version}"
    meta["packages"].append({
        "name": name, "version": version, "id": pkg_id, "license": license,
        "license_file": None, "description": None, "source": source, "dependencies": [],
        "targets": [], "features": {}, "manifest_path": f"/nonexistent/{name}/Cargo.toml",
        "metadata": None, "publish": None, "authors": [], "categories": [], "keywords": [],
        "readme": None, "repository": None, "homepage": None, "documentation": None,
        "edition": "2021", "links": None, "default_run": None, "rust_version": None,
    })
    gateway = next(p for p in meta["packages"] if p["name"] == "entropy-gateway")
    gateway["dependencies"].append({
        "name": name, "source": source, "req": f"^{version}", "kind": None, "rename": None,
        "optional": False, "uses_default_features": True, "features": [], "target": None,
        "registry": None,
    })
    meta["resolve"]["nodes"].append({"id": pkg_id, "dependencies": [], "deps": [], "features": []})
    node = next(n for n in meta["resolve"]["nodes"] if n["id"] == gateway["id"])
    node["dependencies"].append(pkg_id)
    node["deps"].append({"name": name.replace("-", "_"), "pkg": pkg_id,
                         "dep_kinds": [{"kind": None, "target": None}]})
    json.dump(meta, open(f"{tmp}/{case}.json", "w"))
PY

expect_refused() { # case, check, what the diagnostic must say (grep -E)
  local out
  if out="$(cargo deny --frozen --metadata-path "$tmp/$1.json" check --hide-inclusion-graph "$2" 2>&1)"; then
    echo "FAIL: $1 passed 'cargo deny check $2'" >&2
    exit 1
  fi
  if ! grep -Eq "$3" <<<"$out"; then
    echo "FAIL: $1 failed 'cargo deny check $2' but not with /$3/:" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "  $1: refused by 'check $2' ($(grep -Eo "$3" <<<"$out" | head -1))"
}
expect_refused banned-aws-lc-rs bans "error\[banned\]: crate 'aws-lc-rs"
expect_refused banned-openssl-sys bans "error\[banned\]: crate 'openssl-sys"
expect_refused banned-native-tls bans "error\[banned\]: crate 'native-tls"
expect_refused git-source sources "error\[source-not-allowed\]: detected 'git' source"
expect_refused other-registry sources "error\[source-not-allowed\]: detected 'registry' source"
expect_refused gpl-license licenses "error\\[rejected\\]: failed to satisfy license requirements"
echo "supply chain: ok"
