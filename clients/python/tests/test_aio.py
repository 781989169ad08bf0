"""The asyncio client: the same behaviour as the sync one, awaited."""

from __future__ import annotations

import asyncio
import time
import uuid

import grpc
import pytest

from conftest import Gateway, assert_no_repeated_block
from entropy_diode import (
    AsyncEntropyClient,
    AuthenticationError,
    DeadlineExceededError,
    InvalidArgumentError,
    StreamOptions,
    UnavailableError,
)
from fakes import FakeEntropy, FakeServer, Step
from proxy import BlackHole


async def test_unary_calls(gateway: Gateway) -> None:
    async with AsyncEntropyClient(gateway.target, gateway.api_key) as client:
        data, dice, floats, ids, status = await asyncio.gather(
            client.get_bytes(64),
            client.get_integers(1, 6, count=500),
            client.get_floats(100),
            client.get_uuids(10),
            client.status(),
        )
    assert len(data) == 64
    assert len(dice) == 500 and set(dice) == {1, 2, 3, 4, 5, 6}
    assert len(floats) == 100 and all(0.0 <= f < 1.0 for f in floats)
    assert len(ids) == 10 and all(isinstance(u, uuid.UUID) and u.version == 4 for u in ids)
    assert status.serving and status.pool_capacity_bytes > 0


async def test_concurrent_callers_never_share_a_byte(gateway: Gateway) -> None:
    async with AsyncEntropyClient(gateway.target, gateway.api_key) as client:
        parts = await asyncio.gather(*(client.get_bytes(4096) for _ in range(32)))
    assert all(len(p) == 4096 for p in parts)
    assert_no_repeated_block(b"".join(parts))


async def test_errors_map_to_classes(gateway: Gateway) -> None:
    async with AsyncEntropyClient(gateway.target, gateway.api_key) as client:
        with pytest.raises(InvalidArgumentError, match="num_bytes"):
            await client.get_bytes(0)
        with pytest.raises(InvalidArgumentError):
            await client.get_integers(2, 1)
    async with AsyncEntropyClient(gateway.target, "wrong-key") as client:
        with pytest.raises(AuthenticationError):
            await client.get_bytes(1)
    hole = BlackHole()
    try:
        async with AsyncEntropyClient(hole.target, "k") as client:
            with pytest.raises(DeadlineExceededError):
                await client.get_bytes(1, timeout=0.3)
    finally:
        hole.close()


async def test_stream_reader_reads_exactly(gateway: Gateway) -> None:
    async with AsyncEntropyClient(gateway.target, gateway.api_key) as client:
        async with client.reader(1 << 20, chunk_bytes=65536) as reader:
            parts = []
            while part := await reader.read(7000):
                parts.append(part)
        async with client.reader(200_000, chunk_bytes=50_000) as reader:
            sizes = [len(chunk) async for chunk in reader]
    data = b"".join(parts)
    assert len(data) == 1 << 20
    assert_no_repeated_block(data)
    assert sizes == [50_000] * 4


async def test_stream_reader_resumes_for_the_remaining_bytes() -> None:
    unavailable = grpc.StatusCode.UNAVAILABLE
    fake = FakeEntropy([Step(3, unavailable), Step(1, unavailable)], chunk_size=100)
    with FakeServer(fake) as target:
        async with AsyncEntropyClient(target, "k") as client:
            async with client.reader(1000, chunk_bytes=100) as reader:
                data = await reader.read(5000)
                assert reader.streams_opened == 3
    assert fake.requests == [(100, 1000), (100, 700), (100, 600)]
    assert data == bytes(fake.sent)


async def test_stream_reader_gives_up_when_the_budget_is_spent() -> None:
    fake = FakeEntropy([Step(0, grpc.StatusCode.UNAVAILABLE)] * 1000)
    options = StreamOptions(reconnect_budget=0.5, initial_backoff=0.01, max_backoff=0.05)
    with FakeServer(fake) as target:
        async with AsyncEntropyClient(target, "k", stream_options=options) as client:
            start = time.monotonic()
            with pytest.raises(UnavailableError, match="gave up reconnecting after"):
                await client.reader(100).read(100)
            assert 0.5 <= time.monotonic() - start < 2.0
    assert len(fake.requests) >= 5


async def test_stream_reader_reopens_a_stalled_stream() -> None:
    fake = FakeEntropy([Step(2, hang=30)], chunk_size=100)
    options = StreamOptions(stall_timeout=0.3, initial_backoff=0.01, max_backoff=0.05)
    with FakeServer(fake) as target:
        async with AsyncEntropyClient(target, "k", stream_options=options) as client:
            async with client.reader(1000, chunk_bytes=100) as reader:
                data = await reader.read(1000)
                assert reader.reconnects == 1
    assert fake.requests == [(100, 1000), (100, 800)]
    assert data == bytes(fake.sent)


async def test_stream_reader_against_a_silent_server_is_deadline_exceeded() -> None:
    hole = BlackHole()
    options = StreamOptions(reconnect_budget=1.0, attempt_timeout=0.3, max_backoff=0.1)
    try:
        async with AsyncEntropyClient(hole.target, "k", stream_options=options) as client:
            start = time.monotonic()
            with pytest.raises(DeadlineExceededError, match="no first message within"):
                await client.reader(100).read(100)
            assert 1.0 <= time.monotonic() - start < 3.0
    finally:
        hole.close()
