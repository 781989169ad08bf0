"""A tree head (docs/receipts.md, "Tree head"): the gateway's signed statement that its log held
`size` receipts whose RFC 9162 root is `root`. Decoded strictly, like receipts; the signature is
checked by `verify.verify_tree_head`."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ReceiptError
from ._encoding import Reader, Writer
from .receipt import SIGNATURE_BYTES

__all__ = ["SignedTreeHead", "TreeHead", "decode_signed_tree_head", "decode_tree_head"]

TREE_HEAD_TAG = "entropy-diode/tree-head/v1"


@dataclass(frozen=True)
class TreeHead:
    size: int
    root: bytes
    timestamp_unix_ms: int
    key_id: bytes

    def encode(self) -> bytes:
        w = Writer("tree head")
        w.tag(TREE_HEAD_TAG)
        w.u64(self.size, "size")
        w.fixed(self.root, 32, "root")
        w.i64(self.timestamp_unix_ms, "timestamp_unix_ms")
        w.fixed(self.key_id, 32, "key_id")
        return w.output()


@dataclass(frozen=True)
class SignedTreeHead:
    """A decoded signed tree head: the head, its signature, and the exact bytes (`raw`)."""

    head: TreeHead
    signature: bytes
    raw: bytes

    @property
    def head_bytes(self) -> bytes:
        """The bytes the signature covers."""
        return self.raw[:-SIGNATURE_BYTES]


def decode_tree_head(data: bytes) -> TreeHead:
    r = Reader(data, "tree head")
    r.tag(TREE_HEAD_TAG)
    head = TreeHead(
        size=r.u64("size"),
        root=r.take(32, "root"),
        timestamp_unix_ms=r.i64("timestamp_unix_ms"),
        key_id=r.take(32, "key_id"),
    )
    r.finish()
    return head


def decode_signed_tree_head(data: bytes) -> SignedTreeHead:
    """Decode a signed tree head (the head's bytes, then a 64-byte signature); the signature
    is not checked here."""
    data = bytes(data)
    if len(data) <= SIGNATURE_BYTES:
        raise ReceiptError(
            f"signed tree head: {len(data)} bytes, too short for a head and a 64-byte signature"
        )
    return SignedTreeHead(decode_tree_head(data[:-SIGNATURE_BYTES]), data[-SIGNATURE_BYTES:], data)
