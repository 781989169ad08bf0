"""The reconnect rule, checked byte for byte against a scripted server: after UNAVAILABLE the
reader asks for exactly what is still owed, and returns exactly what the server sent."""

from __future__ import annotations

import grpc
import pytest

from entropy_diode import EntropyClient, EntropyError, PermissionDeniedError, UnavailableError
from entropy_diode._common import MAX_RECONNECTS
from fakes import FakeEntropy, FakeServer, Step

UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


def read_all(fake: FakeEntropy, total: int | None, size: int, reads: int = 1) -> bytes:
    with FakeServer(fake) as target, EntropyClient(target, "k", tls=False) as client:
        with client.reader(total, chunk_bytes=fake.chunk_size) as reader:
            return b"".join(reader.read(size) for _ in range(reads))


def test_resumes_for_exactly_the_remaining_bytes() -> None:
    fake = FakeEntropy([Step(3, UNAVAILABLE), Step(2, UNAVAILABLE)], chunk_size=1000)
    data = read_all(fake, 10_000, 10_000)
    assert fake.requests == [(1000, 10_000), (1000, 7000), (1000, 5000)]
    assert data == bytes(fake.sent)  # nothing lost, nothing twice, in order


def test_a_failure_with_nothing_sent_is_retried_too() -> None:
    fake = FakeEntropy([Step(0, UNAVAILABLE), Step(0, UNAVAILABLE)], chunk_size=500)
    data = read_all(fake, 2000, 2000)
    assert fake.requests == [(500, 2000)] * 3
    assert data == bytes(fake.sent) and len(data) == 2000


def test_endless_streams_reopen_endless() -> None:
    fake = FakeEntropy([Step(2, UNAVAILABLE)], chunk_size=100)
    data = read_all(fake, None, 150, reads=4)
    assert len(data) == 600
    assert fake.requests[:2] == [(100, 0), (100, 0)]
    assert bytes(fake.sent).startswith(data)  # later chunks may be in flight, unread


def test_gives_up_after_max_reconnects_in_a_row() -> None:
    fake = FakeEntropy([Step(0, UNAVAILABLE)] * (MAX_RECONNECTS + 1))
    with pytest.raises(UnavailableError):
        read_all(fake, 1000, 1000)
    assert len(fake.requests) == MAX_RECONNECTS + 1


def test_progress_resets_the_attempt_budget() -> None:
    # Twice as many failures as the budget allows in a row, but each attempt delivers a chunk.
    fake = FakeEntropy([Step(1, UNAVAILABLE)] * (2 * MAX_RECONNECTS), chunk_size=100)
    data = read_all(fake, 100 * (2 * MAX_RECONNECTS + 1), 100 * (2 * MAX_RECONNECTS + 1))
    assert data == bytes(fake.sent)
    assert len(fake.requests) == 2 * MAX_RECONNECTS + 1


def test_other_errors_are_raised_without_reconnecting() -> None:
    fake = FakeEntropy([Step(2, grpc.StatusCode.PERMISSION_DENIED)], chunk_size=100)
    with FakeServer(fake) as target, EntropyClient(target, "k", tls=False) as client:
        with client.reader(1000, chunk_bytes=100) as reader:
            assert reader.read(200) == bytes(fake.sent)  # what arrived is still delivered
            with pytest.raises(PermissionDeniedError):
                reader.read(1)
            assert reader.streams_opened == 1


def test_a_stream_that_ends_early_with_ok_is_an_error() -> None:
    fake = FakeEntropy([Step(2)], chunk_size=100)
    with pytest.raises(EntropyError, match="ended with OK after 200 of 1000"):
        read_all(fake, 1000, 1000)
