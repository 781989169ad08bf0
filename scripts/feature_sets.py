#!/usr/bin/env python3
"""Checks that the builds the test command makes after its release build resolve the same
features in every crate they share with it, so cargo recompiles none of them.

    scripts/feature_sets.py

Cargo builds a crate once per feature set. The test command's release build
(`cargo build --release -p entropy-gateway -p entropy-collector -p entropy-bench -p entropy-mcp
-p entropy-diode-cli`) is followed by two builds that select other packages: the criterion
benches (`cargo bench -p entropy-bench`, bench/run.sh) and the Rust conformance reader
(`cargo build --release -p entropy-diode-client --example conformance`, clients/conformance).
When a shared crate (tokio, serde, ...) resolves other features there, it and everything above
it compile again: minutes on two cores. bench/tools/Cargo.toml and the client's
dev-dependencies name the missing features; this fails, naming crate and features, when a
change makes the sets drift apart again. It reads `cargo tree`, which does not show every
difference a build sees: measured from a clean clone, the benches then compiled only
themselves and entropy-testkit (17 s instead of 4 min); the conformance example still compiled
19 crates (1.8 min instead of 3.5), through its dev-dependencies (tempfile's rustix turns on
more of bitflags, under the gateway).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ["entropy-gateway", "entropy-collector", "entropy-bench", "entropy-mcp", "entropy-diode-cli"]
LATER = {"cargo bench -p entropy-bench": "entropy-bench",
         "cargo build -p entropy-diode-client --example conformance": "entropy-diode-client"}


def features(packages: list[str], dev: bool) -> dict[tuple[str, str], set[str]]:
    """(crate, version) -> its features, for a build selecting `packages`."""
    edges = "normal,build,dev" if dev else "normal,build"
    cmd = ["cargo", "tree", "-q", "--locked", "-e", edges, "--prefix", "none", "-f", "{p}|{f}"]
    for p in packages:
        cmd += ["-p", p]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    sets: dict[tuple[str, str], set[str]] = {}
    for line in out.splitlines():
        if "|" not in line:
            continue
        pkg, _, feats = line.partition("|")
        name, version = pkg.split()[:2]
        feats = feats.replace(" (*)", "").strip()
        sets.setdefault((name, version), set()).update(f for f in feats.split(",") if f)
    return sets


def main() -> int:
    release = features(RELEASE, dev=False)
    drift = []
    for build, package in LATER.items():
        for crate, feats in sorted(features([package], dev=True).items()):
            if crate in release and release[crate] != feats:
                missing, extra = sorted(release[crate] - feats), sorted(feats - release[crate])
                drift.append(f"{build}: {crate[0]} {crate[1]}: missing {missing}, extra {extra}")
    if drift:
        print("feature sets differ from the release build (cargo would compile these crates again):")
        print("\n".join(f"  {d}" for d in drift))
        print("name the missing features in bench/tools/Cargo.toml or the client's dev-dependencies")
        return 1
    print(f"feature sets: {', '.join(LATER)} resolve the release build's features in every shared crate")
    return 0


if __name__ == "__main__":
    sys.exit(main())
