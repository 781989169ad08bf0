"""The stream reader against a real gateway that dies, restarts or freezes mid-stream: the
reader ends with exactly the total and no 16-byte block twice, and every read stays bounded.
Each test runs its own dev gateway on a fixed port (the session gateway is not touched)."""

from __future__ import annotations

import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from conftest import assert_no_repeated_block, free_port, spawn_gateway, stop_gateway, wait_serving
from entropy_diode import DeadlineExceededError, EntropyClient, StreamOptions

MIB = 1 << 20
TOTAL = 8 * MIB


class Restartable:
    """A dev gateway on one fixed port that a test can kill, restart, stop and continue."""

    def __init__(self) -> None:
        self.target = f"127.0.0.1:{free_port()}"
        self.api_key = "py-restart-" + secrets.token_hex(8)
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        self.procs.append(spawn_gateway(self.target, self.api_key))

    def signal(self, sig: signal.Signals) -> None:
        self.procs[-1].send_signal(sig)

    def wait_exit(self) -> None:
        self.procs[-1].wait(timeout=30)

    def close(self) -> None:
        for proc in self.procs:
            stop_gateway(proc)


@pytest.fixture
def gw() -> Iterator[Restartable]:
    g = Restartable()
    g.start()
    try:
        wait_serving(g.target, g.api_key)
        yield g
    finally:
        g.close()


@pytest.mark.parametrize(
    ("sig", "down_for"),
    [(signal.SIGKILL, 0.2), (signal.SIGKILL, 2.0), (signal.SIGTERM, 0.2)],
    ids=["kill-9-0.2s", "kill-9-2s", "sigterm-0.2s"],
)
def test_a_restarted_gateway_is_used_again(
    gw: Restartable, sig: signal.Signals, down_for: float
) -> None:
    with EntropyClient(gw.target, gw.api_key) as client:
        with client.reader(TOTAL, chunk_bytes=64 * 1024) as reader:
            first = reader.read(MIB)
            assert reader.received < TOTAL, "the stream must still be running when it dies"
            gw.signal(sig)
            gw.wait_exit()
            died = time.monotonic()
            threading.Timer(down_for, gw.start).start()
            rest = reader.read(TOTAL)
            resumed_after = time.monotonic() - died
            assert reader.read(1) == b""
            reconnects = reader.reconnects
    data = first + rest
    assert len(data) == TOTAL
    assert_no_repeated_block(data)
    assert reconnects >= 1
    # The channel's reconnect backoff is capped at 1 s, and the reader's own at 1 s: a gateway
    # that is back is used within a few seconds (startup included), not after minutes.
    assert resumed_after < down_for + 6


def test_a_frozen_gateway_ends_a_read_within_stall_plus_budget(gw: Restartable) -> None:
    options = StreamOptions(stall_timeout=1.0, reconnect_budget=1.0)
    with EntropyClient(gw.target, gw.api_key, stream_options=options) as client:
        with client.reader(None, chunk_bytes=64 * 1024) as reader:
            assert len(reader.read(MIB)) == MIB
            gw.signal(signal.SIGSTOP)
            try:
                start = time.monotonic()
                with pytest.raises(DeadlineExceededError) as e:
                    while True:  # whatever was in flight arrives first, then nothing
                        reader.read(MIB)
                elapsed = time.monotonic() - start
            finally:
                gw.signal(signal.SIGCONT)
    assert isinstance(e.value, TimeoutError)
    assert "gave up reconnecting after" in e.value.details
    assert 1.9 <= elapsed < 1.0 + 1.0 + 1.5, elapsed


def test_a_gateway_that_continues_within_the_budget_is_resumed(gw: Restartable) -> None:
    options = StreamOptions(stall_timeout=1.0, reconnect_budget=10.0)
    with EntropyClient(gw.target, gw.api_key, stream_options=options) as client:
        with client.reader(TOTAL, chunk_bytes=64 * 1024) as reader:
            first = reader.read(MIB)
            assert reader.received < TOTAL
            gw.signal(signal.SIGSTOP)
            threading.Timer(3.0, gw.signal, args=(signal.SIGCONT,)).start()
            start = time.monotonic()
            rest = reader.read(TOTAL)
            elapsed = time.monotonic() - start
            reconnects = reader.reconnects
    data = first + rest
    assert len(data) == TOTAL
    assert_no_repeated_block(data)
    assert reconnects >= 1  # the stall was noticed and a new stream asked for the rest
    assert 3.0 <= elapsed < 10.0
