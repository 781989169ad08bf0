"""Offline verification of Entropy Diode receipts (docs/receipts.md): decode a signed receipt
or tree head in the one canonical encoding (anything else is refused), check signatures against
the gateway's Ed25519 public key, open a receipt's commitment with the values and the salt,
check RFC 9162 inclusion and consistency proofs, and audit a listing of the whole log for one
key's draws. Also the draw file (`DrawFile`) and the public key file (`load_public_key`).

Signatures need the `cryptography` package: `pip install 'entropy-diode[receipts]'`.
Every failure raises `entropy_diode.ReceiptError`, whose message names what failed.

    from entropy_diode import receipts
    key = receipts.load_public_key("public.key")
    receipts.DrawFile.load("draw.json").verify(key)

Layout: _encoding.py (the canonical primitives), receipt.py and head.py (the structures and
their bytes), commitment.py (values and the commitment), keys.py (key id, key-name digest, key
file, Ed25519), merkle.py (RFC 9162 root and proofs), verify.py (the checks, the audit),
drawfile.py (the draw file).
"""

from ..errors import ReceiptError
from .commitment import Values, ValueKind, commit, encode_values, open_commitment, value_kind
from .drawfile import DRAW_FORMAT, DrawFile, Inclusion, VerifiedDraw
from .head import SignedTreeHead, TreeHead, decode_signed_tree_head, decode_tree_head
from .keys import key_id, key_name_digest, load_public_key, parse_public_key
from .merkle import EMPTY_ROOT
from .receipt import (
    GetFloatsParams,
    GetIntegersParams,
    GetRandomParams,
    GetUuidsParams,
    Receipt,
    ReceiptRequest,
    RequestParams,
    Rpc,
    SignedReceipt,
    StreamRandomParams,
    decode_receipt,
    decode_signed_receipt,
    leaf_hash,
)
from .verify import (
    Audit,
    audit,
    verify_consistency,
    verify_inclusion,
    verify_receipt,
    verify_receipted,
    verify_tree_head,
)

__all__ = [
    "DRAW_FORMAT",
    "EMPTY_ROOT",
    "Audit",
    "DrawFile",
    "GetFloatsParams",
    "GetIntegersParams",
    "GetRandomParams",
    "GetUuidsParams",
    "Inclusion",
    "Receipt",
    "ReceiptError",
    "ReceiptRequest",
    "RequestParams",
    "Rpc",
    "SignedReceipt",
    "SignedTreeHead",
    "StreamRandomParams",
    "TreeHead",
    "ValueKind",
    "Values",
    "VerifiedDraw",
    "audit",
    "commit",
    "decode_receipt",
    "decode_signed_receipt",
    "decode_signed_tree_head",
    "decode_tree_head",
    "encode_values",
    "key_id",
    "key_name_digest",
    "leaf_hash",
    "load_public_key",
    "open_commitment",
    "parse_public_key",
    "value_kind",
    "verify_consistency",
    "verify_inclusion",
    "verify_receipt",
    "verify_receipted",
    "verify_tree_head",
]
