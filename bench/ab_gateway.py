#!/usr/bin/env python3
"""Two gateway builds side by side, in one run: GetRandom under h2load at 32 B, 1 KiB and
64 KiB, one StreamRandom of 64 KiB messages (grpc-load), and Publish of pre-signed 1 MiB
chunks (ingest-load, 16 in flight over 4 connections), alternating builds point by point, each
unary and stream point draining a pool pre-filled by ingest-load, with the gateway on CPU 0 and
the load on CPU 1 (the suite's pinning). Shape `dev` is GetRandom 1 KiB from a `--dev`
gateway, its in-process feed on the same core (the suite's dev-mode point). Prints medians and
the after/before ratio. For A/B checks of one change; the suite (bench/run.sh) is the reference.

    bench/ab_gateway.py BEFORE_GATEWAY AFTER_GATEWAY [--reps 5] [--seconds 5]
                        [--shapes 32,1024,65536,stream,ingest,dev]

Both builds must speak the same Publish contract (ingest-load comes from target/release).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "driver"))
import loadgen  # noqa: E402
import stack  # noqa: E402

SHAPES = "32,1024,65536,stream,ingest"
GiB = 1 << 30


def bin_dir(gateway: Path, root: Path) -> Path:
    """A directory holding `gateway` as entropy-gateway beside this tree's ingest-load."""
    d = Path(tempfile.mkdtemp(prefix="ab-bin-", dir=root))
    shutil.copy(gateway, d / "entropy-gateway")
    for tool in ("ingest-load", "grpc-load"):
        (d / tool).symlink_to(stack.BIN / tool)
    return d


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def point(bins: Path, work: Path, shape: str, seconds: float) -> dict:
    """One point: {"value", "unit", "cpu_us", "per", "p99_ms"?}, where cpu_us is the gateway's
    CPU time per call (per MiB for the stream and ingest): a figure that other load on the
    machine disturbs far less than throughput. Raises when a call failed."""
    stack.BIN = bins
    if shape == "dev":
        return dev_point(bins, work, seconds)
    gw = stack.start_gateway(work, f"gw-{bins.name}-{shape}", capacity=GiB + (64 << 20))
    try:
        if shape != "ingest":
            stack.top_up(gw, GiB)
        cpu0 = cpu_seconds(gw.proc.pid)
        if shape == "ingest":
            r = stack.ingest_load(gw, 1 << 20, count=768)
            if r["failed"]:
                raise stack.BenchError(f"ingest: {r['failed']} failed: {r['first_error']}")
            cpu = cpu_seconds(gw.proc.pid) - cpu0
            return {"value": r["bytes_per_s"] / GiB, "unit": "GiB/s",
                    "cpu_us": cpu * 1e6 / 768, "per": "MiB"}
        if shape == "stream":
            r = loadgen.grpc_load(["stream", "--streams", "1", "--chunk-bytes", str(64 << 10),
                                   "--duration-s", str(seconds),
                                   "--max-bytes", str(GiB - (64 << 20))], gw.public)
            cpu = cpu_seconds(gw.proc.pid) - cpu0
            if not r["total_bytes"]:
                raise stack.BenchError(f"stream: no bytes: {r}")
            # The gateway sends a little past the client's window: CPU per MiB is approximate.
            return {"value": r["bytes_per_s"] / GiB, "unit": "GiB/s",
                    "cpu_us": cpu * 1e6 / (r["total_bytes"] / (1 << 20)), "per": "MiB"}
        size, tag = int(shape), f"{bins.name}-{shape}"
        if size * 100_000 * seconds > GiB:
            # Large messages drain the 1 GiB pool within the time: a fixed count instead.
            r = loadgen.h2load(work, work, tag, gw.public, size, 10, 5, requests=15_000)
        else:
            r = loadgen.h2load(work, work, tag, gw.public, size, 10, 5, duration_s=seconds)
        cpu = cpu_seconds(gw.proc.pid) - cpu0
        if r["failed"] or r["grpc_ok_fraction"] < 0.999:
            raise stack.BenchError(f"{size} B: calls failed: {r}")
        out = {"cpu_us": cpu * 1e6 / r["requests"], "per": "call", "p99_ms": r["p99_ms"]}
        if size >= 64 << 10:
            return {"value": r["bytes_per_s"] / GiB, "unit": "GiB/s", **out}
        return {"value": r["rps"], "unit": "req/s", **out}
    finally:
        gw.proc.stop()


def dev_point(bins: Path, work: Path, seconds: float) -> dict:
    """GetRandom 1 KiB at 50 in flight from a dev gateway (pool 16 MiB, as in the suite), its
    feed competing for the same core."""
    gw = stack.start_gateway(work, f"gw-{bins.name}-dev", 16 << 20, dev=True)
    try:
        time.sleep(1.0)  # the feed's start-up health test
        cpu0 = cpu_seconds(gw.proc.pid)
        r = loadgen.h2load(work, work, f"{bins.name}-dev", gw.public, 1024, 10, 5, duration_s=seconds)
        cpu = cpu_seconds(gw.proc.pid) - cpu0
        if r["failed"] or r["grpc_ok_fraction"] < 0.999:
            raise stack.BenchError(f"dev: calls failed: {r}")
        return {"value": r["rps"], "unit": "req/s", "cpu_us": cpu * 1e6 / r["requests"], "per": "call",
                "p99_ms": r["p99_ms"]}
    finally:
        gw.proc.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5,
                    help="per point at 32 B, 1 KiB, dev and the stream; 64 KiB runs 15,000 calls "
                         "(~0.9 GiB), ingest 768 chunks of 1 MiB")
    ap.add_argument("--shapes", default=SHAPES, help=f"comma-separated (default {SHAPES}; also dev)")
    args = ap.parse_args()
    shapes = args.shapes.split(",")
    with tempfile.TemporaryDirectory(prefix="ab-") as tmp:
        root = Path(tmp)
        builds = {"before": bin_dir(args.before, root), "after": bin_dir(args.after, root)}
        results: dict[tuple[str, str], list[dict]] = {}
        for rep in range(args.reps):
            for shape in shapes:
                for name, bins in builds.items():
                    try:
                        r = point(bins, root / f"w{rep}", shape, args.seconds)
                    except stack.BenchError as e:
                        print(f"{name} {shape}: {e}", file=sys.stderr)
                        return 1
                    results.setdefault((name, shape), []).append(r)
                    p99 = f"  p99 {r['p99_ms']:.2f} ms" if "p99_ms" in r else ""
                    print(f"rep {rep + 1} {name:6} {shape:>7}  {r['value']:>10,.2f} {r['unit']}"
                          f"  {r['cpu_us']:8.1f} CPU us/{r['per']}{p99}", flush=True)
        print("\n| shape | before | after | after ÷ before | gateway CPU before | after | "
              "after ÷ before | p99 ms before | after |")
        print("|---|---|---|---|---|---|---|---|---|")
        for shape in shapes:
            b = statistics.median(r["value"] for r in results[("before", shape)])
            a = statistics.median(r["value"] for r in results[("after", shape)])
            unit = results[("before", shape)][0]["unit"]
            p99s = ["-", "-"]
            if "p99_ms" in results[("before", shape)][0]:
                p99s = [f"{statistics.median(r['p99_ms'] for r in results[(n, shape)]):.2f}"
                        for n in ("before", "after")]
            label = {"stream": "one StreamRandom, 64 KiB messages",
                     "ingest": "Publish, 1 MiB chunks", "dev": "dev mode, GetRandom 1 KiB"}.get(shape, f"GetRandom {shape} B")
            cb, ca = (statistics.median(r["cpu_us"] for r in results[(n, shape)])
                      for n in ("before", "after"))
            per = results[("before", shape)][0]["per"]
            print(f"| {label} | {b:,.2f} {unit} | {a:,.2f} {unit} | {a / b:.3f} | "
                  f"{cb:,.1f} us/{per} | {ca:,.1f} us/{per} | {ca / cb:.3f} | "
                  f"{p99s[0]} | {p99s[1]} |")
        print(f"\nmedians of {args.reps} alternating runs; {args.seconds} s per timed point; "
              "h2load -c 10 -m 5; gateway pinned to one core, load to the other")
    return 0


if __name__ == "__main__":
    sys.exit(main())
