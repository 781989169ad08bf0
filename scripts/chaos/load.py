"""The load scripts/chaos/chaos.py keeps running through every fault: each language's stream reader
(lib/readers.py), a unary drawer that notes when each call ended and how, and ghz. Every byte
any of them receives is kept, for the served-twice scan.

Standard library only.
"""

from __future__ import annotations

import os
import statistics
import subprocess
from pathlib import Path

import readers

READ_TOTAL = 16 << 20  # bytes per reader per row: at readers.PACE_MS, ten seconds of reading
# besides the fault, so every reader is still mid-stream when the fault lands (chaos.py checks
# it), and the four together draw well below what the collector feeds, so the unary drawer is
# not starved by them

# A unary caller: GetRandom(4096) about every 10 ms; one line per call, "<unix time> <code>",
# and the bytes of every OK call appended to its output.
DRAWER = """
import sys, time
from entropy_diode import EntropyClient, EntropyError
endpoint, key, ca, out, events, stop = sys.argv[1:7]
with EntropyClient(endpoint, key, ca_file=ca, timeout=2) as c, open(out, "ab") as f, open(events, "a") as ev:
    while True:
        try:
            f.write(c.get_bytes(4096)); f.flush(); code = "OK"
        except EntropyError as e:
            code = e.code.name
        ev.write(f"{time.time():.3f} {code}\\n"); ev.flush()
        try:
            open(stop).close()
            break
        except FileNotFoundError:
            time.sleep(0.01)
"""


class Load:
    """Readers and a drawer against `endpoint`, their outputs under `work`."""

    def __init__(self, endpoint: str, key: str, ca: Path, work: Path, langs: list[readers.conformance.Language],
                 drbg_key: str | None = None):
        self.endpoint, self.key, self.ca, self.work, self.langs = endpoint, key, ca, work, langs
        self.outputs: list[Path] = []
        self.env = dict(os.environ, ENTROPY_API_KEY=key, ENTROPY_CA_FILE=str(ca))
        # With a key holding entropy:drbg and the Rust reader built: one more reader, the Rust one
        # asking for DRBG output (ENTROPY_CONSTRUCTION), whose bytes join the repeat scan.
        rust = next((lang for lang in langs if lang.name == "rust"), None)
        self.drbg_reader = None
        if drbg_key and rust:
            self.drbg_reader = readers.conformance.Language("rust-drbg", rust.cwd, rust.run)
            self.drbg_env = dict(self.env, ENTROPY_API_KEY=drbg_key, ENTROPY_CONSTRUCTION="drbg")

    def readers(self, tag: str) -> dict[str, readers.conformance.Reader]:
        """Every language's reader for READ_TOTAL, started slowest first, each with bytes; then
        the DRBG reader, if any."""
        started = readers.start(self.langs, tag, self.endpoint, READ_TOTAL, self.work, self.env, self.outputs)
        if self.drbg_reader:
            started |= readers.start([self.drbg_reader], tag, self.endpoint, READ_TOTAL, self.work,
                                     self.drbg_env, self.outputs)
        return started

    def drawer(self, tag: str) -> tuple[subprocess.Popen, Path, Path]:
        """Starts the unary drawer; returns it, its events file and its stop file."""
        out, events, stop = (self.work / f"{tag}.drawer.{x}" for x in ("bin", "events", "stop"))
        self.outputs.append(out)
        proc = subprocess.Popen([str(readers.PYTHON), "-c", DRAWER, self.endpoint, self.key, str(self.ca), str(out),
                                 str(events), str(stop)], stdout=subprocess.DEVNULL,
                                stderr=(self.work / f"{tag}.drawer.err").open("wb"))
        return proc, events, stop


def drawer_events(events: Path) -> list[tuple[float, str]]:
    out = []
    for line in events.read_text().splitlines():
        t, _, code = line.partition(" ")
        try:
            out.append((float(t), code))
        except ValueError:
            continue
    return out


def recovery(events: list[tuple[float, str]], fault_start: float, healed: float) -> dict:
    """From the drawer's calls: its OK rate before the fault (calls/s, median over 1 s windows),
    seconds from the fault's end to the first OK call ending after it, and to the first 1 s
    window back at 80% of the rate before; the codes seen from the fault's start on."""
    before = [t for t, c in events if c == "OK" and t < fault_start]
    windows = [sum(1 for t in before if s <= t < s + 1) for s in range(int(before[0]) + 1, int(fault_start))] \
        if before else []
    rate = statistics.median(windows) if windows else 0.0
    oks_after = [t for t, c in events if c == "OK" and t >= healed]
    first_ok = oks_after[0] - healed if oks_after else None
    full = None
    if rate > 0:
        t = healed
        end = events[-1][0] if events else healed
        while t + 1 <= end:
            if sum(1 for x in oks_after if t <= x < t + 1) >= 0.8 * rate:
                full = t + 1 - healed
                break
            t += 0.25
    codes: dict[str, int] = {}
    for t, c in events:
        if t >= fault_start:
            codes[c] = codes.get(c, 0) + 1
    # The OK calls of each second from 3 s before the fault to the end: what the verdict reads.
    end_t = events[-1][0] if events else healed
    series = [sum(1 for t, c in events if c == "OK" and s <= t < s + 1)
              for s in range(int(fault_start) - 3, int(end_t) + 1)]
    return {"rate_before": rate, "first_ok_s": first_ok, "full_rate_s": full, "codes": codes,
            "ok_per_second": series, "fault_s": round(healed - fault_start, 2)}
