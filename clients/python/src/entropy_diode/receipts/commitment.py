"""The commitment to a draw's values (docs/receipts.md, "Commitment"):
SHA-256(tag "entropy-diode/commitment/v1" || salt || u8 kind || u64 count || elements), the
values exactly as served (bytes before any text encoding; integers as i64; floats as their
IEEE 754 bits, so 0.0 and -0.0 differ; UUIDs as their 16 bytes). Opening a receipt's commitment
takes the kind from the receipt's call, and also checks that the values are the call's shape
(their count; integers within the requested range; floats in [0, 1)): a commitment that opens to anything
else was not an honest answer to that request."""

from __future__ import annotations

import enum
import hashlib
import hmac
import struct
import uuid
from collections.abc import Sequence
from typing import Union

from ..errors import ReceiptError
from ._encoding import I64_MAX, I64_MIN, Writer
from .receipt import (
    GetFloatsParams,
    GetIntegersParams,
    GetRandomParams,
    GetUuidsParams,
    Receipt,
    ReceiptRequest,
    StreamRandomParams,
)

__all__ = ["Values", "ValueKind", "commit", "encode_values", "open_commitment", "value_kind"]

COMMITMENT_TAG = "entropy-diode/commitment/v1"
SALT_BYTES = 32

Values = Union[bytes, Sequence[int], Sequence[float], Sequence[uuid.UUID]]
"""What a draw served: bytes (GetRandom, a StreamRandom message), ints (GetIntegers), floats
(GetFloats) or `uuid.UUID`s (GetUuids)."""


class ValueKind(enum.IntEnum):
    BYTES = 1
    INTEGERS = 2
    FLOATS = 3
    UUIDS = 4


def value_kind(request: ReceiptRequest) -> ValueKind:
    """The kind of values the receipt's call serves."""
    p = request.params
    if isinstance(p, (GetRandomParams, StreamRandomParams)):
        return ValueKind.BYTES
    if isinstance(p, GetIntegersParams):
        return ValueKind.INTEGERS
    if isinstance(p, GetFloatsParams):
        return ValueKind.FLOATS
    return ValueKind.UUIDS


def encode_values(kind: ValueKind, values: Values) -> bytes:
    """`u8 kind || u64 count || elements`. Each element must be of the kind's Python type (a
    float for FLOATS, never an int, so 0 cannot stand for either 0.0 or -0.0)."""
    w = Writer("values")
    w.u8(int(kind), "kind")
    if kind == ValueKind.BYTES:
        if not isinstance(values, (bytes, bytearray, memoryview)):
            raise ReceiptError(f"values: bytes expected, not {type(values).__name__}")
        data = bytes(values)
        w.u64(len(data), "count")
        return w.output() + data
    if isinstance(values, (bytes, bytearray, memoryview, str)):
        raise ReceiptError(f"values: a sequence of {kind.name.lower()} expected, not bytes or str")
    items = list(values)
    w.u64(len(items), "count")
    out = bytearray(w.output())
    for i, v in enumerate(items):
        if kind == ValueKind.INTEGERS:
            if not isinstance(v, int) or isinstance(v, bool) or not I64_MIN <= v <= I64_MAX:
                raise ReceiptError(f"values[{i}]: {v!r} is not an int64")
            out += struct.pack(">q", v)
        elif kind == ValueKind.FLOATS:
            if not isinstance(v, float):
                raise ReceiptError(f"values[{i}]: {v!r} is not a float")
            out += struct.pack(">d", v)  # the IEEE 754 binary64 bits, big-endian
        elif kind == ValueKind.UUIDS:
            if not isinstance(v, uuid.UUID):
                raise ReceiptError(f"values[{i}]: {v!r} is not a uuid.UUID")
            out += v.bytes
        else:
            raise ReceiptError(f"values: unknown kind {kind!r}")
    return bytes(out)


def commit(salt: bytes, kind: ValueKind, values: Values) -> bytes:
    """The 32-byte commitment to `values` under `salt`."""
    if not isinstance(salt, (bytes, bytearray)) or len(salt) != SALT_BYTES:
        raise ReceiptError(f"salt: must be exactly {SALT_BYTES} bytes")
    w = Writer("commitment")
    w.tag(COMMITMENT_TAG)
    return hashlib.sha256(w.output() + bytes(salt) + encode_values(kind, values)).digest()


def open_commitment(receipt: Receipt, salt: bytes, values: Values) -> None:
    """Check that `values` and `salt` open the receipt's commitment, and that the values are
    what the receipt's request asked for (count; integers in [min, max]; floats in [0, 1), as
    GetFloats serves them). Raises ReceiptError
    naming what differs."""
    kind = value_kind(receipt.request)
    _check_shape(receipt.request, kind, values)
    if not hmac.compare_digest(commit(salt, kind, values), receipt.commitment):
        raise ReceiptError(
            f"commitment: the values and salt do not open receipt {receipt.serial}'s commitment"
            " (other values, another salt, or another draw)"
        )


def _check_shape(request: ReceiptRequest, kind: ValueKind, values: Values) -> None:
    p = request.params
    want: int
    if isinstance(p, GetRandomParams):
        want = p.num_bytes
    elif isinstance(p, StreamRandomParams):
        want = p.message_bytes
    else:
        want = p.count
    if isinstance(values, (bytes, bytearray, memoryview)) != (kind == ValueKind.BYTES):
        raise ReceiptError(
            f"values: receipt is for {request.rpc.name}, which serves {kind.name.lower()}"
        )
    got = len(values)
    if got != want:
        raise ReceiptError(
            f"values: {got} {kind.name.lower()}, the receipt's request was for {want}"
        )
    for i, v in enumerate(values):
        if isinstance(p, GetIntegersParams) and isinstance(v, int) and not p.min <= v <= p.max:
            raise ReceiptError(f"values[{i}]: {v} outside the request's [{p.min}, {p.max}]")
        if isinstance(p, GetFloatsParams) and isinstance(v, float) and not 0.0 <= v < 1.0:
            raise ReceiptError(f"values[{i}]: {v} outside [0, 1)")
