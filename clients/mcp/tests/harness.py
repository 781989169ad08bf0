"""Processes and probes for the entropy-mcp end-to-end test: gateways (a --dev one fed by its
in-process collector, and key-file ones with an empty pool), entropy-mcp over HTTP, metrics,
and the check list that prints `ok`/`FAIL` lines and the closing `N passed, M failed` line.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RELEASE = ROOT / "target" / "release"


class Checks:
    """Named pass/fail results, printed as they come."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []

    def __call__(self, name: str, ok: bool, detail: object = "") -> bool:
        if ok:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed.append(name)
            print(f"FAIL {name}: {str(detail)[:600]}", flush=True)
        return ok

    def summary(self) -> str:
        return f"mcp: {self.passed} passed, {len(self.failed)} failed"


# The repo's one port picker (scripts/lib/ports.py): outside the ephemeral range, never twice.
sys.path.insert(0, str(ROOT / "scripts" / "lib"))
from ports import free_port  # noqa: E402


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def wait_for(predicate, what: str, seconds: float = 30.0) -> None:
    """Polls `predicate` until true; raises after `seconds` (a bound on a hang, not a timing
    assertion)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise RuntimeError(f"gave up waiting for {what}")


def clean_env(**extra: str) -> dict[str, str]:
    """An environment without the caller's ENTROPY_* variables (they are config keys)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENTROPY_")}
    env.update(extra)
    return env


class Gateway:
    """An entropy-gateway process on fixed ports, so it can be stopped and started again."""

    def __init__(self, args: list[str], env: dict[str, str], ready_path: str, log: Path) -> None:
        self.port = free_port()
        self.metrics_port = free_port()
        self.args = [
            str(RELEASE / "entropy-gateway"),
            *args,
            "--listen-addr", f"127.0.0.1:{self.port}",
            "--metrics-listen-addr", f"127.0.0.1:{self.metrics_port}",
        ]
        self.env = env
        self.ready_path = ready_path
        self.log = log
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Gateway":
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(self.args, env=self.env, stdout=log, stderr=log)
        url = f"http://127.0.0.1:{self.metrics_port}{self.ready_path}"
        wait_for(lambda: http_get(url, 1.0)[0] == 200, f"gateway {self.ready_path}")
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def metrics(self) -> str:
        status, text = http_get(f"http://127.0.0.1:{self.metrics_port}/metrics")
        if status != 200:
            raise RuntimeError(f"metrics: {status} {text[:200]}")
        return text

    def served_to_key(self, key_name: str) -> int:
        """The gateway's served-bytes counter for one API key."""
        pattern = rf'^entropy_gateway_key_served_bytes_total\{{key="{re.escape(key_name)}"\}} (\S+)$'
        match = re.search(pattern, self.metrics(), re.M)
        return int(float(match.group(1))) if match else 0

    @classmethod
    def dev(cls, key: str, log: Path) -> "Gateway":
        env = clean_env(ENTROPY_DEV_API_KEY=key)
        return cls(["--dev"], env, "/readyz", log).start()

    @classmethod
    def empty(cls, keys: dict[str, str], extra: str, tmp: Path, max_wait_ms: int, log: Path) -> "Gateway":
        """A key-file gateway with no collector: its pool stays empty, so draws wait
        `max_wait_ms` and end UNAVAILABLE. `keys` maps names to secrets; `extra` holds TOML
        lines per name (limits, scopes)."""
        name = f"gw-{len(list(tmp.iterdir()))}"
        keys_file = tmp / f"{name}-keys.toml"
        entries = []
        for key_name, secret in keys.items():
            digest = hashlib.sha256(secret.encode()).hexdigest()
            entries.append(f'[[key]]\nname = "{key_name}"\nsha256 = "{digest}"\n{extra.get(key_name, "")}')
        keys_file.write_text("\n".join(entries))
        mac_dir = tmp / f"{name}-mac"
        mac_dir.mkdir()
        (mac_dir / "k1.key").write_text(os.urandom(32).hex() + "\n")
        args = [
            "--api-keys-file", str(keys_file),
            "--ingest-keys-dir", str(mac_dir),
            "--state-dir", str(tmp / f"{name}-state"),
            "--gateway-id", name,
            "--ingest-listen-addr", f"127.0.0.1:{free_port()}",
            "--pool-capacity-bytes", str(1 << 20),
            "--max-wait-ms", str(max_wait_ms),
        ]
        return cls(args, clean_env(), "/healthz", log).start()


class McpHttp:
    """entropy-mcp on the Streamable HTTP transport, on a free loopback port."""

    def __init__(self, gateway: Gateway, key: str, tokens: dict[str, str], tmp: Path, log: Path,
                 *extra_args: str, binary: Path = RELEASE / "entropy-mcp") -> None:
        tokens_file = Path(tempfile.mkstemp(dir=tmp, suffix="-tokens.toml")[1])
        tokens_file.write_text("".join(
            f'[[token]]\nname = "{name}"\nsha256 = "{hashlib.sha256(t.encode()).hexdigest()}"\n'
            for name, t in tokens.items()
        ))
        args = [
            str(binary), "--transport", "http",
            "--http-listen-addr", "127.0.0.1:0",
            "--http-tokens-file", str(tokens_file),
            "--gateway-endpoint", gateway.endpoint,
            *extra_args,
        ]
        self.log = log
        with open(log, "a") as err:
            self.proc = subprocess.Popen(args, env=clean_env(ENTROPY_API_KEY=key),
                                         stdout=subprocess.PIPE, stderr=err, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # "entropy-mcp: MCP over Streamable HTTP at URL"
        match = re.search(r"(https?://\S+/mcp)", line)
        if not match:
            raise RuntimeError(f"entropy-mcp did not say where it listens: {line!r}; see {log}")
        self.url = match.group(1)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def repeated_runs(buffers: list[bytes]) -> int:
    """Places where 16 bytes of one buffer reappear anywhere (any offset) in another or in the
    same one. Two callers served overlapping pool bytes share a run of 16+ bytes containing an
    aligned block; for random data a chance match has probability ~2^-128 per pair."""
    blocks: dict[bytes, tuple[int, int]] = {}
    for b, buf in enumerate(buffers):
        for i in range(0, len(buf) - 15, 16):
            if buf[i:i + 16] in blocks:
                return 1
            blocks[buf[i:i + 16]] = (b, i)
    repeats = 0
    for b, buf in enumerate(buffers):
        for i in range(len(buf) - 15):
            home = blocks.get(buf[i:i + 16])
            if home is not None and home != (b, i):
                repeats += 1
    return repeats


def text_of(result) -> str:
    """The text content of a tool result."""
    return " ".join(getattr(c, "text", "") for c in result.content)


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text().splitlines()[-lines:])
    except OSError:
        return ""


def fail_fast(message: str) -> None:
    print(f"FAIL {message}", file=sys.stderr)
    sys.exit(1)
