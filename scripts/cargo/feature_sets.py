#!/usr/bin/env python3
"""Checks that the builds the test command makes after its release build compile none of the
crates that build compiled: each crate they share with it resolves the same features (and the
same dependencies), so cargo reuses it.

    scripts/cargo/feature_sets.py

Cargo builds a crate once per feature set. The test command's release build
(`cargo build --release -p entropy-gateway -p entropy-collector -p entropy-bench -p entropy-mcp
-p entropy-diode-cli`) is followed by two builds that select other packages: the criterion
benches (`cargo bench --no-run -p entropy-bench --bench pool --bench stages --bench micro`,
bench/run.sh) and the Rust conformance reader (`cargo build --release -p entropy-diode-client
--example conformance`, clients/conformance). When a shared crate (tokio, serde, ...) resolves
other features there, it and everything above it compile again: minutes on two cores.
bench/tools/Cargo.toml and the client's dev-dependencies name the missing features; this fails,
naming crate and features, when a change makes the sets drift apart again.

It compares cargo's own unit graph (`--unit-graph`, read with RUSTC_BOOTSTRAP=1 on the stable
toolchain; nothing is compiled), one unit per crate, target, profile and feature set, so what it
says is what the build will do. `cargo tree` merged a crate's build-script copy (every feature)
with its target copy and hid a difference there: bitflags' std and regex-automata's meta made the
conformance example compile 19 crates again, the gateway among them (1.8 min from a clean clone).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ["build", "--release", "-p", "entropy-gateway", "-p", "entropy-collector", "-p", "entropy-bench",
           "-p", "entropy-mcp", "-p", "entropy-diode-cli"]
LATER = [
    ["bench", "--no-run", "-p", "entropy-bench", "--bench", "pool", "--bench", "stages", "--bench", "micro"],
    ["build", "--release", "-p", "entropy-diode-client", "--example", "conformance"],
]

Unit = dict  # one entry of cargo's unit graph


def unit_graph(args: list[str]) -> list[Unit]:
    cmd = ["cargo", *args, "--locked", "-Z", "unstable-options", "--unit-graph"]
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")  # --unit-graph is unstable; this only reads it
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["units"]


def shallow(unit: Unit) -> str:
    """What makes two units the same compilation job, apart from features and dependencies. The
    profile's name is left out: `bench` and `release` compile alike and share target/release."""
    profile = {k: v for k, v in unit["profile"].items() if k != "name"}
    return json.dumps([unit["pkg_id"], unit["target"]["name"], unit["target"]["kind"], unit["mode"],
                       unit["platform"], profile], sort_keys=True)


def identities(units: list[Unit]) -> list[str]:
    """Each unit's full identity: itself, its features and its dependencies' identities (cargo
    compiles a crate again when any of them differs)."""
    memo: dict[int, str] = {}

    def ident(i: int) -> str:
        if i not in memo:
            deps = sorted(ident(d["index"]) for d in units[i]["dependencies"])
            text = json.dumps([shallow(units[i]), sorted(units[i]["features"]), deps])
            memo[i] = hashlib.sha256(text.encode()).hexdigest()
        return memo[i]

    return [ident(i) for i in range(len(units))]


def describe(unit: Unit) -> str:
    name = unit["pkg_id"].rsplit("#", 1)[-1]
    host = " (build script or proc-macro copy)" if unit["profile"]["opt_level"] == "0" else ""
    return f"{name} {unit['target']['name']} [{unit['mode']}]{host}"


def main() -> int:
    release = unit_graph(RELEASE)
    release_ids = set(identities(release))
    release_by_shallow: dict[str, list[Unit]] = {}
    for unit in release:
        release_by_shallow.setdefault(shallow(unit), []).append(unit)
    drift = []
    for args in LATER:
        build = "cargo " + " ".join(args)
        units = unit_graph(args)
        again = [u for u, i in zip(units, identities(units)) if i not in release_ids
                 and shallow(u) in release_by_shallow]
        for unit in again:
            theirs = [set(r["features"]) for r in release_by_shallow[shallow(unit)]]
            ours = set(unit["features"])
            if ours in theirs:
                continue  # same features: compiled again only because a dependency below differs
            missing = sorted(set().union(*theirs) - ours)
            extra = sorted(ours - set().union(*theirs))
            drift.append(f"{build}: {describe(unit)}: missing {missing}, extra {extra}")
        if again and not any(d.startswith(build) for d in drift):
            drift.append(f"{build}: compiles again {', '.join(describe(u) for u in again)}")
    if drift:
        print("feature sets differ from the release build (cargo would compile these crates again):")
        print("\n".join(f"  {d}" for d in drift))
        print("name the missing features in bench/tools/Cargo.toml or the client's dev-dependencies")
        return 1
    print(f"feature sets: {'; '.join('cargo ' + ' '.join(a) for a in LATER)} compile none of the "
          "release build's crates again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
