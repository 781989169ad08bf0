"""The synchronous client: one method per EntropyService call, Python types in and out."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any

import grpc

from . import errors
from ._common import (
    DEFAULT_TIMEOUT,
    build,
    check_kinds,
    connection,
    pick_kinds,
    uuids_from_pb,
)
from ._gen.entropy.v1 import entropy_pb2 as pb
from ._gen.entropy.v1.entropy_pb2_grpc import EntropyServiceStub
from .config import StreamOptions, from_environment
from .stream import StreamReader
from .types import (
    Draw,
    QualityReport,
    SourceKind,
    Status,
    provenance_from_pb,
    quality_from_pb,
    status_from_pb,
)

__all__ = ["EntropyClient"]


class EntropyClient:
    """A connection to an Entropy Diode gateway.

    >>> with EntropyClient("127.0.0.1:50051", api_key) as client:
    ...     client.get_integers(1, 6, count=3)

    `endpoint` is `host[:port]`, `http://host[:port]` or `https://host[:port]` (port 50051 by
    default, IPv6 in brackets): a bare host is TLS unless it is loopback, so a local
    `entropy-gateway --dev` needs no scheme. `ca_file` is a PEM file of CAs to trust instead
    of the system roots; `credentials` replaces both (your own `grpc.ChannelCredentials`).
    The endpoint, key and CA file are checked here: a bad one raises `InvalidArgumentError`
    (a ValueError). `EntropyClient.from_env()` takes them from the environment.

    Every method raises a subclass of `errors.EntropyError` on failure. `timeout` (seconds) is
    the default deadline of each unary call; None means no deadline. `stream_options` is the
    reconnect rule of the stream readers (`reader()`). `accept_kinds` (a list of
    `SourceKind`; empty: any) is the source filter every entropy call sends unless it passes
    its own `accept_kinds=` (`[]` there: any); a filter the pool cannot serve raises
    `FailedPreconditionError`. Thread-safe.
    """

    def __init__(
        self,
        endpoint: str,
        api_key: str,
        *,
        ca_file: str | os.PathLike[str] | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        stream_options: StreamOptions | None = None,
        options: Sequence[tuple[str, Any]] = (),
        accept_kinds: Iterable[SourceKind] = (),
    ) -> None:
        conn = connection(endpoint, api_key, ca_file, credentials, options)
        self._accept_kinds = check_kinds(accept_kinds)
        self.endpoint = conn.endpoint
        if conn.credentials is None:
            self._channel = grpc.insecure_channel(conn.endpoint.target, options=conn.options)
        else:
            self._channel = grpc.secure_channel(
                conn.endpoint.target, conn.credentials, options=conn.options
            )
        self._stub = EntropyServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._metadata = conn.metadata
        self._timeout = timeout
        self._stream_options = stream_options or StreamOptions()

    @classmethod
    def from_env(
        cls,
        endpoint: str | None = None,
        api_key: str | None = None,
        *,
        ca_file: str | os.PathLike[str] | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        stream_options: StreamOptions | None = None,
        options: Sequence[tuple[str, Any]] = (),
        accept_kinds: Iterable[SourceKind] = (),
    ) -> EntropyClient:
        """A client configured by ENTROPY_ENDPOINT (default 127.0.0.1:50051), ENTROPY_API_KEY
        (required) and ENTROPY_CA_FILE; any argument given wins over its variable."""
        endpoint, api_key, ca_file = from_environment(endpoint, api_key, ca_file, credentials)
        return cls(
            endpoint,
            api_key,
            ca_file=ca_file,
            credentials=credentials,
            timeout=timeout,
            stream_options=stream_options,
            options=options,
            accept_kinds=accept_kinds,
        )

    @property
    def accept_kinds(self) -> tuple[SourceKind, ...]:
        """The source kinds every call accepts unless it says otherwise (empty: any)."""
        return tuple(SourceKind(k) for k in self._accept_kinds)

    def get_bytes(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
    ) -> bytes:
        """Exactly `num_bytes` random bytes (1..=1048576)."""
        return self._get_random(num_bytes, timeout, accept_kinds).data

    def draw(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
    ) -> Draw:
        """Exactly `num_bytes` random bytes (1..=1048576) and where they came from."""
        resp = self._get_random(num_bytes, timeout, accept_kinds)
        return Draw(resp.data, provenance_from_pb(resp.provenance))

    def check_quality(
        self,
        sample_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
    ) -> QualityReport:
        """Has the gateway draw `sample_bytes` (2500..=4194304) from its pool, never to be
        served to anyone, and report how random they look. Needs a key with the
        `quality:check` scope; the bytes count against the key's quota."""
        req = build(
            pb.CheckQualityRequest,
            sample_bytes=sample_bytes,
            accept_kinds=pick_kinds(self._accept_kinds, accept_kinds),
        )
        resp: pb.CheckQualityResponse = self._call(self._stub.CheckQuality, req, timeout)
        return quality_from_pb(resp)

    def get_integers(
        self,
        low: int,
        high: int,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
    ) -> list[int]:
        """`count` (1..=10000) uniform integers in [low, high], both inclusive, any int64s."""
        kinds = pick_kinds(self._accept_kinds, accept_kinds)
        req = build(pb.GetIntegersRequest, min=low, max=high, count=count, accept_kinds=kinds)
        resp: pb.GetIntegersResponse = self._call(self._stub.GetIntegers, req, timeout)
        return list(resp.values)

    def get_floats(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
    ) -> list[float]:
        """`count` (1..=10000) uniform floats in [0, 1), 53 random bits each."""
        kinds = pick_kinds(self._accept_kinds, accept_kinds)
        req = build(pb.GetFloatsRequest, count=count, accept_kinds=kinds)
        resp: pb.GetFloatsResponse = self._call(self._stub.GetFloats, req, timeout)
        return list(resp.values)

    def get_uuids(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
    ) -> list[uuid.UUID]:
        """`count` (1..=10000) random version 4 UUIDs."""
        kinds = pick_kinds(self._accept_kinds, accept_kinds)
        req = build(pb.GetUuidsRequest, count=count, accept_kinds=kinds)
        resp: pb.GetUuidsResponse = self._call(self._stub.GetUuids, req, timeout)
        return uuids_from_pb(resp)

    def status(self, *, timeout: float | None = None) -> Status:
        """The gateway's pool, counters and sources."""
        resp: pb.GetStatusResponse = self._call(
            self._stub.GetStatus, pb.GetStatusRequest(), timeout
        )
        return status_from_pb(resp)

    def reader(
        self,
        total_bytes: int | None = None,
        *,
        chunk_bytes: int = 0,
        options: StreamOptions | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
    ) -> StreamReader:
        """A file-like reader over StreamRandom: `total_bytes` in all (None: endless),
        `chunk_bytes` per message (0: the server's 16 KiB). It reconnects after transport
        errors without losing or repeating bytes, by `options` (default: the client's
        `stream_options`), sending `accept_kinds` (default: the client's) on every stream it
        opens. Close it (or use `with`) to stop the stream."""
        return StreamReader(
            self._open_stream,
            total_bytes,
            chunk_bytes,
            options=options or self._stream_options,
            accept_kinds=pick_kinds(self._accept_kinds, accept_kinds),
        )

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

    def _get_random(
        self, num_bytes: int, timeout: float | None, accept_kinds: Iterable[SourceKind] | None
    ) -> pb.GetRandomResponse:
        kinds = pick_kinds(self._accept_kinds, accept_kinds)
        req = build(pb.GetRandomRequest, num_bytes=num_bytes, accept_kinds=kinds)
        resp: pb.GetRandomResponse = self._call(self._stub.GetRandom, req, timeout)
        return resp

    def _open_stream(self, req: pb.StreamRandomRequest) -> Any:
        # No gRPC deadline: a stream lives as long as its reader, which bounds each wait itself
        # (attempt and stall timeouts) and cancels the call on close. wait_for_ready: an
        # attempt waits for the channel to (re)connect instead of failing fast.
        return self._stub.StreamRandom(req, metadata=self._metadata, wait_for_ready=True)

    def _call(self, method: Any, req: Any, timeout: float | None) -> Any:
        try:
            return method(
                req,
                metadata=self._metadata,
                timeout=self._timeout if timeout is None else timeout,
            )
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None

