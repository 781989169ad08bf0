"""Fixtures: one live dev gateway for the whole session (or the one named by
ENTROPY_TEST_ENDPOINT / ENTROPY_TEST_API_KEY), and clients connected to it."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from entropy_diode import EntropyClient, EntropyError

REPO = Path(__file__).resolve().parents[3]
POOL_CAPACITY = 16 * 1024 * 1024


@dataclass(frozen=True)
class Gateway:
    target: str
    api_key: str
    # The pool capacity the gateway was started with; None for an external gateway.
    pool_capacity: int | None


# The repo's one port picker (scripts/lib/ports.py): outside the ephemeral range, never twice.
sys.path.insert(0, str(REPO / "scripts" / "lib"))
from ports import free_port  # noqa: E402


def wait_serving(
    target: str, api_key: str, timeout: float = 20.0, ca_file: str | None = None
) -> None:
    deadline = time.monotonic() + timeout
    with EntropyClient(target, api_key, timeout=1.0, ca_file=ca_file) as client:
        while True:
            try:
                if client.status().serving:
                    return
            except EntropyError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"gateway at {target} not serving after {timeout}s")
            time.sleep(0.1)


def gateway_binary() -> str:
    binary = os.environ.get("GATEWAY_BIN") or str(REPO / "target/release/entropy-gateway")
    if not os.access(binary, os.X_OK):
        pytest.fail(f"no gateway binary at {binary} (set GATEWAY_BIN)")
    return binary


def spawn_gateway(target: str, api_key: str, *extra: str) -> subprocess.Popen[bytes]:
    """A dev gateway on `target` with `api_key` (not yet waited for); `extra` flags."""
    return subprocess.Popen(
        [gateway_binary(), "--dev", "--listen-addr", target,
         "--pool-capacity-bytes", str(POOL_CAPACITY), "--metrics-listen-addr", "", *extra],
        env=dict(os.environ, ENTROPY_DEV_API_KEY=api_key),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_gateway(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGCONT)  # in case a test left it stopped
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def gateway() -> Iterator[Gateway]:
    if os.environ.get("ENTROPY_TEST_ENDPOINT"):
        gw = Gateway(os.environ["ENTROPY_TEST_ENDPOINT"], os.environ["ENTROPY_TEST_API_KEY"], None)
        wait_serving(gw.target, gw.api_key)
        yield gw
        return
    gw = Gateway(f"127.0.0.1:{free_port()}", "py-test-" + secrets.token_hex(8), POOL_CAPACITY)
    proc = spawn_gateway(gw.target, gw.api_key)
    try:
        wait_serving(gw.target, gw.api_key)
        yield gw
    finally:
        stop_gateway(proc)


@pytest.fixture
def client(gateway: Gateway) -> Iterator[EntropyClient]:
    with EntropyClient(gateway.target, gateway.api_key) as c:
        yield c


def blocks16(data: bytes) -> list[bytes]:
    """The 16-byte blocks of `data`: two equal blocks of real random data have probability
    ~2^-128 per pair, so any repeat means bytes were served or returned twice."""
    return [data[i : i + 16] for i in range(0, len(data) - len(data) % 16, 16)]


def assert_no_repeated_block(data: bytes) -> None:
    blocks = blocks16(data)
    assert len(set(blocks)) == len(blocks), "a 16-byte block appeared twice"


def entropy_calls(client: EntropyClient, **kw: Any) -> dict[str, Callable[[], object]]:
    """Every call that draws entropy, with `kw` (accept_kinds=..., construction=...) or the
    client's defaults."""
    return {
        "get_bytes": lambda: client.get_bytes(16, **kw),
        "draw": lambda: client.draw(16, **kw),
        "get_integers": lambda: client.get_integers(1, 6, 3, **kw),
        "get_floats": lambda: client.get_floats(3, **kw),
        "get_uuids": lambda: client.get_uuids(3, **kw),
        "check_quality": lambda: client.check_quality(2500, **kw),
        "reader": lambda: read_stream(client, 1000, **kw),
    }


def read_stream(client: EntropyClient, n: int, **kw: Any) -> bytes:
    with client.reader(n, **kw) as reader:
        data = reader.read()
    assert len(data) == n
    return data
