"""Processes a benchmark needs: gateways, the echo server, the latency proxy, simulators and
collectors, pinned to their cores, plus a /proc sampler for resource use.

Every process is started by this module and stopped by it (by pid, never by name).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The helpers shared with scripts/ (free ports and the like) live in scripts/lib/harness.py.
sys.path.insert(0, str(ROOT / "scripts/lib"))
from harness import free_port  # noqa: E402  (re-exported: bench.py calls stack.free_port)
BIN = ROOT / "target" / "release"
# The servers measured (gateway, echo-server, rest-baseline): bench/run.sh quick and full build
# them with the shipped profile `dist` (LTO) and point this at target/dist; smoke keeps BIN.
SERVER_BIN: Path | None = (Path(os.environ["ENTROPY_BENCH_SERVER_BIN"])
                           if os.environ.get("ENTROPY_BENCH_SERVER_BIN") else None)


def server_bin() -> Path:
    """Where the servers measured come from."""
    return SERVER_BIN or BIN
API_KEY = "bench-" + secrets.token_hex(8)
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


class BenchError(RuntimeError):
    """A scenario could not run or produced no data."""


def cpus() -> tuple[list[str], list[str]]:
    """taskset prefixes for the server and for load generators (empty on one core)."""
    if (os.cpu_count() or 1) >= 2 and shutil.which("taskset"):
        return ["taskset", "-c", "0"], ["taskset", "-c", "1"]
    return [], []


SERVER_CPU, LOAD_CPU = cpus()


def run_json(cmd: list[str], timeout: float, env: dict | None = None) -> dict:
    """Runs a tool that prints one JSON object; raises with its stderr on failure."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise BenchError(f"{' '.join(cmd[:4])}... exited {p.returncode}: {p.stderr.strip()[-800:]}")
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if not lines:
        raise BenchError(f"{cmd[0]} printed no JSON: {p.stdout[-400:]} {p.stderr[-400:]}")
    return json.loads(lines[-1])


def _metrics_flag(binary: Path) -> list[str]:
    """Disables the Prometheus listener where the binary has one (so runs never collide)."""
    try:
        help_text = subprocess.run([str(binary), "--help"], capture_output=True, text=True,
                                   timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return ["--metrics-listen-addr", ""] if "--metrics-listen-addr" in help_text else []


def _state_flag(binary: Path, state: Path) -> list[str]:
    """The ingest lease's directory, where the binary keeps one (builds before it had none,
    and `ab_gateway.py` may run such a build)."""
    try:
        help_text = subprocess.run([str(binary), "--help"], capture_output=True, text=True,
                                   timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return ["--state-dir", str(state)] if "--state-dir" in help_text else []


@dataclass
class Proc:
    """A started process and where its output goes."""
    name: str
    popen: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def stop(self, grace: float = 10.0) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()

    def alive(self) -> bool:
        return self.popen.poll() is None


def _start(name: str, cmd: list[str], log: Path, env: dict | None = None,
           stdout_pipe: bool = False) -> Proc:
    out = open(log, "w")
    popen = subprocess.Popen(cmd, stdout=subprocess.PIPE if stdout_pipe else out, stderr=out,
                             env=env, text=True)
    return Proc(name, popen, log)


def _wait_for(pattern: str, log: Path, proc: Proc, timeout: float = 20.0) -> re.Match:
    deadline = time.time() + timeout
    while time.time() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        m = re.search(pattern, text)
        if m:
            return m
        if not proc.alive():
            raise BenchError(f"{proc.name} exited: {text[-800:]}")
        time.sleep(0.05)
    raise BenchError(f"{proc.name} did not start within {timeout}s: {pattern}")


@dataclass
class Gateway:
    """An entropy-gateway: dev mode (own OS-RNG feed) or with bench keys (fed by ingest-load)."""
    proc: Proc
    public: str
    ingest: str
    capacity: int
    mac_key_file: Path | None
    mode: str

    def status(self) -> dict:
        return run_json([str(BIN / "grpc-load"), "--addr", self.public, "--key", API_KEY, "status"],
                        timeout=20)

    def log_lines(self) -> int:
        return sum(1 for _ in open(self.proc.log, errors="replace"))


def start_gateway(work: Path, name: str, capacity: int, dev: bool = False,
                  extra: list[str] | None = None, wrapper: list[str] | None = None,
                  start_timeout: float = 20.0, keys: dict[str, str] | None = None,
                  drbg: bool = False) -> Gateway:
    """Starts a gateway on ephemeral loopback ports, pinned to the server core (optionally
    under `wrapper`, e.g. valgrind). `keys` (name -> secret) adds client keys beside the bench
    key; with `drbg` the bench key may ask for DRBG output too (a gateway that knows the
    `entropy:drbg` scope)."""
    work.mkdir(parents=True, exist_ok=True)
    exe = server_bin() / "entropy-gateway"
    cmd = SERVER_CPU + (wrapper or []) + [str(exe)]
    env = dict(os.environ)
    mac_file = None
    if dev:
        env["ENTROPY_DEV_API_KEY"] = API_KEY
        cmd += ["--dev"]
    else:
        macdir = work / "mac"
        macdir.mkdir(exist_ok=True)
        mac_file = macdir / "bench.key"
        if not mac_file.exists():
            mac_file.write_text(secrets.token_hex(32) + "\n")
        entries = {"bench": API_KEY, **(keys or {})}
        keys_file = work / "keys.toml"
        scopes = 'scopes = ["entropy:read", "status:read", "entropy:drbg"]\n' if drbg else ""
        keys_file.write_text("".join(
            f'[[key]]\nname = "{n}"\nsha256 = "{hashlib.sha256(secret.encode()).hexdigest()}"\n'
            + (scopes if n == "bench" else "")
            for n, secret in entries.items()))
        # A new ingest lease (the first start on a state_dir) accepts chunks from the start plus
        # max_future_skew_ms on: keep that short. Each gateway name keeps its own lease.
        cmd += ["--api-keys-file", str(keys_file), "--ingest-keys-dir", str(macdir),
                "--gateway-id", "bench", "--max-future-skew-ms", "200"]
        cmd += _state_flag(exe, work / f"{name}-state")
    # info for our own crate only: the start-up line gives the addresses; per-request events
    # are debug (a target of the issue), which the log size per request checks.
    cmd += ["--listen-addr", "127.0.0.1:0", "--ingest-listen-addr", "127.0.0.1:0",
            "--pool-capacity-bytes", str(capacity), "--log-filter", "warn,entropy_gateway=info"]
    cmd += _metrics_flag(exe) + (extra or [])
    log = work / f"{name}.log"
    proc = _start(name, cmd, log, env)
    m = _wait_for(r"public_addr=([0-9.:]+)\S* ingest_addr=([0-9.:]+)", log, proc, start_timeout)
    if not dev:
        time.sleep(0.3)  # past the start rule (200 ms), so chunks signed now are accepted
    return Gateway(proc, m.group(1), m.group(2), capacity, mac_file, "dev" if dev else "keys")


@dataclass
class Echo:
    proc: Proc
    public: str
    ingest: str


def start_echo(work: Path) -> Echo:
    log = work / "echo-server.log"
    proc = _start("echo-server", SERVER_CPU + [str(server_bin() / "echo-server")], log, stdout_pipe=True)
    assert proc.popen.stdout is not None
    public = proc.popen.stdout.readline().split()[-1]
    ingest = proc.popen.stdout.readline().split()[-1]
    return Echo(proc, public, ingest)


@dataclass
class Rest:
    """The original REST gateway's hot path (`rest-baseline`): HTTP/1.1, one log line per call."""
    proc: Proc
    addr: str
    requests_log: Path

    def url(self, num_bytes: int) -> str:
        """GetRandom's REST twin: the bytes raw, so the body is what a gRPC response carries."""
        return f"http://{self.addr}/api/random?bytes={num_bytes}&encoding=binary"

    def clear_log(self) -> None:
        """Empties the request log (the server appends, so it carries on at the new end): a
        point's lines can then be counted, and a 10 s point at ~80k req/s stays ~250 MB."""
        self.requests_log.write_bytes(b"")

    def log_lines(self) -> int:
        lines = 0
        with open(self.requests_log, "rb") as f:
            while block := f.read(1 << 20):
                lines += block.count(b"\n")
        return lines


# The original refuses larger requests (its MAX_REQUEST_SIZE); so does rest-baseline.
REST_MAX_BYTES = 64 << 10


def start_rest(work: Path, prefill_bytes: int = 64 << 20) -> Rest:
    log = work / "rest-baseline.log"
    requests_log = work / "rest-baseline-requests.log"
    proc = _start("rest-baseline", SERVER_CPU + [
        str(server_bin() / "rest-baseline"), "--key", API_KEY, "--log-file", str(requests_log),
        "--prefill-bytes", str(prefill_bytes)], log, stdout_pipe=True)
    assert proc.popen.stdout is not None
    line = proc.popen.stdout.readline().split()
    if not line:
        proc.stop()
        raise BenchError(f"rest-baseline did not start: {log.read_text()[-400:]}")
    return Rest(proc, line[-1], requests_log)


def start_proxy(work: Path, target: str, one_way_us: int) -> tuple[Proc, str]:
    """The latency proxy, on the load core (it is part of the simulated network)."""
    log = work / f"proxy-{one_way_us}.log"
    proc = _start("latency-proxy", LOAD_CPU + [str(BIN / "latency-proxy"), "--target", target,
                                             "--delay-us", str(one_way_us)], log, stdout_pipe=True)
    assert proc.popen.stdout is not None
    return proc, proc.popen.stdout.readline().split()[-1]


def ingest_load(gw: Gateway, chunk_bytes: int, total_bytes: int | None = None,
                count: int | None = None, addr: str | None = None, concurrency: int = 16,
                connections: int = 4) -> dict:
    assert gw.mac_key_file is not None or addr
    cmd = LOAD_CPU + [str(BIN / "ingest-load"), "--addr", addr or gw.ingest,
                      "--key-file", str(gw.mac_key_file), "--chunk-bytes", str(chunk_bytes),
                      "--concurrency", str(concurrency), "--connections", str(connections)]
    cmd += ["--count", str(count)] if count else ["--total-bytes", str(total_bytes)]
    return run_json(cmd, timeout=600)


def top_up(gw: Gateway, target_bytes: int) -> int:
    """Fills the pool to `target_bytes` (1 MiB chunks) if below; returns the level after."""
    level = gw.status()["pool_bytes"]
    deficit = target_bytes - level
    if deficit >= (1 << 20):
        r = ingest_load(gw, 1 << 20, total_bytes=deficit)
        if r["failed"]:
            raise BenchError(f"pre-fill failed: {r['first_error']}")
        level = gw.status()["pool_bytes"]
    return level


# ---------------------------------------------------------------------------------------------
# Resource sampling from /proc (seed 004 section 4: RSS, CPU, threads, FDs)


def proc_sample(pid: int) -> dict | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)
        threads = int(fields[17])
        rss = int(fields[21]) * PAGE
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return {"t": time.monotonic(), "ticks": ticks, "threads": threads, "rss": rss, "fds": fds}
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class Sampler:
    """Samples one process every `interval` seconds in a thread, between start() and stop()."""
    pid: int
    interval: float = 0.1
    samples: list = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> "Sampler":
        first = proc_sample(self.pid)
        if first:
            self.samples.append(first)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            s = proc_sample(self.pid)
            if s:
                self.samples.append(s)

    def stop(self) -> dict:
        self._stop.set()
        if self._thread:
            self._thread.join()
        last = proc_sample(self.pid)
        if last:
            self.samples.append(last)
        if len(self.samples) < 2:
            return {}
        a, b = self.samples[0], self.samples[-1]
        wall = max(b["t"] - a["t"], 1e-9)
        return {
            "rss_start_mib": a["rss"] / 2**20,
            "rss_max_mib": max(s["rss"] for s in self.samples) / 2**20,
            "rss_end_mib": b["rss"] / 2**20,
            "cpu_cores": (b["ticks"] - a["ticks"]) / CLK_TCK / wall,
            "cpu_secs": (b["ticks"] - a["ticks"]) / CLK_TCK,
            "threads_max": max(s["threads"] for s in self.samples),
            "fds_max": max(s["fds"] for s in self.samples),
        }


def machine_info() -> dict:
    def sh(cmd: str) -> str:
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                                  timeout=20).stdout.strip()
        except subprocess.TimeoutExpired:
            return ""
    lscpu = sh("lscpu")
    model = re.search(r"Model name:\s*(.*)", lscpu)
    mem = re.search(r"MemTotal:\s*(\d+)", Path("/proc/meminfo").read_text())
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cpu_model": model.group(1).strip() if model else "",
        "cpus": os.cpu_count(),
        "mem_gib": round(int(mem.group(1)) / 2**20, 1) if mem else None,
        "kernel": sh("uname -sr"),
        "os": sh(". /etc/os-release && echo $PRETTY_NAME"),
        "rustc": sh("rustc -V"),
        "commit": sh(f"git -C {ROOT} rev-parse --short HEAD"),
        "dirty": bool(sh(f"git -C {ROOT} status --porcelain -- server collector proto")),
        "loadavg_start": Path("/proc/loadavg").read_text().split()[:3],
        "server_build": f"profile {server_bin().name}",
        "pinning": "server on CPU 0, load generators on CPU 1 (taskset)" if SERVER_CPU
                   else "none (one CPU)",
        "ghz": "ghz " + sh("go version -m \"$(command -v ghz)\" | awk '$1 == \"mod\" {print $3}'"),
        "h2load": sh("h2load --version | head -1"),
        "lscpu": lscpu,
    }
