#!/usr/bin/env python3
"""What a receipt costs a call, side by side in one run on one gateway build: GetIntegers
(six of 1..=49, a lottery draw) under ghz, without a receipt and with one under each fsync
policy (`receipts_sync` = group, every_append), point by point in rotation, each point on a
fresh gateway whose pool ingest-load pre-filled, with the gateway on CPU 0 and ghz on CPU 1 (the
suite's pinning). Prints medians of calls per second, p50 and p99 latency, the ratio to no
receipt, and the log's bytes per receipt. The receipt log is on the work directory's file system
(its fsync latency is the number that matters: say which disk when you quote it).

    bench/receipts_cost.py [GATEWAY] [--reps 3] [--seconds 5] [--concurrency 8] [--work DIR]

GATEWAY defaults to target/release/entropy-gateway; ingest-load comes from target/release.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "driver"))
import loadgen  # noqa: E402
import stack  # noqa: E402
from ab_gateway import bin_dir  # noqa: E402

MODES = ("none", "group", "every_append")


def point(work: Path, mode: str, rep: int, seconds: float, concurrency: int) -> dict:
    """One ghz run of GetIntegers on a fresh gateway: calls/s, p50/p99 ms, log bytes/receipt."""
    log_dir = work / f"log-{mode}-{rep}"
    extra = [] if mode == "none" else ["--receipts-dir", str(log_dir), "--receipts-sync", mode]
    gw = stack.start_gateway(work, f"gw-{mode}-{rep}", capacity=256 << 20, extra=extra)
    try:
        stack.top_up(gw, 128 << 20)
        body = {"min": 1, "max": 49, "count": 6, "receipt": mode != "none"}
        out = work / f"ghz-{mode}-{rep}.json"
        cmd = loadgen.LOAD_CPU + [
            "ghz", "--insecure", "--call", "entropy.v1.EntropyService/GetIntegers",
            "-d", json.dumps(body), "-c", str(concurrency), "--connections", "2",
            "-z", f"{seconds}s", "--format", "json", "-o", str(out),
            "--metadata", json.dumps({"authorization": f"Bearer {stack.API_KEY}"}), gw.public]
        subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        r = json.loads(out.read_text())
        codes = r.get("statusCodeDistribution") or {}
        ok = int(codes.get("OK", 0))
        lat = {int(d["percentage"]): d["latency"] / 1e6 for d in r.get("latencyDistribution") or []}
        log_bytes = None
        if mode != "none":
            size = sum(f.stat().st_size for f in log_dir.iterdir() if f.name in
                       ("receipts.log", "leaves.bin"))
            log_bytes = size / max(ok, 1)
        return {"rps": ok / (r.get("total", 1) / 1e9), "p50_ms": lat.get(50),
                "p99_ms": lat.get(99), "ok": ok, "count": r.get("count", 0),
                "log_bytes_per_receipt": log_bytes}
    finally:
        gw.proc.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gateway", nargs="?", default="target/release/entropy-gateway")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="receipts-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    stack.BIN = bin_dir(Path(args.gateway).resolve(), work)
    points: dict[str, list[dict]] = {m: [] for m in MODES}
    for rep in range(args.reps):
        for mode in MODES:
            p = point(work, mode, rep, args.seconds, args.concurrency)
            print(f"rep {rep} {mode:>12}: {p['rps']:8.0f} calls/s  p50 {p['p50_ms']:.2f} ms  "
                  f"p99 {p['p99_ms']:.2f} ms  ({p['ok']}/{p['count']} OK)", flush=True)
            points[mode].append(p)
    base = statistics.median(p["rps"] for p in points["none"])
    print(f"\nmedians of {args.reps} ({args.seconds:g} s each, {args.concurrency} calls in flight, "
          f"work dir {work}):")
    print("| receipt | calls/s | ratio to none | p50 ms | p99 ms | log bytes per receipt |")
    print("|---|---|---|---|---|---|")
    for mode in MODES:
        rps = statistics.median(p["rps"] for p in points[mode])
        p50 = statistics.median(p["p50_ms"] for p in points[mode])
        p99 = statistics.median(p["p99_ms"] for p in points[mode])
        logb = [p["log_bytes_per_receipt"] for p in points[mode] if p["log_bytes_per_receipt"]]
        logs = f"{statistics.median(logb):.0f}" if logb else "-"
        print(f"| {mode} | {rps:.0f} | {rps / base:.2f} | {p50:.2f} | {p99:.2f} | {logs} |")
    failed = [p for ps in points.values() for p in ps if p["ok"] == 0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
