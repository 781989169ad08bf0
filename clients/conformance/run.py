#!/usr/bin/env python3
"""Conformance driver: starts ONE live dev gateway, runs every language's conformance program
against it with the same cases, and judges every answer by the same rules.

    clients/conformance/run.py [--gateway PATH] [--only python,go] [--skip-build]

Prints a table (case x language), the reason for each failure, and a last line
`conformance: N passed, M failed`; exits 1 on any failure. Standard library only.

A language is one entry in LANGUAGES: how to build its program and how to run it. The program
protocol (arguments, one JSON line per case) is in README.md beside this file.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CLIENTS = Path(__file__).resolve().parent.parent
REPO = CLIENTS.parent
POOL_CAPACITY = 16 * 1024 * 1024
MIB = 1 << 20
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class Language:
    name: str
    cwd: str  # relative to clients/
    run: list[str]
    build: list[str] = field(default_factory=list)


LANGUAGES = [
    Language("python", "python", [".venv/bin/python", "conformance.py"]),
    Language(
        "go", "go", [".bin/conformance"], ["go", "build", "-o", ".bin/conformance", "./cmd/conformance"]
    ),
    Language(
        "typescript", "typescript", ["node", "dist/conformance/main.js"], ["npm", "run", "--silent", "build"]
    ),
    Language(
        "rust",
        "rust",
        ["../../target/release/examples/conformance"],
        ["cargo", "build", "--release", "--locked", "-q", "-p", "entropy-diode-client", "--example", "conformance"],
    ),
    Language(
        "java",
        "java",
        # The class path: this client's classes, then its dependencies as Maven resolved them.
        ["sh", "-c", 'exec java -cp "target/test-classes:target/classes:$(cat target/runtime-classpath.txt)" '
         'io.github.entropydiode.client.Conformance "$@"', "conformance"],
        ["mvn", "-B", "-q", "-DskipTests", "package"],
    ),
]

# The order readers start in when a fault must land on all of them: slowest to get going first,
# except Python, last: grpcio's flow-control window grows to about 15 MiB ahead of a paced reader
# (a 32 MiB read at 64 KiB every 40 ms: the gateway's stream ended when the reader had written
# 17 MiB, 10 s in; Go's was still open at 19 MiB), so its stream on the gateway ends soonest.
START_ORDER = {"java": 0, "typescript": 1, "go": 2, "rust": 3, "python": 4}

Reader = tuple[subprocess.Popen, Path]  # a reader program and the file it writes


def start_staggered(
    langs: list[Language], launch: Callable[[Language], Reader], first_bytes: int, timeout: float = 60
) -> dict[str, Reader]:
    """Starts each language's reader with `launch`, the slowest to start (the JVM) first, each
    once the one before has written `first_bytes`. Started together on a busy machine, a reader
    that is slow to start can find the others already finished (CI saw it), and a fault then
    lands on fewer streams than it should."""
    started: dict[str, Reader] = {}
    for lang in sorted(langs, key=lambda lang: START_ORDER.get(lang.name, len(START_ORDER))):
        started[lang.name] = launch(lang)
        proc, out = started[lang.name]
        deadline = time.monotonic() + timeout
        while out.stat().st_size < first_bytes:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{lang.name} reader: {out.stat().st_size} bytes "
                                   f"{'when it exited' if proc.poll() is not None else f'after {timeout:.0f} s'}")
            time.sleep(0.05)
    return started


# --- the cases: what each must observe --------------------------------------------------------

Check = Callable[[dict], str | None]  # an observation -> None if it passes, else why not


def code(expected: str) -> Check:
    def check(obs: dict) -> str | None:
        return None if obs.get("code") == expected else f"want {expected}, got {describe(obs)}"

    return check


def ok(then: Callable[[dict], str | None]) -> Check:
    def check(obs: dict) -> str | None:
        if obs.get("code") != "OK":
            return f"want OK, got {describe(obs)}"
        try:
            return then(obs)
        except (KeyError, TypeError, ValueError) as e:
            return f"malformed observation: {type(e).__name__}: {e}"

    return check


def data(obs: dict) -> bytes:
    return base64.b64decode(obs["data_b64"], validate=True)


def repeated_blocks(buf: bytes) -> int:
    """Repeated 16-byte blocks: for random data a repeat has probability ~2^-128 per pair, so
    any repeat means bytes were served (or returned) twice."""
    blocks = [buf[i : i + 16] for i in range(0, len(buf) - 15, 16)]
    return len(blocks) - len(set(blocks))


def check_random_32(obs: dict) -> str | None:
    n = len(data(obs))
    return None if n == 32 else f"{n} bytes"


def check_dice(obs: dict) -> str | None:
    v = [int(x) for x in obs["values"]]
    if len(v) != 1000:
        return f"{len(v)} values"
    if not all(1 <= x <= 6 for x in v):
        return f"out of 1..6: {sorted(set(v) - set(range(1, 7)))[:5]}"
    return None if set(v) == set(range(1, 7)) else f"faces missing from 1000 rolls: {set(v)}"


def check_int64(obs: dict) -> str | None:
    v = [int(x) for x in obs["values"]]  # decimal strings: JSON numbers cannot hold int64
    if len(v) != 100 or not all(INT64_MIN <= x <= INT64_MAX for x in v):
        return f"{len(v)} values, range {min(v, default=0)}..{max(v, default=0)}"
    if not (any(x < 0 for x in v) and any(x > 0 for x in v)):
        return "100 full-range values all of one sign (p ~ 2^-99)"
    return None if len(set(v)) == 100 else "repeated values"


def check_floats(obs: dict) -> str | None:
    v = [float(x) for x in obs["values"]]
    if len(v) != 1000:
        return f"{len(v)} values"
    bad = [x for x in v if not (0.0 <= x < 1.0 and math.ldexp(x, 53).is_integer())]
    return f"not k*2^-53 in [0,1): {bad[:3]}" if bad else None


UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def check_uuids(obs: dict) -> str | None:
    v = obs["values"]
    if len(v) != 100 or len(set(v)) != 100:
        return f"{len(v)} values, {len(set(v))} distinct"
    bad = [u for u in v if not UUID4.match(u)]
    return f"not canonical lowercase v4: {bad[:2]}" if bad else None


def check_stream(obs: dict) -> str | None:
    buf = data(obs)
    if len(buf) != MIB:
        return f"{len(buf)} bytes, want {MIB}"
    dup = repeated_blocks(buf)
    return f"{dup} repeated 16-byte blocks" if dup else None


def check_status(obs: dict) -> str | None:
    cap = int(obs["pool_capacity_bytes"])
    return None if cap == POOL_CAPACITY else f"pool_capacity_bytes {cap}, gateway has {POOL_CAPACITY}"


CASES: dict[str, Check] = {
    "get_random_32": ok(check_random_32),
    "num_bytes_zero": code("INVALID_ARGUMENT"),
    "num_bytes_too_big": code("INVALID_ARGUMENT"),
    "integers_min_above_max": code("INVALID_ARGUMENT"),
    "dice": ok(check_dice),
    "int64_full_range": ok(check_int64),
    "floats": ok(check_floats),
    "uuids": ok(check_uuids),
    "stream_1mib": ok(check_stream),
    "wrong_key": code("UNAUTHENTICATED"),
    "status": ok(check_status),
    "deadline": code("DEADLINE_EXCEEDED"),
}
# Judged across languages after all have run: no byte any client received reached another.
CROSS_CASE = "no_bytes_shared"


def describe(obs: dict) -> str:
    text = obs.get("code", "no code")
    return f"{text} ({obs['error'][:120]})" if obs.get("error") else text


# --- running ---------------------------------------------------------------------------------


# The repo's one port picker (scripts/lib/ports.py): outside the ephemeral range, never twice.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "lib"))
from ports import free_port  # noqa: E402


class BlackHole:
    """Accepts connections and never answers, for the deadline case: a deadline against a fast
    live gateway would race it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()
        for s in self.held:
            s.close()


def start_gateway(
    binary: str, key: str, log: Path, addr: str | None = None
) -> tuple[subprocess.Popen, str]:
    """A dev gateway on `addr` (default: a free port), returned once it is ready: /readyz
    answers 200, so the pool holds entropy (dev mode takes about two seconds: the feed's first
    chunks are dated before the gateway's start rule accepts them, and are sealed again)."""
    addr = addr or f"127.0.0.1:{free_port()}"
    metrics = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        [binary, "--dev", "--listen-addr", addr, "--pool-capacity-bytes", str(POOL_CAPACITY),
         "--ingest-listen-addr", f"127.0.0.1:{free_port()}", "--metrics-listen-addr", metrics,
         "--shutdown-grace-ms", "2000"],
        env=dict(os.environ, ENTROPY_DEV_API_KEY=key),
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab"),
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gateway exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://{metrics}/readyz", timeout=1) as r:
                if r.status == 200:
                    return proc, addr
        except OSError:
            pass  # not listening yet, or 503 (not ready): HTTPError is an OSError
        time.sleep(0.05)
    stop(proc)
    raise RuntimeError("gateway was not ready within 30 s")


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_language(lang: Language, addr: str, stall: str, key: str) -> tuple[dict[str, dict], str]:
    """Every observation the program printed, by case, and its stderr (for diagnosis)."""
    try:
        r = subprocess.run(
            [*lang.run, "--endpoint", addr, "--stall-endpoint", stall],
            cwd=CLIENTS / lang.cwd,
            env=dict(os.environ, ENTROPY_API_KEY=key),
            capture_output=True,
            text=True,
            timeout=180,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return {}, str(e)
    observations: dict[str, dict] = {}
    for line in r.stdout.splitlines():
        try:
            obs = json.loads(line)
            observations[obs["case"]] = obs
        except (ValueError, KeyError, TypeError):
            continue  # stray output: the case it belongs to will show as missing
    stderr = r.stderr if r.returncode == 0 else f"exit {r.returncode}\n{r.stderr}"
    return observations, stderr


def agreement(a: bytes, i: int, b: bytes, j: int) -> int:
    """How many bytes `a` and `b` agree on around the 8 that match at a[i:] and b[j:]."""
    back = 0
    while back < min(i, j) and a[i - back - 1] == b[j - back - 1]:
        back += 1
    forward = 8
    while i + forward < len(a) and j + forward < len(b) and a[i + forward] == b[j + forward]:
        forward += 1
    return back + forward


def cross_check(results: dict[str, dict[str, dict]]) -> dict[str, str | None]:
    """For each language: did any run of its bytes (GetRandom and stream) also reach another
    language, or come twice? As repeat-scan does: every aligned 8-byte block is indexed, then the
    8-byte window at every offset is looked up, and a hit counts when the two copies agree on 16
    bytes or more around it; a run of 16 always holds an aligned block, so a shared run of 16+
    bytes is found wherever it sits."""
    buffers: list[tuple[str, str, bytes]] = []
    for name, observations in results.items():
        for case in ("get_random_32", "stream_1mib"):
            try:
                buffers.append((name, case, data(observations[case])))
            except (KeyError, ValueError):
                continue  # missing or malformed: that case itself fails
    index: dict[bytes, tuple[int, int]] = {}
    for b, (_, _, buf) in enumerate(buffers):
        for i in range(0, len(buf) - 7, 8):
            index.setdefault(buf[i : i + 8], (b, i))
    shared: dict[str, str | None] = {name: None for name in results}
    for b, (name, case, buf) in enumerate(buffers):
        for i in range(len(buf) - 7):
            hit = index.get(buf[i : i + 8])
            if hit is not None and hit != (b, i) and agreement(buf, i, buffers[hit[0]][2], hit[1]) >= 16:
                other, other_case = buffers[hit[0]][:2]
                shared[name] = shared[name] or (
                    f"bytes at {case}[{i}] also came in {other} {other_case}[{hit[1]}]"
                )
                break
    return shared


def select(only: str | None, parser: argparse.ArgumentParser) -> list[Language]:
    """The languages named in `only` (comma-separated), or all."""
    if not only:
        return LANGUAGES
    wanted = set(only.split(","))
    langs = [lang for lang in LANGUAGES if lang.name in wanted]
    if unknown := wanted - {lang.name for lang in langs}:
        parser.error(f"unknown language(s): {', '.join(sorted(unknown))}")
    return langs


def build(langs: list[Language]) -> None:
    for lang in langs:
        if lang.build:
            print(f"build {lang.name}: {' '.join(lang.build)}", flush=True)
            subprocess.run(lang.build, cwd=CLIENTS / lang.cwd, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default_gw = os.environ.get("GATEWAY_BIN") or str(REPO / "target/release/entropy-gateway")
    parser.add_argument(
        "--gateway", default=default_gw, help="entropy-gateway binary (default: $GATEWAY_BIN)"
    )
    parser.add_argument("--only", help="comma-separated languages to run")
    parser.add_argument("--skip-build", action="store_true", help="programs are already built")
    parser.add_argument(
        "--no-restart", action="store_true", help="skip the restart rows (restart.py)"
    )
    args = parser.parse_args()

    langs = select(args.only, parser)
    if not args.skip_build:
        build(langs)

    key = "conformance-" + secrets.token_hex(12)
    results: dict[str, dict[str, dict]] = {}
    errors: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp, "gateway.log")
        proc, addr = start_gateway(args.gateway, key, log)
        hole = BlackHole()
        try:
            for lang in langs:
                print(f"run {lang.name} against {addr}", flush=True)
                results[lang.name], errors[lang.name] = run_language(lang, addr, hole.addr, key)
        finally:
            hole.close()
            stop(proc)

    shared = cross_check(results)
    table: dict[str, dict[str, str | None]] = {}
    for case, check in CASES.items():
        table[case] = {}
        for lang in langs:
            obs = results[lang.name].get(case)
            table[case][lang.name] = "case missing from output" if obs is None else check(obs)
    table[CROSS_CASE] = {lang.name: shared[lang.name] for lang in langs}
    if not args.no_restart:
        import restart  # the restart rows: each kills and restarts its own gateway

        table.update(restart.run_restarts(langs, args.gateway, key))
    return report(table, [lang.name for lang in langs], errors)


def report(
    table: dict[str, dict[str, str | None]], names: list[str], errors: dict[str, str]
) -> int:
    width = max(len(c) for c in table) + 2
    cols = [max(len(n), 4) + 2 for n in names]
    print()
    print("case".ljust(width) + "".join(n.ljust(w) for n, w in zip(names, cols)))
    for case, row in table.items():
        cells = ("ok" if row[n] is None else "FAIL" for n in names)
        print(case.ljust(width) + "".join(c.ljust(w) for c, w in zip(cells, cols)))
    failures = [
        (case, n, why) for case, row in table.items() for n, why in row.items() if why is not None
    ]
    for case, n, why in failures:
        print(f"FAIL {n} {case}: {why}")
    for n in names:
        if failures and errors.get(n):
            print(f"--- {n} stderr ---\n{errors[n][-3000:]}")
    total = sum(len(row) for row in table.values())
    print(f"conformance: {total - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
