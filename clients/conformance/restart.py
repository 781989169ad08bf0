#!/usr/bin/env python3
"""The restart rows of the conformance run: every language's stream reader against a real
gateway that is killed (-9) and started again on the same port after 0.2, 2, 5 and 10 s, and
one stopped with SIGTERM (the graceful path, streams end with UNAVAILABLE) and started again.

    clients/conformance/restart.py [--gateway PATH] [--only python,go] [--rows kill9_2s,sigterm]
                                   [--parallel N]

The rows run side by side (`--parallel`, default all: a row is mostly waiting, for the
readers' pace, the outage and the restart; about 45 s for all five on 2 cores instead of two
minutes one after another). Each row starts its own dev gateway on its own port, starts every
language's `reader` program (clients/README.md, "Reader programs") for the same total, paced so the fault lands mid-stream, waits until every
reader has received something, applies the fault, restarts the gateway, and waits for the
readers. A reader passes when it reports OK with exactly the total, wrote exactly those bytes,
reconnected at least once, and no 16-byte run of its bytes appears twice anywhere in the row
(its own bytes or another language's: `repeat-scan` from bench/tools, built by the test
command's release build, or REPEAT_SCAN_BIN). `run.py` adds these rows to its table; run alone, this
prints its own. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as conformance  # noqa: E402  (the languages, the gateway and the table live there)

# Readers buffer what HTTP/2 flow control lets the gateway send ahead: up to 4 MiB for the Rust
# client's stream window, and Python's grpcio (whose windows grow with its BDP probe) was seen
# holding 7 MiB ahead of its reader. The total must be well past what is received at the fault
# plus that, or a reader finishes from its buffer and never sees the outage. Readers also start
# at different speeds (a JVM takes a second or two).
TOTAL = 32 << 20  # bytes per reader per row
CHUNK = 64 << 10  # bytes per read and per message
PACE_MS = 20  # sleep after each read: about 3 MB/s, so the total takes about ten seconds
STARTED_BYTES = 1 << 20  # every reader has this much before the fault
READERS_TIMEOUT = 90.0  # seconds for the readers to finish after the restart


@dataclass(frozen=True)
class Row:
    name: str
    signal: int
    down_s: float  # from the gateway's exit to the new one's start


ROWS = [
    Row("restart_kill9_0.2s", signal.SIGKILL, 0.2),
    Row("restart_kill9_2s", signal.SIGKILL, 2.0),
    Row("restart_kill9_5s", signal.SIGKILL, 5.0),
    Row("restart_kill9_10s", signal.SIGKILL, 10.0),
    Row("restart_sigterm", signal.SIGTERM, 0.5),
]


def repeats(files: dict[str, Path]) -> str | None:
    """Whether a run of 16+ bytes appears twice anywhere in `files` (repeat-scan), and where."""
    scan = os.environ.get("REPEAT_SCAN_BIN") or str(conformance.REPO / "target/release/repeat-scan")
    r = subprocess.run([scan, *map(str, files.values())], capture_output=True, text=True)
    if r.returncode == 0:
        return None
    if r.returncode != 1:
        return f"repeat-scan failed ({r.returncode}): {r.stderr.strip()}"
    names = {str(path): name for name, path in files.items()}
    hit = json.loads(r.stdout)["repeat"]
    return (
        f"bytes at {names[hit['file']]}[{hit['offset']}] also came to "
        f"{names[hit['also_file']]}[{hit['also_offset']}]"
    )


def run_row(
    row: Row, langs: list[conformance.Language], binary: str, key: str, work: Path
) -> dict[str, str | None]:
    """One fault with every reader running; each language's failure, or None."""
    addr = f"127.0.0.1:{conformance.free_port()}"
    log = work / f"{row.name}.gateway.log"
    gateway, _ = conformance.start_gateway(binary, key, log, addr)
    readers: dict[str, conformance.Reader] = {}
    why: dict[str, str | None] = {lang.name: None for lang in langs}

    def launch(lang: conformance.Language) -> conformance.Reader:
        out = work / f"{row.name}.{lang.name}.bin"
        out.touch()
        cmd = [*lang.run, "reader", "--endpoint", addr, "--total", str(TOTAL),
               "--chunk-bytes", str(CHUNK), "--out", str(out), "--pace-ms", str(PACE_MS)]
        proc = subprocess.Popen(
            cmd, cwd=conformance.CLIENTS / lang.cwd, env=dict(os.environ, ENTROPY_API_KEY=key),
            stdout=subprocess.PIPE, stderr=(work / f"{row.name}.{lang.name}.err").open("wb"),
            text=True,
        )
        readers[lang.name] = (proc, out)  # kept here too, so `finally` stops it on a failure
        return proc, out

    try:
        conformance.start_staggered(langs, launch, CHUNK)
        deadline = time.monotonic() + 60
        while any(out.stat().st_size < STARTED_BYTES for _, out in readers.values()):
            if time.monotonic() > deadline:
                slow = [n for n, (_, out) in readers.items() if out.stat().st_size < STARTED_BYTES]
                raise RuntimeError(f"readers did not start within 60 s: {', '.join(slow)}")
            time.sleep(0.05)
        early = {n for n, (p, out) in readers.items() if out.stat().st_size >= TOTAL}
        gateway.send_signal(row.signal)
        gateway.wait(timeout=30)
        time.sleep(row.down_s)
        gateway, _ = conformance.start_gateway(binary, key, log, addr)
        finished: dict[str, Path] = {}
        for name, (proc, out) in readers.items():
            try:
                stdout, _ = proc.communicate(timeout=READERS_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                why[name] = f"did not finish within {READERS_TIMEOUT:.0f} s of the restart"
                continue
            finished[name] = out
            why[name] = judge(name, stdout, out.stat().st_size, name in early, work, row)
        repeat = repeats(finished)
        for name in finished:
            why[name] = why[name] or repeat
    finally:
        for proc, _ in readers.values():
            if proc.poll() is None:
                proc.kill()
        gateway.kill()
        gateway.wait()
    return why


def judge(name: str, stdout: str, wrote: int, early: bool, work: Path, row: Row) -> str | None:
    if early:
        return "finished before the fault: make the row slower"
    try:
        report = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        err = (work / f"{row.name}.{name}.err").read_text(errors="replace")[-600:]
        return f"no report line; stderr: {err}"
    if report.get("code") != "OK":
        return f"{report.get('code')} after {report.get('bytes')} bytes: {report.get('error')}"
    if report.get("bytes") != TOTAL or wrote != TOTAL:
        return f"reported {report.get('bytes')} bytes, wrote {wrote}, want exactly {TOTAL}"
    if int(report.get("reconnects", 0)) < 1:
        return "reported no reconnect across a gateway restart"
    return None


def run_restarts(
    langs: list[conformance.Language],
    binary: str,
    key: str,
    rows: list[Row] = ROWS,
    parallel: int = len(ROWS),
) -> dict[str, dict[str, str | None]]:
    """Every row, `parallel` at a time (each has its own gateway, port and files; most of a
    row is waiting: for the readers' pace, the outage, the restart): {row: {language: failure
    or None}}, in the order of `rows`."""

    def timed(row: Row, work: Path) -> dict[str, str | None]:
        started = time.monotonic()
        why = run_row(row, langs, binary, key, work)
        print(f"restart row {row.name}: {time.monotonic() - started:.1f} s", flush=True)
        return why

    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max(1, parallel)) as pool:
        print(f"restart rows, {parallel} at a time: {', '.join(r.name for r in rows)}", flush=True)
        futures = {row.name: pool.submit(timed, row, Path(tmp)) for row in rows}
        return {name: future.result() for name, future in futures.items()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default_gw = os.environ.get("GATEWAY_BIN") or str(conformance.REPO / "target/release/entropy-gateway")
    parser.add_argument("--gateway", default=default_gw)
    parser.add_argument("--only", help="comma-separated languages")
    parser.add_argument("--rows", help="comma-separated rows (" + ", ".join(r.name for r in ROWS) + ")")
    parser.add_argument("--skip-build", action="store_true")
    parser.add_argument(
        "--parallel", type=int, default=len(ROWS), help="rows at a time (default: all)"
    )
    args = parser.parse_args()
    langs = conformance.select(args.only, parser)
    rows = [r for r in ROWS if not args.rows or r.name in args.rows.split(",")]
    if not args.skip_build:
        conformance.build(langs)
    key = "restart-" + secrets.token_hex(12)
    table = run_restarts(langs, args.gateway, key, rows, args.parallel)
    return conformance.report(table, [lang.name for lang in langs], {})


if __name__ == "__main__":
    sys.exit(main())
