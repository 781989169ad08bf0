"""The rules every client follows before any call: one endpoint syntax with the TLS rule,
API keys checked at construction (without ever quoting them), and the environment."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from conftest import Gateway
from entropy_diode import (
    AsyncEntropyClient,
    Endpoint,
    EntropyClient,
    InvalidArgumentError,
    check_api_key,
    parse_endpoint,
)

V6 = "2001:db8::1"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:50051", Endpoint("127.0.0.1", 50051, tls=False)),
        ("127.0.0.1", Endpoint("127.0.0.1", 50051, tls=False)),
        ("127.8.9.10:1", Endpoint("127.8.9.10", 1, tls=False)),
        ("localhost:7000", Endpoint("localhost", 7000, tls=False)),
        ("LOCALHOST", Endpoint("LOCALHOST", 50051, tls=False)),
        ("[::1]:50052", Endpoint("::1", 50052, tls=False)),
        ("[::1]", Endpoint("::1", 50051, tls=False)),
        # a bare remote host is TLS: the key must not cross the network in the clear
        ("entropy.example.com:443", Endpoint("entropy.example.com", 443, tls=True)),
        ("entropy.example.com", Endpoint("entropy.example.com", 50051, tls=True)),
        ("10.0.0.7:50051", Endpoint("10.0.0.7", 50051, tls=True)),
        ("128.0.0.1:50051", Endpoint("128.0.0.1", 50051, tls=True)),
        (f"[{V6}]:9000", Endpoint(V6, 9000, tls=True)),
        ("my_host-1:65535", Endpoint("my_host-1", 65535, tls=True)),
        ("https://entropy.example.com", Endpoint("entropy.example.com", 50051, tls=True)),
        ("https://entropy.example.com:8443/", Endpoint("entropy.example.com", 8443, tls=True)),
        ("https://127.0.0.1:50051", Endpoint("127.0.0.1", 50051, tls=True)),
        ("https://[::1]:1/", Endpoint("::1", 1, tls=True)),
        ("http://gateway.internal:50051", Endpoint("gateway.internal", 50051, tls=False)),
        ("http://localhost/", Endpoint("localhost", 50051, tls=False)),
        (f"http://[{V6}]", Endpoint(V6, 50051, tls=False)),
    ],
)
def test_endpoint_forms(text: str, expected: Endpoint) -> None:
    assert parse_endpoint(text) == expected


def test_a_ca_file_makes_a_bare_loopback_endpoint_tls() -> None:
    assert parse_endpoint("127.0.0.1:50051", have_ca_file=True).tls
    assert parse_endpoint("[::1]", have_ca_file=True).tls
    assert parse_endpoint("https://localhost", have_ca_file=True).tls


def test_endpoint_target_and_text() -> None:
    assert parse_endpoint("[::1]:5").target == "[::1]:5"
    assert str(parse_endpoint("[::1]:5")) == "http://[::1]:5"
    assert str(parse_endpoint("example.com")) == "https://example.com:50051"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("h:x", "the port must be a number 1..=65535"),
        ("h:", "the port must be a number 1..=65535"),
        ("h:0", "the port must be a number 1..=65535"),
        ("h:65536", "the port must be a number 1..=65535"),
        ("h:-1", "the port must be a number 1..=65535"),
        ("h:123456", "the port must be a number 1..=65535"),
        ("h: 80", "the port must be a number 1..=65535"),
        ("", "no host"),
        (":50051", "no host"),
        ("https://", "no host"),
        ("grpc://h:1", "the scheme must be http:// or https:// (or none)"),
        ("HTTPS://h:1", "the scheme must be http:// or https:// (or none)"),
        ("h:1/path", "nothing may follow host:port but one /"),
        ("h:1//", "nothing may follow host:port but one /"),
        ("https://h/x/", "nothing may follow host:port but one /"),
        ("[::1:50051", "an IPv6 address needs its closing ]"),
        ("[::1]50051", "only :port may follow the host"),
        ("[127.0.0.1]:1", "not an IPv6 address in brackets"),
        ("[nope]:1", "not an IPv6 address in brackets"),
        ("[]:1", "not an IPv6 address in brackets"),
        ("::1", "an IPv6 address goes in brackets"),
        ("2001:db8::1:50051", "an IPv6 address goes in brackets"),
        ("my host:1", "the host may hold only letters, digits"),
        ("user@h:1", "the host may hold only letters, digits"),
        ("h?x=1", "the host may hold only letters, digits"),
    ],
)
def test_endpoint_errors_quote_it_and_say_why(text: str, why: str) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        parse_endpoint(text)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert isinstance(e.value, ValueError)
    assert e.value.details.startswith(f'endpoint "{text}": ')
    assert why in e.value.details


def test_the_contract_example_message() -> None:
    with pytest.raises(InvalidArgumentError) as e:
        parse_endpoint("h:x")
    assert e.value.details == 'endpoint "h:x": the port must be a number 1..=65535'


def test_http_with_a_ca_file_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="http:// is plaintext, but a CA file"):
        parse_endpoint("http://h:1", have_ca_file=True)


def test_a_bad_endpoint_fails_at_construction() -> None:
    with pytest.raises(InvalidArgumentError, match='endpoint "h:x"'):
        EntropyClient("h:x", "key")


SECRET = "s3cr3t-KEY-value"


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("", "API key is missing"),
        (SECRET + "\n", f"a line break at position {len(SECRET)}"),
        (SECRET + "\r\n", f"a line break at position {len(SECRET)}"),
        (" " + SECRET, "a space at position 0"),
        (SECRET[:4] + " " + SECRET[4:], "a space at position 4"),
        (SECRET + "\t", f"a tab at position {len(SECRET)}"),
        (SECRET[:3] + "é" + SECRET[3:], "a character outside 0x21..0x7e at position 3"),
        (SECRET[:2] + "\x7f" + SECRET[2:], "a character outside 0x21..0x7e at position 2"),
        (SECRET[:1] + "\x00" + SECRET[1:], "a character outside 0x21..0x7e at position 1"),
        (SECRET * 40, f"API key is {len(SECRET) * 40} characters long, at most 512"),
    ],
)
def test_bad_keys_fail_at_construction_without_quoting_the_key(key: str, why: str) -> None:
    for construct in (
        lambda: check_api_key(key),
        lambda: EntropyClient("127.0.0.1:1", key),
        lambda: EntropyClient.from_env("127.0.0.1:1", key),
    ):
        with pytest.raises(InvalidArgumentError) as e:
            construct()
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert why in e.value.details
        assert SECRET not in str(e.value) and SECRET[:6] not in str(e.value)
        assert SECRET not in repr(e.value) and SECRET[:6] not in repr(e.value)


async def test_the_async_client_checks_the_same() -> None:
    with pytest.raises(InvalidArgumentError, match="a line break at position 3"):
        AsyncEntropyClient("127.0.0.1:1", "abc\n")
    with pytest.raises(InvalidArgumentError, match='endpoint "h:x"'):
        AsyncEntropyClient("h:x", "abc")


def test_good_keys_pass() -> None:
    for key in ("k", "!", "~" * 512, "".join(chr(c) for c in range(0x21, 0x7F))):
        assert check_api_key(key) == key


def test_from_env_reads_the_three_variables(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENTROPY_ENDPOINT", gateway.target)
    monkeypatch.setenv("ENTROPY_API_KEY", gateway.api_key)
    monkeypatch.delenv("ENTROPY_CA_FILE", raising=False)
    with EntropyClient.from_env() as client:
        assert not client.endpoint.tls
        assert len(client.get_bytes(16)) == 16


def test_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENTROPY_ENDPOINT", "h:x")  # would fail if it were used
    monkeypatch.setenv("ENTROPY_API_KEY", "bad key")
    with EntropyClient.from_env("localhost:1", "good-key") as client:
        assert client.endpoint == Endpoint("localhost", 1, tls=False)
    with pytest.raises(InvalidArgumentError, match='endpoint "h:x"'):
        EntropyClient.from_env(api_key="good-key")
    with pytest.raises(InvalidArgumentError, match="a space at position 3"):
        EntropyClient.from_env("localhost:1")


def test_from_env_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENTROPY_ENDPOINT", raising=False)
    monkeypatch.delenv("ENTROPY_CA_FILE", raising=False)
    monkeypatch.delenv("ENTROPY_API_KEY", raising=False)
    with pytest.raises(InvalidArgumentError, match="API key is missing.*ENTROPY_API_KEY"):
        EntropyClient.from_env()
    with EntropyClient.from_env(api_key="k") as client:
        assert client.endpoint == Endpoint("127.0.0.1", 50051, tls=False)


def test_a_ca_file_from_the_environment_makes_loopback_tls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("ENTROPY_CA_FILE", str(ca))
    with EntropyClient.from_env("127.0.0.1:1", "k") as client:
        assert client.endpoint.tls
    with pytest.raises(InvalidArgumentError, match="http:// is plaintext, but a CA file"):
        EntropyClient.from_env("http://127.0.0.1:1", "k")


def test_a_bad_ca_file_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="No such file"):
        EntropyClient("h:1", "k", ca_file=tmp_path / "missing.pem")
    (tmp_path / "empty.pem").write_text("not a certificate")
    with pytest.raises(InvalidArgumentError, match="holds no PEM certificate"):
        EntropyClient("h:1", "k", ca_file=tmp_path / "empty.pem")


def test_credentials_override_the_tls_rule() -> None:
    creds = grpc.ssl_channel_credentials()
    with EntropyClient("127.0.0.1:1", "k", credentials=creds) as client:
        assert client.endpoint.tls
    with pytest.raises(InvalidArgumentError, match="not both"):
        EntropyClient("h:1", "k", credentials=creds, ca_file="x.pem")
