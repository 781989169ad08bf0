"""The stream reader against a real gateway that dies, restarts or freezes mid-stream: the
reader ends with exactly the total and no 16-byte block twice, and every read stays bounded.
The tests share one dev gateway on a fixed port (not the session gateway), each leaving it
running (restarted, or continued) for the next."""

from __future__ import annotations

import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from conftest import assert_no_repeated_block, free_port, spawn_gateway, wait_serving
from entropy_diode import AsyncEntropyClient, DeadlineExceededError, EntropyClient, StreamOptions

MIB = 1 << 20
TOTAL = 12 * MIB
# The stream must still be running when the gateway dies (the reconnect count checks it was).
# grpc's bandwidth-delay probing lets a loopback receive window grow to many MiB, so the
# gateway could push the whole stream ahead of the reader; without it the window stays 64 KiB.
SMALL_WINDOW = (("grpc.http2.bdp_probe", 0),)


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
            if proc.poll() is None:
                proc.kill()  # a throwaway gateway: no need to wait for a graceful stop
                proc.wait()


@pytest.fixture(scope="module")
def shared() -> Iterator[Restartable]:
    g = Restartable()
    g.start()
    try:
        yield g
    finally:
        g.close()


@pytest.fixture
def gw(shared: Restartable) -> Restartable:
    wait_serving(shared.target, shared.api_key)
    return shared


@pytest.mark.parametrize(
    ("sig", "down_for"),
    [(signal.SIGKILL, 0.2), (signal.SIGKILL, 2.0), (signal.SIGTERM, 0.2)],
    ids=["kill-9-0.2s", "kill-9-2s", "sigterm-0.2s"],
)
def test_a_restarted_gateway_is_used_again(
    gw: Restartable, sig: signal.Signals, down_for: float
) -> None:
    restarted_at: list[float] = []

    def restart_later() -> None:
        gw.wait_exit()  # SIGTERM: the gateway drains first (the reader keeps reading meanwhile)
        time.sleep(down_for)
        gw.start()
        restarted_at.append(time.monotonic())

    with EntropyClient(gw.target, gw.api_key, options=SMALL_WINDOW) as client:
        with client.reader(TOTAL, chunk_bytes=64 * 1024) as reader:
            first = reader.read(MIB)
            gw.signal(sig)
            restarter = threading.Thread(target=restart_later)
            restarter.start()
            rest = reader.read(TOTAL)
            done = time.monotonic()
            restarter.join()
            assert reader.read(1) == b""
            reconnects = reader.reconnects
    data = first + rest
    assert len(data) == TOTAL
    assert_no_repeated_block(data)
    assert reconnects >= 1
    # The channel's reconnect backoff is capped at 1 s, and the reader's own at 1 s: a gateway
    # that is back is used within seconds (its own startup included), not after minutes.
    assert done - restarted_at[0] < 8


def test_a_frozen_gateway_ends_a_read_within_stall_plus_budget(gw: Restartable) -> None:
    options = StreamOptions(stall_timeout=1.0, reconnect_budget=1.0)
    with EntropyClient(
        gw.target, gw.api_key, stream_options=options, options=SMALL_WINDOW
    ) as client:
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
    with EntropyClient(
        gw.target, gw.api_key, stream_options=options, options=SMALL_WINDOW
    ) as client:
        with client.reader(TOTAL, chunk_bytes=64 * 1024) as reader:
            first = reader.read(MIB)
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


async def test_the_async_reader_gives_up_on_a_frozen_gateway_within_stall_plus_budget(
    gw: Restartable,
) -> None:
    options = StreamOptions(stall_timeout=1.0, reconnect_budget=1.0)
    async with AsyncEntropyClient(
        gw.target, gw.api_key, stream_options=options, options=SMALL_WINDOW
    ) as client:
        async with client.reader(None, chunk_bytes=64 * 1024) as reader:
            assert len(await reader.read(MIB)) == MIB
            gw.signal(signal.SIGSTOP)
            try:
                start = time.monotonic()
                with pytest.raises(DeadlineExceededError, match="gave up reconnecting after"):
                    while True:
                        await reader.read(MIB)
                elapsed = time.monotonic() - start
            finally:
                gw.signal(signal.SIGCONT)
    assert 1.9 <= elapsed < 1.0 + 1.0 + 1.5, elapsed
