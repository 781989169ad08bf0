"""The unary calls against a live dev gateway: exact sizes, ranges, formats, and status."""

from __future__ import annotations

import uuid

import pytest

from conftest import Gateway, assert_no_repeated_block
from entropy_diode import AuthenticationError, EntropyClient, InvalidArgumentError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@pytest.mark.parametrize("n", [1, 32, 1000, 1 << 20])
def test_get_bytes_returns_exactly_n(client: EntropyClient, n: int) -> None:
    data = client.get_bytes(n)
    assert isinstance(data, bytes)
    assert len(data) == n


def test_get_bytes_never_repeats_across_calls(client: EntropyClient) -> None:
    assert_no_repeated_block(b"".join(client.get_bytes(1024) for _ in range(64)))


@pytest.mark.parametrize("n", [0, 1048577])
def test_get_bytes_out_of_range_is_invalid_argument(client: EntropyClient, n: int) -> None:
    with pytest.raises(InvalidArgumentError, match="num_bytes"):
        client.get_bytes(n)


def test_dice_are_in_range_and_every_face_shows(client: EntropyClient) -> None:
    rolls = client.get_integers(1, 6, count=1000)
    assert len(rolls) == 1000
    assert set(rolls) == {1, 2, 3, 4, 5, 6}  # a face missing from 1000 rolls: p < 1e-78


def test_full_int64_range(client: EntropyClient) -> None:
    values = client.get_integers(INT64_MIN, INT64_MAX, count=200)
    assert len(values) == 200
    assert all(INT64_MIN <= v <= INT64_MAX for v in values)
    assert any(v < 0 for v in values) and any(v > 0 for v in values)  # p ~ 2^-199 otherwise


def test_single_value_range(client: EntropyClient) -> None:
    assert client.get_integers(-7, -7, count=5) == [-7] * 5


def test_min_above_max_is_invalid_argument(client: EntropyClient) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        client.get_integers(5, 1)
    assert "min" in e.value.details and "max" in e.value.details


@pytest.mark.parametrize("count", [0, 10001])
def test_count_out_of_range_is_invalid_argument(client: EntropyClient, count: int) -> None:
    for call in (
        lambda: client.get_integers(1, 6, count=count),
        lambda: client.get_floats(count),
        lambda: client.get_uuids(count),
    ):
        with pytest.raises(InvalidArgumentError, match="count"):
            call()


def test_values_beyond_int64_are_rejected_before_sending(client: EntropyClient) -> None:
    with pytest.raises(InvalidArgumentError):
        client.get_integers(0, INT64_MAX + 1)


def test_floats_are_53_bit_multiples_in_unit_interval(client: EntropyClient) -> None:
    values = client.get_floats(1000)
    assert len(values) == 1000
    assert all(0.0 <= v < 1.0 for v in values)
    assert all((v * 2**53).is_integer() for v in values)
    assert len(set(values)) == 1000


def test_uuids_are_distinct_version_4(client: EntropyClient) -> None:
    ids = client.get_uuids(100)
    assert len(ids) == 100 and len(set(ids)) == 100
    for u in ids:
        assert isinstance(u, uuid.UUID)
        assert u.version == 4
        assert u.variant == uuid.RFC_4122


def test_status_reports_pool_and_labelled_sources(client: EntropyClient, gateway: Gateway) -> None:
    status = client.status()
    if gateway.pool_capacity is not None:
        assert status.pool_capacity_bytes == gateway.pool_capacity
    assert 0 <= status.pool_bytes <= status.pool_capacity_bytes
    assert status.serving
    assert status.sources, "a dev gateway reports its OS source"
    assert {s.kind for s in status.sources} == {"os"}  # dev mode: labelled, never "quantum"


def test_served_counter_counts_what_we_take(client: EntropyClient) -> None:
    before = client.status().served_bytes_total
    client.get_bytes(4096)
    assert client.status().served_bytes_total >= before + 4096


def test_usage_reads_the_keys_own_limits_and_counts_its_open_stream(gateway: Gateway) -> None:
    with EntropyClient(gateway.target, gateway.api_key) as client:
        usage = client.usage()
        assert usage.key_name == "dev"
        # The dev key has no rate or stream limit; the undelivered allowance always has one.
        assert (usage.requests, usage.bytes, usage.drbg_bytes) == (None, None, None)
        assert usage.streams.limit is None and usage.streams.remaining is None
        assert usage.undelivered_bytes.limit == 32 << 20
        held = usage.undelivered_bytes
        assert held.in_use + (held.remaining or 0) == held.limit
        before = usage.streams.in_use
        with client.reader(chunk_bytes=4096) as reader:
            assert len(reader.read(4096)) == 4096
            assert client.usage().streams.in_use >= before + 1
    with EntropyClient(gateway.target, "not-a-key") as stranger:
        with pytest.raises(AuthenticationError):
            stranger.usage()
