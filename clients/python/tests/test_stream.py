"""StreamReader against a live dev gateway: exact lengths, no repeats, and reconnecting
through a real transport failure."""

from __future__ import annotations

import io
import shutil
import threading

import pytest

from conftest import Gateway, assert_no_repeated_block
from entropy_diode import EntropyClient
from entropy_diode.stream import _cancel_live
from proxy import CuttableProxy

MIB = 1 << 20


def test_bounded_stream_delivers_exactly_total_in_odd_reads(client: EntropyClient) -> None:
    with client.reader(MIB, chunk_bytes=64 * 1024) as reader:
        parts = []
        while part := reader.read(1000):  # deliberately not a divisor of the chunk size
            parts.append(part)
        assert reader.read(10) == b""
        assert reader.streams_opened == 1
    assert [len(p) for p in parts[:-1]] == [1000] * (len(parts) - 1)
    data = b"".join(parts)
    assert len(data) == MIB
    assert_no_repeated_block(data)


def test_chunks_follow_chunk_bytes(client: EntropyClient) -> None:
    with client.reader(100_000, chunk_bytes=30_000) as reader:
        assert [len(c) for c in reader.chunks()] == [30_000, 30_000, 30_000, 10_000]


def test_read_without_size_reads_a_bounded_stream_to_the_end(client: EntropyClient) -> None:
    with client.reader(12345) as reader:
        assert len(reader.read()) == 12345
        assert reader.read() == b""


def test_works_as_a_binary_file(client: EntropyClient) -> None:
    out = io.BytesIO()
    with client.reader(300_000, chunk_bytes=16_384) as reader:
        shutil.copyfileobj(reader, out)
    assert len(out.getvalue()) == 300_000


def test_endless_stream_reads_until_closed(client: EntropyClient) -> None:
    reader = client.reader(chunk_bytes=8192)
    data = b"".join(reader.read(100_000) for _ in range(3))
    assert len(data) == 300_000
    assert_no_repeated_block(data)
    with pytest.raises(ValueError):
        reader.read()  # no size on an endless stream would never return
    reader.close()
    with pytest.raises(ValueError):
        reader.read(1)


def test_zero_total_is_empty_without_a_call(client: EntropyClient) -> None:
    reader = client.reader(0)
    assert reader.read(10) == b""
    assert reader.streams_opened == 0


def test_reconnects_after_the_connection_is_cut(gateway: Gateway) -> None:
    total = 4 * MIB
    # The first connection carries at most 2 MiB, so the stream cannot finish before the cut.
    proxy = CuttableProxy(gateway.target, first_limit=2 * MIB)
    try:
        with EntropyClient(proxy.target, gateway.api_key) as client:
            with client.reader(total, chunk_bytes=64 * 1024) as reader:
                first = reader.read(MIB)
                proxy.cut()
                rest = reader.read(total)  # more than is left: returns the rest, then EOF
                assert reader.read(1) == b""
                opened = reader.streams_opened
    finally:
        proxy.close()
    assert opened >= 2, "the cut should have forced a new stream"
    assert proxy.connections >= 2
    data = first + rest
    assert len(data) == total
    assert_no_repeated_block(data)


def stream_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "entropy-stream"}


def test_closing_a_reader_leaves_no_thread_inside_grpc(client: EntropyClient) -> None:
    # A daemon thread still inside grpcio when the interpreter exits can die holding the call's
    # lock, and the process then hangs in the call's finalizer (seen 1 run in ~300).
    before = stream_threads()
    with client.reader(MIB, chunk_bytes=64 * 1024) as reader:
        assert len(reader.read()) == MIB  # ends by cancelling the finished stream
        assert not stream_threads() - before
    endless = client.reader(chunk_bytes=8192)
    endless.read(50_000)
    assert stream_threads() - before  # the pump of the open stream
    endless.close()
    assert not stream_threads() - before


def test_a_reader_left_open_is_cancelled_at_exit(gateway: Gateway) -> None:
    with EntropyClient(gateway.target, gateway.api_key) as client:
        before = stream_threads()
        reader = client.reader(chunk_bytes=8192)
        reader.read(20_000)
        _cancel_live()  # what atexit runs before the interpreter stops its threads
        assert not stream_threads() - before
        reader.close()
