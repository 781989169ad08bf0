"""The synchronous client: one method per EntropyService call, Python types in and out."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import grpc

from . import errors
from ._common import (
    DEFAULT_TIMEOUT,
    Credentials,
    auth_metadata,
    build,
    channel_credentials,
    uuids_from_pb,
)
from ._gen.entropy.v1 import entropy_pb2 as pb
from ._gen.entropy.v1.entropy_pb2_grpc import EntropyServiceStub
from .stream import StreamReader
from .types import Status, status_from_pb

__all__ = ["EntropyClient"]


class EntropyClient:
    """A connection to an Entropy Diode gateway.

    >>> with EntropyClient("127.0.0.1:50051", api_key, tls=False) as client:
    ...     client.get_integers(1, 6, count=3)

    Every method raises a subclass of `errors.EntropyError` on failure. `timeout` (seconds) is
    the default deadline of each unary call; None means no deadline. Thread-safe.
    """

    def __init__(
        self,
        target: str,
        api_key: str,
        *,
        tls: Credentials = True,
        timeout: float | None = DEFAULT_TIMEOUT,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        creds = channel_credentials(tls)
        if creds is None:
            self._channel = grpc.insecure_channel(target, options=options)
        else:
            self._channel = grpc.secure_channel(target, creds, options=options)
        self._stub = EntropyServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._metadata = auth_metadata(api_key)
        self._timeout = timeout

    def get_bytes(self, num_bytes: int, *, timeout: float | None = None) -> bytes:
        """Exactly `num_bytes` random bytes (1..=1048576)."""
        req = build(pb.GetRandomRequest, num_bytes=num_bytes)
        resp: pb.GetRandomResponse = self._call(self._stub.GetRandom, req, timeout)
        return resp.data

    def get_integers(
        self, low: int, high: int, count: int = 1, *, timeout: float | None = None
    ) -> list[int]:
        """`count` (1..=10000) uniform integers in [low, high], both inclusive, any int64s."""
        req = build(pb.GetIntegersRequest, min=low, max=high, count=count)
        resp: pb.GetIntegersResponse = self._call(self._stub.GetIntegers, req, timeout)
        return list(resp.values)

    def get_floats(self, count: int = 1, *, timeout: float | None = None) -> list[float]:
        """`count` (1..=10000) uniform floats in [0, 1), 53 random bits each."""
        req = build(pb.GetFloatsRequest, count=count)
        resp: pb.GetFloatsResponse = self._call(self._stub.GetFloats, req, timeout)
        return list(resp.values)

    def get_uuids(self, count: int = 1, *, timeout: float | None = None) -> list[uuid.UUID]:
        """`count` (1..=10000) random version 4 UUIDs."""
        req = build(pb.GetUuidsRequest, count=count)
        resp: pb.GetUuidsResponse = self._call(self._stub.GetUuids, req, timeout)
        return uuids_from_pb(resp)

    def status(self, *, timeout: float | None = None) -> Status:
        """The gateway's pool, counters and sources."""
        resp: pb.GetStatusResponse = self._call(
            self._stub.GetStatus, pb.GetStatusRequest(), timeout
        )
        return status_from_pb(resp)

    def reader(self, total_bytes: int | None = None, *, chunk_bytes: int = 0) -> StreamReader:
        """A file-like reader over StreamRandom: `total_bytes` in all (None: endless),
        `chunk_bytes` per message (0: the server's 16 KiB). It reconnects after transport
        errors without losing or repeating bytes. Close it (or use `with`) to stop the stream."""
        return StreamReader(self._open_stream, total_bytes, chunk_bytes)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> EntropyClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _open_stream(self, req: pb.StreamRandomRequest) -> Any:
        # No deadline: a stream lives as long as its reader. The reader cancels it on close.
        return self._stub.StreamRandom(req, metadata=self._metadata)

    def _call(self, method: Any, req: Any, timeout: float | None) -> Any:
        try:
            return method(
                req,
                metadata=self._metadata,
                timeout=self._timeout if timeout is None else timeout,
            )
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None
