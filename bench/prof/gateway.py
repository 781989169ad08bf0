#!/usr/bin/env python3
"""perf record of a gateway under one load shape, for "where the time goes" in bench/README.md.

    bench/prof/gateway.py BIN_DIR SHAPE SECONDS OUT.perf.data

BIN_DIR holds entropy-gateway, ingest-load and grpc-load (e.g. target/dist after
`cargo build --profile dist -p entropy-gateway -p entropy-bench`). SHAPE is a GetRandom size in
bytes (h2load -c 10 -m 5; 15,000 calls from 64 KiB up, else SECONDS), `stream` (one
StreamRandom of 64 KiB messages) or `ingest` (768 pre-signed 1 MiB chunks). The pool is
pre-filled with 1 GiB first. PERF_G sets perf's call-graph options (default `-g -F 2000`;
`--call-graph dwarf,16384 -F 1000` to see callers through inlined code). Read the result with
`perf report`, or bench/prof/callers.py.
"""
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "driver"))
import loadgen  # noqa: E402
import stack  # noqa: E402


def main() -> int:
    bins, shape, secs, out = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
    stack.BIN = bins
    work = Path(tempfile.mkdtemp(prefix="prof-"))
    gw = stack.start_gateway(work, "gw-prof", capacity=(1 << 30) + (64 << 20))
    try:
        if shape != "ingest":
            stack.top_up(gw, 1 << 30)
        perf = subprocess.Popen(["perf", "record", *os.environ.get("PERF_G", "-g -F 2000").split(),
                                 "-o", out, "-p", str(gw.proc.pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        if shape == "ingest":
            r = stack.ingest_load(gw, 1 << 20, count=768)
            print(f"{r['bytes_per_s'] / (1 << 30):.2f} GiB/s ingest")
        elif shape == "stream":
            r = loadgen.grpc_load(["stream", "--streams", "1", "--chunk-bytes", str(64 << 10), "--duration-s",
                                   str(secs), "--max-bytes", str((1 << 30) - (64 << 20))], gw.public)
            print(f"{r.get('bytes_per_s', 0) / (1 << 30):.2f} GiB/s")
        else:
            size = int(shape)
            if size >= 65536:
                r = loadgen.h2load(work, work, "p", gw.public, size, 10, 5, requests=15000)
            else:
                r = loadgen.h2load(work, work, "p", gw.public, size, 10, 5, duration_s=int(secs))
            print(f"{r['rps']:.0f} req/s, p99 {r['p99_ms']} ms")
        perf.send_signal(2)
        perf.wait(timeout=60)
    finally:
        gw.proc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
