#!/usr/bin/env python3
"""The system scaled out, as hosts in network namespaces (issue "Scale-out"):

    col1, col2   entropy-simulator (a stand-in Quantis on the host's loopback) -> entropy-collector,
                 each publishing to all three gateways (each chunk to exactly one)
    gw1..gw3     entropy-gateway: public gRPC over TLS, ingest, /readyz on 9464,
                 shutdown_drain_ms 3000; capped to --gateway-cpu cores for the throughput section
    lb           HAProxy with deploy/haproxy/haproxy.cfg as shipped: TLS ends there and starts
                 again to each gateway, each call balanced on its own, /readyz health checks
    client       ghz, grpcurl, every language's stream reader, a Python drawer keeping bytes

Sections, each with its checks:
  balance     calls over one client connection reach every gateway (per call, not per connection)
  throughput  ghz GetRandom 32 B through the balancer with 1, 2, 3 gateways in rotation, and
              straight to one gateway (what the balancer costs); speed is reported, not asserted
  collector   col1 killed: col2 keeps every gateway fed; GetStatus shows col1's source going stale
  kill        the gateway carrying most streams killed (-9) mid-stream: every language's reader
              resumes through the balancer on another gateway, nothing lost or repeated
  drain       SIGTERM to a gateway under ghz load: it says NOT_SERVING, the balancer takes it
              out within its checks, it exits after the drain, and no unary call fails; every
              stream it cut at the drain's end (its log says how many) resumes elsewhere
  scan        every byte the readers and the drawer received, from every gateway, scanned for
              any run of 16+ bytes served twice (repeat-scan)

    scripts/lab/scaleout.py BIN_DIR [--mode quick|full] [--report FILE.json] [--only python,go]
                                [--markdown FILE.md] [--no-build] [--gateway-cpu 0.1]

quick (the test command): short throughput points. full (bench/run.sh scaleout): 10 s points.
Needs root, ip netns, haproxy (Debian), ghz and grpcurl (Go); BIN_DIR holds entropy-gateway,
entropy-collector, entropy-simulator and repeat-scan. Where root or namespaces are missing it
prints "SKIP: <reason>" and exits 0; any failed check exits 1. Everything is removed on exit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # harness.py, shared by every suite
import harness  # noqa: E402
import netns  # noqa: E402
import readers  # noqa: E402
from harness import ROOT  # noqa: E402
from readers import conformance  # noqa: E402
from netns import Skip  # noqa: E402
from scaleout_io import DRAWER, FETCH, cpu_seconds, haproxy_command, haproxy_stat, markdown  # noqa: E402


SUBNET = "10.78.0"
GATEWAYS = {"gw1": 31, "gw2": 32, "gw3": 33}
COLLECTORS = {"col1": 21, "col2": 22}
LB, CLIENT = ("lb", 40), ("client", 50)
PUBLIC, INGEST, METRICS = 50051, 50052, 9464
SIM_RATE = 8_000_000  # bytes/s per simulator
POOL = 128 << 20
# Each reader asks for well over what it holds when the fault lands (it has 1 MiB or more, and
# HTTP/2 lets several MiB more be in flight), so every reader still needs the gateway after a
# kill. A drain serves on for DRAIN_MS, in which a client that reads far ahead can finish.
READ_TOTAL = 32 << 20
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colour codes, should a log ever carry them
DRAIN_MS, GRACE_MS = 3000, 5000


class Scaleout:
    def __init__(self, bin_dir: Path, args):
        self.bin = bin_dir
        self.args = args
        self.check = harness.Checks()
        self.key = "scaleout-" + os.urandom(12).hex()
        self.lab = netns.Lab("edso", SUBNET)
        self.work = self.lab.work
        self.results: dict = {"mode": args.mode, "gateway_cpu": args.gateway_cpu}
        self.outputs: list[Path] = []
        self.stopped: set[str] = set()  # processes stopped on purpose
        self.langs = conformance.select(args.only, argparse.ArgumentParser())
        self.grpcurl = harness.tool("grpcurl")

    # ---- setup ----
    def section(self, title: str) -> None:
        print(f"\n-- {title}", flush=True)

    def setup(self) -> None:
        for name, octet in (*COLLECTORS.items(), *GATEWAYS.items(), LB, CLIENT):
            self.lab.host(name, octet)
        w = self.work
        hosts = ["gateway", self.lab.hosts["lb"], *(self.lab.hosts[g] for g in GATEWAYS)]
        harness.run([self.bin / "entropy-gateway", "dev-certs", "--out", w, *sum((["--host", h] for h in hosts), [])])
        (w / "lb.pem").write_text((w / "gateway.pem").read_text() + (w / "gateway.key").read_text())
        (w / "mac").mkdir(mode=0o700)
        mac = os.urandom(32).hex()
        (w / "mac" / "scale.key").write_text(mac)
        (w / "collector-mac.key").write_text(mac)
        digest = hashlib.sha256(self.key.encode()).hexdigest()
        (w / "api-keys.toml").write_text(f'[[key]]\nname = "scaleout"\nsha256 = "{digest}"\n')
        for g in GATEWAYS:
            self.start_gateway(g)
        for c in COLLECTORS:
            self.start_collector(c)
        env = dict(os.environ, LB_BIND=f"0.0.0.0:{PUBLIC}", LB_CERT=str(w / "lb.pem"),
                   GATEWAY_CA=str(w / "ca.pem"), GATEWAY_TLS_NAME="gateway",
                   STATS_SOCKET=str(w / "haproxy.sock"),
                   **{f"GATEWAY_{i}": f"{self.lab.hosts[g]}:{PUBLIC}" for i, g in enumerate(GATEWAYS, 1)})
        self.lab.spawn("lb", "haproxy", ["haproxy", "-db", "-f", ROOT / "deploy/haproxy/haproxy.cfg"], env=env)
        self.wait(self.all_up, 60, "every gateway UP at the balancer")
        print(f"hosts: {', '.join(f'{n} {a}' for n, a in self.lab.hosts.items())}; work dir {w}", flush=True)

    def start_gateway(self, g: str) -> None:
        addr, w = self.lab.hosts[g], self.work
        self.lab.spawn(g, g, [
            self.bin / "entropy-gateway", "--gateway-id", g, "--api-keys-file", w / "api-keys.toml",
            "--ingest-keys-dir", w / "mac", "--state-dir", w / f"{g}-state", "--listen-addr", f"0.0.0.0:{PUBLIC}",
            "--ingest-listen-addr", f"{addr}:{INGEST}", "--metrics-listen-addr", f"0.0.0.0:{METRICS}",
            "--tls-cert-file", w / "gateway.pem", "--tls-key-file", w / "gateway.key",
            "--pool-capacity-bytes", POOL, "--pool-low-watermark-bytes", 65536,
            "--shutdown-drain-ms", DRAIN_MS, "--shutdown-grace-ms", GRACE_MS,
        ], cgroup=True)

    def start_collector(self, c: str, simulator: bool = True) -> None:
        w = self.work
        pem = w / f"{c}-sim.pem"
        if simulator:
            self.lab.spawn(c, f"{c}-sim", [self.bin / "entropy-simulator", "--listen-addr", "127.0.0.1:8443",
                                           "--tls", "--cert-out", pem, "--rate-bytes-per-s", SIM_RATE])
            self.wait(lambda: pem.exists() and pem.stat().st_size > 0, 20, f"{c}'s simulator started")
        gateways = "".join(f'[[gateway]]\nid = "{g}"\nendpoint = "http://{self.lab.hosts[g]}:{INGEST}"\n'
                           for g in GATEWAYS)
        cfg = w / f"{c}.toml"
        cfg.write_text(
            f'collector_id = "{c}"\nkey_id = "scale"\nmetrics_listen_addr = "127.0.0.1:{METRICS}"\n'
            f'key_file = "{w / "collector-mac.key"}"\nchunk_bytes = 65536\nmixing = "xor"\nmin_sources = 1\n'
            f'{gateways}[[source]]\nname = "quantis-{c}"\ntype = "quantis"\n'
            f'url = "https://127.0.0.1:8443"\nca_file = "{pem}"\n')
        self.lab.spawn(c, c, [self.bin / "entropy-collector", "--config", cfg])

    def wait(self, pred, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while not pred():
            for name, p in self.lab.procs.items():
                if p.poll() is not None and name not in self.stopped:
                    raise RuntimeError(f"{name} exited {p.returncode}:\n{self.lab.log_tail(name)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"not within {seconds:.0f} s: {what}")
            time.sleep(0.2)

    # ---- probes ----
    def lb_states(self) -> dict[str, str]:
        """Each gateway's state at the balancer (UP, DOWN, MAINT, ...), by the runtime API."""
        return {row["svname"]: row["status"].split()[0] for row in self.lb_stat() if row["svname"] in GATEWAYS}

    def all_up(self) -> bool:
        states = self.lb_states()
        return len(states) == len(GATEWAYS) and all(s == "UP" for s in states.values())

    def lb_stat(self) -> list[dict[str, str]]:
        return haproxy_stat(self.lb_command("show stat"))

    def lb_command(self, command: str) -> str:
        return haproxy_command(self.work / "haproxy.sock", command)

    def metric(self, g: str, name: str, labels: str = "") -> float:
        r = self.lab.exec("client", sys.executable, "-c", FETCH, f"http://{self.lab.hosts[g]}:{METRICS}/metrics")
        total = 0.0
        for line in r.stdout.splitlines():
            if line.startswith(name) and (line[len(name)] in " {") and labels in line:
                total += float(line.rsplit(" ", 1)[1])
        return total

    def status(self, g: str) -> dict:
        r = self.grpc(f"{self.lab.hosts[g]}:{PUBLIC}", "entropy.v1.EntropyService/GetStatus", {})
        return json.loads(r.stdout) if r.returncode == 0 else {}

    def grpc(self, target: str, method: str, data: dict) -> subprocess.CompletedProcess:
        return self.lab.exec("client", self.grpcurl, "-cacert", self.work / "ca.pem", "-H",
                             f"authorization: Bearer {self.key}", "-d", json.dumps(data), target, method)

    def ghz_run(self, target: str, *, calls: int, concurrency: int, connections: int,
                num_bytes: int = 32, rps: int = 0) -> dict:
        """`calls` GetRandom calls (a count, not a duration: at a duration's end ghz closes its
        connections under calls still in flight, which then fail on the client's side)."""
        cmd = harness.ghz_getrandom(self.key, self.work / "ca.pem", num_bytes, "-n", calls, "-c", concurrency,
                                    "--connections", connections, "--skipFirst", "0")
        if rps:
            cmd += ["--rps", rps]
        r = self.lab.exec("client", *cmd, target, timeout=300)
        return harness.ghz_summary(r.stdout, r.stderr)

    def served(self) -> dict[str, float]:
        return {g: self.metric(g, "entropy_gateway_served_bytes_total") for g in GATEWAYS}

    # ---- sections ----
    def balance(self) -> None:
        self.section("balance: calls over ONE client connection spread over every gateway")
        before = self.served()
        r = self.ghz_run(f"{self.lab.hosts['lb']}:{PUBLIC}", calls=3000, concurrency=12, connections=1,
                         num_bytes=1024)
        after = self.served()
        share = {g: after[g] - before[g] for g in GATEWAYS}
        total = sum(share.values())
        self.check("every call OK through the balancer", r["count"] > 0 and r["ok"] == r["count"], r["codes"])
        self.check("one connection's calls reach all three gateways, none with under 15% of the bytes",
                   total > 0 and all(v >= 0.15 * total for v in share.values()),
                   ", ".join(f"{g} {v / total:.0%}" for g, v in share.items()) if total else "nothing served")
        self.results["balance"] = {"calls": r["count"], "share": {g: v / total for g, v in share.items()} if total else {}}

    def throughput(self) -> None:
        calls = 3000 if self.args.mode == "quick" else 60000
        self.section(f"throughput: ghz GetRandom 32 B, {calls} calls a point, gateways capped at "
                     f"{self.args.gateway_cpu} core each (a cgroup, where the machine has one)")
        lb = f"{self.lab.hosts['lb']}:{PUBLIC}"
        capped = all([self.lab.set_cpu(g, self.args.gateway_cpu) for g in GATEWAYS])
        points = []
        for n in (1, 2, 3):
            for i, g in enumerate(GATEWAYS):
                self.lb_command(f"{'enable' if i < n else 'disable'} server gateways/{g}")
            time.sleep(1)
            cpu0 = cpu_seconds(self.lab.procs["haproxy"].pid), {g: cpu_seconds(self.lab.procs[g].pid) for g in GATEWAYS}
            started = time.monotonic()
            r = self.ghz_run(lb, calls=calls, concurrency=50, connections=10)
            elapsed = time.monotonic() - started
            lb_cpu = (cpu_seconds(self.lab.procs["haproxy"].pid) - cpu0[0]) / elapsed
            gw_cpu = sum(cpu_seconds(self.lab.procs[g].pid) - cpu0[1][g] for g in GATEWAYS) / elapsed
            points.append({"gateways": n, "rps": r["rps"], "p99_ms": r["p99_ms"], "lb_cores": lb_cpu,
                           "gateway_cores": gw_cpu, "ok": r["ok"], "count": r["count"]})
            print(f"  {n} gateway(s) via the balancer: {r['rps']:,.0f} req/s, p99 {r['p99_ms']:.2f} ms, "
                  f"HAProxy {lb_cpu:.2f} cores, gateways {gw_cpu:.2f} cores", flush=True)
            self.check(f"{n} gateway(s): every call OK", r["count"] > 0 and r["ok"] == r["count"], r["codes"])
        for g in GATEWAYS:
            self.lb_command(f"enable server gateways/{g}")
        r = self.ghz_run(f"{self.lab.hosts['gw1']}:{PUBLIC}", calls=calls, concurrency=50, connections=10)
        print(f"  1 gateway direct (no balancer): {r['rps']:,.0f} req/s, p99 {r['p99_ms']:.2f} ms", flush=True)
        self.check("direct to one gateway: every call OK", r["count"] > 0 and r["ok"] == r["count"], r["codes"])
        for g in GATEWAYS:
            self.lab.set_cpu(g, None)
        self.results["throughput"] = {"calls": calls, "points": points, "direct_one_gateway_rps": r["rps"],
                                      "direct_p99_ms": r["p99_ms"], "capped": capped}
        self.wait(self.all_up, 20, "every gateway back UP")

    def collector_lost(self) -> None:
        self.section("collector lost: col1 killed; col2 keeps every gateway fed")
        self.stopped.add("col1")
        self.lab.stop("col1", signal.SIGKILL)
        # Full pools take no chunks: draw meanwhile, so every gateway has room for new ones.
        load: dict = {}
        ghz = threading.Thread(target=lambda: load.update(self.ghz_run(
            f"{self.lab.hosts['lb']}:{PUBLIC}", calls=3200, concurrency=8, connections=2,
            num_bytes=16384, rps=400)))
        ghz.start()
        time.sleep(1)
        before = {g: self.metric(g, "entropy_gateway_chunks_accepted_total", 'collector="col2"') for g in GATEWAYS}
        col1 = {g: self.metric(g, "entropy_gateway_chunks_accepted_total", 'collector="col1"') for g in GATEWAYS}
        time.sleep(3)
        after = {g: self.metric(g, "entropy_gateway_chunks_accepted_total", 'collector="col2"') for g in GATEWAYS}
        col1_after = {g: self.metric(g, "entropy_gateway_chunks_accepted_total", 'collector="col1"') for g in GATEWAYS}
        ages = {}
        for g in GATEWAYS:  # while the load still makes room for chunks
            st = self.status(g)
            ages[g] = {s.get("collectorId"): int(s.get("lastReportAgeMs", 0)) for s in st.get("sources", [])}
        ghz.join(timeout=60)
        self.check("calls go on while a collector is lost",
                   load.get("count", 0) > 0 and load.get("ok") == load.get("count"), load.get("codes"))
        self.check("every gateway keeps receiving chunks from col2",
                   all(after[g] > before[g] for g in GATEWAYS), f"col2 chunks {before} -> {after}")
        self.check("no chunk from col1 after it died", col1 == col1_after, f"{col1} -> {col1_after}")
        self.check("GetStatus on every gateway: col1's source silent for seconds, col2's fresh",
                   all(a.get("col1", 0) >= 3000 and a.get("col2", 10**9) < 2000 for a in ages.values()), ages)
        self.check("every gateway still ready (pool above its watermark)", self.all_up(), self.lb_states())
        self.results["collector_lost"] = {"col2_chunks_in_3s": {g: after[g] - before[g] for g in GATEWAYS},
                                          "source_age_ms": ages}
        self.stopped.discard("col1")
        self.start_collector("col1", simulator=False)

    def readers(self, tag: str, on: str) -> dict[str, tuple[subprocess.Popen, Path]]:
        """Every language's reader through the balancer, all streams on gateway `on` (the others
        are out of rotation while they open, and back once every reader is under way); they start
        one after another in conformance.START_ORDER (start_staggered says why), and must all be
        open on `on` before the others return."""
        for g in GATEWAYS:
            if g != on:
                self.lab_command_ok(f"disable server gateways/{g}")
        env = dict(os.environ, ENTROPY_API_KEY=self.key, ENTROPY_CA_FILE=str(self.work / "ca.pem"))
        started = readers.start(self.langs, tag, f"{self.lab.hosts['lb']}:{PUBLIC}", READ_TOTAL, self.work, env,
                                self.outputs, prefix=netns.nsexec(self.lab.ns("client")))
        self.await_bytes(tag, started, 1 << 20)
        # Placement before the others go back into rotation: a stream elsewhere, or already
        # ended on `on` (its client buffering the rest), would leave the fault short of a reader.
        streams = self.streams_by_gateway()
        if streams.get(on, 0) < len(started) or any(n for g, n in streams.items() if g != on):
            raise RuntimeError(f"{tag}: {len(started)} readers started on {on}, but open streams are {streams}")
        for g in GATEWAYS:
            self.lab_command_ok(f"enable server gateways/{g}")
        self.wait(self.all_up, 10, "every gateway back in rotation")
        return started

    def await_bytes(self, tag: str, readers: dict[str, tuple[subprocess.Popen, Path]], least: int) -> None:
        """Waits (60 s at most) until every reader in `readers` has written `least` bytes."""
        deadline = time.monotonic() + 60
        while any(out.stat().st_size < least for _, out in readers.values()):
            if time.monotonic() > deadline:
                slow = {n: (out.stat().st_size, (self.work / f"{tag}.{n}.err").read_text(errors="replace")[-300:])
                        for n, (_, out) in readers.items() if out.stat().st_size < least}
                raise RuntimeError(f"readers did not reach {least} bytes within 60 s: {slow}; "
                                   f"balancer {self.lb_states()}")
            time.sleep(0.05)

    def lab_command_ok(self, command: str) -> None:
        """A HAProxy runtime command that must succeed (it answers with an empty line)."""
        answer = self.lb_command(command).strip()
        if answer:
            raise RuntimeError(f"HAProxy refused {command!r}: {answer}")

    def check_carries(self, tag: str, victim: str, started) -> float:
        """Checks, just before the fault, that `victim` carries every reader's stream and that
        none has finished; returns the victim's open streams."""
        by_gateway = self.streams_by_gateway()
        streams = by_gateway[victim]
        sizes = {n: round(out.stat().st_size / (1 << 20), 1) for n, (_, out) in started.items()}
        print(f"  open streams {by_gateway}; readers have {sizes} MiB", flush=True)
        self.check(f"{tag}: {victim} carries every reader's stream, none finished",
                   streams >= len(started) and all(s < READ_TOTAL >> 20 for s in sizes.values()),
                   f"{streams:.0f} streams for {len(started)} readers (open streams {by_gateway}), {sizes} MiB")
        return streams

    def streams_by_gateway(self) -> dict[str, int]:
        """Each running gateway's open StreamRandom calls (its streams_active gauge)."""
        return {g: int(self.metric(g, "entropy_gateway_streams_active")) for g in GATEWAYS if g not in self.stopped}

    def drawer(self, tag: str, seconds: float) -> subprocess.Popen:
        out = self.work / f"{tag}.drawer.bin"
        self.outputs.append(out)
        return subprocess.Popen(netns.nsexec(self.lab.ns("client"), readers.PYTHON, "-c", DRAWER,
                                             f"{self.lab.hosts['lb']}:{PUBLIC}", self.key,
                                             self.work / "ca.pem", out, seconds),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    @staticmethod
    def drawn(drawer: subprocess.Popen) -> tuple[int, int, str]:
        """The drawer's (calls OK, calls failed, failures by code)."""
        out = drawer.communicate(timeout=60)[0]
        try:
            ok, failed, codes = out.strip().splitlines()[-1].split(maxsplit=2)
            return int(ok), int(failed), codes
        except (ValueError, IndexError):
            return 0, -1, f"no report: {out[-400:]}"

    def judge_readers(self, tag: str, started, resumed: bool) -> dict[str, int]:
        """Checks every reader ended OK with exactly the total, having reconnected if `resumed`;
        returns each reader's reconnects."""
        reconnects = {}
        for name, report in readers.reports(tag, started, self.work, timeout=120).items():
            reconnects[name] = int(report.get("reconnects", 0))
            self.check(f"{tag}: {name} reader OK with exactly {READ_TOTAL >> 20} MiB "
                       f"({reconnects[name]} reconnects)",
                       report.get("code") == "OK" and report.get("bytes") == READ_TOTAL
                       and report["wrote"] == READ_TOTAL and (not resumed or reconnects[name] >= 1), report)
        return reconnects

    def streams_cut(self, g: str) -> int | None:
        """How many streams gateway `g` ended at its shutdown with bytes still to send (the
        streams_cut field of its last log line, "entropy gateway stopped")."""
        text = (self.work / f"{g}.log").read_text(errors="replace")
        found = re.findall(r"entropy gateway stopped.*?streams_cut\S*?=\S*?(\d+)", ANSI.sub("", text))
        return int(found[-1]) if found else None

    def kill(self) -> None:
        victim = "gw1"
        self.section(f"kill: {victim}, carrying every reader's stream, killed (-9) mid-stream")
        started = self.readers("kill", on=victim)
        drawer = self.drawer("kill", 8)
        streams = self.check_carries("kill", victim, started)
        self.stopped.add(victim)
        self.lab.stop(victim, signal.SIGKILL)
        print(f"  killed {victim}", flush=True)
        reconnects = sum(self.judge_readers("kill", started, resumed=True).values())
        ok, failed, codes = self.drawn(drawer)
        print(f"  drawer: {ok} GetRandom(4096) OK, {failed} failed {codes}", flush=True)
        self.check("unary calls go on through the balancer (drawer mostly OK)", ok > 10 * max(1, failed),
                   f"{ok} ok, {failed} failed")
        self.results["kill"] = {"victim": victim, "streams": streams, "reconnects": reconnects,
                                "drawer_ok": ok, "drawer_failed": failed}
        self.stopped.discard(victim)
        self.start_gateway(victim)
        self.wait(lambda: self.lb_states().get(victim) == "UP", 30, f"{victim} back UP")

    def drain(self) -> None:
        victim = "gw2"
        self.section(f"drain: SIGTERM to {victim}, carrying every reader's stream, under load "
                     f"(shutdown_drain_ms {DRAIN_MS})")
        started = self.readers("drain", on=victim)
        drawer = self.drawer("drain", 12)
        load: dict = {}
        ghz = threading.Thread(target=lambda: load.update(self.ghz_run(
            f"{self.lab.hosts['lb']}:{PUBLIC}", calls=4800, concurrency=10, connections=2, rps=400)))
        ghz.start()
        time.sleep(2)
        self.check_carries("drain", victim, started)
        self.check(f"{victim} is in rotation when it gets SIGTERM", self.lb_states().get(victim) == "UP",
                   self.lb_states())
        self.stopped.add(victim)
        signalled = time.monotonic()
        self.lab.procs[victim].send_signal(signal.SIGTERM)
        down_at = None
        while self.lab.procs[victim].poll() is None and time.monotonic() - signalled < 30:
            if down_at is None and self.lb_states().get(victim) != "UP":
                down_at = time.monotonic() - signalled
            time.sleep(0.1)
        exited_at = time.monotonic() - signalled
        print(f"  {victim}: out of rotation after {down_at if down_at is None else round(down_at, 1)} s, "
              f"exited after {exited_at:.1f} s (code {self.lab.procs[victim].returncode})", flush=True)
        self.check(f"the balancer took {victim} out before it stopped serving",
                   down_at is not None and down_at < DRAIN_MS / 1000, f"down at {down_at}, drain {DRAIN_MS} ms")
        self.check(f"{victim} exited cleanly after the drain", self.lab.procs[victim].returncode == 0,
                   self.lab.log_tail(victim, 5))
        ghz.join(timeout=60)
        self.check("ghz through the drain: every unary call OK",
                   load.get("count", 0) > 0 and load.get("ok") == load.get("count"), load.get("codes"))
        # The drain serves open streams to its end, so a stream whose client reads far ahead
        # (grpcio takes tens of MiB) can get all of its bytes from the victim and finish there.
        # The victim says how many it cut; each of those readers must have resumed elsewhere.
        reconnects = self.judge_readers("drain", started, resumed=False)
        cut = self.streams_cut(victim)
        resumed = sorted(n for n, r in reconnects.items() if r >= 1)
        finished = sorted(n for n, r in reconnects.items() if r == 0)
        print(f"  {victim} cut {cut} streams at the drain's end; resumed elsewhere: {resumed}; "
              f"finished on {victim} during the drain: {finished}", flush=True)
        self.check(f"drain: {victim} cut the streams still sending at the drain's end (at least one)",
                   cut is not None and cut >= 1, f"streams_cut {cut}; log: {self.lab.log_tail(victim, 3)}")
        self.check("drain: every reader whose stream was cut resumed on another gateway",
                   cut is not None and len(resumed) >= cut, f"{cut} cut, reconnects {reconnects}")
        ok, failed, codes = self.drawn(drawer)
        self.check("drawer through the drain: no call failed", ok > 0 and failed == 0,
                   f"{ok} ok, {failed} failed {codes}")
        self.results["drain"] = {"victim": victim, "out_of_rotation_s": down_at, "exited_s": exited_at,
                                 "ghz_calls": load.get("count"), "ghz_ok": load.get("ok"),
                                 "drawer_ok": ok, "drawer_failed": failed, "streams_cut": cut,
                                 "readers_resumed": resumed, "readers_finished_in_drain": finished}

    def scan(self) -> None:
        self.section("scan: every byte received, from every gateway, for runs served twice")
        files = [f for f in self.outputs if f.exists() and f.stat().st_size > 0]
        r = subprocess.run([str(self.bin / "repeat-scan"), *map(str, files)], capture_output=True, text=True)
        size = sum(f.stat().st_size for f in files)
        self.check(f"no run of 16+ bytes twice in {size / (1 << 20):.0f} MiB from {len(files)} files",
                   r.returncode == 0, r.stdout[-500:] + r.stderr[-500:])
        self.results["scanned_bytes"] = size

    def run(self) -> None:
        self.setup()
        self.balance()
        self.throughput()
        self.collector_lost()
        self.kill()
        self.drain()
        self.scan()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bin_dir", type=Path)
    parser.add_argument("--mode", choices=("quick", "full"), default="quick")
    parser.add_argument("--report", type=Path, help="write the numbers as JSON here")
    parser.add_argument("--markdown", type=Path, help="write the numbers as Markdown here")
    parser.add_argument("--only", help="reader languages, comma-separated (default: all)")
    parser.add_argument("--no-build", action="store_true", help="the reader programs are built already")
    parser.add_argument("--gateway-cpu", type=float, default=0.1,
                        help="cores per gateway in the throughput section (a cgroup cap)")
    args = parser.parse_args()
    try:
        netns.require_root_and_tools(("haproxy", "haproxy"))
    except Skip as e:
        print(f"SKIP: {e}")
        return 0
    netns.require_binaries(args.bin_dir, "entropy-gateway", "entropy-collector", "entropy-simulator", "repeat-scan")
    if not args.no_build:
        conformance.build(conformance.select(args.only, parser))
    netns.interrupt_on_signals()
    try:
        so = Scaleout(args.bin_dir.resolve(), args)
    except Skip as e:
        print(f"SKIP: {e}")
        return 0
    try:
        so.run()
    except Exception as e:  # noqa: BLE001 - reported as a failed check, then cleaned up
        so.check("the run completed", False, f"{type(e).__name__}: {e}")
    finally:
        left = so.lab.cleanup()
        so.check("namespaces and processes removed", not left, left)
    if args.report:
        args.report.write_text(json.dumps(so.results, indent=2) + "\n")
    if args.markdown:
        args.markdown.write_text(markdown(so.results, " ".join(["scripts/lab/scaleout.py", *sys.argv[1:]])))
    return so.check.summary("scaleout")


if __name__ == "__main__":
    sys.exit(main())
