"""The gateway's signing key as a verifier sees it (docs/receipts.md, "Keys"): the 32-byte
Ed25519 public key, its key id, the public key file, the key-name digest, and signature
verification.

Signatures are checked by the `cryptography` package (OpenSSL's Ed25519: canonical S, R
compared as encoded), imported only when needed (the optional extra
`pip install entropy-diode[receipts]`). The spec's verifier is ed25519-dalek's `verify_strict`,
which also refuses small-order public keys and small-order R; OpenSSL does not, so that check is
done here: a small-order key lets one signature verify for many messages, and a small-order R
is a signature only a quirk of the equation accepts. Both are refused, so this verifier accepts
exactly what the Rust one does."""

from __future__ import annotations

import functools
import hashlib
import os
from typing import Any

from ..errors import ReceiptError
from ._encoding import Writer

__all__ = [
    "key_id",
    "key_name_digest",
    "load_public_key",
    "parse_public_key",
    "verify_signature",
]

KEY_ID_TAG = "entropy-diode/key-id/v1"
KEY_NAME_TAG = "entropy-diode/key-name/v1"
PUBLIC_KEY_BYTES = 32
EXTRA = "entropy-diode[receipts]"


def _tagged_sha256(tag: str, data: bytes) -> bytes:
    w = Writer(tag)
    w.tag(tag)
    return hashlib.sha256(w.output() + data).digest()


def key_id(public_key: bytes) -> bytes:
    """SHA-256(tag "entropy-diode/key-id/v1" || the 32 public key bytes)."""
    return _tagged_sha256(KEY_ID_TAG, _check_length(public_key))


def key_name_digest(key_name: str) -> bytes:
    """SHA-256(tag "entropy-diode/key-name/v1" || the key name's UTF-8): how receipts name the
    key that drew, and what an auditor looks for."""
    if not isinstance(key_name, str) or not key_name:
        raise ReceiptError("key name: must be a non-empty str")
    return _tagged_sha256(KEY_NAME_TAG, key_name.encode("utf-8"))


def parse_public_key(text: str) -> bytes:
    """The public key file's content: exactly 64 lowercase hex digits and a newline."""
    body = text[:-1] if text.endswith("\n") else None
    if (
        body is None
        or len(body) != 2 * PUBLIC_KEY_BYTES
        or any(c not in "0123456789abcdef" for c in body)
    ):
        raise ReceiptError(
            "public key file: must be exactly 64 lowercase hex digits and a newline"
        )
    return bytes.fromhex(body)


def load_public_key(path: str | os.PathLike[str]) -> bytes:
    """Read a public key file (`receipts_public_key_file`, `<receipts_dir>/public.key`)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(2 * PUBLIC_KEY_BYTES + 2)
    except OSError as e:
        raise ReceiptError(f"public key file {os.fspath(path)!r}: {e.strerror}") from None
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        text = ""
    try:
        return parse_public_key(text)
    except ReceiptError as e:
        raise ReceiptError(f"{os.fspath(path)!r}: {e.details}") from None


def verify_signature(public_key: bytes, message: bytes, signature: bytes, what: str) -> None:
    """Ed25519 (RFC 8032, pure) with the strict rules above; raises ReceiptError naming `what`."""
    check_public_key(public_key)
    if len(signature) != 64:
        raise ReceiptError(f"{what}: signature is {len(signature)} bytes, not 64")
    if _small_order(signature[:32]):
        raise ReceiptError(f"{what}: signature refused: its R is a small-order point")
    ed25519, invalid_signature = _crypto()
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(bytes(public_key)).verify(
            bytes(signature), bytes(message)
        )
    except invalid_signature:
        raise ReceiptError(f"{what}: signature does not verify under the public key") from None
    except ValueError as e:  # a key OpenSSL cannot load
        raise ReceiptError(f"{what}: public key refused: {e}") from None


def check_public_key(public_key: bytes) -> None:
    """A canonical encoding of a curve point that is not of small order."""
    _check_point(_check_length(public_key))


@functools.lru_cache(maxsize=16)  # an audit checks one key thousands of times
def _check_point(pk: bytes) -> None:
    y = int.from_bytes(pk, "little") & ((1 << 255) - 1)
    if y >= _P:
        raise ReceiptError("public key: not canonically encoded (y >= p)")
    if _decode_point(pk) is None:
        raise ReceiptError("public key: not a point on the Ed25519 curve")
    if _small_order(pk):
        raise ReceiptError("public key: a small-order point, refused (as verify_strict does)")


def _check_length(public_key: bytes) -> bytes:
    if not isinstance(public_key, (bytes, bytearray)) or len(public_key) != PUBLIC_KEY_BYTES:
        raise ReceiptError(f"public key: must be exactly {PUBLIC_KEY_BYTES} bytes")
    return bytes(public_key)


def _crypto() -> tuple[Any, type[Exception]]:
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as e:
        raise ImportError(
            "verifying receipt signatures needs the `cryptography` package:"
            f" pip install '{EXTRA}' (or pip install cryptography)"
        ) from e
    return ed25519, InvalidSignature


# Edwards25519 (RFC 8032 5.1): -x^2 + y^2 = 1 + d x^2 y^2 over GF(p). Only what the small-order
# test needs: decoding a point and doubling it.
_P = 2**255 - 19
_D = (-121665 * pow(121666, -1, _P)) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _decode_point(encoded: bytes) -> tuple[int, int] | None:
    """The affine point an encoding names (y reduced mod p), or None if none."""
    n = int.from_bytes(encoded, "little")
    sign, y = n >> 255, (n & ((1 << 255) - 1)) % _P
    u, v = (y * y - 1) % _P, (_D * y * y + 1) % _P
    x2 = u * pow(v, -1, _P) % _P
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P != 0:
        x = x * _SQRT_M1 % _P
        if (x * x - x2) % _P != 0:
            return None
    if x == 0 and sign == 1:
        return None
    if x & 1 != sign:
        x = _P - x
    return x, y


def _small_order(encoded: bytes) -> bool:
    """Whether the encoding names a point whose order divides 8 ([8]P is the identity)."""
    point = _decode_point(bytes(encoded))
    if point is None:
        return False
    x, y = point
    for _ in range(3):  # doubling on a complete curve (a = -1 square, d non-square)
        xx, yy = x * x % _P, y * y % _P
        x, y = (
            2 * x * y * pow((yy - xx) % _P, -1, _P) % _P,
            (yy + xx) * pow((2 - yy + xx) % _P, -1, _P) % _P,
        )
    return x == 0 and y == 1
