"""The synchronous client: one method per EntropyService call, Python types in and out."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from types import TracebackType
from typing import Literal, TypeVar, overload

import grpc

from . import errors
from ._calls import LIST_PAGE_MAX, Call, ClientCore, next_receipts
from ._common import Connection
from .config import StreamOptions
from .receipts.head import SignedTreeHead
from .stream import StreamReader
from .types import (
    Construction,
    Draw,
    PublicKeyInfo,
    QualityReport,
    ReceiptPage,
    Receipted,
    SourceKind,
    Status,
    Usage,
)

R = TypeVar("R")

__all__ = ["EntropyClient"]


class EntropyClient(ClientCore[grpc.Channel]):
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
    `FailedPreconditionError`. `construction` (a `Construction`) is how every entropy call's
    bytes are made unless it passes its own `construction=`: RAW (the default: pool bytes,
    each served once) or DRBG / DRBG_PREDICTION_RESISTANT (the output of a DRBG instance of
    the call's own, seeded from the pool, labelled in the provenance's `drbg`); a DRBG
    construction needs the key's `entropy:drbg` scope (`PermissionDeniedError` otherwise).
    `receipt=True` on a draw asks for its signed receipt (docs/receipts.md): the call then
    returns `Receipted(values, provenance, receipt)` (`draw` returns a `Draw` with `receipt`
    set); a gateway without a receipt log raises `FailedPreconditionError`. The receipt log's
    calls (`public_key`, `signed_tree_head`, `inclusion_proof`, `consistency_proof`,
    `list_receipts`, `list_all_receipts`) return what `entropy_diode.receipts` verifies.
    Thread-safe.
    """

    @overload
    def get_bytes(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[False] = False,
    ) -> bytes: ...

    @overload
    def get_bytes(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[True],
    ) -> Receipted[bytes]: ...

    @overload
    def get_bytes(
        self,
        num_bytes: int,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool,
    ) -> bytes | Receipted[bytes]: ...

    def get_bytes(
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
        return self._call(call, timeout)

    def draw(
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
        return self._call(call, timeout)

    def check_quality(
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
        return self._call(call, timeout)

    @overload
    def get_integers(
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
    def get_integers(
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
    def get_integers(
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

    def get_integers(
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
        return self._call(call, timeout)

    @overload
    def get_floats(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[False] = False,
    ) -> list[float]: ...

    @overload
    def get_floats(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[True],
    ) -> Receipted[list[float]]: ...

    @overload
    def get_floats(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool,
    ) -> list[float] | Receipted[list[float]]: ...

    def get_floats(
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
        return self._call(call, timeout)

    @overload
    def get_uuids(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[False] = False,
    ) -> list[uuid.UUID]: ...

    @overload
    def get_uuids(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: Literal[True],
    ) -> Receipted[list[uuid.UUID]]: ...

    @overload
    def get_uuids(
        self,
        count: int = 1,
        *,
        timeout: float | None = None,
        accept_kinds: Iterable[SourceKind] | None = None,
        construction: Construction | None = None,
        receipt: bool,
    ) -> list[uuid.UUID] | Receipted[list[uuid.UUID]]: ...

    def get_uuids(
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
        return self._call(call, timeout)

    def status(self, *, timeout: float | None = None) -> Status:
        """The gateway's pool, counters and sources."""
        return self._call(self._calls.status(), timeout)

    def usage(self, *, timeout: float | None = None) -> Usage:
        """This client's key's limits and what is left of each now: calls and bytes per second
        (with when they refill), streams open, bytes drawn and not yet read. Any valid key may
        ask, about itself only; asking costs none of it."""
        return self._call(self._calls.usage(), timeout)

    def public_key(self, *, timeout: float | None = None) -> PublicKeyInfo:
        """The receipt log's Ed25519 public key, its key id and the gateway's id. Check the key
        against the one the operator published before trusting it."""
        return self._call(self._calls.public_key(), timeout)

    def signed_tree_head(self, *, timeout: float | None = None) -> SignedTreeHead:
        """The receipt log's latest signed tree head, decoded (not verified: see
        `receipts.verify_tree_head`)."""
        return self._call(self._calls.signed_tree_head(), timeout)

    def inclusion_proof(
        self, serial: int, tree_size: int, *, timeout: float | None = None
    ) -> tuple[bytes, ...]:
        """The RFC 9162 inclusion path of receipt `serial` in the tree of `tree_size` receipts
        (a signed head's size): for `receipts.verify_inclusion`."""
        return self._call(self._calls.inclusion_proof(serial, tree_size), timeout)

    def consistency_proof(
        self, old_size: int, new_size: int, *, timeout: float | None = None
    ) -> tuple[bytes, ...]:
        """The RFC 9162 consistency proof from the tree of `old_size` receipts to that of
        `new_size`: for `receipts.verify_consistency`."""
        return self._call(self._calls.consistency_proof(old_size, new_size), timeout)

    def list_receipts(
        self,
        start_serial: int = 0,
        max_receipts: int = LIST_PAGE_MAX,
        *,
        timeout: float | None = None,
    ) -> ReceiptPage:
        """One page of the receipt log from `start_serial` (at most `max_receipts`, 1..=1000,
        never past the latest signed head). Needs the `receipts:audit` scope."""
        return self._call(self._calls.list_receipts(start_serial, max_receipts), timeout)

    def list_all_receipts(
        self, tree_size: int, *, timeout: float | None = None
    ) -> list[bytes]:
        """Every signed receipt of the log, serials 0 .. `tree_size` - 1 (a signed head's size),
        page by page: what `receipts.audit` checks against that head. `timeout` is per page.
        Needs the `receipts:audit` scope."""
        out: list[bytes] = []
        while len(out) < tree_size:
            page = self.list_receipts(len(out), LIST_PAGE_MAX, timeout=timeout)
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
    ) -> StreamReader:
        """A file-like reader over StreamRandom: `total_bytes` in all (None: endless),
        `chunk_bytes` per message (0: the server's 16 KiB). It reconnects after transport
        errors without losing or repeating bytes, by `options` (default: the client's
        `stream_options`), sending `accept_kinds` and `construction` (default: the client's)
        on every stream it opens: a DRBG stream has one instance per stream opened. Close it
        (or use `with`) to stop the stream."""
        return StreamReader(
            self._open_stream,
            total_bytes,
            chunk_bytes,
            options=options or self._stream_options,
            want=self._calls.want(accept_kinds, construction),
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

    def _open_channel(self, conn: Connection) -> grpc.Channel:
        if conn.credentials is None:
            return grpc.insecure_channel(conn.endpoint.target, options=conn.options)
        return grpc.secure_channel(conn.endpoint.target, conn.credentials, options=conn.options)

    def _call(self, call: Call[R], timeout: float | None) -> R:
        try:
            resp = self._send(call, timeout)
        except grpc.RpcError as e:
            raise errors.from_rpc_error(e) from None
        return call.result(resp)
