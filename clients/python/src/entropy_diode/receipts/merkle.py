"""RFC 9162 section 2.1 Merkle trees with SHA-256: the root of a list of leaf hashes, and the
verification of inclusion proofs (2.1.3.2) and consistency proofs (2.1.4.2), written from the
RFC's algorithms. Every check raises ReceiptError naming what failed; nothing returns False."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from ..errors import ReceiptError

__all__ = ["EMPTY_ROOT", "node_hash", "root", "verify_consistency", "verify_inclusion"]

HASH_BYTES = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def root(leaf_hashes: Sequence[bytes]) -> bytes:
    """MTH of the leaves (given as leaf hashes), computed bottom-up: each level pairs
    neighbours and carries an odd last node up unchanged, which is RFC 9162's split at the
    largest power of two below n."""
    if not leaf_hashes:
        return EMPTY_ROOT
    level = list(leaf_hashes)
    while len(level) > 1:
        paired = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


def _check_hashes(proof: Sequence[bytes], what: str) -> list[bytes]:
    out = []
    for i, h in enumerate(proof):
        if not isinstance(h, (bytes, bytearray)) or len(h) != HASH_BYTES:
            raise ReceiptError(f"{what}: hash {i} is not {HASH_BYTES} bytes")
        out.append(bytes(h))
    return out


def verify_inclusion(
    leaf: bytes, index: int, tree_size: int, proof: Sequence[bytes], expected_root: bytes
) -> None:
    """That the leaf hash `leaf` is leaf `index` of the tree of `tree_size` leaves whose root is
    `expected_root`, by the inclusion path `proof` (nearest the leaf first)."""
    what = f"inclusion proof of leaf {index} in a tree of {tree_size}"
    path = _check_hashes(proof, what)
    if not 0 <= index < tree_size:
        raise ReceiptError(f"{what}: the leaf is not in the tree")
    fn, sn, r = index, tree_size - 1, bytes(leaf)
    for p in path:
        if sn == 0:
            raise ReceiptError(f"{what}: longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ReceiptError(f"{what}: shorter than the tree is deep")
    if not hmac.compare_digest(r, bytes(expected_root)):
        raise ReceiptError(f"{what}: does not lead to the head's root")


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """That the tree of `old_size` leaves with root `old_root` is a prefix of the tree of
    `new_size` leaves with root `new_root`, by the consistency proof `proof`."""
    what = f"consistency proof from {old_size} to {new_size}"
    path = _check_hashes(proof, what)
    if old_size > new_size or old_size < 0:
        raise ReceiptError(f"{what}: the old tree is larger than the new")
    if old_size == 0 or old_size == new_size:
        if path:
            raise ReceiptError(f"{what}: must be empty")
        if old_size == 0 and not hmac.compare_digest(bytes(old_root), EMPTY_ROOT):
            raise ReceiptError(f"{what}: the old root is not the empty tree's")
        if old_size == new_size and not hmac.compare_digest(bytes(old_root), bytes(new_root)):
            raise ReceiptError(f"{what}: trees of one size with different roots")
        return
    if not path:
        raise ReceiptError(f"{what}: empty")
    if old_size & (old_size - 1) == 0:  # an exact power of two: its root starts the path
        path = [bytes(old_root), *path]
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ReceiptError(f"{what}: longer than the trees need")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ReceiptError(f"{what}: shorter than the trees need")
    if not hmac.compare_digest(fr, bytes(old_root)):
        raise ReceiptError(f"{what}: does not lead to the old head's root")
    if not hmac.compare_digest(sr, bytes(new_root)):
        raise ReceiptError(f"{what}: does not lead to the new head's root")
