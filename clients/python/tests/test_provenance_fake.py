"""accept_kinds, provenance, quality reports and FAILED_PRECONDITION against a scripted server:
what each call sends, how every field of the answer reaches the caller, and that a stream
reader does not retry FAILED_PRECONDITION. (The same against a live gateway: test_quality.py.)"""

from __future__ import annotations

import grpc
import pytest

from entropy_diode import (
    AsyncEntropyClient,
    ChunkRef,
    ClassLevel,
    EntropyClient,
    FailedPreconditionError,
    Fips1402,
    InvalidArgumentError,
    MonteCarloPi,
    Provenance,
    SourceKind,
    StreamOptions,
)
from entropy_diode._gen.entropy.v1 import entropy_pb2 as pb
from entropy_diode._gen.entropy.v1 import provenance_pb2 as ppb
from entropy_diode.types import provenance_from_pb
from fakes import FakeEntropy, FakeServer, Step

QUANTUM, HARDWARE, OS = SourceKind.QUANTUM, SourceKind.HARDWARE, SourceKind.OS
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
FAST = StreamOptions(initial_backoff=0.01, max_backoff=0.05)
ONE_KIND = " (for one kind: [SourceKind.QUANTUM])"


def expected_provenance(sequence: int) -> Provenance:
    """What fakes.fake_provenance(sequence) must become."""
    return Provenance(
        kinds=(QUANTUM, OS),
        mixed=True,
        collector_ids=("fake-a", "fake-b"),
        first_chunk=ChunkRef("fake-a", 7, sequence, 1_700_000_000_000),
        last_chunk=ChunkRef("fake-b", 8, sequence + 1, -5),
        chunk_count=2,
        oldest_byte_age_ms=42,
    )


def every_call(client: EntropyClient, **kw: object) -> None:
    client.get_bytes(8, **kw)  # type: ignore[arg-type]
    client.draw(8, **kw)  # type: ignore[arg-type]
    client.get_integers(1, 6, 2, **kw)  # type: ignore[arg-type]
    client.get_floats(2, **kw)  # type: ignore[arg-type]
    client.get_uuids(2, **kw)  # type: ignore[arg-type]
    client.check_quality(2500, **kw)  # type: ignore[arg-type]
    with client.reader(100, chunk_bytes=50, **kw) as reader:  # type: ignore[arg-type]
        assert len(reader.read()) == 100


METHODS = [
    "GetRandom", "GetRandom", "GetIntegers", "GetFloats", "GetUuids", "CheckQuality",
    "StreamRandom",
]


def test_the_client_default_is_sent_on_every_entropy_call() -> None:
    fake = FakeEntropy()
    with FakeServer(fake) as target:
        with EntropyClient(target, "k", accept_kinds=[QUANTUM, OS]) as client:
            assert client.accept_kinds == (QUANTUM, OS)
            every_call(client)
            client.status()
    assert fake.kinds == [(m, [1, 3]) for m in METHODS] + [("GetStatus", [])]


def test_a_per_call_filter_wins_and_an_empty_one_means_any() -> None:
    fake = FakeEntropy()
    with FakeServer(fake) as target:
        with EntropyClient(target, "k", accept_kinds=[QUANTUM]) as client:
            every_call(client, accept_kinds=[HARDWARE, OS])
            every_call(client, accept_kinds=[])
    assert fake.kinds == [(m, [2, 3]) for m in METHODS] + [(m, []) for m in METHODS]


def test_no_filter_sends_nothing() -> None:
    fake = FakeEntropy()
    with FakeServer(fake) as target, EntropyClient(target, "k") as client:
        assert client.accept_kinds == ()
        every_call(client)
    assert fake.kinds == [(m, []) for m in METHODS]


def test_plain_ints_go_to_the_server_as_they_are() -> None:
    # Which kinds exist is the gateway's to say (INVALID_ARGUMENT naming accept_kinds[i]).
    fake = FakeEntropy()
    with FakeServer(fake) as target, EntropyClient(target, "k") as client:
        client.get_bytes(1, accept_kinds=[0, 9])  # type: ignore[list-item]
    assert fake.kinds == [("GetRandom", [0, 9])]


@pytest.mark.parametrize(
    ("kinds", "message"),
    [
        (OS, f"accept_kinds must be a list of SourceKind, not SourceKind{ONE_KIND}"),
        ("OS", f"accept_kinds must be a list of SourceKind, not str{ONE_KIND}"),
        ([OS, "quantum"], "accept_kinds[1] is 'quantum', not a SourceKind"),
        ([True], "accept_kinds[0] is True, not a SourceKind"),
    ],
)
def test_a_filter_of_the_wrong_shape_is_refused_before_sending(
    kinds: object, message: str
) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        EntropyClient("127.0.0.1:9", "k", accept_kinds=kinds)  # type: ignore[arg-type]
    assert e.value.details == message
    fake = FakeEntropy()
    with FakeServer(fake) as target, EntropyClient(target, "k") as client:
        with pytest.raises(InvalidArgumentError) as e:
            client.get_uuids(1, accept_kinds=kinds)  # type: ignore[arg-type]
    assert e.value.details == message
    assert fake.kinds == []


def test_draw_returns_the_bytes_and_every_field_of_their_provenance() -> None:
    fake = FakeEntropy()
    with FakeServer(fake) as target, EntropyClient(target, "k") as client:
        d = client.draw(24)
    assert len(d.data) == 24
    assert d.provenance == expected_provenance(24)


def test_a_kind_this_client_does_not_know_stays_visible() -> None:
    msg = pb.GetRandomResponse(provenance=ppb.DrawProvenance(kinds=[3, 9]))
    p = provenance_from_pb(msg.provenance)
    assert p.kinds == (OS, 9) and p.kinds[1].name == "UNKNOWN_9"
    assert p.first_chunk is None and p.last_chunk is None  # absent chunks are None


def test_the_stream_reader_reports_the_last_message_provenance() -> None:
    fake = FakeEntropy(chunk_size=100)
    with FakeServer(fake) as target, EntropyClient(target, "k") as client:
        with client.reader(1000, chunk_bytes=100) as reader:
            assert reader.provenance is None  # nothing received yet
            reader.read(150)
            assert reader.provenance is not None
            reader.read()
            assert reader.provenance == expected_provenance(1000)


async def test_the_async_reader_reports_the_last_message_provenance() -> None:
    fake = FakeEntropy(chunk_size=100)
    with FakeServer(fake) as target:
        async with AsyncEntropyClient(target, "k", accept_kinds=[OS]) as client:
            d = await client.draw(16)
            async with client.reader(300, chunk_bytes=100) as reader:
                assert reader.provenance is None
                assert len(await reader.read(300)) == 300
                assert reader.provenance == expected_provenance(300)
    assert d.provenance == expected_provenance(16)
    assert fake.kinds == [("GetRandom", [3]), ("StreamRandom", [3])]


def test_the_filter_is_sent_again_on_every_reconnect() -> None:
    unavailable = grpc.StatusCode.UNAVAILABLE
    fake = FakeEntropy([Step(2, unavailable), Step(0, unavailable)], chunk_size=100)
    with FakeServer(fake) as target, EntropyClient(target, "k", accept_kinds=[QUANTUM]) as client:
        with client.reader(1000, chunk_bytes=100, options=FAST) as reader:
            assert len(reader.read()) == 1000
            assert reader.reconnects == 2
    assert fake.requests == [(100, 1000), (100, 800), (100, 800)]
    assert fake.kinds == [("StreamRandom", [1])] * 3


@pytest.mark.parametrize("chunks", [0, 2])
def test_the_stream_reader_does_not_retry_failed_precondition(chunks: int) -> None:
    fake = FakeEntropy([Step(chunks, FAILED_PRECONDITION)] + [Step(None)] * 5, chunk_size=100)
    with FakeServer(fake) as target, EntropyClient(target, "k") as client:
        with client.reader(1000, chunk_bytes=100, options=FAST) as reader:
            assert reader.read(chunks * 100) == bytes(fake.sent)  # what arrived is delivered
            with pytest.raises(FailedPreconditionError) as e:
                reader.read(1)
            assert reader.streams_opened == 1 and reader.reconnects == 0
    assert e.value.code == FAILED_PRECONDITION and e.value.details == "injected by the test"
    assert len(fake.requests) == 1


async def test_the_async_reader_does_not_retry_failed_precondition() -> None:
    fake = FakeEntropy([Step(1, FAILED_PRECONDITION)] + [Step(None)] * 5, chunk_size=100)
    with FakeServer(fake) as target:
        async with AsyncEntropyClient(target, "k", stream_options=FAST) as client:
            async with client.reader(1000, chunk_bytes=100) as reader:
                with pytest.raises(FailedPreconditionError):
                    await reader.read(1000)
                assert reader.streams_opened == 1
    assert len(fake.requests) == 1


def test_failed_precondition_on_a_unary_call_is_its_own_class() -> None:
    fake = FakeEntropy(unary_error=(FAILED_PRECONDITION, "the pool holds OS", ()))
    with FakeServer(fake) as target, EntropyClient(target, "k") as client:
        for call in (
            lambda: client.draw(1),
            lambda: client.check_quality(2500),
            lambda: client.get_integers(1, 2),
        ):
            with pytest.raises(FailedPreconditionError) as e:
                call()
            assert type(e.value) is FailedPreconditionError
            assert e.value.details == "the pool holds OS"


def quality_response(serial: float | None) -> pb.CheckQualityResponse:
    msg = pb.CheckQualityResponse(
        sample_bytes=5000,
        provenance=ppb.DrawProvenance(kinds=[ppb.SOURCE_KIND_HARDWARE], chunk_count=1),
        shannon_entropy_bits_per_byte=7.9,
        min_entropy_bits_per_byte=7.1,
        chi_square=301.5,
        chi_square_p_value=0.02,
        mean=126.25,
        pi=pb.MonteCarloPi(estimate=3.2, error=0.058, standard_error=0.05, points=833),
        pi_os_reference=pb.MonteCarloPi(estimate=3.1, error=-0.04, standard_error=0.05, points=833),
        fips140_2=pb.Fips1402(
            blocks=2, monobit_failures=1, poker_failures=2, runs_failures=3,
            long_run_failures=4, blocks_failed=2,
        ),
        passed=False,
        failures=["monobit: 1 of 2 blocks failed"],
        thresholds=["monobit: 9725 < ones < 10275", "chi-square p-value >= 0.001"],
    )
    if serial is not None:
        msg.serial_correlation = serial
    return msg


@pytest.mark.parametrize("serial", [None, 0.0, -0.25])
def test_check_quality_reports_every_field(serial: float | None) -> None:
    fake = FakeEntropy(quality=quality_response(serial))
    with FakeServer(fake) as target, EntropyClient(target, "k") as client:
        r = client.check_quality(5000, accept_kinds=[HARDWARE])
    assert fake.kinds == [("CheckQuality", [2])]
    assert r.sample_bytes == 5000
    assert r.provenance.kinds == (HARDWARE,) and r.provenance.chunk_count == 1
    assert (r.shannon_entropy_bits_per_byte, r.min_entropy_bits_per_byte) == (7.9, 7.1)
    assert (r.chi_square, r.chi_square_p_value, r.mean) == (301.5, 0.02, 126.25)
    assert r.serial_correlation == serial  # None when the server sent none, 0.0 kept as 0.0
    assert r.pi == MonteCarloPi(3.2, 0.058, 0.05, 833)
    assert r.pi_os_reference == MonteCarloPi(3.1, -0.04, 0.05, 833)
    assert r.fips140_2 == Fips1402(2, 1, 2, 3, 4, 2)
    assert r.passed is False
    assert r.failures == ("monobit: 1 of 2 blocks failed",)
    assert r.thresholds == ("monobit: 9725 < ones < 10275", "chi-square p-value >= 0.001")


def test_status_reports_the_pool_by_class_and_expiry() -> None:
    status = pb.GetStatusResponse(
        pool_by_class=[
            pb.ClassLevel(kinds=[ppb.SOURCE_KIND_QUANTUM, ppb.SOURCE_KIND_OS], bytes=9000),
            pb.ClassLevel(kinds=[ppb.SOURCE_KIND_OS], bytes=100),
        ],
        expired_bytes_total=123,
        max_byte_age_ms=60_000,
    )
    fake = FakeEntropy(status=status)
    with FakeServer(fake) as target, EntropyClient(target, "k") as client:
        s = client.status()
    assert s.pool_by_class == (ClassLevel((QUANTUM, OS), 9000), ClassLevel((OS,), 100))
    assert s.expired_bytes_total == 123 and s.max_byte_age_ms == 60_000
