"""A receipt (docs/receipts.md, "Receipt"): the gateway's statement about one draw, as typed
values, and its one canonical byte string both ways. `decode_signed_receipt` is parse, don't
validate: it returns a `SignedReceipt` only for bytes the encoder could have produced (every
length, bound, enum, bool and order checked, nothing left over); the signature is checked by
`verify.verify_receipt`. The provenance is the client's own `Provenance` (types.py), so a
receipt's can be compared with the one the call returned."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from typing import Union

from ..errors import ReceiptError
from ..types import ChunkRef, Construction, DrbgLabel, Provenance, SourceKind
from ._encoding import Reader, Writer

__all__ = [
    "GetFloatsParams",
    "GetIntegersParams",
    "GetRandomParams",
    "GetUuidsParams",
    "Receipt",
    "ReceiptRequest",
    "RequestParams",
    "Rpc",
    "SignedReceipt",
    "StreamRandomParams",
    "decode_receipt",
    "decode_signed_receipt",
    "leaf_hash",
]

RECEIPT_TAG = "entropy-diode/receipt/v1"
SIGNATURE_BYTES = 64
STR_MAX = 64
MAX_KINDS = 3
MAX_COLLECTORS = 64
KNOWN_KINDS = frozenset(int(k) for k in (SourceKind.QUANTUM, SourceKind.HARDWARE, SourceKind.OS))
DRBG_MECHANISM_CTR_AES_256 = 1


class Rpc(enum.IntEnum):
    """The call a receipt is for (the request's `rpc` byte)."""

    GET_RANDOM = 1
    STREAM_RANDOM = 2
    GET_INTEGERS = 3
    GET_FLOATS = 4
    GET_UUIDS = 5


@dataclass(frozen=True)
class GetRandomParams:
    num_bytes: int


@dataclass(frozen=True)
class StreamRandomParams:
    """One StreamRandom message: the stream's parameters, the bytes the stream served before
    this message, and this message's size."""

    chunk_bytes: int
    total_bytes: int
    offset_bytes: int
    message_bytes: int


@dataclass(frozen=True)
class GetIntegersParams:
    min: int
    max: int
    count: int


@dataclass(frozen=True)
class GetFloatsParams:
    count: int


@dataclass(frozen=True)
class GetUuidsParams:
    count: int


RequestParams = Union[
    GetRandomParams, StreamRandomParams, GetIntegersParams, GetFloatsParams, GetUuidsParams
]
_RPC_OF: dict[type, Rpc] = {
    GetRandomParams: Rpc.GET_RANDOM,
    StreamRandomParams: Rpc.STREAM_RANDOM,
    GetIntegersParams: Rpc.GET_INTEGERS,
    GetFloatsParams: Rpc.GET_FLOATS,
    GetUuidsParams: Rpc.GET_UUIDS,
}


@dataclass(frozen=True)
class ReceiptRequest:
    """The call and its parameters; `accept_kinds` empty means the default (any kind)."""

    params: RequestParams
    accept_kinds: tuple[SourceKind, ...] = ()

    @property
    def rpc(self) -> Rpc:
        return _RPC_OF[type(self.params)]


@dataclass(frozen=True)
class Receipt:
    """What the gateway signed about one draw. `key_name_digest`, `commitment` and `key_id`
    are 32 bytes each (keys.key_name_digest, commitment.commit, keys.key_id)."""

    serial: int
    issued_at_unix_ms: int
    gateway_id: str
    key_name_digest: bytes
    request: ReceiptRequest
    provenance: Provenance
    commitment: bytes
    key_id: bytes

    def encode(self) -> bytes:
        """The receipt's canonical bytes (what the signature covers)."""
        w = Writer("receipt")
        w.tag(RECEIPT_TAG)
        w.u64(self.serial, "serial")
        w.i64(self.issued_at_unix_ms, "issued_at_unix_ms")
        w.text(self.gateway_id, "gateway_id", 1, STR_MAX)
        w.fixed(self.key_name_digest, 32, "key_name_digest")
        _write_request(w, self.request)
        _write_provenance(w, self.provenance)
        w.fixed(self.commitment, 32, "commitment")
        w.fixed(self.key_id, 32, "key_id")
        return w.output()


@dataclass(frozen=True)
class SignedReceipt:
    """A decoded signed receipt: the receipt, its 64-byte signature, and the exact bytes it was
    decoded from (`raw`: the receipt's bytes then the signature; the log's leaf)."""

    receipt: Receipt
    signature: bytes
    raw: bytes

    @property
    def receipt_bytes(self) -> bytes:
        """The bytes the signature covers."""
        return self.raw[:-SIGNATURE_BYTES]

    @property
    def leaf_hash(self) -> bytes:
        return leaf_hash(self.raw)


def leaf_hash(signed_receipt: bytes) -> bytes:
    """The RFC 9162 leaf hash of a signed receipt: SHA-256(0x00 || its bytes)."""
    return hashlib.sha256(b"\x00" + bytes(signed_receipt)).digest()


def decode_signed_receipt(data: bytes) -> SignedReceipt:
    """Decode a signed receipt (the receipt's canonical bytes, then a 64-byte signature).
    Raises ReceiptError for anything the encoder could not have produced. Does not check the
    signature: `verify_receipt` does."""
    data = bytes(data)
    if len(data) <= SIGNATURE_BYTES:
        raise ReceiptError(
            f"signed receipt: {len(data)} bytes, too short for a receipt and a 64-byte signature"
        )
    receipt = decode_receipt(data[:-SIGNATURE_BYTES])
    return SignedReceipt(receipt, data[-SIGNATURE_BYTES:], data)


def decode_receipt(data: bytes) -> Receipt:
    """Decode a receipt's canonical bytes (no signature)."""
    r = Reader(data, "receipt")
    r.tag(RECEIPT_TAG)
    receipt = Receipt(
        serial=r.u64("serial"),
        issued_at_unix_ms=r.i64("issued_at_unix_ms"),
        gateway_id=r.text("gateway_id", 1, STR_MAX),
        key_name_digest=r.take(32, "key_name_digest"),
        request=_read_request(r),
        provenance=_read_provenance(r),
        commitment=r.take(32, "commitment"),
        key_id=r.take(32, "key_id"),
    )
    r.finish()
    return receipt


def _read_kinds(r: Reader, field: str, min_len: int) -> tuple[SourceKind, ...]:
    n = r.count(field, min_len, MAX_KINDS)
    kinds: list[int] = []
    for i in range(n):
        k = r.u8(f"{field}[{i}]")
        if k not in KNOWN_KINDS:
            raise r.fail(f"{field}[{i}]", f"{k} is not a source kind (1 QUANTUM, 2 HARDWARE, 3 OS)")
        if kinds and k <= kinds[-1]:
            raise r.fail(field, "not strictly ascending")
        kinds.append(k)
    return tuple(SourceKind(k) for k in kinds)


def _write_kinds(w: Writer, kinds: tuple[SourceKind, ...], field: str, min_len: int) -> None:
    values = [int(k) for k in kinds]
    if any(k not in KNOWN_KINDS for k in values) or values != sorted(set(values)):
        raise ReceiptError(f"receipt: {field}: {values} are not distinct known kinds in order")
    w.count(len(values), field, min_len, MAX_KINDS)
    for k in values:
        w.u8(k, field)


def _read_request(r: Reader) -> ReceiptRequest:
    rpc = r.u8("request.rpc")
    params: RequestParams
    if rpc == Rpc.GET_RANDOM:
        params = GetRandomParams(r.u32("request.num_bytes"))
    elif rpc == Rpc.STREAM_RANDOM:
        params = StreamRandomParams(
            chunk_bytes=r.u32("request.chunk_bytes"),
            total_bytes=r.u64("request.total_bytes"),
            offset_bytes=r.u64("request.offset_bytes"),
            message_bytes=r.u32("request.message_bytes"),
        )
    elif rpc == Rpc.GET_INTEGERS:
        low, high = r.i64("request.min"), r.i64("request.max")
        if low > high:
            raise r.fail("request.max", f"{high} is below min {low}")
        params = GetIntegersParams(low, high, r.u32("request.count"))
    elif rpc == Rpc.GET_FLOATS:
        params = GetFloatsParams(r.u32("request.count"))
    elif rpc == Rpc.GET_UUIDS:
        params = GetUuidsParams(r.u32("request.count"))
    else:
        raise r.fail("request.rpc", f"{rpc} is not an rpc (1..=5)")
    return ReceiptRequest(params, _read_kinds(r, "request.accept_kinds", 0))


def _write_request(w: Writer, req: ReceiptRequest) -> None:
    p = req.params
    w.u8(req.rpc, "request.rpc")
    if isinstance(p, GetRandomParams):
        w.u32(p.num_bytes, "request.num_bytes")
    elif isinstance(p, StreamRandomParams):
        w.u32(p.chunk_bytes, "request.chunk_bytes")
        w.u64(p.total_bytes, "request.total_bytes")
        w.u64(p.offset_bytes, "request.offset_bytes")
        w.u32(p.message_bytes, "request.message_bytes")
    elif isinstance(p, GetIntegersParams):
        if p.min > p.max:
            raise ReceiptError(f"receipt: request.max: {p.max} is below min {p.min}")
        w.i64(p.min, "request.min")
        w.i64(p.max, "request.max")
        w.u32(p.count, "request.count")
    else:
        w.u32(p.count, "request.count")
    _write_kinds(w, req.accept_kinds, "request.accept_kinds", 0)


def _read_chunk(r: Reader, field: str) -> ChunkRef:
    return ChunkRef(
        collector_id=r.text(f"{field}.collector_id", 1, STR_MAX),
        epoch=r.u64(f"{field}.epoch"),
        sequence=r.u64(f"{field}.sequence"),
        signed_at_unix_ms=r.i64(f"{field}.signed_at_unix_ms"),
    )


def _write_chunk(w: Writer, chunk: ChunkRef | None, field: str) -> None:
    if chunk is None:
        raise ReceiptError(f"receipt: {field}: missing (a receipt names its first and last chunk)")
    w.text(chunk.collector_id, f"{field}.collector_id", 1, STR_MAX)
    w.u64(chunk.epoch, f"{field}.epoch")
    w.u64(chunk.sequence, f"{field}.sequence")
    w.i64(chunk.signed_at_unix_ms, f"{field}.signed_at_unix_ms")


def _read_provenance(r: Reader) -> Provenance:
    kinds = _read_kinds(r, "provenance.kinds", 1)
    mixed = r.flag("provenance.mixed")
    n = r.count("provenance.collector_ids", 1, MAX_COLLECTORS)
    collector_ids = tuple(r.text(f"provenance.collector_ids[{i}]", 1, STR_MAX) for i in range(n))
    first = _read_chunk(r, "provenance.first_chunk")
    last = _read_chunk(r, "provenance.last_chunk")
    chunk_count = r.u32("provenance.chunk_count")
    oldest = r.u64("provenance.oldest_byte_age_ms")
    construction = r.u8("provenance.construction")
    drbg: DrbgLabel | None = None
    if construction in (Construction.DRBG, Construction.DRBG_PREDICTION_RESISTANT):
        mechanism = r.u8("provenance.drbg.mechanism")
        if mechanism != DRBG_MECHANISM_CTR_AES_256:
            raise r.fail("provenance.drbg.mechanism", f"{mechanism} is not 1 (CTR_DRBG_AES_256)")
        drbg = DrbgLabel(
            mechanism=mechanism,
            security_strength_bits=r.u32("provenance.drbg.security_strength_bits"),
            instance_id=r.take(16, "provenance.drbg.instance_id").hex(),
            reseed_count=r.u64("provenance.drbg.reseed_count"),
            bytes_since_reseed=r.u64("provenance.drbg.bytes_since_reseed"),
            seed_bytes=r.u64("provenance.drbg.seed_bytes"),
            prediction_resistance=construction == Construction.DRBG_PREDICTION_RESISTANT,
        )
    elif construction != Construction.RAW:
        raise r.fail(
            "provenance.construction",
            f"{construction} is not 1 RAW, 2 DRBG or 3 DRBG_PREDICTION_RESISTANT",
        )
    return Provenance(
        kinds=kinds,
        mixed=mixed,
        collector_ids=collector_ids,
        first_chunk=first,
        last_chunk=last,
        chunk_count=chunk_count,
        oldest_byte_age_ms=oldest,
        construction=Construction(construction),
        drbg=drbg,
    )


def _write_provenance(w: Writer, p: Provenance) -> None:
    _write_kinds(w, p.kinds, "provenance.kinds", 1)
    w.flag(p.mixed, "provenance.mixed")
    w.count(len(p.collector_ids), "provenance.collector_ids", 1, MAX_COLLECTORS)
    for i, cid in enumerate(p.collector_ids):
        w.text(cid, f"provenance.collector_ids[{i}]", 1, STR_MAX)
    _write_chunk(w, p.first_chunk, "provenance.first_chunk")
    _write_chunk(w, p.last_chunk, "provenance.last_chunk")
    w.u32(p.chunk_count, "provenance.chunk_count")
    w.u64(p.oldest_byte_age_ms, "provenance.oldest_byte_age_ms")
    drbg_constructions = (Construction.DRBG, Construction.DRBG_PREDICTION_RESISTANT)
    if p.construction not in (Construction.RAW, *drbg_constructions):
        raise ReceiptError(f"receipt: provenance.construction: {p.construction!r} has no encoding")
    w.u8(int(p.construction), "provenance.construction")
    if p.construction == Construction.RAW:
        if p.drbg is not None:
            raise ReceiptError("receipt: provenance.drbg: present with construction RAW")
        return
    d = p.drbg
    if d is None:
        raise ReceiptError(f"receipt: provenance.drbg: missing with construction {p.construction.name}")
    if d.prediction_resistance != (p.construction == Construction.DRBG_PREDICTION_RESISTANT):
        raise ReceiptError("receipt: provenance.drbg.prediction_resistance: not the construction's")
    if d.mechanism != DRBG_MECHANISM_CTR_AES_256:
        raise ReceiptError(f"receipt: provenance.drbg.mechanism: {d.mechanism} is not 1")
    if len(d.instance_id) != 32 or d.instance_id != d.instance_id.lower():
        raise ReceiptError("receipt: provenance.drbg.instance_id: not 32 lowercase hex digits")
    try:
        instance = bytes.fromhex(d.instance_id)
    except ValueError:
        raise ReceiptError("receipt: provenance.drbg.instance_id: not hex") from None
    w.u8(d.mechanism, "provenance.drbg.mechanism")
    w.u32(d.security_strength_bits, "provenance.drbg.security_strength_bits")
    w.fixed(instance, 16, "provenance.drbg.instance_id")
    w.u64(d.reseed_count, "provenance.drbg.reseed_count")
    w.u64(d.bytes_since_reseed, "provenance.drbg.bytes_since_reseed")
    w.u64(d.seed_bytes, "provenance.drbg.seed_bytes")
