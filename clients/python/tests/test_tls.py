"""TLS end to end: a dev gateway serving TLS with `entropy-gateway dev-certs` certificates,
reached through ENTROPY_CA_FILE (which makes even a bare loopback endpoint TLS)."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import free_port, gateway_binary, spawn_gateway, stop_gateway, wait_serving
from entropy_diode import EntropyClient, UnavailableError


@dataclass(frozen=True)
class TlsGateway:
    port: int
    api_key: str
    ca_file: str


@pytest.fixture(scope="module")
def tls_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsGateway]:
    certs: Path = tmp_path_factory.mktemp("certs")
    subprocess.run(
        [gateway_binary(), "dev-certs", "--out", str(certs)], check=True, capture_output=True
    )
    gw = TlsGateway(free_port(), "py-tls-" + secrets.token_hex(8), str(certs / "ca.pem"))
    proc = spawn_gateway(
        f"127.0.0.1:{gw.port}", gw.api_key,
        "--tls-cert-file", str(certs / "gateway.pem"), "--tls-key-file", str(certs / "gateway.key"),
    )
    try:
        wait_serving(f"127.0.0.1:{gw.port}", gw.api_key, ca_file=gw.ca_file)
        yield gw
    finally:
        stop_gateway(proc)


def test_the_ca_file_from_the_environment_makes_loopback_tls(
    tls_gateway: TlsGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENTROPY_ENDPOINT", f"127.0.0.1:{tls_gateway.port}")
    monkeypatch.setenv("ENTROPY_API_KEY", tls_gateway.api_key)
    monkeypatch.setenv("ENTROPY_CA_FILE", tls_gateway.ca_file)
    with EntropyClient.from_env() as client:
        assert client.endpoint.tls
        assert len(client.get_bytes(32)) == 32
        with client.reader(100_000) as reader:
            assert len(reader.read()) == 100_000


def test_https_with_a_host_name(tls_gateway: TlsGateway) -> None:
    endpoint = f"https://localhost:{tls_gateway.port}/"
    with EntropyClient(endpoint, tls_gateway.api_key, ca_file=tls_gateway.ca_file) as client:
        assert len(client.get_bytes(16)) == 16


def test_plaintext_to_a_tls_gateway_fails(tls_gateway: TlsGateway) -> None:
    # Bare loopback without a CA file is plaintext, which a TLS listener does not speak.
    with EntropyClient(f"127.0.0.1:{tls_gateway.port}", tls_gateway.api_key, timeout=5) as client:
        assert not client.endpoint.tls
        with pytest.raises(UnavailableError):
            client.get_bytes(16)
