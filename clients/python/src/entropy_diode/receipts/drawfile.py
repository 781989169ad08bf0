"""The draw file (`entropy-diode/draw/v1`, docs/receipts.md): JSON holding a receipt, its salt
and serial, the values as served, and optionally an inclusion proof in a signed head; what the
CLI writes with a receipted draw and what a caller hands to an auditor. Read strictly: a key
this format does not have, a duplicate key, a value of the wrong JSON type or a UUID not in
lowercase 8-4-4-4-12 form is refused, since a verifier that skips what it does not understand
can be shown one thing and check another. What the Rust reader (clients/rust draw_file.rs)
accepts is accepted here too: hex in either case, `"inclusion": null` for no proof, and floats
written as JSON integers (read from their text, so `-0` is -0.0, as serde_json reads it)."""

from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass
from typing import Any

from ..errors import ReceiptError
from ..types import Draw, DrawReceipt, Receipted
from ._encoding import I64_MAX, I64_MIN, U64_MAX
from .commitment import SALT_BYTES, Values, ValueKind, open_commitment, value_kind
from .head import SignedTreeHead
from .receipt import SignedReceipt, decode_signed_receipt
from .verify import receipted_parts, verify_inclusion, verify_receipt

__all__ = ["DRAW_FORMAT", "DrawFile", "Inclusion", "VerifiedDraw"]

DRAW_FORMAT = "entropy-diode/draw/v1"
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_KIND_NAMES = {
    "bytes": ValueKind.BYTES,
    "integers": ValueKind.INTEGERS,
    "floats": ValueKind.FLOATS,
    "uuids": ValueKind.UUIDS,
}


@dataclass(frozen=True)
class Inclusion:
    """A signed tree head and the receipt's inclusion path in it (nearest the leaf first)."""

    signed_tree_head: bytes
    hashes: tuple[bytes, ...]


@dataclass(frozen=True)
class VerifiedDraw:
    """A draw file that verified: its receipt (signature checked, commitment opened by the
    file's values), and the head it is included in when the file carried a proof."""

    receipt: SignedReceipt
    head: SignedTreeHead | None


@dataclass(frozen=True)
class DrawFile:
    """A draw file's content. `values` is `bytes` for BYTES, else a tuple of ints, floats or
    `uuid.UUID`s."""

    receipt: DrawReceipt
    kind: ValueKind
    values: Values
    inclusion: Inclusion | None = None

    @classmethod
    def of(cls, result: Receipted[Any] | Draw, inclusion: Inclusion | None = None) -> DrawFile:
        """The draw file of a client call made with `receipt=True` (or a `Draw` carrying a
        receipt); `inclusion` from `inclusion_proof` and a signed head, if wanted."""
        values, receipt = receipted_parts(result)
        kind = value_kind(decode_signed_receipt(receipt.signed_receipt).receipt.request)
        return cls(receipt, kind, values if kind == ValueKind.BYTES else tuple(values), inclusion)

    @classmethod
    def parse(cls, text: str | bytes) -> DrawFile:
        try:
            doc = json.loads(
                text,
                object_pairs_hook=_no_duplicates,
                parse_constant=_no_constant,
                parse_int=_IntLiteral.parse,
            )
        except ReceiptError:
            raise
        except (ValueError, UnicodeDecodeError) as e:
            raise ReceiptError(f"draw file: not JSON ({e})") from None
        top = _object(doc, "draw file", {"format", "receipt", "values"}, {"inclusion"})
        if top["format"] != DRAW_FORMAT:
            raise ReceiptError(f"draw file: format: {top['format']!r} is not {DRAW_FORMAT!r}")
        rec = _object(top["receipt"], "receipt", {"signed_receipt", "salt", "serial"})
        salt = _hex(rec["salt"], "receipt.salt")
        if len(salt) != SALT_BYTES:
            raise ReceiptError(f"draw file: receipt.salt: {len(salt)} bytes, not {SALT_BYTES}")
        receipt = DrawReceipt(
            signed_receipt=_hex(rec["signed_receipt"], "receipt.signed_receipt"),
            salt=salt,
            serial=_int(rec["serial"], "receipt.serial", 0, U64_MAX),
        )
        kind, values = _values(top["values"])
        inclusion = None
        if top.get("inclusion") is not None:
            inc = _object(top["inclusion"], "inclusion", {"signed_tree_head", "hashes"})
            hashes = _list(inc["hashes"], "inclusion.hashes")
            inclusion = Inclusion(
                signed_tree_head=_hex(inc["signed_tree_head"], "inclusion.signed_tree_head"),
                hashes=tuple(_hex(h, f"inclusion.hashes[{i}]") for i, h in enumerate(hashes)),
            )
        return cls(receipt, kind, values, inclusion)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DrawFile:
        try:
            with open(path, "rb") as f:
                return cls.parse(f.read())
        except OSError as e:
            raise ReceiptError(f"draw file {os.fspath(path)!r}: {e.strerror}") from None

    def to_json(self) -> str:
        """The file's text (two-space indent, a final newline)."""
        values: dict[str, Any] = {"kind": self.kind.name.lower()}
        if self.kind == ValueKind.BYTES:
            values["hex"] = bytes(self.values).hex()  # type: ignore[arg-type]
        elif self.kind == ValueKind.UUIDS:
            values["values"] = [str(u) for u in self.values]
        else:
            values["values"] = list(self.values)
        doc: dict[str, Any] = {
            "format": DRAW_FORMAT,
            "receipt": {
                "signed_receipt": self.receipt.signed_receipt.hex(),
                "salt": self.receipt.salt.hex(),
                "serial": self.receipt.serial,
            },
            "values": values,
        }
        if self.inclusion is not None:
            doc["inclusion"] = {
                "signed_tree_head": self.inclusion.signed_tree_head.hex(),
                "hashes": [h.hex() for h in self.inclusion.hashes],
            }
        return json.dumps(doc, indent=2, allow_nan=False) + "\n"

    def verify(self, public_key: bytes) -> VerifiedDraw:
        """The receipt's key id and signature, its serial against the file's, the values'
        kind against the receipt's call, the commitment opened by the values and the salt, and
        (when the file has one) the inclusion proof in its signed head."""
        sr = verify_receipt(self.receipt.signed_receipt, public_key)
        if sr.receipt.serial != self.receipt.serial:
            raise ReceiptError(
                f"draw file: receipt.serial {self.receipt.serial} is not the signed receipt's"
                f" {sr.receipt.serial}"
            )
        expected = value_kind(sr.receipt.request)
        if self.kind != expected:
            raise ReceiptError(
                f"draw file: values are {self.kind.name.lower()}, the receipt is for"
                f" {sr.receipt.request.rpc.name} ({expected.name.lower()})"
            )
        open_commitment(sr.receipt, self.receipt.salt, self.values)
        head = None
        if self.inclusion is not None:
            head = verify_inclusion(
                sr, self.inclusion.hashes, self.inclusion.signed_tree_head, public_key
            )
        return VerifiedDraw(sr, head)


class _IntLiteral(int):
    """A JSON integer that remembers its text: an integer where one is expected, and the exact
    float its text names where a float is (Python's int would lose the sign of `-0`)."""

    text: str

    @classmethod
    def parse(cls, text: str) -> _IntLiteral:
        value = cls(text)
        value.text = text
        return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ReceiptError(f"draw file: key {k!r} appears twice")
        out[k] = v
    return out


def _no_constant(name: str) -> None:
    raise ReceiptError(f"draw file: {name} is not JSON")


def _object(value: Any, what: str, required: set[str], optional: set[str] = set()) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ReceiptError(f"draw file: {what}: must be an object")
    unknown = set(value) - required - optional
    if unknown:
        raise ReceiptError(f"draw file: {what}: unknown key(s) {sorted(unknown)}")
    missing = required - set(value)
    if missing:
        raise ReceiptError(f"draw file: {what}: missing key(s) {sorted(missing)}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ReceiptError(f"draw file: {what}: must be an array")
    return value


def _hex(value: Any, what: str) -> bytes:
    if not isinstance(value, str) or not _HEX.fullmatch(value):
        raise ReceiptError(f"draw file: {what}: must be hex (two digits a byte)")
    return bytes.fromhex(value)


def _int(value: Any, what: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ReceiptError(f"draw file: {what}: must be an integer in {lo}..={hi}")
    return int(value)


def _values(value: Any) -> tuple[ValueKind, Values]:
    if not isinstance(value, dict) or value.get("kind") not in _KIND_NAMES:
        raise ReceiptError(
            "draw file: values.kind: must be one of bytes, integers, floats, uuids"
        )
    kind = _KIND_NAMES[value["kind"]]
    if kind == ValueKind.BYTES:
        v = _object(value, "values", {"kind", "hex"})
        return kind, _hex(v["hex"], "values.hex")
    items = _list(_object(value, "values", {"kind", "values"})["values"], "values.values")
    if kind == ValueKind.INTEGERS:
        return kind, tuple(
            _int(x, f"values.values[{i}]", I64_MIN, I64_MAX) for i, x in enumerate(items)
        )
    if kind == ValueKind.FLOATS:
        floats = []
        for i, x in enumerate(items):
            if isinstance(x, _IntLiteral):
                floats.append(float(x.text))
            elif isinstance(x, float):
                floats.append(x)
            else:
                raise ReceiptError(f"draw file: values.values[{i}]: must be a JSON number")
        return kind, tuple(floats)
    out = []
    for i, x in enumerate(items):
        if not isinstance(x, str) or not _UUID.fullmatch(x):
            raise ReceiptError(
                f"draw file: values.values[{i}]: must be a lowercase 8-4-4-4-12 UUID"
            )
        out.append(uuid.UUID(x))
    return kind, tuple(out)
