"""Issue #15 against a live dev gateway (one OS source, collector "dev-collector"): quality
checks, provenance, the source filter (`accept_kinds`) and FAILED_PRECONDITION, the pool by
class in the status; and the `quality:check` and `entropy:drbg` scopes on a gateway with a keys
file."""

from __future__ import annotations

import hashlib
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
import pytest

from conftest import (
    Gateway,
    assert_no_repeated_block,
    entropy_calls,
    free_port,
    gateway_binary,
    stop_gateway,
)
from entropy_diode import (
    AsyncEntropyClient,
    Construction,
    EntropyClient,
    EntropyError,
    FailedPreconditionError,
    InvalidArgumentError,
    PermissionDeniedError,
    QualityReport,
    SourceKind,
    UnavailableError,
)

QUANTUM, OS = SourceKind.QUANTUM, SourceKind.OS


def assert_dev_quality(r: QualityReport, sample_bytes: int) -> None:
    assert r.passed is True, r.failures
    assert r.sample_bytes == sample_bytes
    assert r.provenance.kinds == (OS,)
    assert r.provenance.collector_ids == ("dev-collector",)
    assert r.fips140_2.blocks == sample_bytes * 8 // 20_000
    assert r.fips140_2.blocks_failed == 0
    assert r.failures == ()
    assert r.thresholds and all(isinstance(t, str) and t for t in r.thresholds)
    assert r.pi.points > 0
    assert r.pi_os_reference.points == r.pi.points
    assert 0 < r.min_entropy_bits_per_byte <= r.shannon_entropy_bits_per_byte <= 8
    assert 0 <= r.chi_square_p_value <= 1
    assert r.serial_correlation is not None and -1 <= r.serial_correlation <= 1


def test_check_quality_of_4096_dev_bytes_passes(client: EntropyClient) -> None:
    r = client.check_quality(4096)
    assert_dev_quality(r, 4096)
    assert r.fips140_2.blocks == 1


def test_check_quality_at_both_bounds(client: EntropyClient) -> None:
    low = client.check_quality(2500)
    assert low.sample_bytes == 2500 and low.fips140_2.blocks == 1
    assert low.provenance.kinds == (OS,)
    high = client.check_quality(4_194_304)
    assert high.sample_bytes == 4_194_304 and high.fips140_2.blocks == 1677
    assert high.pi_os_reference.points == high.pi.points > 0


@pytest.mark.parametrize(("n", "bound"), [(100, "2500"), (2499, "2500"), (4_194_305, "4194304")])
def test_check_quality_out_of_bounds_is_invalid_argument(
    client: EntropyClient, n: int, bound: str
) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        client.check_quality(n)
    assert "sample_bytes" in e.value.details and bound in e.value.details, e.value.details


def test_draw_reports_the_dev_provenance(client: EntropyClient) -> None:
    d = client.draw(32)
    assert len(d.data) == 32
    p = d.provenance
    assert p.kinds == (OS,)
    assert p.mixed is False
    assert p.collector_ids == ("dev-collector",)
    assert p.chunk_count >= 1
    assert p.first_chunk is not None and p.last_chunk is not None
    assert p.first_chunk.collector_id == "dev-collector"
    assert p.last_chunk.collector_id == "dev-collector"
    assert p.first_chunk.sequence <= p.last_chunk.sequence
    assert p.first_chunk.epoch == p.last_chunk.epoch  # one collector run
    assert p.first_chunk.signed_at_unix_ms > 0
    assert p.oldest_byte_age_ms >= 0


def test_draws_are_distinct_bytes(client: EntropyClient) -> None:
    assert_no_repeated_block(b"".join(client.draw(4096).data for _ in range(16)))


def test_the_stream_reader_reports_its_provenance(client: EntropyClient) -> None:
    with client.reader(200_000, chunk_bytes=50_000) as reader:
        assert reader.provenance is None
        assert len(reader.read()) == 200_000
        p = reader.provenance
    assert p is not None and p.kinds == (OS,) and p.collector_ids == ("dev-collector",)
    assert p.first_chunk is not None and p.first_chunk.collector_id == "dev-collector"


def assert_names_the_pool(e: EntropyError) -> None:
    assert "QUANTUM" in e.details and "OS" in e.details, e.details


def test_quantum_only_on_the_dev_gateway_is_failed_precondition(client: EntropyClient) -> None:
    for name, call in entropy_calls(client, accept_kinds=[QUANTUM]).items():
        with pytest.raises(FailedPreconditionError) as e:
            call()
        assert e.value.code.name == "FAILED_PRECONDITION", name
        assert_names_the_pool(e.value)


def test_a_filter_the_pool_can_serve_is_served(client: EntropyClient) -> None:
    for kinds in ([OS], [QUANTUM, OS], [SourceKind.HARDWARE, OS], []):
        calls = entropy_calls(client, accept_kinds=kinds)
        for name, call in calls.items():
            assert call(), (name, kinds)
        d = client.draw(64, accept_kinds=kinds)
        assert len(d.data) == 64 and d.provenance.kinds == (OS,)


def test_the_client_default_filter_applies_and_a_call_may_override_it(gateway: Gateway) -> None:
    with EntropyClient(gateway.target, gateway.api_key, accept_kinds=[QUANTUM]) as client:
        for call in entropy_calls(client).values():
            with pytest.raises(FailedPreconditionError) as e:
                call()
            assert_names_the_pool(e.value)
        assert len(client.get_bytes(8, accept_kinds=[])) == 8
        assert len(client.get_bytes(8, accept_kinds=[OS])) == 8
        assert client.status().serving  # GetStatus has no filter


def test_a_quantum_only_stream_ends_with_failed_precondition_without_retrying(
    gateway: Gateway,
) -> None:
    with EntropyClient(gateway.target, gateway.api_key, accept_kinds=[QUANTUM]) as client:
        with client.reader(chunk_bytes=1024) as reader:  # endless: only the error ends it
            with pytest.raises(FailedPreconditionError) as e:
                reader.read(10_000)
            assert reader.streams_opened == 1 and reader.reconnects == 0
            assert reader.received == 0
    assert_names_the_pool(e.value)


@pytest.mark.parametrize(
    ("kinds", "field"),
    [([0], "accept_kinds[0]"), ([OS, 0], "accept_kinds[1]"), ([9], "accept_kinds[0]")],
)
def test_unspecified_or_unknown_kinds_are_invalid_argument(
    client: EntropyClient, kinds: list[int], field: str
) -> None:
    for name, call in entropy_calls(client, accept_kinds=kinds).items():
        with pytest.raises(InvalidArgumentError) as e:
            call()
        assert field in e.value.details, (name, e.value.details)


def test_status_reports_the_pool_by_class(client: EntropyClient) -> None:
    s = client.status()
    assert len(s.pool_by_class) == 1, s.pool_by_class
    assert s.pool_by_class[0].kinds == (OS,)
    assert s.expired_bytes_total == 0
    assert s.max_byte_age_ms == 0


async def test_the_async_client_has_the_same_surface(gateway: Gateway) -> None:
    async with AsyncEntropyClient(gateway.target, gateway.api_key) as client:
        assert_dev_quality(await client.check_quality(4096), 4096)
        d = await client.draw(32, accept_kinds=[QUANTUM, OS])
        assert len(d.data) == 32 and d.provenance.collector_ids == ("dev-collector",)
        with pytest.raises(FailedPreconditionError) as e:
            await client.get_uuids(1, accept_kinds=[QUANTUM])
        assert_names_the_pool(e.value)
        with pytest.raises(InvalidArgumentError, match="sample_bytes"):
            await client.check_quality(100)
        async with client.reader(accept_kinds=[QUANTUM]) as reader:
            with pytest.raises(FailedPreconditionError):
                await reader.read(100)
            assert reader.streams_opened == 1
        async with client.reader(100_000, accept_kinds=[OS]) as reader:
            assert len(await reader.read(100_000)) == 100_000
            assert reader.provenance is not None and reader.provenance.kinds == (OS,)
        s = await client.status()
        assert [c.kinds for c in s.pool_by_class] == [(OS,)]


# -- scopes: a gateway with a keys file (and no collector: its pool stays empty) -------------


@pytest.fixture(scope="module")
def keys_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    """(target, key with the default scopes, key with quality:check too)."""
    tmp: Path = tmp_path_factory.mktemp("keys-gateway")
    plain, quality = "plain-" + secrets.token_hex(8), "quality-" + secrets.token_hex(8)

    def entry(name: str, secret: str, scopes: str) -> str:
        digest = hashlib.sha256(secret.encode()).hexdigest()
        return f'[[key]]\nname = "{name}"\nsha256 = "{digest}"\n{scopes}\n'

    keys_file = tmp / "keys.toml"
    keys_file.write_text(
        entry("plain", plain, "")  # the default scopes: entropy:read, status:read
        + entry("quality", quality, 'scopes = ["entropy:read", "status:read", "quality:check"]')
    )
    mac_dir = tmp / "mac"
    mac_dir.mkdir()
    (mac_dir / "k1.key").write_text(os.urandom(32).hex() + "\n")
    target = f"127.0.0.1:{free_port()}"
    log = tmp / "gateway.log"
    proc = subprocess.Popen(
        [gateway_binary(), "--listen-addr", target, "--api-keys-file", str(keys_file),
         "--ingest-keys-dir", str(mac_dir), "--state-dir", str(tmp / "gateway-state"),
         "--ingest-listen-addr", f"127.0.0.1:{free_port()}",
         "--metrics-listen-addr", "", "--pool-capacity-bytes", str(1 << 20),
         "--max-wait-ms", "300", "--gateway-id", "py-scope-test"],
        env={k: v for k, v in os.environ.items() if not k.startswith("ENTROPY_")},
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )
    try:
        # Never serving (no collector): up once GetStatus answers.
        deadline = time.monotonic() + 20
        with EntropyClient(target, plain, timeout=1.0) as c:
            while True:
                try:
                    c.status()
                    break
                except EntropyError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"keys-file gateway did not come up (exit {proc.poll()}):"
                            f" {log.read_text()[-2000:]}"
                        )
                    time.sleep(0.1)
        yield target, plain, quality
    finally:
        stop_gateway(proc)


def test_check_quality_needs_the_quality_scope(keys_gateway: tuple[str, str, str]) -> None:
    target, plain, quality = keys_gateway
    with EntropyClient(target, plain) as client:
        with pytest.raises(PermissionDeniedError) as e:
            client.check_quality(4096)
        assert "quality:check" in e.value.details, e.value.details
    # A key that lists the scope gets past it: the empty pool then answers UNAVAILABLE after
    # the gateway's maximum wait, as any draw.
    with EntropyClient(target, quality) as client:
        with pytest.raises(UnavailableError):
            client.check_quality(4096)


def test_a_drbg_construction_needs_the_drbg_scope(keys_gateway: tuple[str, str, str]) -> None:
    target, plain, quality = keys_gateway
    # Neither key lists entropy:drbg. The scope is checked before anything is drawn, so the
    # empty pool does not matter; a stream reader does not retry the refusal.
    with EntropyClient(target, quality, construction=Construction.DRBG) as client:
        for name, call in entropy_calls(client).items():
            with pytest.raises(PermissionDeniedError) as e:
                call()
            assert "entropy:drbg" in e.value.details, (name, e.value.details)
        with client.reader(chunk_bytes=1024) as reader:
            with pytest.raises(PermissionDeniedError):
                reader.read(1)
            assert reader.streams_opened == 1
    with EntropyClient(target, plain) as client:
        pr = Construction.DRBG_PREDICTION_RESISTANT
        with pytest.raises(PermissionDeniedError, match="entropy:drbg"):
            client.get_bytes(8, construction=pr)
        # RAW needs no more than entropy:read: the empty pool answers, as for any draw.
        with pytest.raises(UnavailableError):
            client.get_bytes(8, construction=Construction.RAW)
