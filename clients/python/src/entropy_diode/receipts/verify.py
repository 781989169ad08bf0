"""The checks a caller or an auditor runs offline, with the gateway's public key
(docs/receipts.md, "Verifying"): a receipt's key id and signature; a signed tree head's;
a receipt's inclusion in a signed head; consistency between two signed heads; and the audit
listing: every receipt of the log up to a head, signatures and root checked, then one key's
receipts in a serial range. Each returns typed results or raises ReceiptError naming what
failed."""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from typing import Any

from ..errors import ReceiptError
from ..types import Draw, DrawReceipt, Receipted
from . import merkle
from .commitment import open_commitment
from .head import SignedTreeHead, decode_signed_tree_head
from .keys import key_id, key_name_digest, verify_signature
from .receipt import SignedReceipt, decode_signed_receipt

__all__ = [
    "Audit",
    "audit",
    "verify_consistency",
    "verify_inclusion",
    "verify_receipt",
    "verify_receipted",
    "verify_tree_head",
]


def verify_receipt(signed_receipt: bytes | SignedReceipt, public_key: bytes) -> SignedReceipt:
    """Decode a signed receipt strictly, check that its key id is `public_key`'s and that its
    signature verifies. Returns the decoded receipt."""
    sr = _receipt(signed_receipt)
    _check_key_id(sr.receipt.key_id, public_key, f"receipt {sr.receipt.serial}")
    verify_signature(public_key, sr.receipt_bytes, sr.signature, f"receipt {sr.receipt.serial}")
    return sr


def verify_receipted(result: Receipted[Any] | Draw, public_key: bytes) -> SignedReceipt:
    """A client call's result with its receipt (`receipt=True`; a `Draw` that carries one):
    the receipt verified, its serial the one the gateway reported, and its commitment opened
    by the values returned."""
    values, receipt = receipted_parts(result)
    sr = verify_receipt(receipt.signed_receipt, public_key)
    if sr.receipt.serial != receipt.serial:
        raise ReceiptError(f"receipt: serial {receipt.serial} reported, {sr.receipt.serial} signed")
    open_commitment(sr.receipt, receipt.salt, values)
    return sr


def receipted_parts(result: Receipted[Any] | Draw) -> tuple[Any, DrawReceipt]:
    """The values and the receipt of a client result."""
    if isinstance(result, Draw):
        if result.receipt is None:
            raise ReceiptError("draw: carries no receipt (ask with receipt=True)")
        return result.data, result.receipt
    return result.values, result.receipt


def verify_tree_head(signed_head: bytes | SignedTreeHead, public_key: bytes) -> SignedTreeHead:
    """Decode a signed tree head strictly, check its key id and signature."""
    sth = _head(signed_head)
    what = f"tree head of size {sth.head.size}"
    _check_key_id(sth.head.key_id, public_key, what)
    verify_signature(public_key, sth.head_bytes, sth.signature, what)
    return sth


def verify_inclusion(
    signed_receipt: bytes | SignedReceipt,
    proof: Sequence[bytes],
    signed_head: bytes | SignedTreeHead,
    public_key: bytes,
) -> SignedTreeHead:
    """That the receipt (signature checked) is leaf `serial` of the log the signed head
    (signature checked) commits to, by the RFC 9162 inclusion path `proof`. Returns the head."""
    sr = verify_receipt(signed_receipt, public_key)
    sth = verify_tree_head(signed_head, public_key)
    merkle.verify_inclusion(sr.leaf_hash, sr.receipt.serial, sth.head.size, proof, sth.head.root)
    return sth


def verify_consistency(
    old_head: bytes | SignedTreeHead,
    new_head: bytes | SignedTreeHead,
    proof: Sequence[bytes],
    public_key: bytes,
) -> None:
    """That the log of `new_head` extends the log of `old_head` (both signatures checked): the
    log was only appended to between them."""
    old = verify_tree_head(old_head, public_key).head
    new = verify_tree_head(new_head, public_key).head
    merkle.verify_consistency(old.size, new.size, old.root, new.root, proof)


@dataclass(frozen=True)
class Audit:
    """An audit listing: the head it was checked against, how many receipts were checked (all
    of the head's), and the receipts of the key asked about, in serial order."""

    head: SignedTreeHead
    checked: int
    receipts: tuple[SignedReceipt, ...]


def audit(
    signed_receipts: Iterable[bytes],
    signed_head: bytes | SignedTreeHead,
    public_key: bytes,
    *,
    key_name: str | None = None,
    key_digest: bytes | None = None,
    start: int = 0,
    end: int | None = None,
) -> Audit:
    """Check a listing of the whole log up to `signed_head`, then list one key's draws.

    `signed_receipts` must be receipts 0 .. head.size - 1, in order, each exactly as the log
    holds it (ListReceipts, `EntropyClient.list_all_receipts`). Every receipt is decoded
    strictly, must carry its index as serial and the key's id, and its signature must verify;
    the root of their leaf hashes must be the head's (signature checked): so the listing is
    the whole log the gateway signed, none hidden, none added. Then the receipts whose
    key-name digest is `key_name`'s (or `key_digest`, given instead) with a serial in
    [start, end) (end None: the head's size) are returned."""
    if (key_name is None) == (key_digest is None):
        raise ReceiptError("audit: give key_name or key_digest, exactly one")
    wanted = key_name_digest(key_name) if key_name is not None else bytes(key_digest or b"")
    if len(wanted) != 32:
        raise ReceiptError("audit: key_digest must be 32 bytes")
    sth = verify_tree_head(signed_head, public_key)
    size = sth.head.size
    stop = size if end is None else end
    if not 0 <= start <= stop <= size:
        raise ReceiptError(f"audit: serial range [{start}, {stop}) is not within [0, {size})")
    kid = key_id(public_key)
    leaves: list[bytes] = []
    matches: list[SignedReceipt] = []
    for index, raw in enumerate(signed_receipts):
        if index >= size:
            raise ReceiptError(f"audit: more receipts than the head's size {size}")
        sr = _receipt(raw)
        if sr.receipt.serial != index:
            raise ReceiptError(
                f"audit: receipt at position {index} has serial {sr.receipt.serial}"
            )
        if not hmac.compare_digest(sr.receipt.key_id, kid):
            raise ReceiptError(f"audit: receipt {index} is signed by another key (key id)")
        verify_signature(public_key, sr.receipt_bytes, sr.signature, f"receipt {index}")
        leaves.append(sr.leaf_hash)
        if start <= index < stop and hmac.compare_digest(sr.receipt.key_name_digest, wanted):
            matches.append(sr)
    if len(leaves) != size:
        raise ReceiptError(f"audit: {len(leaves)} receipts, the head covers {size}")
    if not hmac.compare_digest(merkle.root(leaves), sth.head.root):
        raise ReceiptError(
            f"audit: the receipts' root is not the head's: not the log the head of size {size}"
            " commits to"
        )
    return Audit(sth, size, tuple(matches))


# A decoded value is decoded again from its bytes: what is checked is always what the bytes
# say, never fields that could have been built by hand.
def _receipt(value: bytes | SignedReceipt) -> SignedReceipt:
    return decode_signed_receipt(value.raw if isinstance(value, SignedReceipt) else value)


def _head(value: bytes | SignedTreeHead) -> SignedTreeHead:
    return decode_signed_tree_head(value.raw if isinstance(value, SignedTreeHead) else value)


def _check_key_id(found: bytes, public_key: bytes, what: str) -> None:
    if not hmac.compare_digest(found, key_id(public_key)):
        raise ReceiptError(f"{what}: key id is not the public key's (signed by another key)")
