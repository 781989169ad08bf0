#!/usr/bin/env python3
"""What a CheckQuality call costs the gateway, and what callers checking in a loop do to
another key's small calls. Speed is measured, never asserted.

    bench/quality_cost.py [--bin-dir target/release] [--checks 16] [--sample-mib 4]

Starts a gateway as the resource sweep does (bench/sweep.py; a 1 GiB pool filled by ingest
before each phase, so no feeding runs while it measures), then:

1. CPU per MiB: the gateway's CPU time (utime + stime from /proc) over `--checks` sequential
   CheckQuality calls of `--sample-mib` each, per MiB checked; beside it, the same bytes drawn
   by one StreamRandom (`entropy stream --total`), what drawing and sending alone cost.
2. Latency: another key's GetRandom(32), one call at a time for 5 s (grpc-load), alone and
   while four callers run CheckQuality in a loop; medians and p99 side by side, in one run.

Prints the numbers and a JSON line; the results it produced are in bench/README.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sweep  # noqa: E402  (the gateway under test, its keys and its feed)

MiB = 1 << 20
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def entropy(bin_dir: Path, gw: sweep.Gateway, key: str, *args: str) -> subprocess.CompletedProcess:
    # The key in the environment: the CLI takes no key as a flag value.
    return subprocess.run([str(bin_dir / "entropy"), "--endpoint", gw.public,
                           "--timeout-ms", "60000", *args],
                          env=dict(os.environ, ENTROPY_API_KEY=sweep.KEYS[key]),
                          capture_output=True, timeout=120)


def latency(gw: sweep.Gateway, seconds: float) -> dict:
    out = subprocess.run([str(gw.bin_dir / "grpc-load"), "--addr", gw.public, "--key",
                          sweep.KEYS["free"], "unary", "--num-bytes", "32", "--duration-s",
                          str(seconds)], capture_output=True, text=True, timeout=seconds + 30)
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", type=Path, default=sweep.ROOT / "target" / "release")
    parser.add_argument("--checks", type=int, default=16)
    parser.add_argument("--sample-mib", type=int, default=4)
    args = parser.parse_args()
    config = sweep.Config("quality", [], 30_000, 120_000, 1024, 256, 64, 64 * MiB, 4 * MiB,
                          pool_bytes=1 << 30)
    work = Path(tempfile.mkdtemp(prefix="quality-cost-"))
    gw = sweep.start(args.bin_dir, config, work)
    sample = f"{args.sample_mib}MiB"
    checked = args.checks * args.sample_mib
    try:
        # 1. CPU per MiB.
        gw.top_up(900 * MiB)
        before = cpu_seconds(gw.proc.pid)
        for _ in range(args.checks):
            done = entropy(args.bin_dir, gw, "probe", "check", "--sample", sample, "--json")
            if done.returncode not in (0, 3):
                raise sweep.SweepError(f"check failed: {done.stderr.decode()[-300:]}")
        check_ms = (cpu_seconds(gw.proc.pid) - before) * 1000 / checked
        gw.top_up(900 * MiB)
        before = cpu_seconds(gw.proc.pid)
        done = entropy(args.bin_dir, gw, "probe", "stream", "--total", f"{checked}MiB")
        if done.returncode != 0 or len(done.stdout) != checked * MiB:
            raise sweep.SweepError(f"stream failed: {done.stderr.decode()[-300:]}")
        draw_ms = (cpu_seconds(gw.proc.pid) - before) * 1000 / checked

        # 2. Another key's GetRandom(32), alone and beside four checkers.
        gw.top_up(900 * MiB)
        alone = latency(gw, 5)
        stop = threading.Event()
        counts = [0] * 4

        def checker(i: int) -> None:
            while not stop.is_set():
                if entropy(args.bin_dir, gw, "probe", "check", "--sample", sample).returncode in (0, 3):
                    counts[i] += 1

        threads = [threading.Thread(target=checker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        beside = latency(gw, 5)
        stop.set()
        for t in threads:
            t.join()
    finally:
        gw.stop()
    p = lambda r, q: r["latency"][q + "_ms"]  # noqa: E731
    print(f"gateway CPU per MiB: CheckQuality({sample}) {check_ms:.1f} ms, "
          f"StreamRandom of the same bytes {draw_ms:.1f} ms ({args.checks} checks)")
    print(f"another key's GetRandom(32): alone p50 {p(alone, 'p50'):.2f} ms p99 {p(alone, 'p99'):.2f} ms; "
          f"beside 4 checkers p50 {p(beside, 'p50'):.2f} ms p99 {p(beside, 'p99'):.2f} ms "
          f"({sum(counts)} checks meanwhile)")
    print(json.dumps({"check_ms_per_mib": check_ms, "stream_ms_per_mib": draw_ms, "alone": alone,
                      "beside_checkers": beside, "checks_meanwhile": sum(counts)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
