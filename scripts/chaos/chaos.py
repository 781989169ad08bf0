#!/usr/bin/env python3
"""Chaos: every program stopped, killed, starved and cut off under load, with no byte served twice.

    scripts/chaos/chaos.py quick|full [BIN_DIR] [--only python,go] [--rows gateway_kill9,...] [--out DIR]
                                [--no-build]

The system (scripts/chaos/system.py): one simulator -> one collector -> toxiproxy -> one gateway
(TLS, mTLS ingest) <- toxiproxy <- clients, on loopback. Through every row runs the load of
scripts/chaos/load.py: the stream reader of each client library (Rust, Python, Go, TypeScript;
Java with --only), the Rust reader once more asking for DRBG output (a key with entropy:drbg),
and a unary drawer. A row starts its readers, lets the drawer set a rate,
applies its fault, heals it, and judges:

- every reader ends OK with exactly the bytes it asked for (they all resume; none gives up);
- the drawer's calls fail only with documented codes, and it is served again after the fault
  (seconds to the first call and to 80% of its rate before: the target is 5 s, reported);
- the gateway and the collector run again and are ready; their RSS, FDs and threads before,
  during and after.

After the rows: every byte any client received, in every row, is scanned for a run served
twice (`repeat-scan`); every chunk any life of the gateway stored is checked to have been
stored once (its log's (collector, epoch, sequence)), and the collector's last life accounts
for every chunk it delivered; no program panicked. `quick` (in the test command) runs the rows
marked quick with shorter faults; `full` (bench/chaos.sh) runs all of them and writes the table
to --out. Standard library only; needs root for nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # harness.py, shared by every suite
import appliance_rate  # noqa: E402
import harness  # noqa: E402
from harness import ROOT  # noqa: E402
from load import READ_TOTAL, Load, drawer_events, recovery  # noqa: E402
from readers import conformance, reports as readers_report  # noqa: E402
from report import markdown  # noqa: E402
from system import POOL_BYTES, System  # noqa: E402

DOCUMENTED = {"OK", "UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"}  # proto/entropy/v1
RECOVERY_TARGET_S = 5.0


@dataclass(frozen=True)
class Ctx:
    system: System
    hold_s: float  # how long a lasting fault lasts (10 s full, 3 s quick)
    notes: dict  # what a fault observed, for the table


@dataclass(frozen=True)
class Row:
    name: str
    expected: str
    fault: Callable[[Ctx], None]  # applies the fault and heals it; returns once healed
    quick: bool = False
    resume: bool = False  # every reader's stream is cut: each must reconnect


# --- faults ---------------------------------------------------------------------------------------

def paused(program: str) -> Callable[[Ctx], None]:
    def fault(c: Ctx) -> None:
        p = c.system.programs[program]
        p.signal(signal.SIGSTOP)
        time.sleep(c.hold_s / 2)
        c.notes["during"] = c.system.resources()
        time.sleep(c.hold_s / 2)
        p.signal(signal.SIGCONT)
    return fault


def restarted(program: str, sig: int, times: int = 1, down_s: float = 1.0) -> Callable[[Ctx], None]:
    def fault(c: Ctx) -> None:
        for i in range(times):
            p = c.system.programs[program]
            if sig == signal.SIGKILL:
                p.kill()
            else:
                c.notes["exit_s"] = round(p.terminate(), 2)
            time.sleep(down_s)
            if program == "gateway":
                c.system.start_gateway(wait_ready=i + 1 < times)
            else:
                p.start()
            if i + 1 < times:
                time.sleep(1.0)
    return fault


def toxic(proxy: str, kind: str, streams: tuple[str, ...] = ("downstream",), hold: float | None = None,
          **attributes) -> Callable[[Ctx], None]:
    def fault(c: Ctx) -> None:
        for stream in streams:
            c.system.toxiproxy.toxic(proxy, f"{kind}_{stream}", kind, stream, **attributes)
        time.sleep(c.hold_s if hold is None else hold)
        c.notes["during"] = c.system.resources()
        c.system.toxiproxy.heal(proxy)
    return fault


def appliance(*faults: str, each_s: float | None = None) -> Callable[[Ctx], None]:
    """The simulator started again with each fault in turn (each for `each_s`, or the hold),
    then healthy again."""
    def fault(c: Ctx) -> None:
        sim = c.system.programs["simulator"]
        before = c.system.metric("collector", "entropy_collector_health_failures_total") or 0
        errors = c.system.metric("collector", "entropy_collector_fetch_errors_total") or 0
        for f in faults:
            sim.kill()
            c.system.start_simulator(f)
            time.sleep(each_s or c.hold_s)
        c.notes["health_failures"] = (c.system.metric("collector", "entropy_collector_health_failures_total")
                                      or 0) - before
        c.notes["fetch_errors"] = (c.system.metric("collector", "entropy_collector_fetch_errors_total")
                                   or 0) - errors
        sim.kill()
        c.system.start_simulator("none")
    return fault


def clock_skew(offset: str) -> Callable[[Ctx], None]:
    """The collector restarted with its clock `offset` (faketime), then with the right clock."""
    def fault(c: Ctx) -> None:
        col = c.system.programs["collector"]
        rejected = c.system.metrics("gateway")
        col.kill()
        col.start(wrapper=["faketime", "-f", offset])
        time.sleep(c.hold_s)
        after = c.system.metrics("gateway")
        c.notes["rejected"] = {k: v - rejected.get(k, 0) for k, v in after.items()
                               if k.startswith("entropy_gateway_chunks_rejected_total") and v > rejected.get(k, 0)}
        c.notes["readyz"] = c.system.readyz("gateway")[1].strip()[:300]
        col.kill()
        col.start()
        # The reason is visible where an operator looks: the refusal counter by reason, and
        # /readyz naming the last refused chunk (the pool ran dry meanwhile).
        reason = "future" if offset.startswith("+") else "stale"
        if not any(f'reason="{reason}"' in k for k in c.notes["rejected"]):
            c.notes.setdefault("failures", []).append(f"no chunk counted as refused for reason {reason}")
        if f"({reason})" not in c.notes["readyz"]:
            c.notes.setdefault("failures", []).append(f"/readyz does not name the refusal ({reason})")
    return fault


def pool_full(c: Ctx) -> None:
    """The pool full for the hold (nobody draws), then drained by a burst of 64 KiB calls."""
    s = c.system
    s.wait(s.pool_at_least(POOL_BYTES - (1 << 20)), 60, "the pool full")
    resealed = s.metric("collector", "entropy_collector_chunks_resealed_total") or 0
    time.sleep(c.hold_s)
    c.notes["resealed_while_full"] = (s.metric("collector", "entropy_collector_chunks_resealed_total") or 0) - resealed
    c.notes["burst"] = ghz(s, calls=POOL_BYTES // 65536 + 64, concurrency=50, num_bytes=65536)


def spike(c: Ctx) -> None:
    c.notes["spike"] = {n: ghz(c.system, calls=calls, concurrency=n, num_bytes=1024)
                        for n, calls in ((10, 500), (500, 5000), (10, 500))}


def ghz(s: System, *, calls: int, concurrency: int, num_bytes: int) -> dict:
    cmd = harness.ghz_getrandom(s.key, s.ca, num_bytes, "-n", calls, "-c", concurrency,
                                "--connections", min(concurrency, 50), s.endpoint)
    r = subprocess.run([str(x) for x in cmd], capture_output=True, text=True, timeout=300)
    out = harness.ghz_summary(r.stdout, r.stderr)
    return {k: out[k] for k in ("count", "ok", "codes", "rps", "p99_ms")}


ROWS = [
    Row("gateway_sigstop", "calls wait; readers resume after SIGCONT", paused("gateway"), quick=True),
    Row("collector_sigstop", "the pool carries the callers; feed resumes", paused("collector")),
    Row("simulator_sigstop", "the collector times out the source; feed resumes", paused("simulator")),
    # Not in quick: the conformance restart rows kill every reader's gateway already.
    # Quick since the DRBG reader joined: the gateway killed under DRBG streams (issue 29).
    Row("gateway_kill9", "UNAVAILABLE meanwhile; readers resume exactly", restarted("gateway", signal.SIGKILL),
        resume=True, quick=True),
    Row("gateway_kill9_x3", "three restarts in a row; readers resume", restarted("gateway", signal.SIGKILL, 3), resume=True),
    Row("collector_kill9", "a new epoch; nothing stored twice", restarted("collector", signal.SIGKILL), quick=True),
    Row("collector_kill9_x3", "three new epochs; nothing stored twice", restarted("collector", signal.SIGKILL, 3)),
    Row("gateway_sigterm", "streams end UNAVAILABLE; readers resume", restarted("gateway", signal.SIGTERM, down_s=0.5), resume=True),
    Row("ingest_latency_500ms", "publishes slow; the pool carries callers", toxic("ingest", "latency", latency=500)),
    Row("ingest_bandwidth_10KBps", "publishes crawl; the pool carries callers", toxic("ingest", "bandwidth", rate=10)),
    Row("ingest_reset", "publishes reset mid-call; resent, stored once", toxic("ingest", "reset_peer", timeout=0),
        quick=True),
    Row("ingest_blackhole", "publishes time out; resent, stored once", toxic("ingest", "timeout", timeout=0)),
    Row("ingest_slicer", "publishes in 64-byte pieces: still stored", toxic("ingest", "slicer", average_size=64,
                                                                         size_variation=32, delay=10)),
    Row("client_reset", "streams reset mid-flight; readers resume", toxic("public", "reset_peer", ("downstream", "upstream"), hold=2, timeout=0),
        quick=True),  # not resume: a reader whose library already holds the rest (grpcio buffers
    # megabytes) has no data on the link while it is cut, so it may not need to reconnect
    Row("client_latency_1s", "a latency spike: slower, nothing lost", toxic("public", "latency", latency=1000)),
    Row("appliance_flapping", "source quarantined and back; nothing bad served",
        appliance("server-error", "none", "server-error", "none", each_s=2)),
    Row("appliance_garbage", "HTML refused by the collector", appliance("html")),
    Row("appliance_stuck", "stuck output refused by the collector (sanity check or health tests)",
        appliance("stuck")),
    Row("spike_10_500_10", "RESOURCE_EXHAUSTED or OK, never a crash", spike),
    Row("clock_ahead_5m", "chunks refused as from the future; accepted again", clock_skew("+5m")),
    Row("clock_behind_5m", "chunks refused as stale; accepted again", clock_skew("-5m")),
    Row("pool_full_then_burst", "collector holds chunks; the burst drains the pool", pool_full),
]


# --- a row ------------------------------------------------------------------------------------------

def run_row(row: Row, system: System, load: Load, hold_s: float) -> dict:
    print(f"\n-- {row.name}: {row.expected}", flush=True)
    ctx = Ctx(system, hold_s, {})
    if row.fault is not pool_full:
        system.wait(system.pool_at_least(POOL_BYTES // 2), 60, "the pool half full before the row")
    row_start = time.time()
    readers = load.readers(row.name) if row.fault is not pool_full else {}
    drawer, events, stop = load.drawer(row.name)
    try:
        time.sleep(4)  # the drawer's rate before the fault
        before = system.resources()
        early = [n for n, (_, out) in readers.items() if out.stat().st_size >= READ_TOTAL]
        fault_start = time.time()
        row.fault(ctx)
        healed = time.time()
        reports = readers_report(row.name, readers, load.work, timeout=120)
        system.wait(lambda: system.metric("gateway", "entropy_gateway_ready") == 1, 60, "the gateway ready again")
        time.sleep(max(0.0, healed + RECOVERY_TARGET_S + 1 - time.time()))
    finally:
        # A row that fails half-way leaves no caller behind (one once ran on for 45 minutes).
        stop.touch()
        for proc in [drawer, *(p for p, _ in readers.values())]:
            try:
                proc.wait(timeout=30 if proc is drawer else 0.1)
            except subprocess.TimeoutExpired:
                proc.kill()
    rec = recovery(drawer_events(events), fault_start, healed)
    after = system.resources()
    failures = [f"{n} reader finished before the fault" for n in early] + ctx.notes.pop("failures", [])
    # A reader whose library already held the rest when the fault came (grpcio buffers megabytes,
    # and the gateway sends ahead as the link allows) needs no reconnect: the gateway's log says
    # how many streams had been sent whole by then; each excuses one reader.
    sent_whole = system.streams_finished(READ_TOTAL, row_start, fault_start) if row.resume else 0
    unresumed = [name for name, r in reports.items() if row.resume and int(r.get("reconnects", 0)) < 1]
    if len(unresumed) > sent_whole:
        failures.append(f"{', '.join(unresumed)} reader(s): no reconnect, though the fault cut every stream not "
                        f"yet sent whole ({sent_whole} were)")
    for name, r in reports.items():
        if r.get("code") != "OK" or r.get("bytes") != r["wrote"] or r["wrote"] != READ_TOTAL:
            failures.append(f"{name} reader: {r.get('code')} with {r.get('bytes')} bytes (wrote {r['wrote']}): "
                            f"{str(r.get('error'))[:200]}")
    if undocumented := set(rec["codes"]) - DOCUMENTED:
        failures.append(f"drawer saw undocumented codes {sorted(undocumented)}")
    if rec["first_ok_s"] is None:
        failures.append("drawer never served after the fault")
    for program in ("gateway", "collector"):
        if not after.get(program):
            failures.append(f"{program} not running after the row")
    result = {"row": row.name, "expected": row.expected, "readers": reports, "sent_whole_before_fault": sent_whole,
              "recovery": rec,
              "resources": {"before": before, "during": ctx.notes.pop("during", {}), "after": after},
              "notes": ctx.notes, "failures": failures}
    status = "ok  " if not failures else "FAIL"
    resumed = ", ".join(f"{n} {r.get('reconnects', 0)}" for n, r in reports.items())
    print(f"{status} {row.name}: reconnects {resumed or '-'}"
          + (f" ({sent_whole} stream(s) sent whole before the fault)" if sent_whole else "") + "; "
          f"drawer first OK {fmt_s(rec['first_ok_s'])}, full rate {fmt_s(rec['full_rate_s'])}, codes {rec['codes']}"
          + "".join(f"\n     {f}" for f in failures), flush=True)
    return result


def fmt_s(x: float | None) -> str:
    return "never" if x is None else f"{x:.1f} s"


# --- after the rows ---------------------------------------------------------------------------------

def final_checks(system: System, load: Load, bin_dir: Path, check: harness.Checks) -> dict:
    files = [f for f in load.outputs if f.exists() and f.stat().st_size > 0]
    r = subprocess.run([str(bin_dir / "repeat-scan"), *map(str, files)], capture_output=True, text=True)
    size = sum(f.stat().st_size for f in files)
    check(f"no run of 16+ bytes twice in {size / (1 << 20):.0f} MiB from {len(files)} files (every client, every row)",
          r.returncode == 0, r.stdout[-500:] + r.stderr[-500:])
    stored = system.stored_chunks()
    dupes = len(stored) - len(set(stored))
    check(f"every chunk stored once: {len(stored)} chunks in the gateway's log, over "
          f"{system.programs['gateway'].lives} lives, {dupes} twice", len(stored) > 0 and dupes == 0)
    m = system.metrics("collector")
    ok = sum(v for k, v in m.items() if k.startswith("entropy_collector_publish_total") and 'code="OK"' in k)
    unknown = sum(v for k, v in m.items() if k.startswith("entropy_collector_publish_total")
                  and 'code="TRANSPORT"' in k)
    # The collector's last life is the epoch whose first chunk came last.
    first_seen: dict[tuple[str, int], int] = {}
    for i, (c, e, _) in enumerate(stored):
        first_seen.setdefault((c, e), i)
    last_epoch = max(first_seen, key=first_seen.__getitem__) if first_seen else None
    last = [x for x in stored if x[:2] == last_epoch]
    check(f"the collector's last life: {ok:.0f} chunks it was told were stored, {len(last)} stored for its epoch "
          f"({unknown:.0f} outcomes unknown)", len(last) >= ok and len(last) - ok <= unknown,
          f"stored {len(last)}, OK {ok}, unknown {unknown}")
    problems = system.log_problems()
    panics = {n: [line for line in lines if "panicked" in line] for n, lines in problems.items()}
    check("no program panicked", not any(panics.values()), panics)
    return {"scanned_bytes": size, "stored_chunks": len(stored), "stored_twice": dupes,
            "error_lines": {n: len(lines) for n, lines in problems.items()},
            "error_examples": {n: lines[:3] for n, lines in problems.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["quick", "full"])
    ap.add_argument("bin_dir", nargs="?", default=str(ROOT / "target/release"))
    ap.add_argument("--only", help="languages (comma-separated); default: rust, python, go, typescript")
    ap.add_argument("--rows", help="rows to run (comma-separated); default: the mode's")
    ap.add_argument("--out", type=Path, help="write chaos.md and chaos.json here")
    ap.add_argument("--no-build", action="store_true", help="the reader programs are built already")
    args = ap.parse_args()
    bin_dir = Path(args.bin_dir).resolve()
    langs = conformance.select(args.only or "rust,python,go,typescript", ap)
    rows = [r for r in ROWS if (r.name in args.rows.split(",") if args.rows else args.mode == "full" or r.quick)]
    if args.rows and len(rows) != len(args.rows.split(",")):
        ap.error(f"unknown row in {args.rows}; rows: {', '.join(r.name for r in ROWS)}")
    hold_s = 10.0 if args.mode == "full" else 3.0
    if any(r.fault.__qualname__.startswith("clock_skew") for r in rows) and not shutil.which("faketime"):
        ap.error("the clock rows need faketime (Debian package faketime; scripts/test.sh installs it)")
    if not args.no_build:
        conformance.build(langs)
    check = harness.Checks()
    with tempfile.TemporaryDirectory(prefix="chaos-") as tmp:
        work = Path(tmp)
        system = System(bin_dir, work)
        results: dict = {"mode": args.mode, "hold_s": hold_s, "languages": [lang.name for lang in langs], "rows": []}
        try:
            system.start()
            load = Load(system.endpoint, system.key, system.ca, work, langs, drbg_key=system.drbg_key)
            for row in rows:
                result = run_row(row, system, load, hold_s)
                results["rows"].append(result)
                check(f"{row.name}: every reader exact, drawer served again, programs up", not result["failures"],
                      "; ".join(result["failures"]))
            print("\n-- after the rows", flush=True)
            results["final"] = final_checks(system, load, bin_dir, check)
            system.stop()
            if not args.rows:
                print("\n-- the appliance-rate load test", flush=True)
                results["appliance"] = appliance_rate.run(bin_dir, work / "appliance", args.mode == "quick", check)
        except Exception as e:  # noqa: BLE001 (the logs say why; the run is a failure)
            check("the run completed", False, f"{type(e).__name__}: {e}")
            for name in ("gateway", "collector"):
                print(f"--- {name} log tail\n{system.log_tail(name)}")
        finally:
            system.stop()
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            command = "scripts/chaos/chaos.py " + " ".join(sys.argv[1:])
            (args.out / "chaos.json").write_text(json.dumps(results, indent=2, default=str))
            text = markdown(results, command, RECOVERY_TARGET_S)
            if "appliance" in results:
                text += "\n".join(appliance_rate.markdown(results["appliance"])) + "\n"
            (args.out / "chaos.md").write_text(text)
            print(f"wrote {args.out / 'chaos.md'}")
    return check.summary("chaos")


if __name__ == "__main__":
    sys.exit(main())
