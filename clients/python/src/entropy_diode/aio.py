"""The asyncio client (grpc.aio): the same calls as `EntropyClient`, awaitable, and an
`AsyncStreamReader` with the same reconnect rule as the sync `StreamReader`."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from types import TracebackType
from typing import Any, Literal, TypeVar, overload

import grpc
import grpc.aio

from . import errors
from ._calls import LIST_PAGE_MAX, Call, ClientCore, next_receipts
from ._common import Connection, StreamState, Want
from ._gen.entropy.v1 import entropy_pb2 as pb
from .config import StreamOptions
from .receipts.head import SignedTreeHead
from .types import (
    Construction,
    Draw,
    Provenance,
    PublicKeyInfo,
    QualityReport,
    ReceiptPage,
    Receipted,
    SourceKind,
    Status,
    Usage,
)

R = TypeVar("R")

__all__ = ["AsyncEntropyClient", "AsyncStreamReader"]


class AsyncEntropyClient(ClientCore[grpc.aio.Channel]):
    """A connection to an Entropy Diode gateway for asyncio code.

    >>> async with AsyncEntropyClient("127.0.0.1:50051", api_key) as client:
    ...     await client.get_bytes(32)

    Create it inside the running event loop (grpc.aio channels belong to one loop). The
    arguments are those of `EntropyClient` (`accept_kinds` and `construction` too), checked
    the same way;
    `from_env()` reads ENTROPY_ENDPOINT, ENTROPY_API_KEY and ENTROPY_CA_FILE.
    """

    @overload
    async def get_bytes(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[False] = False,
    ) -> bytes: ...

    @overload
    async def get_bytes(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[True],
    ) -> Receipted[bytes]: ...

    @overload
    async def get_bytes(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool,
    ) -> bytes | Receipted[bytes]: ...

    async def get_bytes(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool = False,
    ) -> bytes | Receipted[bytes]:
        """Exactly `num_bytes` random bytes (1..=1048576); with `receipt=True`, a
        `Receipted[bytes]`."""
        call = self._calls.get_bytes(num_bytes, accept_kinds, construction, receipt)
        return await self._call(call, timeout)

    async def draw(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool = False,
    ) -> Draw:
        """Exactly `num_bytes` random bytes (1..=1048576) and where they came from; its
        `receipt` when asked for (`receipt=True`) or when the key holds `entropy:receipts`."""
        call = self._calls.draw(num_bytes, accept_kinds, construction, receipt)
        return await self._call(call, timeout)

    async def check_quality(
        self,
        sample_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
    ) -> QualityReport:
        """Has the gateway draw `sample_bytes` (2500..=4194304) from its pool, never to be
        served to anyone, and report how random they look. Needs a key with the
        `quality:check` scope; the bytes count against the key's quota."""
        call = self._calls.check_quality(sample_bytes, accept_kinds, construction)
        return await self._call(call, timeout)

    @overload
    async def get_integers(
        self,
        low: int,
        high: int,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[False] = False,
    ) -> list[int]: ...

    @overload
    async def get_integers(
        self,
        low: int,
        high: int,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[True],
    ) -> Receipted[list[int]]: ...

    @overload
    async def get_integers(
        self,
        low: int,
        high: int,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool,
    ) -> list[int] | Receipted[list[int]]: ...

    async def get_integers(
        self,
        low: int,
        high: int,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool = False,
    ) -> list[int] | Receipted[list[int]]:
        """`count` (1..=10000) uniform integers in [low, high], both inclusive, any int64s;
        with `receipt=True`, a `Receipted[list[int]]`."""
        call = self._calls.get_integers(low, high, count, accept_kinds, construction, receipt)
        return await self._call(call, timeout)

    @overload
    async def get_floats(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[False] = False,
    ) -> list[float]: ...

    @overload
    async def get_floats(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[True],
    ) -> Receipted[list[float]]: ...

    @overload
    async def get_floats(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool,
    ) -> list[float] | Receipted[list[float]]: ...

    async def get_floats(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool = False,
    ) -> list[float] | Receipted[list[float]]:
        """`count` (1..=10000) uniform floats in [0, 1), 53 random bits each; with
        `receipt=True`, a `Receipted[list[float]]`."""
        call = self._calls.get_floats(count, accept_kinds, construction, receipt)
        return await self._call(call, timeout)

    @overload
    async def get_uuids(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[False] = False,
    ) -> list[uuid.UUID]: ...

    @overload
    async def get_uuids(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[True],
    ) -> Receipted[list[uuid.UUID]]: ...

    @overload
    async def get_uuids(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool,
    ) -> list[uuid.UUID] | Receipted[list[uuid.UUID]]: ...

    async def get_uuids(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool = False,
    ) -> list[uuid.UUID] | Receipted[list[uuid.UUID]]:
        """`count` (1..=10000) random version 4 UUIDs; with `receipt=True`, a
        `Receipted[list[uuid.UUID]]`."""
        call = self._calls.get_uuids(count, accept_kinds, construction, receipt)
        return await self._call(call, timeout)

    async def status(self, *, timeout: float | None = None) -> Status:
        """The gateway's pool, counters and sources."""
        return await self._call(self._calls.status(), timeout)

    async def usage(self, *, timeout: float | None = None) -> Usage:
        """This client's key's limits and what is left of each now: calls and bytes per second
        (with when they refill), streams open, bytes drawn and not yet read. Any valid key may
        ask, about itself only; asking costs none of it."""
        return await self._call(self._calls.usage(), timeout)

    async def public_key(self, *, timeout: float | None = None) -> PublicKeyInfo:
        """The receipt log's Ed25519 public key, its key id and the gateway's id. Check the key
        against the one the operator published before trusting it."""
        return await self._call(self._calls.public_key(), timeout)

    async def signed_tree_head(self, *, timeout: float | None = None) -> SignedTreeHead:
        """The receipt log's latest signed tree head, decoded (not verified: see
        `receipts.verify_tree_head`)."""
        return await self._call(self._calls.signed_tree_head(), timeout)

    async def inclusion_proof(
        self, serial: int, tree_size: int, *, timeout: float | None = None
    ) -> tuple[bytes, ...]:
        """The RFC 9162 inclusion path of receipt `serial` in the tree of `tree_size` receipts
        (a signed head's size): for `receipts.verify_inclusion`."""
        return await self._call(self._calls.inclusion_proof(serial, tree_size), timeout)

    async def consistency_proof(
        self, old_size: int, new_size: int, *, timeout: float | None = None
    ) -> tuple[bytes, ...]:
        """The RFC 9162 consistency proof from the tree of `old_size` receipts to that of
        `new_size`: for `receipts.verify_consistency`."""
        return await self._call(self._calls.consistency_proof(old_size, new_size), timeout)

    async def list_receipts(
        self,
        start_serial: int = 0,
        max_receipts: int = LIST_PAGE_MAX,
        *,
        timeout: float | None = None,
    ) -> ReceiptPage:
        """One page of the receipt log from `start_serial` (at most `max_receipts`, 1..=1000,
        never past the latest signed head). Needs the `receipts:audit` scope."""
        return await self._call(self._calls.list_receipts(start_serial, max_receipts), timeout)

    async def list_all_receipts(
        self, tree_size: int, *, timeout: float | None = None
    ) -> list[bytes]:
        """Every signed receipt of the log, serials 0 .. `tree_size` - 1 (a signed head's size),
        page by page: what `receipts.audit` checks against that head. `timeout` is per page.
        Needs the `receipts:audit` scope."""
        out: list[bytes] = []
        while len(out) < tree_size:
            page = await self.list_receipts(len(out), LIST_PAGE_MAX, timeout=timeout)
            out += next_receipts(len(out), page, tree_size)
        return out

    def reader(
        self,
        total_bytes: int | None = None,
        *,
        chunk_bytes: int = 0,
        options: StreamOptions | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
    ) -> AsyncStreamReader:
        """An async reader over StreamRandom; see `AsyncStreamReader`. `options` is its
        reconnect rule (default: the client's `stream_options`), `accept_kinds` its source filter
        and `construction` how its bytes are made (default: the client's), sent on every stream
        it opens."""
        return AsyncStreamReader(
            self._open_stream,
            total_bytes,
            chunk_bytes,
            options=options or self._stream_options,
            want=self._calls.want(accept_kinds, construction),
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

    def _open_channel(self, conn: Connection) -> grpc.aio.Channel:
        if conn.credentials is None:
            return grpc.aio.insecure_channel(conn.endpoint.target, options=conn.options)
        return grpc.aio.secure_channel(
            conn.endpoint.target, conn.credentials, options=conn.options
        )

    async def _call(self, call: Call[R], timeout: float | None) -> R:
        try:
            resp = await self._send(call, timeout)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None
        return call.result(resp)


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
        want: Want = Want(),
    ) -> None:
        self._open = open_stream
        self._state = StreamState(
            total_bytes, chunk_bytes, options or StreamOptions(), time.monotonic, want
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
