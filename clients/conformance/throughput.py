#!/usr/bin/env python3
"""Stream throughput per language: each client's stream reader beside its language's raw
generated stub (default channel options), against a gateway whose pool was pre-filled by
`ingest-load` (so supply is not what is measured: the dev feed tops out near 120 MB/s).

    clients/conformance/throughput.py [--only go,rust] [--total-mib 256] [--reps 3] [--out FILE]

Needs the release build of `entropy-gateway` and `entropy-bench` (bench/run.sh and the test
command make them). The gateway is pinned to the first CPU of bench/driver's split and each
reader to the other, like every benchmark here; the pool is topped up before every run. Runs
alternate reader and stub and each figure is the median of `--reps`. Prints a Markdown table
(MB/s, reader ÷ stub) and writes it to `--out` with the command and the machine. A reader
below half its stub is flagged. The test command runs a small smoke of this (`--total-mib 16
--reps 1`); the published table comes from a full run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as conformance  # noqa: E402

sys.path.insert(0, str(conformance.REPO / "bench" / "driver"))
import stack  # noqa: E402  (gateways pinned to cores, ingest-load top-ups)

CHUNK = 64 << 10


def measure(lang: conformance.Language, gw: stack.Gateway, total: int, mode: str) -> float:
    """MB/s of one run."""
    cmd = stack.LOAD_CPU + [*lang.run, "throughput", "--endpoint", gw.public, "--total",
                            str(total), "--chunk-bytes", str(CHUNK), "--mode", mode]
    r = subprocess.run(cmd, cwd=conformance.CLIENTS / lang.cwd, capture_output=True, text=True,
                       env=dict(os.environ, ENTROPY_API_KEY=stack.API_KEY), timeout=600)
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise stack.BenchError(f"{lang.name} {mode}: exit {r.returncode}: {r.stderr[-800:]}") from None
    if out["bytes"] != total:
        raise stack.BenchError(f"{lang.name} {mode}: got {out['bytes']} of {total} bytes")
    return total / out["seconds"] / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help="comma-separated languages")
    parser.add_argument("--total-mib", type=int, default=256, help="MiB per run (default 256)")
    parser.add_argument("--reps", type=int, default=3, help="runs per figure (default 3)")
    parser.add_argument("--out", type=Path, help="also write the table here")
    parser.add_argument("--skip-build", action="store_true")
    args = parser.parse_args()
    langs = conformance.select(args.only, parser)
    if not args.skip_build:
        conformance.build(langs)
    total = args.total_mib << 20
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        gw = stack.start_gateway(Path(tmp), "gateway", capacity=total + (64 << 20),
                                 extra=["--stream-max-wait-ms", "30000"])
        try:
            for rep in range(args.reps):
                for lang in langs:
                    for mode in ("reader", "stub"):
                        stack.top_up(gw, total + (32 << 20))
                        mbps = measure(lang, gw, total, mode)
                        results.setdefault(lang.name, {}).setdefault(mode, []).append(mbps)
                        print(f"rep {rep + 1} {lang.name:<10} {mode:<6} {mbps:8.0f} MB/s",
                              flush=True)
        finally:
            gw.proc.stop()
    lines = [
        f"Stream throughput, {args.total_mib} MiB per run in {CHUNK >> 10} KiB messages, median of "
        f"{args.reps}; gateway on CPU {stack.SERVER_CPU[-1]}, reader on CPU {stack.LOAD_CPU[-1]}, "
        "pool pre-filled by ingest-load.",
        "",
        "| language | reader MB/s | raw stub MB/s | reader ÷ stub |",
        "|---|---|---|---|",
    ]
    slow = []
    for name, modes in results.items():
        reader, stub = statistics.median(modes["reader"]), statistics.median(modes["stub"])
        ratio = reader / stub
        flag = "" if ratio >= 0.5 else " (below half: fix it)"
        if ratio < 0.5:
            slow.append(name)
        lines.append(f"| {name} | {reader:,.0f} | {stub:,.0f} | {ratio:.2f}{flag} |")
    command = "clients/conformance/throughput.py " + " ".join(sys.argv[1:])
    lines += ["", f"Command: `{command.strip()}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."]
    table = "\n".join(lines)
    print("\n" + table)
    if args.out:
        args.out.write_text(table + "\n")
    if slow:
        print(f"readers below half their stub: {', '.join(slow)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
