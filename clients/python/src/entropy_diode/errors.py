"""Exceptions raised by the client, one class per gRPC status the gateway documents.

Callers catch what they can act on (`UnavailableError`: retry; `InvalidArgumentError`: fix the
call) instead of inspecting `grpc.RpcError` codes. Every class keeps the original code and the
server's message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc

__all__ = [
    "EntropyError",
    "InvalidArgumentError",
    "AuthenticationError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "UnavailableError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "ReceiptError",
    "from_rpc_error",
]


class EntropyError(Exception):
    """Any failed call. `code` is the gRPC status code, `details` the server's message."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


class InvalidArgumentError(EntropyError, ValueError):
    """INVALID_ARGUMENT: a field is out of range; the message names the field and its bounds."""


class AuthenticationError(EntropyError):
    """UNAUTHENTICATED: no API key, or a key the gateway does not know."""


class PermissionDeniedError(EntropyError):
    """PERMISSION_DENIED: the key is valid but lacks the scope this call needs."""


class QuotaExceededError(EntropyError):
    """RESOURCE_EXHAUSTED: the key's quota is used up; retry after `retry_after` seconds
    (from the `retry-after-ms` trailer; None when the server sent none)."""

    def __init__(self, code: grpc.StatusCode, details: str, retry_after: float | None) -> None:
        super().__init__(code, details)
        self.retry_after = retry_after


class UnavailableError(EntropyError):
    """UNAVAILABLE: not enough entropy within the server's maximum wait, the server is shutting
    down, or it cannot be reached. Nothing was consumed: retrying is safe."""


class DeadlineExceededError(EntropyError, TimeoutError):
    """DEADLINE_EXCEEDED: the call's own timeout passed first. Nothing was consumed."""


class FailedPreconditionError(EntropyError):
    """FAILED_PRECONDITION: the call accepts only some source kinds (`accept_kinds`) and the
    pool holds none of them and none arrived lately; the message names what the pool holds.
    Nothing was consumed. Not transient: retrying the same call fails the same way until a
    source of an accepted kind feeds the gateway, so stream readers do not retry it. Also a
    receipt asked of a gateway with no receipt log (the message names `receipts_dir`)."""


class ReceiptError(EntropyError, ValueError):
    """A receipt, tree head, proof, commitment opening, audit listing, draw file or key file
    that does not verify or is not in the one canonical form (`entropy_diode.receipts`,
    docs/receipts.md). Raised by the offline verifier, never by a call: the message names what
    failed (the field, the bound, the check). `code` is INVALID_ARGUMENT (the input is not
    what it claims), but this is not an `InvalidArgumentError`: a forged or damaged receipt is
    not a call to fix."""

    def __init__(self, details: str) -> None:
        super().__init__(grpc.StatusCode.INVALID_ARGUMENT, details)


_BY_CODE: dict[grpc.StatusCode, type[EntropyError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.UNAUTHENTICATED: AuthenticationError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
}


def from_status(
    code: grpc.StatusCode, details: str, trailers: Iterable[tuple[str, Any]] = ()
) -> EntropyError:
    """The exception for a status code (EntropyError itself for codes without a class)."""
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return QuotaExceededError(code, details, _retry_after(trailers))
    return _BY_CODE.get(code, EntropyError)(code, details)


def from_rpc_error(err: grpc.RpcError) -> EntropyError:
    """Translate the error a grpc (sync or aio) call raised. Every RpcError that grpc raises
    for a call is also a `grpc.Call` (sync) or `grpc.aio.AioRpcError`: both carry the status."""
    code = getattr(err, "code", lambda: grpc.StatusCode.UNKNOWN)()
    details = getattr(err, "details", lambda: "")() or ""
    trailers = getattr(err, "trailing_metadata", lambda: ())() or ()
    return from_status(code, details, trailers)


def _retry_after(trailers: Iterable[tuple[str, Any]]) -> float | None:
    for key, value in trailers:
        if key == "retry-after-ms":
            try:
                return int(value) / 1000
            except (TypeError, ValueError):
                return None
    return None
