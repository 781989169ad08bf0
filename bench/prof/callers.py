#!/usr/bin/env python3
"""Charges the samples of one leaf function (memcpy, memset...) to their callers.

    bench/prof/callers.py PERF_DATA LEAF_SUBSTRING [DEPTH]

Reads `perf script` of a recording made with call graphs (bench/prof/gateway.py with
PERF_G="--call-graph dwarf,16384 -F 1000"); for every sample whose leaf frame names
LEAF_SUBSTRING, takes the first DEPTH frames above it that are real functions (not inlined,
not another copy routine) and prints each chain's share of all samples, largest first.
"""
import collections
import re
import subprocess
import sys

FRAME = re.compile(r"^\s*[0-9a-f]+ (.*)\+0x[0-9a-f]+ \((.*)\)$")


def short(name: str) -> str:
    for _ in range(8):  # generic arguments, innermost first
        name = re.sub(r"<[^<>]*>", "", name)
    return name.strip()[:90]


def main() -> int:
    data, leaf = sys.argv[1], sys.argv[2]
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    out = subprocess.run(["perf", "script", "-i", data], capture_output=True, text=True, check=True).stdout
    total, chains = 0, collections.Counter()
    for block in out.split("\n\n"):
        frames = []
        for i, line in enumerate(block.strip().splitlines()[1:]):
            m = FRAME.match(line)
            if m and (i == 0 or m.group(2) != "inlined"):
                frames.append(m.group(1))
        if not frames:
            continue
        total += 1
        if leaf not in frames[0]:
            continue
        chain = [short(f) for f in frames[1:] if short(f) and not re.search(r"unknown|memcpy|memmove|memset", f)]
        chains[" <- ".join(chain[:depth])] += 1
    hits = sum(chains.values())
    print(f"{hits} of {total} samples ({100 * hits / max(total, 1):.1f}%) with a leaf naming {leaf!r}")
    for chain, n in chains.most_common(25):
        print(f"{100 * n / total:5.2f}%  {chain}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
