#!/usr/bin/env python3
"""The benchmark suite: runs scenarios against real processes and writes CSV/JSON per scenario,
then the report (report.py).

    bench.py SUITE [SCENARIO ...] --out DIR

SUITE is smoke, quick or full (durations and points, see SUITES); SCENARIO names pick a subset
(default: all). Exit status 1 when a scenario produced no data or calls failed; speed is never
judged here (report.py compares with the targets, it does not fail).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import loadgen
import stack
from stack import API_KEY, BIN, LOAD_CPU, ROOT, SERVER_CPU, BenchError, Sampler

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

SUITES = {
    "smoke": dict(
        sustained_s=2, burst_s=2, levels=[10, 50], sweep_bytes=[32, 1024], sweep_s=1,
        ghz_levels=[50], payloads=[32, 64 * KiB, MiB], payload_s=1, pool=512 * MiB,
        budget=256 * MiB, streams=[1, 4], chunks=[64 * KiB], stream_s=1, rtts_ms=[25],
        rtt_s=1.5, ingest_sizes=[KiB, MiB], ingest_budget=64 * MiB, ingest_max_chunks=5000,
        e2e=[(1, 8 * KiB)], e2e_s=3, criterion=["--warm-up-time", "0.1", "--measurement-time", "0.2",
                                       "--sample-size", "10"],
        urandom_bytes=16 * MiB, fairness=(3, 16 * KiB), drbg_s=3),
    # quick: every scenario with short points: ~4.5 min with the build cached, ~11 min from a
    # fresh clone on 2 cores (bench/README.md); `full` is the one for precise figures.
    "quick": dict(
        sustained_s=6, burst_s=3, levels=[10, 25, 50, 100, 200], sweep_bytes=[32, 1024],
        sweep_s=1, ghz_levels=[1, 50], payloads=[32, KiB, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB],
        payload_s=2, pool=GiB, budget=768 * MiB, streams=[1, 4, 16, 64],
        chunks=[4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB], stream_s=2, rtts_ms=[25, 50, 100],
        rtt_s=2, ingest_sizes=[KiB, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB],
        ingest_budget=256 * MiB, ingest_max_chunks=30000, e2e=[(1, 8 * KiB), (2, 8 * KiB), (4, 8 * KiB), (1, 64 * KiB)],
        e2e_s=5,
        criterion=["--warm-up-time", "0.2", "--measurement-time", "0.4"], urandom_bytes=128 * MiB,
        fairness=(15, 64 * KiB), drbg_s=10),
    "full": dict(
        sustained_s=600, burst_s=30, levels=[10, 25, 50, 75, 100, 150, 200],
        sweep_bytes=[32, 1024], sweep_s=10, ghz_levels=[1, 10, 50, 100],
        payloads=[32, KiB, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB], payload_s=10,
        # A 6 GiB fill: 16 streams at 2.5 GiB/s must run the 2 s the share is judged over.
        pool=7 * GiB, budget=6 * GiB, streams=[1, 4, 16, 64],
        chunks=[4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB], stream_s=5, rtts_ms=[25, 50, 100],
        rtt_s=10, ingest_sizes=[KiB, 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB],
        ingest_budget=2 * GiB, ingest_max_chunks=300000,
        e2e=[(1, 8 * KiB), (2, 8 * KiB), (4, 8 * KiB), (8, 8 * KiB), (1, 64 * KiB)], e2e_s=60,
        criterion=[], urandom_bytes=GiB, fairness=(60, 256 * KiB), drbg_s=30),
}

SCENARIOS = ["baselines", "sustained", "burst", "concurrency", "payload", "streaming", "rtt",
             "ingest", "e2e", "fairness", "drbg", "micro", "profile"]


def in_flight_shape(n: int) -> tuple[int, int]:
    """N calls in flight as h2load connections x streams: 5 streams per connection."""
    conns = max(1, n // 5)
    return conns, max(1, n // conns)


class Ctx:
    """One suite run: where files go, the shared processes, the problems found."""

    def __init__(self, suite: str, out: Path):
        self.suite, self.p = suite, SUITES[suite]
        self.out, self.raw, self.work = out, out / "raw", out / "raw" / "work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.problems: list[str] = []
        self.resources: list[dict] = []
        self._drain: stack.Gateway | None = None
        self._echo: stack.Echo | None = None
        self._rest: stack.Rest | None = None
        self._rest_checked: dict[int, bool] = {}
        self.procs: list[stack.Proc] = []

    # -- shared processes ---------------------------------------------------------------------
    def drain_gateway(self) -> stack.Gateway:
        """The gateway of the drain scenarios: bench keys, a large pool, no feed of its own."""
        if self._drain is None:
            self._drain = stack.start_gateway(self.work / "drain", "gateway-drain", self.p["pool"])
            self.procs.append(self._drain.proc)
            self.note_idle("drain gateway started (empty pool)")
        return self._drain

    def echo(self) -> stack.Echo:
        if self._echo is None:
            self._echo = stack.start_echo(self.work)
            self.procs.append(self._echo.proc)
        return self._echo

    def fill(self) -> int:
        return stack.top_up(self.drain_gateway(), self.p["budget"])

    def rest(self, num_bytes: int) -> stack.Rest | None:
        """The REST baseline, when it serves `num_bytes` (the original refuses above 64 KiB) and
        answered one call of that size correctly (checked once per size)."""
        if num_bytes > stack.REST_MAX_BYTES:
            return None
        if self._rest is None:
            self._rest = stack.start_rest(self.work)
            self.procs.append(self._rest.proc)
        if num_bytes not in self._rest_checked:
            wrong = loadgen.rest_check(self._rest, num_bytes)
            if wrong:
                self.problems.append(f"rest-baseline {num_bytes} B: {wrong}")
            self._rest_checked[num_bytes] = not wrong
        return self._rest if self._rest_checked[num_bytes] else None

    def rest_point(self, scenario: str, point: str, tag: str, num_bytes: int, connections: int,
                   duration_s: float) -> dict | None:
        """One `h2load --h1` point against the REST baseline (None when it does not serve the
        size): its CPU sampled, its request log counted (one line per answered call)."""
        rest = self.rest(num_bytes)
        if rest is None:
            return None
        rest.clear_log()
        r = self.measure(scenario, point, rest.proc,
                         lambda: loadgen.h2load_rest(self.raw, tag, rest, num_bytes, connections,
                                                     duration_s=duration_s))
        self.check(scenario, f"rest {num_bytes} B x{connections}", r)
        lines = rest.log_lines()
        self.resources[-1]["log_lines"] = lines  # measure() appended this point's row
        # Calls answered after h2load stopped counting are logged too: up to one per connection.
        if not r["ok"] <= lines <= r["requests"] + connections:
            self.problems.append(f"{scenario} {point}: {lines} log lines for {r['ok']} answered "
                                 "calls (the REST baseline logs one per call)")
        return {"server": "rest", "log_lines": lines, **r}

    # -- bookkeeping --------------------------------------------------------------------------
    def write(self, name: str, rows: list[dict]) -> None:
        if not rows:
            self.problems.append(f"{name}: no data")
            return
        keys: list[str] = []
        for r in rows:
            keys += [k for k in r if k not in keys]
        with open(self.out / f"{name}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)

    def check(self, scenario: str, point: str, r: dict, failures_ok: bool = False) -> None:
        if not r.get("ok") and not r.get("total_bytes") and not r.get("bytes_per_s"):
            self.problems.append(f"{scenario} {point}: no successful calls")
        if r.get("failed") and not failures_ok:
            self.problems.append(f"{scenario} {point}: {r['failed']} calls failed "
                                 f"{r.get('errors') or r.get('first_error') or ''}")
        if r.get("grpc_ok_fraction", 1.0) < 0.999:
            self.problems.append(f"{scenario} {point}: only {r['grpc_ok_fraction']:.4f} of h2load's "
                                 "HTTP 200 answers carried the bytes (grpc-status not 0)")
        if r.get("body_ok_fraction", 1.0) < 0.999:
            self.problems.append(f"{scenario} {point}: the body bytes received are "
                                 f"{r['body_ok_fraction']:.4f} of the 2xx answers x the size asked")

    def measure(self, scenario: str, point: str, proc: stack.Proc, fn, extra: dict | None = None,
                busy_secs=None):
        """Runs fn() while sampling `proc`; records a resources row. `busy_secs(result)`, when
        given, is how long of fn() the load ran: CPU use is divided by that instead of fn()'s
        whole time (ingest-load signs its chunks first, while the gateway idles)."""
        gw = self._drain if self._drain and self._drain.proc is proc else None
        lines0 = gw.log_lines() if gw else None
        s = Sampler(proc.pid).start()
        try:
            result = fn()
        finally:
            res = s.stop()
        row = {"scenario": scenario, "point": point, "process": proc.name, **res, **(extra or {})}
        if busy_secs is not None and "cpu_secs" in res and isinstance(result, dict):
            row["cpu_cores"] = res["cpu_secs"] / max(busy_secs(result), 1e-9)
        if gw is not None and lines0 is not None:
            row["log_lines"] = gw.log_lines() - lines0
        if isinstance(result, dict):
            row["calls"] = result.get("requests") or result.get("chunks") or ""
        self.resources.append(row)
        return result

    def note_idle(self, point: str, proc: stack.Proc | None = None, scenario: str = "idle") -> None:
        proc = proc or (self._drain.proc if self._drain else None)
        if proc is None or not proc.alive():
            return
        time.sleep(1.0)
        s = stack.proc_sample(proc.pid)
        if s:
            self.resources.append({"scenario": scenario, "point": point, "process": proc.name,
                                   "rss_max_mib": s["rss"] / MiB, "rss_end_mib": s["rss"] / MiB,
                                   "threads_max": s["threads"], "fds_max": s["fds"]})

    def close(self) -> None:
        for p in self.procs:
            p.stop()


# ---------------------------------------------------------------------------------------------
# Scenarios


def baselines(ctx: Ctx) -> None:
    """Reading /dev/urandom on the server core: the ceiling for a local source."""
    rows = []
    for bs in [32, KiB, 64 * KiB, MiB]:
        total = min(ctx.p["urandom_bytes"], bs * 2_000_000)
        count = max(1, total // bs)
        p = subprocess.run(SERVER_CPU + ["dd", "if=/dev/urandom", "of=/dev/null", f"bs={bs}",
                                         f"count={count}"], capture_output=True, text=True)
        m = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", p.stderr)
        if not m:
            ctx.problems.append(f"baselines urandom bs={bs}: {p.stderr[-200:]}")
            continue
        secs = float(m.group(2))
        rows.append({"source": "/dev/urandom (dd, one core)", "read_bytes": bs, "reads": count,
                     "secs": secs, "reads_per_s": count / secs, "bytes_per_s": int(m.group(1)) / secs})
    ctx.write("baselines", rows)


DEV_POINT = "dev 1 KiB, 50 in flight"


def sustained(ctx: Ctx) -> None:
    """Seed 000 test 1 and 2 (one client, 1 KiB, 20 ms think time, and none) on a dev gateway
    with its feed; then the dev-mode point: GetRandom 1 KiB at 50 in flight (h2load)."""
    gw = stack.start_gateway(ctx.work / "dev", "gateway-dev", 16 * MiB, dev=True)
    ctx.procs.append(gw.proc)
    time.sleep(1.0)  # the feed's start-up health test
    rows = []
    try:
        args = ["unary", "--num-bytes", "1024", "--think-ms", "20",
                "--duration-s", str(ctx.p["sustained_s"])]
        r = ctx.measure("sustained", "1 client, 20 ms think", gw.proc,
                        lambda: loadgen.grpc_load(args, gw.public))
        (ctx.raw / "sustained.json").write_text(json.dumps(r, indent=1))
        ctx.check("sustained", "grpc-load", r)
        rows.append({"test": "sustained (think 20 ms)", "tool": "grpc-load", "requests": r["requests"],
                     "ok": r["ok"], "success_rate": r["success_rate"], "rps": r["rps"],
                     "duration_s": r["elapsed_secs"], **r["latency"]})
        # Burst on the same dev gateway: seed 000 test 2, one client, no think time.
        r = ctx.measure("burst", "ghz 1 client", gw.proc,
                        lambda: loadgen.ghz(ctx.raw, "burst-dev", gw.public, 1024, 1, 1,
                                            ctx.p["burst_s"]))
        ctx.check("burst", "ghz dev", r)
        rows.append({"test": "burst (no think)", "success_rate": r["ok"] / max(1, r["ok"] + r["failed"]),
                     **{k: v for k, v in r.items() if k != "errors"}})
        r = ctx.measure("burst", "grpc-load 1 client", gw.proc,
                        lambda: loadgen.grpc_load(["unary", "--num-bytes", "1024", "--duration-s",
                                                   str(ctx.p["burst_s"])], gw.public))
        ctx.check("burst", "grpc-load dev", r)
        rows.append({"test": "burst (no think)", "tool": "grpc-load", "requests": r["requests"],
                     "ok": r["ok"], "success_rate": r["success_rate"], "rps": r["rps"],
                     "duration_s": r["elapsed_secs"], **r["latency"]})
        # The dev-mode target: the drain gateway's 1 KiB point at 50 in flight (concurrency),
        # served here with the feed sharing the core.
        status = loadgen.grpc_status_check(ctx.work, gw.public, 1024)
        if status != 0:
            ctx.problems.append(f"sustained: the h2load frame gets grpc-status {status} from dev")
        conns, streams = in_flight_shape(50)
        r = ctx.measure("sustained", DEV_POINT, gw.proc,
                        lambda: loadgen.h2load(ctx.work, ctx.raw, "dev-1024-50", gw.public, 1024,
                                               conns, streams, duration_s=ctx.p["sweep_s"]))
        ctx.check("sustained", "h2load dev 1 KiB x50", r)
        rows.append({"test": DEV_POINT, "success_rate": r["ok"] / max(1, r["requests"]), **r})
        ctx.note_idle("after sustained/burst", gw.proc, "sustained")
    finally:
        gw.proc.stop()
    ctx.write("sustained", rows)


def burst(ctx: Ctx) -> None:
    """The burst figures' ceiling: the same one-client shapes against the echo server, the drain
    gateway and the REST baseline."""
    echo = ctx.echo()
    rows = []
    r = loadgen.ghz(ctx.raw, "burst-echo", echo.public, 1024, 1, 1, ctx.p["burst_s"], auth=False)
    ctx.check("burst", "ghz echo", r)
    rows.append({"server": "echo", **{k: v for k, v in r.items() if k != "errors"}})
    r = loadgen.h2load(ctx.work, ctx.raw, "burst-echo", echo.public, 1024, 1, 1,
                       duration_s=ctx.p["burst_s"], auth=False)
    ctx.check("burst", "h2load echo", r)
    rows.append({"server": "echo", **r})
    gw = ctx.drain_gateway()
    ctx.fill()
    r = ctx.measure("burst", "h2load 1 client", gw.proc,
                    lambda: loadgen.h2load(ctx.work, ctx.raw, "burst-gw", gw.public, 1024, 1, 1,
                                           duration_s=ctx.p["burst_s"]))
    ctx.check("burst", "h2load gateway", r)
    rows.append({"server": "gateway", **r})
    r = ctx.rest_point("burst", "REST h2load 1 client", "burst-rest", 1024, 1, ctx.p["burst_s"])
    if r:
        rows.append(r)
    ctx.write("burst", rows)


def concurrency(ctx: Ctx) -> None:
    """Seed 004: req/s and percentiles per in-flight level, GetRandom 32 B and 1 KiB."""
    gw, echo = ctx.drain_gateway(), ctx.echo()
    ctx.fill()  # the status check below needs bytes in the pool (an empty one answers UNAVAILABLE)
    rows = []
    for nb in ctx.p["sweep_bytes"]:
        for server, addr, auth in [("gateway", gw.public, True), ("echo", echo.public, False)]:
            status = loadgen.grpc_status_check(ctx.work, addr, nb, auth)
            if status != 0:
                ctx.problems.append(f"concurrency: the h2load frame gets grpc-status {status} "
                                    f"from {server} ({nb} B)")
        for n in ctx.p["levels"]:
            conns, streams = in_flight_shape(n)
            ctx.fill()
            r = ctx.measure("concurrency", f"{nb} B, {n} in flight", gw.proc,
                            lambda: loadgen.h2load(ctx.work, ctx.raw, f"c{n}-{nb}-gw", gw.public,
                                                   nb, conns, streams, duration_s=ctx.p["sweep_s"]))
            ctx.check("concurrency", f"gateway {nb} B x{n}", r)
            rows.append({"server": "gateway", **r})
            r = loadgen.h2load(ctx.work, ctx.raw, f"c{n}-{nb}-echo", echo.public, nb, conns, streams,
                               duration_s=ctx.p["sweep_s"], auth=False)
            ctx.check("concurrency", f"echo {nb} B x{n}", r)
            rows.append({"server": "echo", **r})
            # HTTP/1.1: n connections, one call in flight on each.
            r = ctx.rest_point("concurrency", f"REST {nb} B, {n} in flight", f"c{n}-{nb}-rest", nb,
                               n, ctx.p["sweep_s"])
            if r:
                rows.append(r)
        for n in ctx.p["ghz_levels"]:
            conns = max(1, n // 5)
            ctx.fill()
            r = ctx.measure("concurrency", f"ghz {nb} B, {n} in flight", gw.proc,
                            lambda: loadgen.ghz(ctx.raw, f"c{n}-{nb}-gw", gw.public, nb, n, conns,
                                                ctx.p["sweep_s"]))
            ctx.check("concurrency", f"ghz gateway {nb} B x{n}", r)
            rows.append({"server": "gateway", **r})
    ctx.note_idle("after concurrency sweep")
    ctx.write("concurrency", rows)


def payload(ctx: Ctx) -> None:
    """Seed 003: GetRandom 32 B .. 1 MiB at 50 in flight; large sizes drain the pre-filled pool.
    The REST baseline runs the sizes the original serves (up to 64 KiB)."""
    gw, echo = ctx.drain_gateway(), ctx.echo()
    rows = []
    conns, streams = in_flight_shape(50)
    for nb in ctx.p["payloads"]:
        # Small calls run for a time; large ones for as many calls as the filled pool holds.
        small = nb <= 4 * KiB
        level = ctx.fill()
        # Leave a margin: a call that finds the pool dry waits max_wait_ms and fails, which
        # would measure the refill, not the gateway.
        n_req = max(50, int(level * 0.9) // nb)
        kw = {"duration_s": ctx.p["payload_s"]} if small else {"requests": n_req}
        r = ctx.measure("payload", f"{nb} B", gw.proc,
                        lambda: loadgen.h2load(ctx.work, ctx.raw, f"p{nb}-gw", gw.public, nb, conns,
                                               streams, **kw), {"pool_bytes_before": level})
        ctx.check("payload", f"gateway {nb} B", r)
        rows.append({"server": "gateway", "pool_bytes_before": level, **r})
        r = loadgen.h2load(ctx.work, ctx.raw, f"p{nb}-echo", echo.public, nb, conns, streams,
                           auth=False, **kw)
        ctx.check("payload", f"echo {nb} B", r)
        rows.append({"server": "echo", **r})
        # The REST baseline never runs dry (its queue wraps): a timed point at every size it
        # serves, 50 connections.
        r = ctx.rest_point("payload", f"REST {nb} B", f"p{nb}-rest", nb, 50, ctx.p["payload_s"])
        if r:
            rows.append(r)
    ctx.note_idle("after payload sweep")
    ctx.write("payload", rows)


def streaming(ctx: Ctx) -> None:
    """StreamRandom: 1..64 consumers x 4..256 KiB messages, bytes/s and min/max share."""
    gw, echo = ctx.drain_gateway(), ctx.echo()
    rows = []
    for chunk in ctx.p["chunks"]:
        for n in ctx.p["streams"]:
            args = ["stream", "--streams", str(n), "--chunk-bytes", str(chunk),
                    "--duration-s", str(ctx.p["stream_s"])]
            level = ctx.fill()
            # Stop before the pool runs dry (leave 2 messages per stream), so the figure is the
            # gateway's rate, not the refill's.
            limit = max(chunk, level - 2 * n * chunk - 64 * MiB)
            r = ctx.measure("streaming", f"{n} x {chunk} B", gw.proc,
                            lambda: loadgen.grpc_load(args + ["--max-bytes", str(limit)], gw.public))
            ctx.check("streaming", f"gateway {n}x{chunk}", r)
            rows.append({"server": "gateway", "pool_bytes_before": level, **flat_stream(r)})
            r = loadgen.grpc_load(args + ["--max-bytes", str(limit)], echo.public)
            ctx.check("streaming", f"echo {n}x{chunk}", r)
            rows.append({"server": "echo", **flat_stream(r)})
    ctx.note_idle("after streaming")
    ctx.write("streaming", rows)


def flat_stream(r: dict) -> dict:
    out = {k: v for k, v in r.items() if k not in ("per_stream_bytes", "burst_interval", "stream_ends")}
    out["per_stream_bytes"] = " ".join(str(b) for b in r.get("per_stream_bytes", []))
    return out


def rtt(ctx: Ctx) -> None:
    """A remote client: sequential 1 KiB GetRandom vs one StreamRandom through a delay proxy."""
    gw = ctx.drain_gateway()
    rows = []
    for rtt_ms in ctx.p["rtts_ms"]:
        proxy, addr = stack.start_proxy(ctx.work, gw.public, rtt_ms * 500)
        try:
            ctx.fill()
            r = loadgen.grpc_load(["unary", "--num-bytes", "1024", "--duration-s",
                                   str(ctx.p["rtt_s"])], addr)
            ctx.check("rtt", f"unary {rtt_ms} ms", r)
            rows.append({"rtt_ms": rtt_ms, "mode": "sequential GetRandom 1 KiB", "rps": r["rps"],
                         "bytes_per_s": r["bytes_per_s"], "p50_ms": r["latency"]["p50_ms"],
                         "p99_ms": r["latency"]["p99_ms"], "ok": r["ok"], "failed": r["failed"]})
            for window, label in [("adaptive", "one StreamRandom, 64 KiB messages, adaptive window"),
                                  ("default", "one StreamRandom, 64 KiB messages, tonic's default window")]:
                level = ctx.fill()
                r = loadgen.grpc_load(["stream", "--streams", "1", "--chunk-bytes", str(64 * KiB),
                                       "--duration-s", str(ctx.p["rtt_s"]), "--window", window,
                                       "--max-bytes", str(level - 64 * MiB)], addr)
                ctx.check("rtt", f"stream {window} {rtt_ms} ms", r)
                rows.append({"rtt_ms": rtt_ms, "mode": label, "bytes_per_s": r["bytes_per_s"],
                             "total_bytes": r["total_bytes"], "elapsed_secs": r["elapsed_secs"]})
        finally:
            proxy.stop()
    ctx.write("rtt", rows)


def ingest(ctx: Ctx) -> None:
    """Publish capacity: pre-signed chunks of 1 KiB .. 1 MiB, fresh gateway per size."""
    echo = ctx.echo()
    rows = []
    for size in ctx.p["ingest_sizes"]:
        count = max(16, min(ctx.p["ingest_max_chunks"], ctx.p["ingest_budget"] // size))
        cap = max(count * size + 64 * MiB, 64 * MiB)
        gw = stack.start_gateway(ctx.work / "ingest", f"gateway-ingest-{size}", cap)
        try:
            r = ctx.measure("ingest", f"{size} B chunks", gw.proc,
                            lambda: stack.ingest_load(gw, size, count=count),
                            {"pool_capacity_mib": cap / MiB},
                            busy_secs=lambda r: r["elapsed_secs"])
            ctx.check("ingest", f"gateway {size}", r)
            if r["pool_full"]:
                ctx.problems.append(f"ingest {size}: {r['pool_full']} chunks refused as pool-full")
            rows.append({"server": "gateway", **r})
            ctx.note_idle(f"after ingest {size}", gw.proc, "ingest")
        finally:
            gw.proc.stop()
        r = stack.ingest_load(gw, size, count=count, addr=echo.ingest)
        ctx.check("ingest", f"echo {size}", r)
        rows.append({"server": "echo", **r})
    ctx.write("ingest", rows)


def start_feed(work: Path, gw: stack.Gateway, n: int, rate: int, chunk: int) -> list[stack.Proc]:
    """`n` simulators at `rate` B/s each -> a collector (XOR when n > 1) -> `gw`, pinned to the
    load core. The collector is the last process returned."""
    procs, sources = [], []
    for i in range(n):
        port = stack.free_port()
        procs.append(stack._start(f"simulator-{i}", LOAD_CPU + [
            str(BIN / "entropy-simulator"), "--listen-addr", f"127.0.0.1:{port}",
            "--rate-bytes-per-s", str(rate)], work / f"simulator-{i}.log"))
        sources.append(f'[[source]]\nname = "sim-{i}"\ntype = "quantis"\n'
                       f'url = "http://127.0.0.1:{port}"\nallow_http = true\n')
    assert gw.mac_key_file is not None
    (work / "collector.toml").write_text(
        f'collector_id = "bench-{work.name}"\nkey_id = "bench"\nkey_file = "{gw.mac_key_file}"\n'
        f'chunk_bytes = {chunk}\nmixing = "{"none" if n == 1 else "xor"}"\nmin_sources = {n}\n'
        f'[[gateway]]\nid = "bench"\nendpoint = "http://{gw.ingest}"\n' + "\n".join(sources))
    time.sleep(0.3)
    ccmd = LOAD_CPU + [str(BIN / "entropy-collector"), "--config", str(work / "collector.toml")]
    ccmd += stack._metrics_flag(BIN / "entropy-collector")
    procs.append(stack._start("collector", ccmd, work / "collector.log"))
    return procs


FAIRNESS_KEYS = {"heavy": "bench-heavy-0123456789abcdef", "light": "bench-light-0123456789abcdef",
                 "probe": "bench-probe-0123456789abcdef"}


def fairness(ctx: Ctx) -> None:
    """Scarce entropy shared by keys: one simulator at 80 KB/s feeds a gateway drained by three
    keys at once: `heavy` with four StreamRandom readers of large messages, `light` with one
    reader of 16 KiB messages, `probe` with sequential GetRandom(32) calls. Reports each key's
    share and what the probe sees (the original's pool ran dry at this rate: 81.5% success)."""
    seconds, heavy_chunk = ctx.p["fairness"]
    rate = 80_000
    work = ctx.work / "fairness"
    work.mkdir(parents=True, exist_ok=True)
    gw = stack.start_gateway(work, "gateway-fairness", 16 * MiB, keys=FAIRNESS_KEYS,
                             extra=["--max-chunk-bytes", str(MiB)])
    procs = [gw.proc]
    try:
        procs += start_feed(work, gw, 1, rate, 16 * KiB)
        loads = {
            "heavy": ["stream", "--streams", "4", "--chunk-bytes", str(heavy_chunk),
                      "--duration-s", str(seconds)],
            "light": ["stream", "--streams", "1", "--chunk-bytes", str(16 * KiB),
                      "--duration-s", str(seconds)],
            "probe": ["unary", "--num-bytes", "32", "--concurrency", "1", "--think-ms", "100",
                      "--duration-s", str(seconds)],
        }
        running = {
            key: subprocess.Popen(LOAD_CPU + [str(BIN / "grpc-load"), "--addr", gw.public,
                                              "--key", FAIRNESS_KEYS[key]] + args,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for key, args in loads.items()}
        results = {}
        for key, proc in running.items():
            out, err = proc.communicate(timeout=seconds * 4 + 120)
            if proc.returncode != 0:
                raise BenchError(f"fairness {key}: grpc-load failed: {err[-400:]}")
            results[key] = json.loads(out)
        heavy, light, probe = results["heavy"], results["light"], results["probe"]
        rates = {"heavy": heavy["bytes_per_s"], "light": light["bytes_per_s"]}
        hi, lo = max(rates.values()), min(rates.values())
        ctx.check("fairness", "probe", probe, failures_ok=True)
        ctx.write("fairness", [
            {"key": "heavy", "shape": f"4 streams x {heavy_chunk} B", "bytes_per_s": rates["heavy"],
             "share_ratio_max_min": hi / lo if lo else 0.0, "source_bytes_per_s": rate},
            {"key": "light", "shape": "1 stream x 16384 B", "bytes_per_s": rates["light"],
             "share_ratio_max_min": hi / lo if lo else 0.0, "source_bytes_per_s": rate},
            {"key": "probe", "shape": "sequential GetRandom(32), 100 ms think",
             "bytes_per_s": probe["bytes_per_s"], "success_rate": probe["success_rate"],
             "calls": probe["requests"], "errors": json.dumps(probe["errors"]),
             "p50_ms": probe["latency"]["p50_ms"], "p99_ms": probe["latency"]["p99_ms"],
             "source_bytes_per_s": rate},
        ])
    finally:
        for p in reversed(procs):
            p.stop()


DRBG_RAW_KEY = {"raw": "bench-raw-0123456789abcdef"}


def drbg(ctx: Ctx) -> None:
    """Beyond the appliance's rate: one entropy-simulator at 80 KB/s -> collector -> gateway,
    read at once by 16 StreamRandom readers of DRBG output in 64 KiB messages (the bench key,
    with `entropy:drbg`: each stream one CTR_DRBG instance seeded from the pool) and one reader
    of pool bytes in 16 KiB messages (key `raw`). Reports each caller's rate over the source's
    (issue 29: the DRBG readers together at 1 GiB/s, over 13,000 times the source, while the raw
    reader keeps its share of the source)."""
    seconds = ctx.p["drbg_s"]
    rate = 80_000
    work = ctx.work / "drbg"
    work.mkdir(parents=True, exist_ok=True)
    gw = stack.start_gateway(work, "gateway-drbg", 16 * MiB, keys=DRBG_RAW_KEY, drbg=True,
                             extra=["--max-chunk-bytes", str(MiB)])
    procs = [gw.proc]
    try:
        procs += start_feed(work, gw, 1, rate, 16 * KiB)
        loads = {
            "drbg": (stack.API_KEY, ["stream", "--streams", "16", "--chunk-bytes", str(64 * KiB),
                                     "--duration-s", str(seconds), "--drbg"]),
            "raw": (DRBG_RAW_KEY["raw"], ["stream", "--streams", "1", "--chunk-bytes",
                                          str(16 * KiB), "--duration-s", str(seconds)]),
        }
        running = {
            name: subprocess.Popen(LOAD_CPU + [str(BIN / "grpc-load"), "--addr", gw.public,
                                               "--key", key] + args,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for name, (key, args) in loads.items()}
        results = {}
        for name, proc in running.items():
            out, err = proc.communicate(timeout=seconds * 4 + 120)
            if proc.returncode != 0:
                raise BenchError(f"drbg {name}: grpc-load failed: {err[-400:]}")
            results[name] = json.loads(out)
            ctx.check("drbg", name, results[name])
        ctx.write("drbg", [
            {"caller": "drbg", "shape": "16 DRBG streams x 64 KiB",
             "bytes_per_s": results["drbg"]["bytes_per_s"], "source_bytes_per_s": rate,
             "over_source": results["drbg"]["bytes_per_s"] / rate},
            {"caller": "raw", "shape": "1 raw stream x 16 KiB",
             "bytes_per_s": results["raw"]["bytes_per_s"], "source_bytes_per_s": rate,
             "over_source": results["raw"]["bytes_per_s"] / rate},
        ])
    finally:
        for p in reversed(procs):
            p.stop()


def e2e(ctx: Ctx) -> None:
    """Simulators at appliance rate -> collector -> gateway -> one draining client."""
    rows = []
    rate = 80_000
    for n, chunk in ctx.p["e2e"]:
        work = ctx.work / f"e2e-{n}-{chunk}"
        work.mkdir(parents=True, exist_ok=True)
        gw = stack.start_gateway(work, f"gateway-e2e-{n}", 64 * MiB,
                                 extra=["--max-chunk-bytes", str(MiB)])
        procs = [gw.proc]
        try:
            feed = start_feed(work, gw, n, rate, chunk)
            procs += feed
            col = feed[-1]
            # The consumer opens its window at the first byte: from then on it drains every chunk
            # as it lands, so nothing piles up in the pool.
            s0 = time.time()
            args = ["stream", "--streams", "1", "--chunk-bytes", "1024", "--duration-s",
                    str(ctx.p["e2e_s"]), "--burst-gap-ms", "30"]
            r = ctx.measure("e2e", f"{n} simulators, {chunk} B chunks", gw.proc,
                            lambda: loadgen.grpc_load(args, gw.public))
            st = gw.status()
            ctx.check("e2e", f"{n} simulators", r)
            if not col.alive():
                ctx.problems.append(f"e2e {n}: collector exited: {col.log.read_text()[-400:]}")
            delivered = r["bytes_per_s"]
            rows.append({"simulators": n, "mixing": "none" if n == 1 else "xor",
                         "source_rate_bytes_per_s": rate, "chunk_bytes": chunk,
                         "delivered_bytes_per_s": delivered, "efficiency": delivered / rate,
                         "window_s": r["elapsed_secs"], "delivered_bytes": r["total_bytes"],
                         "served_of_ingested": st["served_bytes_total"] / max(1, st["ingested_bytes_total"]),
                         "chunks_rejected": st["chunks_rejected_total"],
                         # Phase-free: one chunk per burst, so the long-run rate is a chunk per
                         # mean burst interval (the window above can cut a chunk in two).
                         "steady_efficiency": (1000 * chunk / rate) / r["burst_interval"]["mean_ms"]
                         if r["burst_interval"]["mean_ms"] else 0.0,
                         "chunk_interval_mean_ms": r["burst_interval"]["mean_ms"],
                         "chunk_interval_p50_ms": r["burst_interval"]["p50_ms"],
                         "chunk_interval_p99_ms": r["burst_interval"]["p99_ms"],
                         "chunk_fill_ms": 1000 * chunk / rate,
                         "startup_s": r["elapsed_secs"] and (time.time() - s0 - r["elapsed_secs"])})
        finally:
            for p in reversed(procs):
                p.stop()
    ctx.write("e2e", rows)


def micro(ctx: Ctx) -> None:
    """criterion: pool, collector stages, verification, integer sampling."""
    rows = []
    start = time.time()
    # One cargo invocation for the three benches; run.sh has built them already (their features
    # are those of its release build, see bench/tools/Cargo.toml), so nothing compiles here.
    cmd = SERVER_CPU + ["cargo", "bench", "--locked", "-q", "-p", "entropy-bench", "--bench", "pool",
                        "--bench", "stages", "--bench", "micro", "--"] + ctx.p["criterion"] + ["--noplot"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    (ctx.raw / "criterion.txt").write_text(p.stdout + p.stderr)
    if p.returncode != 0:
        ctx.problems.append(f"micro: cargo bench exited {p.returncode}: {p.stderr[-400:]}")
    groups = {"put_take", "contended_take", "collector_stage_per_MiB", "verify_chunk", "int_sample"}
    base = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "criterion"
    for est in sorted(base.glob("**/new/estimates.json")):
        if est.stat().st_mtime < start:
            continue
        if json.loads((est.parent / "benchmark.json").read_text()).get("group_id") not in groups:
            continue
        meta = json.loads((est.parent / "benchmark.json").read_text())
        median_ns = json.loads(est.read_text())["median"]["point_estimate"]
        tp = meta.get("throughput") or {}
        row = {"group": meta.get("group_id"), "bench": meta.get("value_str") or meta.get("function_id"),
               "median_ns": median_ns}
        if "Bytes" in tp:
            row["bytes_per_s"] = tp["Bytes"] / (median_ns / 1e9)
            row["ms_per_mib"] = median_ns / 1e6 * MiB / tp["Bytes"]
        if "Elements" in tp:
            row["elements_per_s"] = tp["Elements"] / (median_ns / 1e9)
        rows.append(row)
    ctx.write("micro", rows)


def perf_counts_instructions() -> bool:
    try:
        p = subprocess.run(["perf", "stat", "-e", "instructions", "true"], capture_output=True,
                           text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return p.returncode == 0 and "not supported" not in p.stderr


def profile(ctx: Ctx) -> None:
    """Where the gateway's time goes under 32 B GetRandom and one 64 KiB stream: perf when it
    can count instructions here, else valgrind's callgrind (exact, ~50x slower, so short)."""
    use_perf = perf_counts_instructions()
    work = ctx.work / "profile"
    out = ctx.raw / "callgrind.out"
    # Collection starts after the pre-fill (callgrind_control -i on), so only the load counts.
    wrapper = None if use_perf else ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                                     f"--callgrind-out-file={out}"]
    gw = stack.start_gateway(work, "gateway-profile", 256 * MiB, wrapper=wrapper, start_timeout=120)
    perf_proc = None
    try:
        r = stack.ingest_load(gw, 64 * KiB, total_bytes=96 * MiB)
        if r["failed"]:
            raise BenchError(f"profile pre-fill failed: {r['first_error']}")
        if not use_perf:
            subprocess.run(["callgrind_control", "-i", "on", str(gw.proc.pid)], capture_output=True,
                           timeout=60, check=True)
        else:
            perf_proc = subprocess.Popen(["perf", "record", "-g", "-o", str(ctx.raw / "perf.data"),
                                          "-p", str(gw.proc.pid)], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
        n = 20000 if use_perf else 4000
        h = loadgen.h2load(ctx.work, ctx.raw, "profile", gw.public, 32, 10, 5, requests=n)
        ctx.check("profile", "h2load 32 B", h)
        s = loadgen.grpc_load(["stream", "--streams", "1", "--chunk-bytes", str(64 * KiB),
                               "--duration-s", "60", "--max-bytes", str(64 * MiB)], gw.public)
        ctx.check("profile", "stream", s)
    finally:
        if perf_proc:
            perf_proc.send_signal(2)
            perf_proc.wait(60)
        gw.proc.stop(grace=120)
    if use_perf:
        p = subprocess.run(["perf", "report", "-i", str(ctx.raw / "perf.data"), "--stdio",
                            "--no-children", "--percent-limit", "1.5"], capture_output=True,
                           text=True, timeout=300)
        tool, text = "perf record -g (CPU samples)", p.stdout
    else:
        p = subprocess.run(["callgrind_annotate", "--inclusive=no", str(out)], capture_output=True,
                           text=True, timeout=300)
        pi = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(out)], capture_output=True,
                            text=True, timeout=300)
        tool = "valgrind --tool=callgrind (instructions executed; `perf stat -e instructions` is not supported on this machine)"
        text = ("Self cost (top functions):\n" + top_lines(p.stdout, 30)
                + "\nInclusive cost (top functions):\n" + top_lines(pi.stdout, 30))
    if not text.strip():
        raise BenchError(f"profile produced nothing: {p.stderr[-300:]}")
    (ctx.out / "profile.md").write_text(
        "## Profile: where the gateway's time goes\n\n"
        f"Tool: {tool}. Load: {n} GetRandom(32 B) calls at 50 in flight (h2load), then one "
        "StreamRandom of 64 MiB in 64 KiB messages, against a gateway pre-filled by ingest-load "
        "before collection starts (callgrind_control -i on).\n\n"
        "```\n" + text.strip() + "\n```\n\n" + ingest_profile(ctx))


def ingest_profile(ctx: Ctx) -> str:
    """perf's CPU samples (the cpu-clock software event, which needs no hardware counters) of a
    gateway verifying and storing 1 MiB chunks. callgrind would mislead here: valgrind hides
    SHA-NI, so the HMAC would run its software fallback."""
    head = "### Ingest, 1 MiB chunks\n\n"
    if not shutil.which("perf"):
        return head + "Not profiled: no `perf` on this machine (Debian: linux-perf).\n"
    count = 128 if ctx.suite == "smoke" else 1024
    data = ctx.raw / "perf-ingest.data"
    gw = stack.start_gateway(ctx.work / "profile-ingest", "gateway-profile-ingest",
                             count * MiB + 64 * MiB)
    perf = None
    try:
        perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "2000", "-o", str(data),
                                 "-p", str(gw.proc.pid)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)  # attached before the load starts
        r = stack.ingest_load(gw, MiB, count=count)
        ctx.check("profile", "ingest 1 MiB", r)
    finally:
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(60)
        gw.proc.stop()
    p = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children",
                        "--percent-limit", "1", "--sort", "dso,symbol"], capture_output=True,
                       text=True, timeout=300)
    lines = [l[:160].rstrip() for l in p.stdout.splitlines() if l.strip() and not l.startswith("#")]
    if p.returncode != 0 or not lines:
        err = (perf.stderr.read() if perf and perf.stderr else "") + p.stderr
        return head + f"Not profiled: perf record/report failed here: {err.strip()[-300:]}\n"
    return (head + f"Tool: `perf record -e cpu-clock -F 2000` attached to the gateway while "
            f"`ingest-load` publishes {count} pre-signed 1 MiB chunks (16 in flight, 4 "
            "connections); `perf report --no-children --sort dso,symbol`, entries of 1% and "
            "more. `[k]` is the kernel.\n\n```\n" + "\n".join(lines) + "\n```\n")


def top_lines(annotate: str, n: int) -> str:
    """The first n function lines of callgrind_annotate output, paths shortened."""
    lines = annotate.splitlines()
    start = next((i for i, l in enumerate(lines) if "file:function" in l), 0)
    keep = [l for l in lines[start + 1:] if l.strip() and not l.startswith("-")][:n]
    return "\n".join(re.sub(r"/\S*/(\S+?:)", r"\1", l)[:160] for l in keep) + "\n"


RUNNERS = {"baselines": baselines, "sustained": sustained, "burst": burst,
           "concurrency": concurrency, "payload": payload, "streaming": streaming, "rtt": rtt,
           "ingest": ingest, "e2e": e2e, "fairness": fairness, "drbg": drbg, "micro": micro,
           "profile": profile}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("suite", choices=SUITES)
    ap.add_argument("scenarios", nargs="*", help=f"any of: {' '.join(SCENARIOS)} (default: all)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    names = a.scenarios or SCENARIOS
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenario {' '.join(unknown)}; known: {' '.join(SCENARIOS)}")
    a.out.mkdir(parents=True, exist_ok=True)
    info = stack.machine_info()
    info.update({"suite": a.suite, "scenarios": names, "params": SUITES[a.suite],
                 "drain_pool_capacity_bytes": SUITES[a.suite]["pool"],
                 "drain_fill_bytes": SUITES[a.suite]["budget"]})
    ctx = Ctx(a.suite, a.out)
    timings = {}
    try:
        for name in names:
            t0 = time.time()
            print(f"--> {name}", flush=True)
            try:
                RUNNERS[name](ctx)
            except (BenchError, OSError, subprocess.SubprocessError, KeyError, ValueError) as e:
                traceback.print_exc()
                ctx.problems.append(f"{name}: {e}")
            timings[name] = round(time.time() - t0, 1)
            print(f"    {name}: {timings[name]} s", flush=True)
    finally:
        ctx.close()
    if ctx.resources:
        ctx.write("resources", ctx.resources)
    info["scenario_seconds"] = timings
    info["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    info["problems"] = ctx.problems
    busy = max(float(x) for x in info["loadavg_start"][:1] + info["loadavg_end"][:1])
    notes = [os.environ.get("BENCH_NOTE", "")]
    if busy > 0.5:
        notes.append(f"The machine was not idle (1-minute load average up to {busy:.1f} on "
                     f"{os.cpu_count()} CPUs during the run): other work competed for both cores, "
                     "so absolute numbers are low and noisy; ratios to the echo server measured "
                     "in the same run hold better.")
    info["note"] = " ".join(n for n in notes if n)
    (a.out / "machine.json").write_text(json.dumps(info, indent=1))
    for p in ctx.problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    return 1 if ctx.problems else 0


if __name__ == "__main__":
    sys.exit(main())
