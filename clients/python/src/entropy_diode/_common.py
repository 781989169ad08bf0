"""What the sync and asyncio clients share: credentials, metadata, request building, and the
bookkeeping that lets a stream reader reconnect without losing or repeating bytes."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from . import errors
from ._gen.entropy.v1 import entropy_pb2 as pb

DEFAULT_TIMEOUT = 30.0
"""Seconds a unary call may take by default. The gateway itself answers UNAVAILABLE after its
`max_wait_ms` (2 s by default) when the pool runs dry, so this only bounds network trouble."""

MAX_RECONNECTS = 5
"""Consecutive failed attempts a stream reader makes before it gives up. Any delivered chunk
resets the count, so a long stream survives any number of separate hiccups."""

RECONNECT_CODES = frozenset({grpc.StatusCode.UNAVAILABLE})
"""Statuses a stream reader reconnects after: transport failures and server shutdown surface as
UNAVAILABLE. Anything else (a bad key, a bad argument) would fail again the same way."""

Credentials = bool | grpc.ChannelCredentials
"""`True`: TLS with the system roots; `False`: plaintext (dev mode, tests); or your own."""

M = TypeVar("M", bound=Message)


def channel_credentials(tls: Credentials) -> grpc.ChannelCredentials | None:
    """None means a plaintext channel."""
    if tls is True:
        return grpc.ssl_channel_credentials()
    if tls is False:
        return None
    return tls


def auth_metadata(api_key: str) -> tuple[tuple[str, str], ...]:
    # Sent as call metadata on every call: the gateway never takes keys from fields or URLs.
    # (Call credentials would refuse plaintext channels, which dev mode uses.)
    return (("authorization", f"Bearer {api_key}"),)


def build(cls: type[M], **fields: Any) -> M:
    """A request message; a value protobuf cannot hold (a negative count, an int beyond int64)
    raises InvalidArgumentError like the server's own range checks, not a bare ValueError."""
    try:
        return cls(**fields)
    except (ValueError, TypeError) as e:
        raise errors.InvalidArgumentError(
            grpc.StatusCode.INVALID_ARGUMENT, f"{cls.DESCRIPTOR.name}: {e}"
        ) from None


def uuids_from_pb(msg: pb.GetUuidsResponse) -> list[uuid.UUID]:
    return [uuid.UUID(u) for u in msg.uuids]


class StreamState:
    """Bytes received but not yet handed out, and how many the server has sent.

    `total_bytes` None means an endless stream. After a transport error the reader asks for
    exactly `total_bytes - received` more on a new stream: bytes already received (returned or
    still buffered) are never asked for again, and nothing buffered is dropped.
    """

    def __init__(self, total_bytes: int | None, chunk_bytes: int) -> None:
        if total_bytes is not None and total_bytes < 0:
            raise ValueError("total_bytes must be >= 0 (or None for an endless stream)")
        self.total = total_bytes
        self.chunk_bytes = chunk_bytes
        self.received = 0
        self.buffer = bytearray()
        self.failures = 0
        self.opens = 0

    @property
    def exhausted(self) -> bool:
        """Everything asked for has arrived (the buffer may still hold some of it)."""
        return self.total is not None and self.received >= self.total

    def request(self) -> pb.StreamRandomRequest:
        self.opens += 1
        remaining = 0 if self.total is None else self.total - self.received
        return build(pb.StreamRandomRequest, chunk_bytes=self.chunk_bytes, total_bytes=remaining)

    def accept(self, data: bytes) -> None:
        if self.total is not None and self.received + len(data) > self.total:
            raise errors.EntropyError(
                grpc.StatusCode.INTERNAL,
                f"server sent {self.received + len(data)} bytes on a stream of {self.total}",
            )
        self.received += len(data)
        self.buffer += data
        self.failures = 0

    def ended_early(self) -> errors.EntropyError:
        """The server closed the stream with OK before sending everything: a server bug, not a
        transport hiccup, so it is reported rather than papered over."""
        return errors.EntropyError(
            grpc.StatusCode.INTERNAL,
            f"stream ended with OK after {self.received} of {self.total or 'unlimited'} bytes",
        )

    def retry_delay(self, err: grpc.RpcError) -> float | None:
        """Seconds to wait before reopening after `err`, or None to give up."""
        code = getattr(err, "code", lambda: None)()
        if code not in RECONNECT_CODES or self.failures >= MAX_RECONNECTS:
            return None
        self.failures += 1
        return min(0.05 * (1 << self.failures), 1.0)

    def take(self, n: int) -> bytes:
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out
