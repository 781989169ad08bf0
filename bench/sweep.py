#!/usr/bin/env python3
"""The resource sweep: hostile traffic of many shapes against a real gateway, under the default
config and a tight one, each measurement checked against the bound the gateway states for its
config (`entropy-gateway --print-bounds`, the formula of docs/security.md "Resource bounds").

    bench/sweep.py [--quick | --full] [--findings] [--bin-dir target/release] [--only SUBSTRING]

For every case it starts the attack (bench/tools h2-hostile: raw HTTP/2 with zero or trickled
windows, partial requests and header blocks, PINGs, idle and half-open connections, partial
Publish bodies in small and large frames; gRPC-Web over HTTP/1.1: slow heads, partial bodies,
pipelined answers left unread), samples the gateway while the attack holds, then
checks:

- resident memory grew by no more than the bound's variable terms (buffers, connections,
  metrics endpoint, responses being encoded) and stayed within the whole bound, and open
  descriptors stayed within the bound;
- every byte allowance (`entropy_gateway_buffered_bytes`) stayed within its limit, and is back
  to zero once the attackers leave, as are the open connections;
- the books balance: ingested = pool + served + discarded + expired + evicted + tested, and
  served grew by no more than the attackers and the probe received;
- a client with another key is served meanwhile (the probe's GetRandom, while a steady feed of
  8 MB/s arrives, as in a deployment: fair share must give it its turn);
- the case's own expectation: a stalled connection closed within the send timeout, a trickling
  reader kept, an idle or evicted connection closed, the allowances full and no further.

`--quick` (the test command) runs each shape once at a few sizes; `--full` (bench/run.sh) every
combination at larger counts. Exits 1 when a check fails, printing every case's numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEYS = {
    "free": "sweep-free-" + secrets.token_hex(12),
    "limited": "sweep-limited-" + secrets.token_hex(12),
    "probe": "sweep-probe-" + secrets.token_hex(12),
}
# The limited key: a small undelivered allowance and few streams.
LIMITED = 'max_undelivered_bytes = 1048576\nmax_streams = 4\n'
MiB = 1 << 20
# What a call holds on the request allowances besides its header block (server/src/transport/stream.rs
# CALL_BYTES).
CALL_BYTES = 16 << 10

# ---------------------------------------------------------------------------------------------
# Configs


@dataclass
class Config:
    name: str
    flags: list[str]
    send_timeout_ms: int
    idle_timeout_ms: int
    max_connections: int
    max_streams: int
    ingest_max_connections: int
    requests_limit: int  # max_buffered_request_bytes
    requests_per_connection: int  # max_buffered_request_bytes_per_connection
    pool_bytes: int = 64 * MiB


def configs() -> list[Config]:
    default = Config("default", [], 30_000, 120_000, 512, 100, 64, 32 * MiB, 4 * MiB)
    tight = Config(
        "tight",
        ["--max-connections", "32", "--max-streams-per-connection", "32",
         "--max-buffered-bytes", str(16 * MiB), "--ingest-max-buffered-bytes", str(3 * MiB),
         "--max-buffered-request-bytes", str(2 * MiB),
         "--max-buffered-request-bytes-per-connection", str(512 << 10),
         "--max-undelivered-bytes-per-connection", str(MiB), "--ingest-max-connections", "8",
         "--max-chunk-bytes", str(MiB), "--send-timeout-ms", "1000", "--idle-timeout-ms", "1500"],
        1000, 1500, 32, 32, 8, 2 * MiB, 512 << 10)
    return [default, tight]


# ---------------------------------------------------------------------------------------------
# A gateway under test


@dataclass
class Gateway:
    proc: subprocess.Popen
    public: str
    ingest: str
    metrics: str
    work: Path
    mac_key_file: Path
    bounds: dict
    bin_dir: Path

    def rss(self) -> int:
        return _status_field(self.proc.pid, "VmRSS")

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def scrape(self) -> dict[str, float]:
        with urllib.request.urlopen(f"http://{self.metrics}/metrics", timeout=5) as r:
            text = r.read().decode()
        series = {}
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name, _, value = line.rpartition(" ")
            try:
                series[name] = float(value)
            except ValueError:
                pass
        return series

    def status(self) -> dict:
        out = subprocess.run([str(self.bin_dir / "grpc-load"), "--addr", self.public, "--key",
                              KEYS["probe"], "status"], capture_output=True, text=True, timeout=20)
        if out.returncode != 0:
            raise SweepError(f"status failed: {out.stderr[-300:]}")
        return json.loads(out.stdout)

    def probe(self) -> bool:
        """One GetRandom(32) by a client with a key: answered?"""
        out = subprocess.run([str(self.bin_dir / "grpc-load"), "--addr", self.public, "--key",
                              KEYS["probe"], "unary", "--num-bytes", "32", "--duration-s", "0.3"],
                             capture_output=True, text=True, timeout=20)
        try:
            report = json.loads(out.stdout)
        except json.JSONDecodeError:
            return False
        return report.get("ok", 0) > 0 and report.get("failed", 1) == 0

    def top_up(self, target: int) -> None:
        level = self.status()["pool_bytes"]
        deficit = target - level
        if deficit < MiB:
            return
        out = subprocess.run(
            [str(self.bin_dir / "ingest-load"), "--addr", self.ingest, "--key-file",
             str(self.mac_key_file), "--key-id", "sweep", "--chunk-bytes", str(MiB),
             "--total-bytes", str(deficit), "--concurrency", "4", "--connections", "1",
             "--gateway-id", "sweep"],
            capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise SweepError(f"feed failed: {out.stderr[-300:]}")

    def feed(self, seconds: float, rate: int = 8 * MiB) -> subprocess.Popen:
        """A steady feed while an attack runs (chunks of 256 KiB at `rate` bytes a second), as a
        deployment has: under contention a client with a key is served its share as bytes
        arrive, so the probe's answer says whether the attack kept it out."""
        self.feeds = getattr(self, "feeds", 0) + 1
        return subprocess.Popen(
            [str(self.bin_dir / "ingest-load"), "--addr", self.ingest, "--key-file",
             str(self.mac_key_file), "--key-id", "sweep", "--chunk-bytes", str(256 << 10),
             "--total-bytes", str(int(rate * seconds)), "--concurrency", "2", "--connections", "1",
             "--gateway-id", "sweep", "--collector-id", f"sweep-feed-{self.feeds}",
             "--rate-bytes-per-s", str(rate)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


class SweepError(Exception):
    pass


def _status_field(pid: int, field_name: str) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field_name + ":"):
            return int(line.split()[1]) * 1024
    return 0


def start(bin_dir: Path, config: Config, work: Path) -> Gateway:
    work.mkdir(parents=True, exist_ok=True)
    macdir = work / "mac"
    macdir.mkdir(exist_ok=True)
    mac_key_file = macdir / "sweep.key"
    mac_key_file.write_text(secrets.token_hex(32) + "\n")
    import hashlib
    entries = []
    for name, secret in KEYS.items():
        extra = LIMITED if name == "limited" else ""
        scopes = '"entropy:read", "status:read"' + (', "quality:check"' if name == "probe" else "")
        entries.append(f'[[key]]\nname = "{name}"\nsha256 = "{hashlib.sha256(secret.encode()).hexdigest()}"\n'
                       f'scopes = [{scopes}]\n{extra}')
    keys_file = work / "keys.toml"
    keys_file.write_text("\n".join(entries))
    gateway = str(bin_dir / "entropy-gateway")
    common = ["--api-keys-file", str(keys_file), "--ingest-keys-dir", str(macdir),
              "--gateway-id", "sweep", "--state-dir", str(work / "state"),
              "--max-future-skew-ms", "200", "--pool-capacity-bytes", str(config.pool_bytes),
              "--listen-addr", "127.0.0.1:0", "--ingest-listen-addr", "127.0.0.1:0",
              "--metrics-listen-addr", "127.0.0.1:0", "--log-filter", os.environ.get("SWEEP_LOG_FILTER", "warn,entropy_gateway=info"),
              "--grpc-web-enabled", "true", "--grpc-web-allowed-origins", "https://sweep.example",
              *config.flags]
    bounds = json.loads(subprocess.run([gateway, *common, "--print-bounds", "--log-format", "json"],
                                       capture_output=True, text=True, check=True).stdout)
    log = open(work / "gateway.log", "w")
    proc = subprocess.Popen([gateway, *common], stdout=log, stderr=log)
    deadline = time.time() + 20
    while time.time() < deadline:
        text = (work / "gateway.log").read_text(errors="replace")
        m = re.search(r"public_addr=([0-9.:]+)\S* ingest_addr=([0-9.:]+)\S* metrics_addr=([0-9.:]+)", text)
        if m:
            time.sleep(0.3)  # past the start rule (200 ms)
            return Gateway(proc, m.group(1), m.group(2), m.group(3), work, mac_key_file, bounds, bin_dir)
        if proc.poll() is not None:
            raise SweepError(f"gateway exited: {text[-500:]}")
        time.sleep(0.05)
    raise SweepError("gateway did not start")


# ---------------------------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    name: str
    listener: str  # "public" or "ingest"
    args: list[str]
    key: str | None = None
    hold_ms: int = 1500
    # What the case must show besides the common checks.
    expect_closed_within_ms: int | None = None  # every connection closed by then
    expect_open: bool = False  # no connection closed by the gateway while held
    # (account, bytes): the account held at least half of these bytes while the attack held.
    expect_held: tuple[str, int] | None = None
    probe: bool = True


def cases(config: Config, full: bool) -> list[Case]:
    cap, streams = config.max_connections, config.max_streams
    out: list[Case] = []
    conns = [4, min(cap + 8, 48)] if not full else [1, 16, cap // 2, cap + 16]
    # No key: half-open, idle and partial requests, past the cap.
    for n in conns:
        out.append(Case(f"tcp half-open x{n}", "public", ["--shape", "tcp", "--connections", str(n)]))
        out.append(Case(f"idle h2 x{n}", "public", ["--shape", "idle", "--connections", str(n)]))
    for n, s, body, header in ([(4, streams, 10, 0), (8, streams, 15_000, 8000)] if not full else
                               [(c, st, b, h) for c in (1, 8, 32) for st in (1, streams)
                                for b in (10, 15_000) for h in (0, 8000)]):
        out.append(Case(f"health partial x{n}x{s} body {body} headers {header}", "public",
                        ["--shape", "health-partial", "--connections", str(n), "--streams", str(s),
                         "--body-bytes", str(body), "--header-bytes", str(header)],
                        expect_held=("requests", min(config.requests_limit,
                                                     n * config.requests_per_connection,
                                                     n * s * CALL_BYTES))))
    # Health checks do not count as activity: closed at the idle timeout (tight config's 1.5 s;
    # the default's two minutes are the same code path).
    if config.idle_timeout_ms <= 5000:
        out.append(Case("health loop (idle bypass)", "public",
                        ["--shape", "health-loop", "--connections", "4", "--every-ms", "200"],
                        hold_ms=config.idle_timeout_ms + 1500,
                        expect_closed_within_ms=config.idle_timeout_ms + 1200))
    # With a key, not reading: unary and streams, key with and without limits.
    sizes = [("32", "0"), ("65536", "0"), ("1048576", "1")] if not full else \
        [(n, e) for n in ("32", "1024", "65536", "1048576") for e in ("0", "1")]
    for key in ("free", "limited"):
        for num, enc in sizes:
            for n, s in ([(2, min(streams, 64))] if not full else [(1, 1), (2, streams), (8, streams)]):
                out.append(Case(f"unary {num} B enc {enc} x{n}x{s} window 0 key {key}", "public",
                                ["--shape", "unary", "--connections", str(n), "--streams", str(s),
                                 "--window", "0", "--num-bytes", num, "--encoding", enc], key=key))
        for chunk in (["16384", "1048576"] if not full else ["1024", "16384", "65536", "1048576"]):
            for n, s in ([(2, min(streams, 64))] if not full else [(1, 1), (2, streams), (8, streams)]):
                out.append(Case(f"stream {chunk} B x{n}x{s} window 0 key {key}", "public",
                                ["--shape", "stream", "--connections", str(n), "--streams", str(s),
                                 "--window", "0", "--chunk-bytes", chunk], key=key))
    # A key's unread answers filling the process's request allowance (each call holds
    # CALL_BYTES until its answer is written): the largest holder is closed, others are served.
    n = -(-config.requests_limit * 5 // 4 // min(config.requests_per_connection, streams * CALL_BYTES))
    out.append(Case(f"unary 32 B x{n}x{streams} window 0 key free (request allowance)", "public",
                    ["--shape", "unary", "--connections", str(n), "--streams", str(streams),
                     "--window", "0", "--num-bytes", "32"], key="free",
                    expect_held=("requests", config.requests_limit)))
    # Stall with PINGs: closed at the send timeout all the same (tight config's 1 s).
    if config.send_timeout_ms <= 5000:
        out.append(Case("stream stalled, client pinging", "public",
                        ["--shape", "stream", "--connections", "2", "--streams", "4", "--window", "0",
                         "--ping-every-ms", "50", "--chunk-bytes", "65536"], key="free",
                        hold_ms=config.send_timeout_ms + 1500,
                        expect_closed_within_ms=config.send_timeout_ms + 1200))
        out.append(Case("stream trickled (1 KiB every 200 ms)", "public",
                        ["--shape", "stream", "--connections", "1", "--streams", "2", "--window", "1024",
                         "--read-every-ms", "200", "--chunk-bytes", "65536"], key="free",
                        hold_ms=config.send_timeout_ms + 1500, expect_open=True))
    # gRPC-Web over HTTP/1.1 on the same listener: slow heads, partial bodies with and
    # without a key, pipelined answers left unread.
    for n in ([4, min(cap + 8, 48)] if not full else [1, 16, cap + 16]):
        out.append(Case(f"web slow head x{n}", "public",
                        ["--shape", "web-slow-head", "--connections", str(n), "--every-ms", "100"]))
        for key in (None, "free"):
            out.append(Case(f"web partial x{n} body 15000 headers 8000 key {key or '-'}", "public",
                            ["--shape", "web-partial", "--connections", str(n), "--body-bytes", "15000",
                             "--header-bytes", "8000"], key=key))
    for key in ("free", "limited"):
        for num, enc in ([("1048576", "1")] if not full else [("32", "0"), ("65536", "0"), ("1048576", "1")]):
            for n, s in ([(2, 8)] if not full else [(1, 1), (8, 16), (32, 4)]):
                out.append(Case(f"web unread {num} B enc {enc} x{n}x{s} key {key}", "public",
                                ["--shape", "web-unread", "--connections", str(n), "--streams", str(s),
                                 "--num-bytes", num, "--encoding", enc], key=key))
    # Ingest without a MAC key: partial publishes in small and large frames.
    icap = config.ingest_max_connections
    for frame in ("16384", "262144"):
        for n, s in ([(1, 32), (icap + 4, 8)] if not full else [(1, 1), (1, 64), (icap, 32), (icap + 8, 64)]):
            out.append(Case(f"publish partial frames {frame} x{n}x{s}", "ingest",
                            ["--shape", "publish-partial", "--connections", str(n), "--streams", str(s),
                             "--body-bytes", str(900_000), "--frame-bytes", frame]))
    return out


def findings(config: Config) -> list[Case]:
    """The third security review's attacks as it ran them (issue 27), under the default config
    only: its numbers are for that config."""
    if config.name != "default":
        return []
    return [
        # 1: 16 connections × 256 partial 1 MiB publishes in 256 KiB frames (+896 MB before).
        Case("finding 1: publish partial 256 KiB frames x16x256", "ingest",
             ["--shape", "publish-partial", "--connections", "16", "--streams", "256",
              "--body-bytes", str(1 << 20), "--frame-bytes", "262144"], hold_ms=3000),
        # 2: 4 zero-window connections × 256 StreamRandom(1 MiB), a key without max_streams
        # (970 MB drawn, RSS 1.07 GB before).
        Case("finding 2: stream 1 MiB x4x256 window 0 key free", "public",
             ["--shape", "stream", "--connections", "4", "--streams", "256", "--window", "0",
              "--chunk-bytes", str(1 << 20)], key="free", hold_ms=3000),
        # 5: 250 connections × 256 requests just under the 16 KiB cap, no key (1.93 GB before).
        Case("finding 5: health partial x250x256 body 16000 headers 8000", "public",
             ["--shape", "health-partial", "--connections", "250", "--streams", "256",
              "--body-bytes", "15990", "--header-bytes", "8000"], hold_ms=4000,
             expect_held=("requests", config.requests_limit)),
    ]


# ---------------------------------------------------------------------------------------------
# Running a case


@dataclass
class Result:
    case: Case
    rss_growth: int = 0
    rss_peak: int = 0
    fds: int = 0
    buffered_peak: dict[str, float] = field(default_factory=dict)
    report: dict = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0


def variable_bound(gw: Gateway) -> int:
    """The bound's terms that traffic can fill (the pool and the process are there at start)."""
    return sum(t["bytes"] for t in gw.bounds["memory"] if t["name"] not in ("pool", "process"))


def balance(status: dict) -> int:
    """ingested − (pool + served + discarded + expired + evicted + tested): 0 when the books
    balance, up to what waits in reservations or in flight."""
    return status["ingested_bytes_total"] - sum(status.get(k, 0) for k in (
        "pool_bytes", "served_bytes_total", "discarded_bytes_total", "expired_bytes_total",
        "evicted_bytes_total", "quality_tested_bytes_total"))


def settle(gw: Gateway, timeout: float = 10.0) -> dict:
    """Waits until the attack's connections are gone and its buffers empty; the last scrape."""
    deadline = time.time() + timeout
    while True:
        m = gw.scrape()
        open_conns = sum(v for k, v in m.items() if k.startswith("entropy_gateway_connections_active"))
        held = sum(v for k, v in m.items() if k.startswith("entropy_gateway_buffered_bytes{"))
        if (open_conns == 0 and held == 0) or time.time() > deadline:
            return m
        time.sleep(0.1)


def run_case(gw: Gateway, case: Case, config: Config) -> Result:
    result = Result(case)
    started = time.time()
    gw.top_up(48 * MiB)
    before = gw.status()
    rss0 = gw.rss()
    target = gw.public if case.listener == "public" else gw.ingest
    cmd = [str(gw.bin_dir / "h2-hostile"), "--target", target, "--hold-ms", str(case.hold_ms), *case.args]
    if case.key:
        cmd += ["--key", KEYS[case.key]]
    attack = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    feed = gw.feed(case.hold_ms / 1000)
    peak_rss, peak_fds, probed = rss0, 0, None
    limits: dict[str, float] = {}
    while attack.poll() is None:
        peak_rss = max(peak_rss, gw.rss())
        peak_fds = max(peak_fds, gw.fds())
        try:
            m = gw.scrape()
        except OSError:
            m = {}
        for k, v in m.items():
            if k.startswith("entropy_gateway_buffered_bytes{"):
                acct = k.split('"')[1]
                result.buffered_peak[acct] = max(result.buffered_peak.get(acct, 0), v)
            elif k.startswith("entropy_gateway_buffered_limit_bytes{"):
                limits[k.split('"')[1]] = v
        if case.probe and probed is None and time.time() - started > 0.5:
            probed = gw.probe()
        time.sleep(0.05)
    out, err = attack.communicate()
    feed.wait(timeout=60)
    try:
        result.report = json.loads(out.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        result.failures.append(f"h2-hostile gave no report: {err[-300:]}")
        return result
    result.rss_growth = peak_rss - rss0
    result.fds = peak_fds
    # The bound.
    bound = variable_bound(gw)
    if result.rss_growth > bound:
        result.failures.append(f"RSS grew {result.rss_growth >> 20} MiB > bound {bound >> 20} MiB")
    # The allocator keeps what earlier cases freed, so growth can hide use: the whole process
    # against the whole bound as well.
    result.rss_peak = peak_rss
    if peak_rss > gw.bounds["memory_bytes"]:
        result.failures.append(f"RSS {peak_rss >> 20} MiB > bound {gw.bounds['memory_bytes'] >> 20} MiB")
    if peak_fds > gw.bounds["descriptors"]:
        result.failures.append(f"{peak_fds} descriptors > bound {gw.bounds['descriptors']}")
    for acct, peak in result.buffered_peak.items():
        if acct in limits and peak > limits[acct]:
            result.failures.append(f"{acct} held {peak:.0f} > its limit {limits[acct]:.0f}")
    if case.expect_held:
        acct, expected = case.expect_held
        if result.buffered_peak.get(acct, 0) < 0.5 * expected:
            result.failures.append(f"{acct} held {result.buffered_peak.get(acct, 0):.0f}, "
                                   f"expected about {expected}")
    if case.probe and probed is False:
        result.failures.append("a client with a key was not served during the attack")
    closed = result.report.get("closed_by_gateway_at_ms", [])
    opened = result.report.get("connections_opened", 0)
    if case.expect_closed_within_ms is not None:
        late = [t for t in closed if t > case.expect_closed_within_ms]
        if len(closed) < opened or late:
            result.failures.append(f"{len(closed)} of {opened} closed by {case.expect_closed_within_ms} ms"
                                   f" (late: {late[:3]})")
    if case.expect_open and closed:
        result.failures.append(f"{len(closed)} connections closed while reading (at {closed[:3]} ms)")
    # Afterwards: nothing held, the books balance, served no more than received.
    m = settle(gw)
    held = {k: v for k, v in m.items() if k.startswith("entropy_gateway_buffered_bytes{") and v > 0}
    if held:
        result.failures.append(f"still held after the attack: {held}")
    after = gw.status()
    if balance(after) != 0:
        result.failures.append(f"books off by {balance(after)}: {after}")
    served = after["served_bytes_total"] - before["served_bytes_total"]
    received = result.report.get("bytes_received", 0) + (64 << 10)  # the probe's calls
    if served > received + (1 << 20):
        result.failures.append(f"served grew {served} but clients received at most {received}")
    result.seconds = time.time() - started
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="a few sizes per shape (default)")
    mode.add_argument("--full", action="store_true", help="every combination, larger counts")
    parser.add_argument("--bin-dir", type=Path, default=ROOT / "target" / "release")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--findings", action="store_true",
                        help="also the third review's attacks as it ran them (default config)")
    args = parser.parse_args()
    failed = 0
    work = Path(tempfile.mkdtemp(prefix="sweep-"))
    print(f"{'config':<8} {'case':<58} {'RSS':>7} {'RSS+':>7} {'bound':>7} {'fds':>5} "
          f"{'req':>6} {'resp':>6} {'ing':>6} {'s':>5}  verdict")
    try:
        for config in configs():
            gw = start(args.bin_dir, config, work / config.name)
            try:
                bound = variable_bound(gw)
                term = {t["name"]: t["bytes"] for t in gw.bounds["memory"]}
                print(f"# {config.name}: bound {gw.bounds['memory_bytes'] / MiB:.1f} MiB and "
                      f"{gw.bounds['descriptors']} descriptors; idle RSS {gw.rss() / MiB:.1f} MiB "
                      f"(the bound's pool and process terms: {term['pool'] / MiB:.0f} + "
                      f"{term['process'] / MiB:.0f} MiB)", flush=True)
                for case in cases(config, args.full) + (findings(config) if args.findings else []):
                    if args.only and args.only not in case.name:
                        continue
                    r = run_case(gw, case, config)
                    mib = lambda b: f"{b / MiB:.1f}"
                    peak = r.buffered_peak
                    verdict = "ok" if not r.failures else "FAIL: " + "; ".join(r.failures)
                    print(f"{config.name:<8} {case.name[:58]:<58} {mib(r.rss_peak):>7} "
                          f"{mib(r.rss_growth):>7} {mib(bound):>7} "
                          f"{r.fds:>5} {mib(peak.get('requests', 0)):>6} {mib(peak.get('responses', 0)):>6} "
                          f"{mib(peak.get('ingest', 0)):>6} {r.seconds:>5.1f}  {verdict}", flush=True)
                    failed += bool(r.failures)
                    if gw.proc.poll() is not None:
                        print("the gateway exited", file=sys.stderr)
                        return 1
            finally:
                gw.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{failed} case(s) failed" if failed else "\nevery case within its bound")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
