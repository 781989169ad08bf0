#!/usr/bin/env bash
# The CycloneDX SBOM (JSON, spec 1.5) of each shipped program, with the features it is built
# with (scripts/release/static.sh) and the dependencies of TARGET only, build-time ones left out:
#
#   scripts/release/sbom.sh TARGET OUT_DIR VERSION
#
# OUT_DIR gets <crate>-<VERSION>.cdx.json for entropy-gateway, entropy-collector,
# entropy-feeder, entropy-diode-cli and entropy-mcp. cargo-cyclonedx writes one file into every
# workspace member's directory at each run: those are moved out or removed.
#
# A superset for the gateway: cargo-cyclonedx resolves features across the whole workspace
# (cargo metadata), where the benchmarks depend on the gateway with its default features, so
# the gateway's SBOM lists the collector library and its dependencies (reqwest, ...) that its
# dev mode would use and the release gateway leaves out. Never a subset: everything shipped is
# listed. (Exact per-binary lists would need the binaries built with cargo-auditable.)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 3 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
target="$1" out="$2" version="$3"
mkdir -p "$out"
members=(proto ops quality server collector clients/rust clients/cli clients/mcp bench/tools testkit drbg health feeder)
run() { # run FILENAME [FEATURE FLAGS...]
  local name="$1"
  shift
  cargo cyclonedx --format json --spec-version 1.5 --target "$target" --no-build-deps \
    --override-filename "$name" -q "$@"
}
take() { # take FILENAME DIR CRATE
  mv "$2/$1.json" "$out/$3-$version.cdx.json"
}
clean() {
  local m
  for m in "${members[@]}"; do rm -f "$m/$1.json"; done
}
trap 'clean release-sbom-nodefault; clean release-sbom' EXIT
run release-sbom-nodefault --no-default-features
take release-sbom-nodefault server entropy-gateway
run release-sbom
take release-sbom collector entropy-collector
take release-sbom feeder entropy-feeder
take release-sbom clients/cli entropy-diode-cli
take release-sbom clients/mcp entropy-mcp
ls "$out"/*-"$version".cdx.json
