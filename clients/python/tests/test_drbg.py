"""DRBG constructions against a live dev gateway (its key has `entropy:drbg`; one OS source,
collector "dev-collector"): a call or stream that asks for DRBG output gets it, labelled with its
own instance, and one that does not never does; a stream asks again on every reconnect. The
scope itself is checked on the keys-file gateway in test_quality.py."""

from __future__ import annotations

import re

import grpc
import pytest

from conftest import Gateway, assert_no_repeated_block, entropy_calls
from entropy_diode import (
    AsyncEntropyClient,
    Construction,
    EntropyClient,
    InvalidArgumentError,
    Provenance,
    SourceKind,
)
from fakes import FakeEntropy, FakeServer, Step
from proxy import CuttableProxy

DRBG, RAW = Construction.DRBG, Construction.RAW
CTR_DRBG_AES_256 = 1
MIB = 1 << 20


def assert_drbg(p: Provenance | None, construction: Construction = DRBG) -> str:
    """`p` labels DRBG output whose seeds came from the dev collector; returns its instance id."""
    assert p is not None and p.construction == construction, p
    assert p.drbg is not None
    assert p.drbg.mechanism == CTR_DRBG_AES_256
    assert p.drbg.security_strength_bits == 256
    assert re.fullmatch("[0-9a-f]{32}", p.drbg.instance_id), p.drbg.instance_id
    assert p.drbg.prediction_resistance == (construction == Construction.DRBG_PREDICTION_RESISTANT)
    assert p.drbg.seed_bytes >= 48  # instantiated from 48 pool bytes
    # The seeds' provenance, like any draw's.
    assert p.kinds == (SourceKind.OS,) and p.collector_ids == ("dev-collector",)
    assert p.chunk_count >= 1
    return p.drbg.instance_id


def assert_raw(p: Provenance | None) -> None:
    assert p is not None and p.construction == RAW and p.drbg is None, p
    assert p.collector_ids == ("dev-collector",)


def test_a_drbg_draw_is_labelled_with_an_instance_of_its_own(gateway: Gateway) -> None:
    with EntropyClient(gateway.target, gateway.api_key, construction=DRBG) as client:
        assert client.construction == DRBG
        draws = [client.draw(4096) for _ in range(4)]
    ids = [assert_drbg(d.provenance) for d in draws]
    assert len(set(ids)) == len(ids)  # one instance per unary call
    for d in draws:
        assert d.provenance.drbg is not None
        assert (d.provenance.drbg.reseed_count, d.provenance.drbg.bytes_since_reseed) == (0, 0)
        assert d.provenance.drbg.seed_bytes == 48
    assert_no_repeated_block(b"".join(d.data for d in draws))


def test_a_default_call_is_raw_and_unlabelled(client: EntropyClient) -> None:
    assert client.construction == RAW
    assert_raw(client.draw(32).provenance)
    assert_raw(client.check_quality(2500).provenance)


def test_a_call_overrides_the_client_default_both_ways(gateway: Gateway) -> None:
    with EntropyClient(gateway.target, gateway.api_key) as client:
        assert_drbg(client.draw(64, construction=DRBG).provenance)
        pr = Construction.DRBG_PREDICTION_RESISTANT
        d = client.draw(100_000, construction=pr)  # two 64 KiB generate requests
        assert_drbg(d.provenance, pr)
        assert d.provenance.drbg is not None and d.provenance.drbg.reseed_count >= 1
    with EntropyClient(gateway.target, gateway.api_key, construction=DRBG) as client:
        assert_raw(client.draw(64, construction=RAW).provenance)
        assert_drbg(client.check_quality(2500).provenance)


def test_every_entropy_call_can_ask_for_drbg_output(gateway: Gateway) -> None:
    with EntropyClient(gateway.target, gateway.api_key, construction=DRBG) as client:
        for name, call in entropy_calls(client).items():
            assert call(), name
        report = client.check_quality(100_000)
    assert report.passed, report.failures
    assert_drbg(report.provenance)


async def test_every_message_of_a_drbg_stream_names_its_one_instance(gateway: Gateway) -> None:
    async with AsyncEntropyClient(gateway.target, gateway.api_key) as client:
        async with client.reader(1 * MIB, chunk_bytes=64 * 1024, construction=DRBG) as reader:
            labels = []
            async for chunk in reader:
                assert reader.provenance is not None and reader.provenance.drbg is not None
                labels.append((len(chunk), assert_drbg(reader.provenance), reader.provenance.drbg))
    assert len(labels) >= 16
    assert len({instance for _, instance, _ in labels}) == 1
    # Each message says how much its instance made before it (no reseed within a 1 MiB stream).
    made = 0
    for size, _, drbg in labels:
        assert (drbg.bytes_since_reseed, drbg.reseed_count) == (made, 0)
        made += size


def test_a_drbg_stream_keeps_asking_for_drbg_across_a_reconnect(gateway: Gateway) -> None:
    total = 4 * MIB
    # The first connection carries at most 2 MiB, so the stream cannot finish before the cut.
    proxy = CuttableProxy(gateway.target, first_limit=2 * MIB)
    try:
        with EntropyClient(proxy.target, gateway.api_key, construction=DRBG) as client:
            with client.reader(total, chunk_bytes=64 * 1024) as reader:
                first = reader.read(MIB)
                before = assert_drbg(reader.provenance)
                proxy.cut()
                rest = reader.read(total)
                after = assert_drbg(reader.provenance)
                opened = reader.streams_opened
    finally:
        proxy.close()
    assert opened >= 2, "the cut should have forced a new stream"
    assert after != before  # a new stream, a new instance
    data = first + rest
    assert len(data) == total
    assert_no_repeated_block(data)


def test_a_reader_resends_its_construction_on_every_stream() -> None:
    # Exactly what goes on the wire, on a scripted server that fails the stream twice.
    fake = FakeEntropy([Step(2, grpc.StatusCode.UNAVAILABLE)] * 2)
    with FakeServer(fake) as target, EntropyClient(target, "k", construction=DRBG) as client:
        with client.reader(5000, chunk_bytes=1000) as reader:
            assert len(reader.read()) == 5000
        pr = Construction.DRBG_PREDICTION_RESISTANT
        with client.reader(1000, chunk_bytes=1000, construction=pr) as reader:
            assert len(reader.read()) == 1000
    assert fake.constructions == [("StreamRandom", DRBG)] * 3 + [("StreamRandom", pr)]


@pytest.mark.parametrize("value", [-1, 4, 99])
def test_an_unknown_construction_is_the_gateways_invalid_argument(
    client: EntropyClient, value: int
) -> None:
    for name, call in entropy_calls(client, construction=Construction(value)).items():
        with pytest.raises(InvalidArgumentError) as e:
            call()
        assert "construction" in e.value.details, (name, e.value.details)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("drbg", "construction is 'drbg', not a Construction"),
        (True, "construction is True, not a Construction"),
        (2.0, "construction is 2.0, not a Construction"),
        (1 << 31, f"construction is {1 << 31}, not a Construction"),
    ],
)
def test_a_construction_that_is_not_one_is_refused_before_sending(
    value: object, message: str
) -> None:
    fake = FakeEntropy()
    with pytest.raises(InvalidArgumentError, match=message):
        EntropyClient("127.0.0.1:9", "k", construction=value)  # type: ignore[arg-type]
    with FakeServer(fake) as target, EntropyClient(target, "k") as client:
        with pytest.raises(InvalidArgumentError, match=message):
            client.get_floats(1, construction=value)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match=message):
            client.reader(10, construction=value)  # type: ignore[arg-type]
    assert fake.constructions == []  # nothing was sent
