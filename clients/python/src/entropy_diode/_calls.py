"""The one mapping between the clients' methods and EntropyService, so the sync and asyncio
clients cannot drift apart: `Calls` turns each method's arguments into its checked request (with
the client's default `accept_kinds` and `construction`) and says how the response becomes what
the method returns; `ClientCore` is how both clients are constructed (arguments checked, channel
opened, key metadata, deadlines). `EntropyClient` (client.py) and `AsyncEntropyClient` (aio.py)
only send what this builds, one blocking and one awaited; tests/test_parity.py checks that both
expose the same methods with the same signatures."""

from __future__ import annotations

import os
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import grpc
from google.protobuf.message import Message

from ._common import (
    DEFAULT_TIMEOUT,
    Connection,
    Want,
    build,
    check_construction,
    check_kinds,
    connection,
)
from . import errors
from ._gen.entropy.v1 import entropy_pb2 as pb
from ._gen.entropy.v1.entropy_pb2_grpc import EntropyServiceStub, ReceiptLogServiceStub
from .config import StreamOptions, from_environment
from .receipts.head import SignedTreeHead, decode_signed_tree_head
from .types import (
    Construction,
    Draw,
    DrawReceipt,
    PublicKeyInfo,
    QualityReport,
    ReceiptPage,
    Receipted,
    SourceKind,
    Status,
    Usage,
    provenance_from_pb,
    quality_from_pb,
    status_from_pb,
    usage_from_pb,
)

R = TypeVar("R")
ChannelT = TypeVar("ChannelT")
CoreT = TypeVar("CoreT", bound="ClientCore[Any]")


@dataclass(frozen=True)
class Call(Generic[R]):
    """One unary call, ready to send: the stub method (`method`, e.g. "GetRandom"), the checked
    request, how its response becomes the method's result, and the service (EntropyService, or
    ReceiptLogService when `receipt_log`)."""

    method: str
    request: Message
    result: Callable[[Any], R]
    receipt_log: bool = False


class Calls:
    """Every unary call's request and result mapping. `accept_kinds` and `construction` are the
    client's defaults; each method's own (None: the default; `accept_kinds=[]`: any) wins."""

    def __init__(self, accept_kinds: Iterable[SourceKind], construction: Construction) -> None:
        self.default = Want(check_kinds(accept_kinds), check_construction(construction))

    def want(
        self,
        accept_kinds: Iterable[SourceKind] | None,
        construction: Construction | None,
    ) -> Want:
        """What a call or reader asks for: each of its own when given, else the client's."""
        return Want(
            self.default.accept_kinds if accept_kinds is None else check_kinds(accept_kinds),
            self.default.construction if construction is None else check_construction(construction),
        )

    def get_bytes(
        self,
        num_bytes: int,
        accept_kinds: Iterable[SourceKind] | None,
        construction: Construction | None,
        receipt: bool,
    ) -> Call[bytes | Receipted[bytes]]:
        req = self._random(num_bytes, accept_kinds, construction, receipt)
        return Call("GetRandom", req, _maybe_receipted(_data, receipt))

    def draw(
        self,
        num_bytes: int,
        accept_kinds: Iterable[SourceKind] | None,
        construction: Construction | None,
        receipt: bool,
    ) -> Call[Draw]:
        req = self._random(num_bytes, accept_kinds, construction, receipt)
        return Call("GetRandom", req, _draw_asked if receipt else _draw)

    def check_quality(
        self,
        sample_bytes: int,
        accept_kinds: Iterable[SourceKind] | None,
        construction: Construction | None,
    ) -> Call[QualityReport]:
        want = self.want(accept_kinds, construction)
        req = build(pb.CheckQualityRequest, sample_bytes=sample_bytes, **want.fields())
        return Call("CheckQuality", req, quality_from_pb)

    def get_integers(
        self,
        low: int,
        high: int,
        count: int,
        accept_kinds: Iterable[SourceKind] | None,
        construction: Construction | None,
        receipt: bool,
    ) -> Call[list[int] | Receipted[list[int]]]:
        want = self.want(accept_kinds, construction)
        req = build(
            pb.GetIntegersRequest, min=low, max=high, count=count, receipt=_flag(receipt),
            **want.fields(),
        )
        return Call("GetIntegers", req, _maybe_receipted(_integers, receipt))

    def get_floats(
        self,
        count: int,
        accept_kinds: Iterable[SourceKind] | None,
        construction: Construction | None,
        receipt: bool,
    ) -> Call[list[float] | Receipted[list[float]]]:
        want = self.want(accept_kinds, construction)
        req = build(pb.GetFloatsRequest, count=count, receipt=_flag(receipt), **want.fields())
        return Call("GetFloats", req, _maybe_receipted(_floats, receipt))

    def get_uuids(
        self,
        count: int,
        accept_kinds: Iterable[SourceKind] | None,
        construction: Construction | None,
        receipt: bool,
    ) -> Call[list[uuid.UUID] | Receipted[list[uuid.UUID]]]:
        want = self.want(accept_kinds, construction)
        req = build(pb.GetUuidsRequest, count=count, receipt=_flag(receipt), **want.fields())
        return Call("GetUuids", req, _maybe_receipted(_uuids, receipt))

    def status(self) -> Call[Status]:
        return Call("GetStatus", pb.GetStatusRequest(), status_from_pb)

    def usage(self) -> Call[Usage]:
        return Call("GetUsage", pb.GetUsageRequest(), usage_from_pb)

    # ReceiptLogService.

    def public_key(self) -> Call[PublicKeyInfo]:
        return Call("GetPublicKey", pb.GetPublicKeyRequest(), _public_key, receipt_log=True)

    def signed_tree_head(self) -> Call[SignedTreeHead]:
        return Call("GetSignedTreeHead", pb.GetSignedTreeHeadRequest(), _head, receipt_log=True)

    def inclusion_proof(self, serial: int, tree_size: int) -> Call[tuple[bytes, ...]]:
        req = build(pb.GetInclusionProofRequest, serial=serial, tree_size=tree_size)
        return Call("GetInclusionProof", req, _hashes, receipt_log=True)

    def consistency_proof(self, old_size: int, new_size: int) -> Call[tuple[bytes, ...]]:
        req = build(pb.GetConsistencyProofRequest, old_size=old_size, new_size=new_size)
        return Call("GetConsistencyProof", req, _hashes, receipt_log=True)

    def list_receipts(self, start_serial: int, max_receipts: int) -> Call[ReceiptPage]:
        req = build(
            pb.ListReceiptsRequest, start_serial=start_serial, max_receipts=max_receipts
        )
        return Call("ListReceipts", req, _page, receipt_log=True)

    def _random(
        self,
        num_bytes: int,
        accept_kinds: Iterable[SourceKind] | None,
        construction: Construction | None,
        receipt: bool,
    ) -> pb.GetRandomRequest:
        want = self.want(accept_kinds, construction)
        return build(
            pb.GetRandomRequest, num_bytes=num_bytes, receipt=_flag(receipt), **want.fields()
        )


LIST_PAGE_MAX = 1000
"""The most receipts ListReceipts returns per page (and what `max_receipts` 0 means)."""


def _flag(receipt: bool) -> bool:
    """`receipt=` as sent: a bool, so a truthy string or number is not taken for a yes."""
    if not isinstance(receipt, bool):
        raise errors.InvalidArgumentError(
            grpc.StatusCode.INVALID_ARGUMENT, f"receipt is {receipt!r}, not a bool"
        )
    return receipt


def _receipt_of(resp: Any) -> DrawReceipt | None:
    if not resp.HasField("receipt"):
        return None
    r = resp.receipt
    return DrawReceipt(signed_receipt=r.signed_receipt, salt=r.salt, serial=r.serial)


def _asked_receipt(resp: Any) -> DrawReceipt:
    receipt = _receipt_of(resp)
    if receipt is None:
        raise errors.EntropyError(
            grpc.StatusCode.UNIMPLEMENTED,
            "the gateway answered without the receipt asked for (receipt=True): a gateway"
            " that does not issue receipts",
        )
    return receipt


def _receipted(values: Callable[[Any], R]) -> Callable[[Any], Receipted[R]]:
    def result(resp: Any) -> Receipted[R]:
        return Receipted(values(resp), provenance_from_pb(resp.provenance), _asked_receipt(resp))

    return result


def _maybe_receipted(
    values: Callable[[Any], R], receipt: bool
) -> Callable[[Any], R | Receipted[R]]:
    """The result mapping of a draw: its values, or with `receipt` asked for, `Receipted`."""
    if not receipt:
        return values
    return _receipted(values)


def _public_key(resp: pb.GetPublicKeyResponse) -> PublicKeyInfo:
    return PublicKeyInfo(resp.public_key, resp.key_id, resp.gateway_id)


def _head(resp: pb.GetSignedTreeHeadResponse) -> SignedTreeHead:
    head = decode_signed_tree_head(resp.signed_tree_head)
    if head.head.size != resp.tree_size:
        raise errors.EntropyError(
            grpc.StatusCode.INTERNAL,
            f"signed tree head of size {head.head.size} reported as size {resp.tree_size}",
        )
    return head


def _hashes(resp: pb.GetInclusionProofResponse | pb.GetConsistencyProofResponse) -> tuple[bytes, ...]:
    return tuple(resp.hashes)


def _page(resp: pb.ListReceiptsResponse) -> ReceiptPage:
    return ReceiptPage(tuple(resp.signed_receipts), resp.next_serial, resp.tree_size)


def next_receipts(start: int, page: ReceiptPage, tree_size: int) -> tuple[bytes, ...]:
    """The receipts of `page` (asked from `start`) below `tree_size`, checking that the page
    continues the listing: serials `start`, `start + 1`, ... and progress while short of it."""
    if page.next_serial != start + len(page.signed_receipts):
        raise errors.EntropyError(
            grpc.StatusCode.INTERNAL,
            f"ListReceipts from {start} returned {len(page.signed_receipts)} receipts but next"
            f" serial {page.next_serial}",
        )
    if not page.signed_receipts:
        raise errors.from_status(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"ListReceipts from {start} returned none: the gateway's latest signed head"
            f" ({page.tree_size}) does not reach {tree_size}",
        )
    return page.signed_receipts[: max(0, tree_size - start)]


def _data(resp: pb.GetRandomResponse) -> bytes:
    return resp.data


def _draw(resp: pb.GetRandomResponse) -> Draw:
    return Draw(resp.data, provenance_from_pb(resp.provenance), _receipt_of(resp))


def _draw_asked(resp: pb.GetRandomResponse) -> Draw:
    return Draw(resp.data, provenance_from_pb(resp.provenance), _asked_receipt(resp))


def _integers(resp: pb.GetIntegersResponse) -> list[int]:
    return list(resp.values)


def _floats(resp: pb.GetFloatsResponse) -> list[float]:
    return list(resp.values)


def _uuids(resp: pb.GetUuidsResponse) -> list[uuid.UUID]:
    return [uuid.UUID(u) for u in resp.uuids]


class ClientCore(ABC, Generic[ChannelT]):
    """What both clients are made of: the endpoint, key and CA file checked at construction, a
    channel (opened by the subclass: blocking or grpc.aio), the key as call metadata, the default
    deadline and reconnect rule, and `Calls`. The arguments are documented on `EntropyClient`."""

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
        construction: Construction = Construction.RAW,
    ) -> None:
        conn = connection(endpoint, api_key, ca_file, credentials, options)
        self._calls = Calls(accept_kinds, construction)
        self.endpoint = conn.endpoint
        self._channel = self._open_channel(conn)
        self._stub = EntropyServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._receipt_stub = ReceiptLogServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._metadata = conn.metadata
        self._timeout = timeout
        self._stream_options = stream_options or StreamOptions()

    @classmethod
    def from_env(
        cls: type[CoreT],
        endpoint: str | None = None,
        api_key: str | None = None,
        *,
        ca_file: str | os.PathLike[str] | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        stream_options: StreamOptions | None = None,
        options: Sequence[tuple[str, Any]] = (),
        accept_kinds: Iterable[SourceKind] = (),
        construction: Construction = Construction.RAW,
    ) -> CoreT:
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
            construction=construction,
        )

    @property
    def accept_kinds(self) -> tuple[SourceKind, ...]:
        """The source kinds every call accepts unless it says otherwise (empty: any)."""
        return tuple(SourceKind(k) for k in self._calls.default.accept_kinds)

    @property
    def construction(self) -> Construction:
        """How every call's bytes are made unless it says otherwise (RAW: pool bytes)."""
        return Construction(self._calls.default.construction)

    @abstractmethod
    def _open_channel(self, conn: Connection) -> ChannelT:
        """The channel to `conn.endpoint`: plaintext when `conn.credentials` is None."""

    def _send(self, call: Call[Any], timeout: float | None) -> Any:
        """Starts `call` on the stub (the sync stub returns the response, the aio one an
        awaitable of it): the key as metadata, `timeout` or the client's default deadline."""
        method = getattr(self._receipt_stub if call.receipt_log else self._stub, call.method)
        return method(
            call.request,
            metadata=self._metadata,
            timeout=self._timeout if timeout is None else timeout,
        )

    def _open_stream(self, req: pb.StreamRandomRequest) -> Any:
        # No gRPC deadline: a stream lives as long as its reader, which bounds each wait itself
        # (attempt and stall timeouts) and cancels the call on close. wait_for_ready: an
        # attempt waits for the channel to (re)connect instead of failing fast.
        return self._stub.StreamRandom(req, metadata=self._metadata, wait_for_ready=True)
