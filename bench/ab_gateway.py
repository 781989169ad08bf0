#!/usr/bin/env python3
"""Two gateway builds side by side, in one run: GetRandom under h2load at 32 B, 1 KiB and
64 KiB, alternating builds point by point, each draining a pool pre-filled by ingest-load,
with the gateway on CPU 0 and h2load on CPU 1 (the suite's pinning). Prints medians and the
after/before ratio. For A/B checks of one change; the suite (bench/run.sh) is the reference.

    bench/ab_gateway.py BEFORE_GATEWAY AFTER_GATEWAY [--reps 5] [--seconds 5]

Both builds must speak the same Publish contract (ingest-load comes from target/release).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "driver"))
import loadgen  # noqa: E402
import stack  # noqa: E402

SIZES = [32, 1024, 64 << 10]


def bin_dir(gateway: Path, root: Path) -> Path:
    """A directory holding `gateway` as entropy-gateway beside this tree's ingest-load."""
    d = Path(tempfile.mkdtemp(prefix="ab-bin-", dir=root))
    shutil.copy(gateway, d / "entropy-gateway")
    for tool in ("ingest-load", "grpc-load"):
        (d / tool).symlink_to(stack.BIN / tool)
    return d


def point(bins: Path, work: Path, size: int, seconds: float) -> dict:
    stack.BIN = bins
    gw = stack.start_gateway(work, f"gw-{bins.name}-{size}", capacity=1 << 30)
    try:
        stack.top_up(gw, 1 << 30)
        tag = f"{bins.name}-{size}"
        if size * 100_000 * seconds > 1 << 30:
            # Large messages drain the 1 GiB pool within the time: a fixed count instead.
            return loadgen.h2load(work, work, tag, gw.public, size, 10, 5, requests=15_000)
        return loadgen.h2load(work, work, tag, gw.public, size, 10, 5, duration_s=seconds)
    finally:
        gw.proc.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5,
                    help="per point at 32 B and 1 KiB; 64 KiB runs 15,000 calls (~0.9 GiB)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ab-") as tmp:
        root = Path(tmp)
        builds = {"before": bin_dir(args.before, root), "after": bin_dir(args.after, root)}
        results: dict[tuple[str, int], list[dict]] = {}
        for rep in range(args.reps):
            for size in SIZES:
                for name, bins in builds.items():
                    r = point(bins, root / f"w{rep}", size, args.seconds)
                    if r["failed"] or r["grpc_ok_fraction"] < 0.999:
                        print(f"{name} {size} B: calls failed: {r}", file=sys.stderr)
                        return 1
                    results.setdefault((name, size), []).append(r)
                    print(f"rep {rep + 1} {name:6} {size:>6} B  {r['rps']:>9.0f} req/s  "
                          f"p99 {r['p99_ms']:.2f} ms", flush=True)
        print("\n| size | before req/s | after req/s | after ÷ before | before p99 ms | after p99 ms |")
        print("|---|---|---|---|---|---|")
        for size in SIZES:
            b = [r["rps"] for r in results[("before", size)]]
            a = [r["rps"] for r in results[("after", size)]]
            bp = [r["p99_ms"] for r in results[("before", size)]]
            ap99 = [r["p99_ms"] for r in results[("after", size)]]
            print(f"| {size} B | {statistics.median(b):,.0f} | {statistics.median(a):,.0f} | "
                  f"{statistics.median(a) / statistics.median(b):.3f} | "
                  f"{statistics.median(bp):.2f} | {statistics.median(ap99):.2f} |")
        print(f"\nmedians of {args.reps} alternating runs of {args.seconds:g} s per point; "
              "h2load -c 10 -m 5, gateway pinned to one core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
