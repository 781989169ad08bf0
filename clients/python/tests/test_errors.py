"""Each gRPC status the gateway documents becomes its own exception class."""

from __future__ import annotations

import time

import grpc
import pytest

from conftest import Gateway, free_port
from entropy_diode import (
    AuthenticationError,
    DeadlineExceededError,
    EntropyClient,
    EntropyError,
    FailedPreconditionError,
    InvalidArgumentError,
    PermissionDeniedError,
    QuotaExceededError,
    UnavailableError,
)
from entropy_diode.errors import from_status
from fakes import FakeEntropy, FakeServer
from proxy import BlackHole


def test_bad_key_is_authentication_error(gateway: Gateway) -> None:
    # (A missing key is refused before any call: see test_config.py.)
    with EntropyClient(gateway.target, "wrong-key") as client:
        with pytest.raises(AuthenticationError) as e:
            client.get_bytes(32)
    assert e.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_every_entropy_call_needs_the_key(gateway: Gateway) -> None:
    with EntropyClient(gateway.target, "wrong-key") as client:
        for call in (
            lambda: client.get_integers(1, 6),
            lambda: client.get_floats(1),
            lambda: client.get_uuids(1),
            lambda: client.status(),
            lambda: client.reader(100).read(100),
        ):
            with pytest.raises(AuthenticationError):
                call()


def test_a_deadline_that_passes_first_is_deadline_exceeded() -> None:
    # A server that never answers: the client's own deadline must end the call. (A tiny
    # timeout against a live gateway races it: 1 MiB over loopback can beat even timeout=0.)
    hole = BlackHole()
    try:
        with EntropyClient(hole.target, "k") as client:
            start = time.monotonic()
            with pytest.raises(DeadlineExceededError) as e:
                client.get_bytes(32, timeout=0.3)
            assert time.monotonic() - start < 5
    finally:
        hole.close()
    assert isinstance(e.value, TimeoutError)


def test_the_client_default_timeout_applies(gateway: Gateway) -> None:
    hole = BlackHole()
    try:
        with EntropyClient(hole.target, "k", timeout=0.3) as client:
            with pytest.raises(DeadlineExceededError):
                client.status()
    finally:
        hole.close()


def test_nothing_listening_is_unavailable() -> None:
    with EntropyClient(f"127.0.0.1:{free_port()}", "k", timeout=5) as client:
        with pytest.raises(UnavailableError):
            client.get_bytes(1)


def test_invalid_argument_is_a_value_error(client: EntropyClient) -> None:
    with pytest.raises(ValueError):
        client.get_bytes(0)


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidArgumentError),
        (grpc.StatusCode.UNAUTHENTICATED, AuthenticationError),
        (grpc.StatusCode.PERMISSION_DENIED, PermissionDeniedError),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, QuotaExceededError),
        (grpc.StatusCode.UNAVAILABLE, UnavailableError),
        (grpc.StatusCode.DEADLINE_EXCEEDED, DeadlineExceededError),
        (grpc.StatusCode.FAILED_PRECONDITION, FailedPreconditionError),
    ],
)
def test_status_from_the_wire_maps_to_its_class(code: grpc.StatusCode, cls: type) -> None:
    # PERMISSION_DENIED and RESOURCE_EXHAUSTED (scopes, quotas) are in the contract but the dev
    # gateway has no way to produce them yet, so a scripted server sends each code for real.
    fake = FakeEntropy(unary_error=(code, "scripted", (("retry-after-ms", "1500"),)))
    with FakeServer(fake) as target, EntropyClient(target, "k") as client:
        with pytest.raises(cls) as e:
            client.get_bytes(8)
    assert type(e.value) is cls
    assert e.value.code == code and e.value.details == "scripted"
    if cls is QuotaExceededError:
        assert e.value.retry_after == 1.5


def test_unlisted_codes_are_plain_entropy_errors() -> None:
    err = from_status(grpc.StatusCode.INTERNAL, "boom")
    assert type(err) is EntropyError and err.code == grpc.StatusCode.INTERNAL


def test_quota_error_without_trailer_has_no_retry_after() -> None:
    err = from_status(grpc.StatusCode.RESOURCE_EXHAUSTED, "quota")
    assert isinstance(err, QuotaExceededError) and err.retry_after is None
