"""The system scripts/chaos/chaos.py breaks: one simulator -> one collector -> one gateway on loopback,
with toxiproxy on the collector -> gateway (ingest) and client -> gateway (public) links.

Every program runs as it would in production: the gateway with TLS on both listeners and mTLS on
ingest (the secrets of deploy/gen-secrets.sh), the collector with the `demo` MAC key, the
simulator over plain HTTP on loopback. Each can be stopped (SIGSTOP), continued, killed, terminated and started
again; its log is appended to across restarts, so a run's logs hold every life of it. The
gateway logs every stored chunk (debug, JSON), which is how chaos.py proves none was stored
twice.

Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

from harness import ROOT, free_port, gen_secrets, http_get, wait_for

TOXIPROXY_VERSION = "v2.12.0"
POOL_BYTES = 16 << 20
SIM_RATE = 32_000_000  # bytes/s: above what the readers and the drawer draw (~14 MB/s), so a fault is what starves them


def toxiproxy_server() -> Path:
    """toxiproxy's server, installed with `go install` into target/tools/ when missing."""
    gobin = ROOT / "target/tools/toxiproxy" / TOXIPROXY_VERSION
    binary = gobin / "server"
    if not binary.exists():
        gobin.mkdir(parents=True, exist_ok=True)
        subprocess.run(["go", "install", f"github.com/Shopify/toxiproxy/v2/cmd/server@{TOXIPROXY_VERSION}"],
                       env=dict(os.environ, GOBIN=str(gobin)), check=True, timeout=900)
    return binary


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


class Toxiproxy:
    """toxiproxy's HTTP API: proxies and the toxics on them."""

    def __init__(self, port: int):
        self.base = f"http://127.0.0.1:{port}"

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as r:
            raw = r.read()
        return json.loads(raw) if raw else {}

    def up(self) -> bool:
        try:
            self._call("GET", "/version")
            return True
        except (OSError, urllib.error.URLError):
            return False

    def proxy(self, name: str, listen: int, upstream: int) -> None:
        self._call("POST", "/proxies", {"name": name, "listen": f"127.0.0.1:{listen}",
                                        "upstream": f"127.0.0.1:{upstream}", "enabled": True})

    def toxic(self, proxy: str, name: str, kind: str, stream: str = "downstream", **attributes) -> None:
        """Adds a toxic; toxiproxy applies it to the proxy's open connections as well as new ones."""
        self._call("POST", f"/proxies/{proxy}/toxics",
                   {"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes})

    def heal(self, proxy: str) -> None:
        """Removes every toxic of `proxy` and enables it again."""
        for t in self._call("GET", f"/proxies/{proxy}/toxics"):
            self._call("DELETE", f"/proxies/{proxy}/toxics/{t['name']}")
        self._call("POST", f"/proxies/{proxy}", {"enabled": True})

    def disable(self, proxy: str) -> None:
        """Closes every connection of `proxy` and refuses new ones until heal()."""
        self._call("POST", f"/proxies/{proxy}", {"enabled": False})


class Program:
    """One long-running program: started (again) with the same argv, its log appended to."""

    def __init__(self, name: str, argv: list[str], log: Path, wrapper: list[str] | None = None):
        self.name, self.argv, self.log = name, argv, log
        self.wrapper: list[str] = wrapper or []
        self.proc: subprocess.Popen | None = None
        self.lives = 0

    def start(self, wrapper: list[str] | None = None) -> None:
        """Starts it; `wrapper` (faketime, say) goes before the argv for this life only."""
        with open(self.log, "a") as log:
            log.write(f"--- chaos: {self.name} life {self.lives + 1} {' '.join(wrapper or [])}\n")
            log.flush()
            self.proc = subprocess.Popen([*(wrapper or []), *self.argv], stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        self.lives += 1

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()

    def terminate(self, timeout: float = 30) -> float:
        """SIGTERM; returns the seconds it took to exit (SIGKILL after `timeout`)."""
        start = time.monotonic()
        self.signal(signal.SIGTERM)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return time.monotonic() - start

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def resources(self) -> dict[str, int]:
        """RSS (KiB), open file descriptors and threads, from /proc; {} when not running."""
        pid = self.pid
        if pid is None:
            return {}
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            return {"rss_kib": int(fields["VmRSS"].split()[0]), "threads": int(fields["Threads"]),
                    "fds": len(os.listdir(f"/proc/{pid}/fd"))}
        except (OSError, KeyError, ValueError):
            return {}


class System:
    """simulator -> collector -> [toxiproxy ingest] -> gateway <- [toxiproxy public] <- clients."""

    def __init__(self, bin_dir: Path, work: Path, sim_rate: int = SIM_RATE, pool_bytes: int = POOL_BYTES,
                 chunk_bytes: int = 65536):
        self.bin, self.work = bin_dir, work
        self.chunk_bytes = chunk_bytes
        self.sim_rate, self.pool_bytes = sim_rate, pool_bytes
        self.ports = {k: free_port() for k in ("sim", "public", "ingest", "gw_metrics", "col_metrics",
                                                "toxiproxy", "public_proxy", "ingest_proxy")}
        self.secrets = work / "secrets"
        r = gen_secrets(bin_dir, self.secrets)
        if r.returncode != 0:
            raise RuntimeError(f"deploy/gen-secrets.sh: {r.stderr}")
        self.key = (self.secrets / "client-api-key").read_text().strip()
        # A second client key that may ask for DRBG output (entropy:drbg), for the DRBG reader.
        self.drbg_key = f"chaos-drbg-{secrets.token_hex(16)}"
        with open(self.secrets / "api-keys.toml", "a") as keys:
            keys.write(f'\n[[key]]\nname = "chaos-drbg"\n'
                       f'sha256 = "{hashlib.sha256(self.drbg_key.encode()).hexdigest()}"\n'
                       'scopes = ["entropy:read", "status:read", "entropy:drbg"]\n')
        self.ca = self.secrets / "ca.pem"
        (work / "mac-keys").mkdir()
        shutil.copy(self.secrets / "mac.key", work / "mac-keys" / "demo.key")
        self.toxiproxy = Toxiproxy(self.ports["toxiproxy"])
        self.programs: dict[str, Program] = {}
        self._define()

    # --- the programs ---------------------------------------------------------------------------

    def _define(self) -> None:
        p, s, w = self.ports, self.secrets, self.work
        self.programs["toxiproxy"] = Program("toxiproxy", [str(toxiproxy_server()), "-host", "127.0.0.1",
                                                           "-port", str(p["toxiproxy"])], w / "toxiproxy.log")
        # Plain HTTP on loopback (allow_http below), as compose runs it: every restart of the
        # simulator with --tls would make a new self-signed certificate the collector does not trust.
        self.simulator_argv = [str(self.bin / "entropy-simulator"), "--listen-addr", f"127.0.0.1:{p['sim']}",
                               "--rate-bytes-per-s", str(self.sim_rate)]
        self.programs["simulator"] = Program("simulator", self.simulator_argv, w / "simulator.log")
        self.programs["gateway"] = Program("gateway", [
            str(self.bin / "entropy-gateway"), "--gateway-id", "gateway",
            "--api-keys-file", str(s / "api-keys.toml"), "--ingest-keys-dir", str(w / "mac-keys"),
            # Kept across the gateway's lives, as a volume would be: its ingest lease.
            "--state-dir", str(w / "gateway-state"),
            "--listen-addr", f"127.0.0.1:{p['public']}", "--ingest-listen-addr", f"127.0.0.1:{p['ingest']}",
            "--metrics-listen-addr", f"127.0.0.1:{p['gw_metrics']}",
            "--tls-cert-file", str(s / "gateway.pem"), "--tls-key-file", str(s / "gateway.key"),
            "--ingest-tls-cert-file", str(s / "gateway.pem"), "--ingest-tls-key-file", str(s / "gateway.key"),
            "--ingest-client-ca-file", str(self.ca),
            "--pool-capacity-bytes", str(self.pool_bytes), "--pool-low-watermark-bytes", "8192",
            "--shutdown-grace-ms", "2000",
            "--log-format", "json",
            # Debug: each stored chunk (ingest_service) and each call's end with its bytes (observe).
            "--log-filter", "info,entropy_gateway::grpc::ingest_service=debug,entropy_gateway::grpc::observe=debug",
        ], w / "gateway.log")
        (w / "collector.toml").write_text(f"""\
collector_id = "chaos-collector"
key_id = "demo"
key_file = "{s / 'mac.key'}"
chunk_bytes = {self.chunk_bytes}
mixing = "xor"
min_sources = 1
metrics_listen_addr = "127.0.0.1:{p['col_metrics']}"
log_format = "json"

[[gateway]]
id = "gateway"
endpoint = "https://localhost:{p['ingest_proxy']}"
ca_file = "{self.ca}"
client_cert_file = "{s / 'collector.pem'}"
client_key_file = "{s / 'collector.key'}"

[[source]]
name = "quantis-sim"
type = "quantis"
url = "http://127.0.0.1:{p['sim']}"
allow_http = true
""")
        self.programs["collector"] = Program("collector", [str(self.bin / "entropy-collector"), "--config",
                                                           str(w / "collector.toml")], w / "collector.log")

    @property
    def endpoint(self) -> str:
        """Where clients call: the public link's proxy (the certificate names localhost)."""
        return f"localhost:{self.ports['public_proxy']}"

    def start(self) -> None:
        tp = self.programs["toxiproxy"]
        tp.start()
        if not wait_for(self.toxiproxy.up, 15, 0.1):
            raise RuntimeError(f"toxiproxy did not start: {tp.log.read_text()[-500:]}")
        self.toxiproxy.proxy("public", self.ports["public_proxy"], self.ports["public"])
        self.toxiproxy.proxy("ingest", self.ports["ingest_proxy"], self.ports["ingest"])
        self.start_simulator()
        self.start_gateway(wait_ready=False)  # ready once the collector has fed it
        self.programs["collector"].start()
        self.wait(self.pool_at_least(min(self.pool_bytes // 2, 256 << 10)), 60, "the pool fed")

    def start_simulator(self, fault: str = "none") -> None:
        sim = self.programs["simulator"]
        sim.argv = [*self.simulator_argv, "--fault", fault]
        sim.start()
        self.wait(lambda: listening(self.ports["sim"]), 15, "the simulator up")

    def start_gateway(self, wait_ready: bool = True) -> None:
        self.programs["gateway"].start()
        if wait_ready:
            self.wait(lambda: self.metric("gateway", "entropy_gateway_ready") == 1, 30, "the gateway ready")

    def stop(self) -> None:
        for prog in self.programs.values():
            prog.signal(signal.SIGCONT)
        for name in ("collector", "gateway", "simulator", "toxiproxy"):
            self.programs[name].terminate(timeout=15)

    def wait(self, pred, seconds: float, what: str) -> None:
        if not wait_for(pred, seconds, 0.1):
            raise RuntimeError(f"not within {seconds:.0f} s: {what}")

    # --- what the programs say ------------------------------------------------------------------

    def metrics(self, program: str) -> dict[str, float]:
        """Every series of `program`'s /metrics, summed over labels not in the name ({} if down)."""
        port = self.ports["gw_metrics" if program == "gateway" else "col_metrics"]
        status, body = http_get(f"http://127.0.0.1:{port}/metrics", timeout=2)
        out: dict[str, float] = {}
        if status != 200:
            return out
        for line in body.splitlines():
            if line.startswith("#") or " " not in line:
                continue
            series, value = line.rsplit(" ", 1)
            try:
                out[series] = float(value)
            except ValueError:
                continue
        return out

    def metric(self, program: str, name: str, labels: str = "") -> float | None:
        """The sum of `name`'s series whose labels contain `labels`; None when the program is down."""
        m = self.metrics(program)
        if not m:
            return None
        return sum(v for k, v in m.items() if (k == name or k.startswith(name + "{")) and labels in k)

    def pool_at_least(self, n: int):
        return lambda: (self.metric("gateway", "entropy_gateway_pool_bytes") or 0) >= n

    def readyz(self, program: str) -> tuple[int, str]:
        port = self.ports["gw_metrics" if program == "gateway" else "col_metrics"]
        return http_get(f"http://127.0.0.1:{port}/readyz", timeout=2)

    def resources(self) -> dict[str, dict[str, int]]:
        return {n: self.programs[n].resources() for n in ("gateway", "collector")}

    def stored_chunks(self) -> list[tuple[str, int, int]]:
        """(collector, epoch, sequence) of every chunk any life of the gateway stored (its log)."""
        out = []
        for line in self.programs["gateway"].log.read_text(errors="replace").splitlines():
            if '"chunk accepted"' not in line:
                continue
            try:
                fields = json.loads(line).get("fields", {})
                out.append((str(fields.get("collector")), int(fields.get("epoch")), int(fields.get("sequence"))))
            except (ValueError, TypeError):
                continue
        return out

    def streams_finished(self, total: int, since: float, until: float) -> int:
        """StreamRandom calls the gateway ended OK after sending all of `total` bytes, between unix
        times `since` and `until` (its log: the end of each call, with its bytes)."""
        n = 0
        for line in self.programs["gateway"].log.read_text(errors="replace").splitlines():
            if '"StreamRandom"' not in line or '"request"' not in line:
                continue
            try:
                record = json.loads(line)
                fields = record.get("fields", {})
                at = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")).timestamp()
            except (ValueError, KeyError, TypeError):
                continue
            if fields.get("code") == "OK" and int(fields.get("bytes", -1)) == total and since <= at <= until:
                n += 1
        return n

    def log_tail(self, name: str, n: int = 1500) -> str:
        log = self.programs[name].log
        return log.read_text(errors="replace")[-n:] if log.exists() else "(no log)"

    def log_problems(self) -> dict[str, list[str]]:
        """Panics and error-level lines in every program's log, by program."""
        out = {}
        for name in ("gateway", "collector", "simulator"):
            bad = [line[:300] for line in self.programs[name].log.read_text(errors="replace").splitlines()
                   if "panicked" in line or '"level":"ERROR"' in line or " ERROR " in line]
            out[name] = bad
        return out
