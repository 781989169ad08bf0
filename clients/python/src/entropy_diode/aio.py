"""The asyncio client (grpc.aio): the same calls as `EntropyClient`, awaitable, and an
`AsyncStreamReader` with the same reconnect rule as the sync `StreamReader`."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from types import TracebackType
from typing import Any

import grpc
import grpc.aio

from . import errors
from ._common import (
    DEFAULT_TIMEOUT,
    StreamState,
    build,
    check_kinds,
    connection,
    pick_kinds,
    uuids_from_pb,
)
from ._gen.entropy.v1 import entropy_pb2 as pb
from ._gen.entropy.v1.entropy_pb2_grpc import EntropyServiceStub
from .config import StreamOptions, from_environment
from .types import (
    Draw,
    Provenance,
    QualityReport,
    SourceKind,
    Status,
    provenance_from_pb,
    quality_from_pb,
    status_from_pb,
)

__all__ = ["AsyncEntropyClient", "AsyncStreamReader"]


class AsyncEntropyClient:
    """A connection to an Entropy Diode gateway for asyncio code.

    >>> async with AsyncEntropyClient("127.0.0.1:50051", api_key) as client:
    ...     await client.get_bytes(32)

    Create it inside the running event loop (grpc.aio channels belong to one loop). The
    arguments are those of `EntropyClient` (`accept_kinds` too), checked the same way;
    `from_env()` reads ENTROPY_ENDPOINT, ENTROPY_API_KEY and ENTROPY_CA_FILE.
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
            self._channel = grpc.aio.insecure_channel(conn.endpoint.target, options=conn.options)
        else:
            self._channel = grpc.aio.secure_channel(
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
    ) -> AsyncEntropyClient:
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

    async def get_bytes(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
    ) -> bytes:
        """Exactly `num_bytes` random bytes (1..=1048576)."""
        return (await self._get_random(num_bytes, timeout, accept_kinds)).data

    async def draw(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
    ) -> Draw:
        """Exactly `num_bytes` random bytes (1..=1048576) and where they came from."""
        resp = await self._get_random(num_bytes, timeout, accept_kinds)
        return Draw(resp.data, provenance_from_pb(resp.provenance))

    async def check_quality(
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
        resp: pb.CheckQualityResponse = await self._call(self._stub.CheckQuality, req, timeout)
        return quality_from_pb(resp)

    async def get_integers(
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
        resp: pb.GetIntegersResponse = await self._call(self._stub.GetIntegers, req, timeout)
        return list(resp.values)

    async def get_floats(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
    ) -> list[float]:
        """`count` (1..=10000) uniform floats in [0, 1), 53 random bits each."""
        kinds = pick_kinds(self._accept_kinds, accept_kinds)
        req = build(pb.GetFloatsRequest, count=count, accept_kinds=kinds)
        resp: pb.GetFloatsResponse = await self._call(self._stub.GetFloats, req, timeout)
        return list(resp.values)

    async def get_uuids(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
    ) -> list[uuid.UUID]:
        """`count` (1..=10000) random version 4 UUIDs."""
        kinds = pick_kinds(self._accept_kinds, accept_kinds)
        req = build(pb.GetUuidsRequest, count=count, accept_kinds=kinds)
        resp: pb.GetUuidsResponse = await self._call(self._stub.GetUuids, req, timeout)
        return uuids_from_pb(resp)

    async def status(self, *, timeout: float | None = None) -> Status:
        """The gateway's pool, counters and sources."""
        resp: pb.GetStatusResponse = await self._call(
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
    ) -> AsyncStreamReader:
        """An async reader over StreamRandom; see `AsyncStreamReader`. `options` is its
        reconnect rule (default: the client's `stream_options`), `accept_kinds` its source filter
        (default: the client's)."""
        return AsyncStreamReader(
            self._open_stream,
            total_bytes,
            chunk_bytes,
            options=options or self._stream_options,
            accept_kinds=pick_kinds(self._accept_kinds, accept_kinds),
        )

    async def close(self) -> None:
        await self._channel.close(grace=None)

    async def __aenter__(self) -> AsyncEntropyClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _get_random(
        self, num_bytes: int, timeout: float | None, accept_kinds: Iterable[SourceKind] | None
    ) -> pb.GetRandomResponse:
        kinds = pick_kinds(self._accept_kinds, accept_kinds)
        req = build(pb.GetRandomRequest, num_bytes=num_bytes, accept_kinds=kinds)
        resp: pb.GetRandomResponse = await self._call(self._stub.GetRandom, req, timeout)
        return resp

    def _open_stream(self, req: pb.StreamRandomRequest) -> Any:
        # As in the sync client: no gRPC deadline (the reader bounds each wait), wait_for_ready.
        return self._stub.StreamRandom(req, metadata=self._metadata, wait_for_ready=True)

    async def _call(self, method: Any, req: Any, timeout: float | None) -> Any:
        try:
            return await method(
                req,
                metadata=self._metadata,
                timeout=self._timeout if timeout is None else timeout,
            )
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None


class AsyncStreamReader:
    """Random bytes from StreamRandom for asyncio code: `await read(n)` returns exactly n bytes
    (fewer only at the end of a bounded stream), `async for chunk in reader` yields them as they
    arrive. Reconnects after transport failures for exactly the bytes still owed, by the same
    rule as `StreamReader`; each wait for a message is bounded (`asyncio.wait_for`) by the
    attempt or stall timeout, and the whole outage by the reconnect budget."""

    def __init__(
        self,
        open_stream: Callable[[pb.StreamRandomRequest], Any],
        total_bytes: int | None,
        chunk_bytes: int = 0,
        *,
        options: StreamOptions | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        accept_kinds: Sequence[int] = (),
    ) -> None:
        self._open = open_stream
        self._state = StreamState(
            total_bytes, chunk_bytes, options or StreamOptions(), time.monotonic, accept_kinds
        )
        self._call: Any = None
        self._sleep = sleep
        self._closed = False

    @property
    def streams_opened(self) -> int:
        """How many StreamRandom calls this reader has made (1 + reconnects)."""
        return self._state.opens

    @property
    def reconnects(self) -> int:
        """How many streams this reader opened after a failure."""
        return self._state.reconnects

    @property
    def received(self) -> int:
        """Bytes received from the gateway so far (returned or still buffered)."""
        return self._state.received

    @property
    def provenance(self) -> Provenance | None:
        """Where the bytes of the last message received came from (None before the first).
        That message's bytes may still be buffered, not yet returned by `read`."""
        return self._state.provenance

    async def read(self, size: int) -> bytes:
        if self._closed:
            raise ValueError("I/O operation on a closed AsyncStreamReader")
        if size < 0:
            raise ValueError("size must be >= 0")
        while len(self._state.buffer) < size and await self._fill():
            pass
        return self._state.take(size)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        while True:
            if not self._state.buffer and not await self._fill():
                return
            yield self._state.take(len(self._state.buffer))

    def close(self) -> None:
        self._drop()
        self._closed = True

    async def __aenter__(self) -> AsyncStreamReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def _drop(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None

    async def _fill(self) -> bool:
        """Receive one more message into the buffer; False once a bounded stream is complete."""
        state = self._state
        while not state.exhausted:
            if self._call is None:
                self._call = self._open(state.request())
            timeout = state.wait_timeout()
            try:
                msg = await asyncio.wait_for(self._call.read(), timeout)
            except asyncio.TimeoutError:
                failure = state.timed_out(timeout)
            except grpc.RpcError as e:
                failure = errors.from_rpc_error(e)
            except asyncio.CancelledError:
                self._drop()  # the caller's task was cancelled: end the stream with it
                raise
            else:
                # grpc.aio.EOF is missing from grpc-stubs, hence the ignore.
                if msg is grpc.aio.EOF:  # type: ignore[attr-defined]
                    self._drop()
                    raise state.ended_early()
                state.accept_message(msg)
                if state.exhausted:
                    self._drop()
                return True
            self._drop()
            await self._sleep(state.retry_delay(failure))
        return False
