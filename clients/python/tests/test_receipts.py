"""The offline receipt verifier (entropy_diode.receipts) against the spec's test vectors
(receipts/testdata/vectors.json, made by the Rust implementation): every vector verifies and
re-encodes to its bytes; every single-bit flip of a signed receipt or head is refused; wrong
salts, values and proofs are refused; hand-made non-canonical encodings, each validly signed so
that only the encoding is at fault, are refused for their stated reason. The Merkle verifier is
also checked against proofs generated here from RFC 9162's recursive definitions."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import re
import struct
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from entropy_diode import (
    ChunkRef,
    Construction,
    DrawReceipt,
    DrbgLabel,
    Provenance,
    ReceiptError,
    SourceKind,
)
from entropy_diode import receipts as R
from entropy_diode.receipts import merkle
from entropy_diode.receipts.keys import verify_signature

VECTORS = json.loads(
    (Path(__file__).resolve().parent / "../../../receipts/testdata/vectors.json").read_text()
)
PK = bytes.fromhex(VECTORS["public_key"])
SEED = bytes.fromhex(VECTORS["signing_key_seed"])
DRAWS = VECTORS["draws"]
HEADS = {h["size"]: h for h in VECTORS["tree_heads"]}
SIGNED = [bytes.fromhex(d["signed_receipt"]) for d in DRAWS]
HEAD4 = bytes.fromhex(HEADS[4]["signed_tree_head"])
HEAD2 = bytes.fromhex(HEADS[2]["signed_tree_head"])


def sign(message: bytes, seed: bytes = SEED) -> bytes:
    return message + Ed25519PrivateKey.from_private_bytes(seed).sign(message)


def values_of(draw: dict[str, Any]) -> R.Values:
    v = draw["values"]
    if v["kind"] == "bytes":
        return bytes.fromhex(v["hex"])
    if v["kind"] == "uuids":
        return [uuid.UUID(hex=h) for h in v["hex"]]
    if v["kind"] == "floats":
        floats = [struct.unpack(">d", bytes.fromhex(b))[0] for b in v["bits_hex"]]
        assert floats == v["values"]
        return floats
    return list(v["values"])


# --- the vectors ---------------------------------------------------------------------------


def test_the_key_id_and_public_key_file() -> None:
    assert R.key_id(PK).hex() == VECTORS["key_id"]
    assert R.parse_public_key(VECTORS["public_key"] + "\n") == PK


@pytest.mark.parametrize("i", range(len(DRAWS)))
def test_every_draw_vector_verifies_and_re_encodes(i: int) -> None:
    d = DRAWS[i]
    sr = R.verify_receipt(SIGNED[i], PK)
    r = sr.receipt
    assert r.serial == d["serial"] == i
    assert r.encode().hex() == d["receipt"] == sr.receipt_bytes.hex()
    assert sr.signature.hex() == d["signature"]
    assert sr.leaf_hash.hex() == d["leaf_hash"]
    assert r.key_name_digest.hex() == d["key_name_digest"] == R.key_name_digest(d["key_name"]).hex()
    assert r.commitment.hex() == d["commitment"]
    assert r.key_id.hex() == VECTORS["key_id"]
    values = values_of(d)
    kind = R.value_kind(r.request)
    assert kind.name.lower() == d["values"]["kind"]
    assert R.encode_values(kind, values).hex() == d["values_encoding"]
    salt = bytes.fromhex(d["salt"])
    assert R.commit(salt, kind, values).hex() == d["commitment"]
    R.open_commitment(r, salt, values)
    # Decoding and encoding again is the identity.
    assert R.decode_signed_receipt(SIGNED[i]) == sr


def test_the_vectors_cover_each_kind_of_values_and_a_drbg_provenance() -> None:
    decoded = [R.decode_signed_receipt(s).receipt for s in SIGNED]
    assert {R.value_kind(r.request) for r in decoded} == set(R.ValueKind)
    assert any(r.provenance.drbg is not None for r in decoded)


@pytest.mark.parametrize("size", sorted(HEADS))
def test_every_tree_head_verifies_and_its_root_is_the_leaves(size: int) -> None:
    h = HEADS[size]
    sth = R.verify_tree_head(bytes.fromhex(h["signed_tree_head"]), PK)
    assert (sth.head.size, sth.head.root.hex()) == (size, h["root"])
    assert sth.head.timestamp_unix_ms == h["timestamp_unix_ms"]
    assert sth.head.encode().hex() == h["tree_head"] == sth.head_bytes.hex()
    assert merkle.root([bytes.fromhex(d["leaf_hash"]) for d in DRAWS[:size]]).hex() == h["root"]


@pytest.mark.parametrize("case", VECTORS["inclusion_proofs"], ids=lambda c: str(c["serial"]))
def test_every_inclusion_proof_verifies(case: dict[str, Any]) -> None:
    proof = [bytes.fromhex(h) for h in case["proof"]]
    head = bytes.fromhex(HEADS[case["tree_size"]]["signed_tree_head"])
    sth = R.verify_inclusion(SIGNED[case["serial"]], proof, head, PK)
    assert sth.head.size == case["tree_size"]


def test_the_consistency_proof_verifies() -> None:
    (case,) = VECTORS["consistency_proofs"]
    proof = [bytes.fromhex(h) for h in case["proof"]]
    old = bytes.fromhex(HEADS[case["old_size"]]["signed_tree_head"])
    new = bytes.fromhex(HEADS[case["new_size"]]["signed_tree_head"])
    R.verify_consistency(old, new, proof, PK)
    R.verify_consistency(new, new, [], PK)  # a head is consistent with itself, by no proof


# --- tampering -------------------------------------------------------------------------------


def flips(data: bytes) -> list[bytes]:
    out = []
    for i in range(len(data) * 8):
        b = bytearray(data)
        b[i // 8] ^= 1 << (i % 8)
        out.append(bytes(b))
    return out


@pytest.mark.parametrize("i", range(len(DRAWS)))
def test_every_bit_flip_of_a_signed_receipt_is_refused(i: int) -> None:
    for n, flipped in enumerate(flips(SIGNED[i])):
        with pytest.raises(ReceiptError):
            R.verify_receipt(flipped, PK)
            pytest.fail(f"bit {n} flipped: accepted")


@pytest.mark.parametrize("size", sorted(HEADS))
def test_every_bit_flip_of_a_signed_head_is_refused(size: int) -> None:
    for n, flipped in enumerate(flips(bytes.fromhex(HEADS[size]["signed_tree_head"]))):
        with pytest.raises(ReceiptError):
            R.verify_tree_head(flipped, PK)
            pytest.fail(f"bit {n} flipped: accepted")


def test_another_key_is_refused_by_key_id_even_with_a_valid_signature() -> None:
    other_seed = bytes(range(32, 64))
    other_pk = Ed25519PrivateKey.from_private_bytes(other_seed).public_key().public_bytes_raw()
    # The receipt re-signed by another key still names the vectors' key id.
    resigned = sign(R.decode_signed_receipt(SIGNED[0]).receipt_bytes, other_seed)
    with pytest.raises(ReceiptError, match="key id"):
        R.verify_receipt(resigned, other_pk)
    with pytest.raises(ReceiptError, match="key id"):
        R.verify_receipt(SIGNED[0], other_pk)


def test_wrong_salt_values_or_a_negative_zero_do_not_open_the_commitment() -> None:
    ints = R.decode_signed_receipt(SIGNED[0]).receipt
    salt = bytes.fromhex(DRAWS[0]["salt"])
    good = values_of(DRAWS[0])
    R.open_commitment(ints, salt, good)
    with pytest.raises(ReceiptError, match="do not open"):
        R.open_commitment(ints, bytes([salt[0] ^ 1]) + salt[1:], good)
    with pytest.raises(ReceiptError, match="do not open"):
        R.open_commitment(ints, salt, [4, 11, 19, 27, 38, 45])  # one value changed, in range
    with pytest.raises(ReceiptError, match="do not open"):
        R.open_commitment(ints, bytes.fromhex(DRAWS[3]["salt"]), good)  # another draw's salt
    with pytest.raises(ReceiptError, match="request was for 6"):
        R.open_commitment(ints, salt, good[:5])  # the request asked for six
    with pytest.raises(ReceiptError, match=r"outside the request's \[1, 49\]"):
        R.open_commitment(ints, salt, [3, 11, 19, 27, 38, 50])
    with pytest.raises(ReceiptError, match="salt"):
        R.open_commitment(ints, salt[:31], good)

    floats = R.decode_signed_receipt(SIGNED[2]).receipt
    fsalt = bytes.fromhex(DRAWS[2]["salt"])
    assert values_of(DRAWS[2]) == [0.0, 0.25, 0.5078125]
    R.open_commitment(floats, fsalt, [0.0, 0.25, 0.5078125])
    with pytest.raises(ReceiptError, match="do not open"):
        R.open_commitment(floats, fsalt, [-0.0, 0.25, 0.5078125])  # equal as floats, not as bits
    with pytest.raises(ReceiptError, match="not a float"):
        R.open_commitment(floats, fsalt, [0, 0.25, 0.5078125])  # an int could be either zero
    with pytest.raises(ReceiptError, match=r"outside \[0, 1\)"):
        R.open_commitment(floats, fsalt, [1.0, 0.25, 0.5078125])
    with pytest.raises(ReceiptError, match="serves floats"):
        R.open_commitment(floats, fsalt, b"\x00" * 3)

    raw = R.decode_signed_receipt(SIGNED[1]).receipt
    rsalt = bytes.fromhex(DRAWS[1]["salt"])
    data = bytes.fromhex(DRAWS[1]["values"]["hex"])
    R.open_commitment(raw, rsalt, data)
    with pytest.raises(ReceiptError, match="do not open"):
        R.open_commitment(raw, rsalt, data[:-1] + bytes([data[-1] ^ 0x80]))
    with pytest.raises(ReceiptError, match="do not open"):  # the UUID draw's bytes, not its UUID
        uuids = R.decode_signed_receipt(SIGNED[3]).receipt
        R.open_commitment(uuids, bytes.fromhex(DRAWS[3]["salt"]), [uuid.UUID(int=1)])


def tampered_proofs(proof: list[bytes]) -> list[tuple[str, list[bytes]]]:
    out = [("dropped last", proof[:-1]), ("extra hash", proof + [proof[0]])]
    if len(proof) > 1:
        out.append(("swapped", proof[::-1]))
    for n, h in enumerate(proof):
        for bit in (0, 77, 255):
            b = bytearray(h)
            b[bit // 8] ^= 1 << (bit % 8)
            out.append((f"hash {n} bit {bit}", proof[:n] + [bytes(b)] + proof[n + 1 :]))
    out.append(("short hash", [proof[0][:31]] + proof[1:]))
    return out


@pytest.mark.parametrize("case", VECTORS["inclusion_proofs"], ids=lambda c: str(c["serial"]))
def test_tampered_inclusion_proofs_are_refused(case: dict[str, Any]) -> None:
    proof = [bytes.fromhex(h) for h in case["proof"]]
    serial = case["serial"]
    for what, bad in tampered_proofs(proof):
        with pytest.raises(ReceiptError):
            R.verify_inclusion(SIGNED[serial], bad, HEAD4, PK)
            pytest.fail(f"{what}: accepted")
    # The right proof for another leaf, and the right proof against another head.
    with pytest.raises(ReceiptError, match="does not lead"):
        R.verify_inclusion(SIGNED[(serial + 1) % 4], proof, HEAD4, PK)
    with pytest.raises(ReceiptError):
        R.verify_inclusion(SIGNED[serial], proof, HEAD2, PK)


def test_tampered_consistency_proofs_are_refused() -> None:
    (case,) = VECTORS["consistency_proofs"]
    proof = [bytes.fromhex(h) for h in case["proof"]]
    for what, bad in tampered_proofs(proof):
        with pytest.raises(ReceiptError):
            R.verify_consistency(HEAD2, HEAD4, bad, PK)
            pytest.fail(f"{what}: accepted")
    with pytest.raises(ReceiptError, match="larger"):
        R.verify_consistency(HEAD4, HEAD2, proof, PK)
    with pytest.raises(ReceiptError, match="empty"):
        R.verify_consistency(HEAD2, HEAD4, [], PK)
    with pytest.raises(ReceiptError, match="must be empty"):
        R.verify_consistency(HEAD4, HEAD4, proof, PK)


# --- non-canonical encodings -------------------------------------------------------------------

RECEIPT0 = R.decode_signed_receipt(SIGNED[0]).receipt_bytes
# Offsets in receipt 0 (GetIntegers, accept_kinds [QUANTUM], provenance of one kind, RAW): the
# tag (1 + 24 bytes), serial, issued_at, then gateway_id "gw-test".
GATEWAY_ID = 25 + 8 + 8
REQUEST = GATEWAY_ID + 4 + len("gw-test") + 32
ACCEPT_KINDS = REQUEST + 1 + 8 + 8 + 4  # after rpc, min, max, count
PROVENANCE = ACCEPT_KINDS + 4 + 1
CONSTRUCTION = len(RECEIPT0) - 32 - 32 - 1  # RAW: the last byte before commitment and key id


def patch(data: bytes, at: int, new: bytes, remove: int | None = None) -> bytes:
    """`data` with `remove` bytes at `at` (default: as many as `new`) replaced by `new`."""
    return data[:at] + new + data[at + (len(new) if remove is None else remove) :]


def with_kinds(accept: tuple[SourceKind, ...]) -> bytes:
    r = R.decode_receipt(RECEIPT0)
    return dataclasses.replace(r, request=dataclasses.replace(r.request, accept_kinds=accept)).encode()


def test_the_offsets_used_below_are_receipt_zeros() -> None:
    assert RECEIPT0[GATEWAY_ID : GATEWAY_ID + 11] == b"\x00\x00\x00\x07gw-test"
    assert RECEIPT0[REQUEST] == 3  # GetIntegers
    assert RECEIPT0[ACCEPT_KINDS : ACCEPT_KINDS + 5] == b"\x00\x00\x00\x01\x01"
    assert RECEIPT0[PROVENANCE : PROVENANCE + 6] == b"\x00\x00\x00\x01\x01\x00"  # [QUANTUM], !mixed
    assert RECEIPT0[CONSTRUCTION] == 1
    two = with_kinds((SourceKind.QUANTUM, SourceKind.OS))
    assert two[ACCEPT_KINDS : ACCEPT_KINDS + 6] == b"\x00\x00\x00\x02\x01\x03"
    R.verify_receipt(sign(two), PK)  # re-signed with the vectors' seed: valid as it is


TWO_KINDS = with_kinds((SourceKind.QUANTUM, SourceKind.OS))
RECEIPT1 = R.decode_signed_receipt(SIGNED[1]).receipt_bytes  # DRBG: the label ends the provenance
MECHANISM = len(RECEIPT1) - 64 - (1 + 4 + 16 + 8 + 8 + 8)

# (reason, receipt bytes, what the error names): each is signed validly before it is checked.
NON_CANONICAL: list[tuple[str, bytes, str]] = [
    ("a byte after the last field", RECEIPT0 + b"\x00", "after the last field"),
    ("the last byte missing", RECEIPT0[:-1], "truncated"),
    ("a bool that is 2", patch(RECEIPT0, PROVENANCE + 5, b"\x02"), "provenance.mixed"),
    (
        "accept_kinds not ascending",
        patch(TWO_KINDS, ACCEPT_KINDS + 4, b"\x03\x01"),
        "not strictly ascending",
    ),
    ("accept_kinds repeated", patch(TWO_KINDS, ACCEPT_KINDS + 4, b"\x01\x01"), "ascending"),
    ("a source kind 4", patch(RECEIPT0, PROVENANCE + 4, b"\x04"), "provenance.kinds[0]"),
    ("a source kind 0", patch(RECEIPT0, ACCEPT_KINDS + 4, b"\x00"), "request.accept_kinds[0]"),
    (
        "provenance.kinds empty",
        patch(RECEIPT0, PROVENANCE, b"\x00\x00\x00\x00", remove=5),
        "provenance.kinds: 0 elements",
    ),
    (
        "four accept_kinds (at most 3)",
        patch(RECEIPT0, ACCEPT_KINDS, b"\x00\x00\x00\x04\x01\x02\x03\x04", remove=5),
        "request.accept_kinds: 4 elements",
    ),
    ("gateway_id empty", patch(RECEIPT0, GATEWAY_ID, b"\x00" * 4, remove=11), "gateway_id: 0 bytes"),
    (
        "gateway_id of 65 bytes",
        patch(RECEIPT0, GATEWAY_ID, b"\x00\x00\x00\x41" + b"g" * 65, remove=11),
        "gateway_id: 65 bytes",
    ),
    ("gateway_id not UTF-8", patch(RECEIPT0, GATEWAY_ID + 4, b"\xff"), "not UTF-8"),
    (
        "a length past the end",
        patch(RECEIPT0, GATEWAY_ID, b"\xff\xff\xff\xff"),
        "gateway_id: 4294967295 bytes",
    ),
    ("rpc 6", patch(RECEIPT0, REQUEST, b"\x06"), "request.rpc"),
    ("rpc 0", patch(RECEIPT0, REQUEST, b"\x00"), "request.rpc"),
    ("min above max", patch(RECEIPT0, REQUEST + 1, struct.pack(">q", 50)), "below min"),
    ("construction 4", patch(RECEIPT0, CONSTRUCTION, b"\x04"), "provenance.construction"),
    ("construction 0", patch(RECEIPT0, CONSTRUCTION, b"\x00"), "provenance.construction"),
    ("DRBG mechanism 2", patch(RECEIPT1, MECHANISM, b"\x02"), "provenance.drbg.mechanism"),
    ("the tree head's tag", patch(RECEIPT0, 0, b"\x1aentropy-diode/tree-head/v1", remove=25), "tag"),
]


@pytest.mark.parametrize("reason,data,names", NON_CANONICAL, ids=[c[0] for c in NON_CANONICAL])
def test_non_canonical_receipts_are_refused(reason: str, data: bytes, names: str) -> None:
    assert data != RECEIPT0
    with pytest.raises(ReceiptError, match=re.escape(names)):
        R.verify_receipt(sign(data), PK)


def test_non_canonical_heads_are_refused() -> None:
    head = R.decode_signed_tree_head(HEAD4).head_bytes
    with pytest.raises(ReceiptError, match="after the last field"):
        R.verify_tree_head(sign(head + b"\x00"), PK)
    with pytest.raises(ReceiptError, match="truncated"):
        R.verify_tree_head(sign(head[:-1]), PK)
    with pytest.raises(ReceiptError, match="tag"):
        R.verify_tree_head(sign(RECEIPT0), PK)  # a receipt is not a head
    with pytest.raises(ReceiptError, match="too short"):
        R.verify_tree_head(HEAD4[-64:], PK)


def test_the_encoder_refuses_what_it_cannot_encode() -> None:
    r = R.decode_receipt(RECEIPT0)
    with pytest.raises(ReceiptError, match="gateway_id"):
        dataclasses.replace(r, gateway_id="").encode()
    with pytest.raises(ReceiptError, match="accept_kinds"):
        with_kinds((SourceKind.OS, SourceKind.QUANTUM))
    with pytest.raises(ReceiptError, match="commitment"):
        dataclasses.replace(r, commitment=b"\x00" * 31).encode()
    with pytest.raises(ReceiptError, match="serial"):
        dataclasses.replace(r, serial=-1).encode()


def random_receipt(rng: random.Random) -> R.Receipt:
    """A receipt with every field drawn: each rpc, kinds, constructions, ids up to the bounds."""
    def ident() -> str:
        return "".join(rng.choice("abcé-0") for _ in range(rng.randint(1, 30)))[:64]

    def kinds(min_len: int) -> tuple[SourceKind, ...]:
        return tuple(sorted(rng.sample(list(SourceKind)[:3], rng.randint(min_len, 3))))

    def u(bits: int) -> int:
        return rng.choice([0, 1, 2**bits - 1, rng.getrandbits(bits)])

    low = rng.randint(-(2**63), 2**63 - 1)
    params: R.RequestParams = rng.choice([
        R.GetRandomParams(u(32)),
        R.StreamRandomParams(u(32), u(64), u(64), u(32)),
        R.GetIntegersParams(low, rng.randint(low, 2**63 - 1), u(32)),
        R.GetFloatsParams(u(32)),
        R.GetUuidsParams(u(32)),
    ])
    construction = rng.choice([Construction.RAW, Construction.DRBG, Construction.DRBG_PREDICTION_RESISTANT])
    drbg = None
    if construction != Construction.RAW:
        drbg = DrbgLabel(1, u(32), rng.randbytes(16).hex(), u(64), u(64), u(64),
                         construction == Construction.DRBG_PREDICTION_RESISTANT)
    chunk = lambda: ChunkRef(ident(), u(64), u(64), rng.randint(-(2**63), 2**63 - 1))  # noqa: E731
    return R.Receipt(
        serial=u(64),
        issued_at_unix_ms=rng.randint(-(2**63), 2**63 - 1),
        gateway_id=ident(),
        key_name_digest=rng.randbytes(32),
        request=R.ReceiptRequest(params, kinds(0)),
        provenance=Provenance(
            kinds=kinds(1), mixed=rng.random() < 0.5,
            collector_ids=tuple(ident() for _ in range(rng.choice([1, 2, 64]))),
            first_chunk=chunk(), last_chunk=chunk(), chunk_count=u(32),
            oldest_byte_age_ms=u(64), construction=construction, drbg=drbg,
        ),
        commitment=rng.randbytes(32),
        key_id=rng.randbytes(32),
    )


def test_random_receipts_round_trip_and_no_proper_prefix_or_extension_decodes() -> None:
    rng = random.Random(32)
    for _ in range(200):
        r = random_receipt(rng)
        data = r.encode()
        assert R.decode_receipt(data) == r
        for cut in {0, 1, 25, len(data) // 2, len(data) - 1}:
            with pytest.raises(ReceiptError):
                R.decode_receipt(data[:cut])
        with pytest.raises(ReceiptError, match="after the last field"):
            R.decode_receipt(data + b"\x00")


# --- keys and signatures ---------------------------------------------------------------------

L = 2**252 + 27742317777372353535851937790883648493


def test_small_order_keys_and_small_order_r_are_refused() -> None:
    identity = (1).to_bytes(32, "little")
    with pytest.raises(ReceiptError, match="small-order"):
        verify_signature(identity, RECEIPT0, SIGNED[0][-64:], "receipt 0")
    with pytest.raises(ReceiptError, match="key id"):  # and no receipt names that key's id
        R.verify_receipt(SIGNED[0], identity)
    # A signature whose R is the identity: valid by the cofactorless equation for the vectors'
    # key (S = k·a, so [S]B = [k]A + R), which OpenSSL accepts and verify_strict does not.
    h = hashlib.sha512(SEED).digest()
    a = (int.from_bytes(h[:32], "little") & ((1 << 254) - 8)) | (1 << 254)
    message = RECEIPT0
    k = int.from_bytes(hashlib.sha512(identity + PK + message).digest(), "little") % L
    signature = identity + (k * a % L).to_bytes(32, "little")
    Ed25519PrivateKey.from_private_bytes(SEED).public_key().verify(signature, message)
    with pytest.raises(ReceiptError, match="small-order"):
        R.verify_receipt(message + signature, PK)


@pytest.mark.parametrize(
    "text",
    [
        VECTORS["public_key"],  # no newline
        VECTORS["public_key"].upper() + "\n",
        VECTORS["public_key"][:-2] + "\n",
        VECTORS["public_key"] + "\n\n",
        " " + VECTORS["public_key"] + "\n",
        VECTORS["public_key"] + "\r\n",
    ],
)
def test_public_key_files_not_in_the_one_form_are_refused(text: str, tmp_path: Path) -> None:
    with pytest.raises(ReceiptError, match="64 lowercase hex digits and a newline"):
        R.parse_public_key(text)
    (tmp_path / "public.key").write_text(text)
    with pytest.raises(ReceiptError, match="public.key"):
        R.load_public_key(tmp_path / "public.key")


def test_a_public_key_file_loads(tmp_path: Path) -> None:
    (tmp_path / "public.key").write_text(VECTORS["public_key"] + "\n")
    assert R.load_public_key(tmp_path / "public.key") == PK
    with pytest.raises(ReceiptError, match="missing.key"):
        R.load_public_key(tmp_path / "missing.key")


def test_without_cryptography_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name == "cryptography" or name.startswith("cryptography."):
            monkeypatch.setitem(sys.modules, name, None)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "cryptography", None)  # type: ignore[arg-type]
    with pytest.raises(ImportError, match=r"entropy-diode\[receipts\]"):
        R.verify_receipt(SIGNED[0], PK)
    # Decoding and commitments need no signature library.
    R.open_commitment(R.decode_signed_receipt(SIGNED[0]).receipt, bytes.fromhex(DRAWS[0]["salt"]),
                      values_of(DRAWS[0]))


# --- the audit listing -------------------------------------------------------------------------


def test_the_audit_lists_a_keys_draws_in_a_range() -> None:
    audit = R.audit(SIGNED, HEAD4, PK, key_name="lottery-operator")
    assert audit.checked == 4 and audit.head.head.size == 4
    assert [s.receipt.serial for s in audit.receipts] == [0, 3]  # the redraw is visible
    later = R.audit(SIGNED, HEAD4, PK, key_name="lottery-operator", start=1)
    assert [s.receipt.serial for s in later.receipts] == [3]
    first = R.audit(SIGNED, HEAD4, PK, key_name="lottery-operator", end=3)
    assert [s.receipt.serial for s in first.receipts] == [0]
    digest = bytes.fromhex(DRAWS[1]["key_name_digest"])
    assert [s.receipt.serial for s in R.audit(SIGNED, HEAD4, PK, key_digest=digest).receipts] == [1]
    assert R.audit(SIGNED, HEAD4, PK, key_name="nobody").receipts == ()
    assert [s.receipt.serial for s in R.audit(SIGNED[:2], HEAD2, PK, key_name="key-ceremony").receipts] == [1]


def test_the_audit_refuses_a_listing_that_is_not_the_heads_log() -> None:
    with pytest.raises(ReceiptError, match="3 receipts, the head covers 4"):
        R.audit(SIGNED[:3], HEAD4, PK, key_name="lottery-operator")  # one hidden
    with pytest.raises(ReceiptError, match="more receipts than"):
        R.audit(SIGNED, HEAD2, PK, key_name="lottery-operator")
    with pytest.raises(ReceiptError, match="position 2 has serial 3"):
        R.audit([SIGNED[0], SIGNED[1], SIGNED[3], SIGNED[2]], HEAD4, PK, key_name="x")
    # Receipt 3 replaced by another validly signed receipt with serial 3: the root differs.
    other = R.decode_receipt(R.decode_signed_receipt(SIGNED[3]).receipt_bytes)
    forged = sign(dataclasses.replace(other, issued_at_unix_ms=other.issued_at_unix_ms + 1).encode())
    with pytest.raises(ReceiptError, match="root is not the head's"):
        R.audit(SIGNED[:3] + [forged], HEAD4, PK, key_name="lottery-operator")
    with pytest.raises(ReceiptError, match="receipt 1: signature"):
        R.audit([SIGNED[0], SIGNED[1][:-1] + bytes([SIGNED[1][-1] ^ 1])] + SIGNED[2:], HEAD4, PK,
                key_name="x")
    with pytest.raises(ReceiptError, match="serial range"):
        R.audit(SIGNED, HEAD4, PK, key_name="x", start=3, end=5)
    with pytest.raises(ReceiptError, match="exactly one"):
        R.audit(SIGNED, HEAD4, PK)


# --- the draw file -----------------------------------------------------------------------------


def draw_file(i: int, with_proof: bool = True) -> R.DrawFile:
    d = DRAWS[i]
    kind = R.ValueKind[d["values"]["kind"].upper()]
    values = values_of(d)
    proof = next(c for c in VECTORS["inclusion_proofs"] if c["serial"] == i)
    inclusion = R.Inclusion(HEAD4, tuple(bytes.fromhex(h) for h in proof["proof"]))
    return R.DrawFile(
        receipt=DrawReceipt(SIGNED[i], bytes.fromhex(d["salt"]), i),
        kind=kind,
        values=values if isinstance(values, bytes) else tuple(values),
        inclusion=inclusion if with_proof else None,
    )


@pytest.mark.parametrize("i", range(len(DRAWS)))
def test_draw_files_round_trip_and_verify(i: int, tmp_path: Path) -> None:
    for with_proof in (True, False):
        f = draw_file(i, with_proof)
        path = tmp_path / "draw.json"
        path.write_text(f.to_json())
        loaded = R.DrawFile.load(path)
        assert loaded == f
        verified = loaded.verify(PK)
        assert verified.receipt.receipt.serial == i
        assert (verified.head is not None) == with_proof


def edit(i: int, change: Any) -> str:
    doc = json.loads(draw_file(i).to_json())
    change(doc)
    return json.dumps(doc)


@pytest.mark.parametrize(
    "why,text,names",
    [
        ("an unknown top-level key", edit(0, lambda d: d.update(note="x")), "unknown key"),
        ("an unknown key in receipt", edit(0, lambda d: d["receipt"].update(x=1)), "receipt: unknown"),
        ("an unknown key in values", edit(0, lambda d: d["values"].update(hex="00")), "values: unknown"),
        ("an unknown key in inclusion", edit(0, lambda d: d["inclusion"].update(size=4)), "inclusion: unknown"),
        ("no values", edit(0, lambda d: d.pop("values")), "missing"),
        ("another format", edit(0, lambda d: d.update(format="entropy-diode/draw/v2")), "format"),
        ("odd hex", edit(0, lambda d: d["receipt"].update(salt=d["receipt"]["salt"][1:])), "must be hex"),
        ("a list for inclusion", edit(0, lambda d: d.update(inclusion=[])), "inclusion: must be an object"),
        ("a short salt", edit(0, lambda d: d["receipt"].update(salt="00" * 31)), "31 bytes"),
        ("a serial as a string", edit(0, lambda d: d["receipt"].update(serial="0")), "receipt.serial"),
        ("a float among integers", edit(0, lambda d: d["values"]["values"].__setitem__(0, 3.0)), "values.values"),
        ("a bool among integers", edit(0, lambda d: d["values"]["values"].__setitem__(0, True)), "values.values"),
        ("a string among floats", edit(2, lambda d: d["values"]["values"].__setitem__(0, "0")), "JSON number"),
        ("an upper-case UUID", edit(3, lambda d: d["values"]["values"].__setitem__(0, d["values"]["values"][0].upper())), "UUID"),
        ("an unknown kind", edit(0, lambda d: d["values"].update(kind="dice")), "values.kind"),
        ("a duplicate key", '{"format": "a", "format": "b"}', "appears twice"),
        ("NaN", edit(2, lambda d: d["values"]["values"].__setitem__(0, float("nan"))), "NaN"),
        ("not JSON", "{", "not JSON"),
    ],
)
def test_malformed_draw_files_are_refused(why: str, text: str, names: str) -> None:
    with pytest.raises(ReceiptError, match=names):
        R.DrawFile.parse(text)


def test_what_the_rust_reader_accepts_is_accepted() -> None:
    # clients/rust draw_file.rs: hex in either case, "inclusion": null, floats as JSON integers.
    doc = json.loads(draw_file(2).to_json())
    doc["receipt"]["salt"] = doc["receipt"]["salt"].upper()
    doc["inclusion"] = None
    doc["values"]["values"][0] = 0
    text = json.dumps(doc)
    f = R.DrawFile.parse(text)
    assert f.inclusion is None and f.receipt.salt == bytes.fromhex(DRAWS[2]["salt"])
    assert f.values == (0.0, 0.25, 0.5078125) and str(f.values[0]) == "0.0"  # type: ignore[index]
    assert f.verify(PK).head is None
    # "-0" is -0.0, read from its text (Python's int would drop the sign): it does not open.
    negative = R.DrawFile.parse(text.replace("[0, 0.25", "[-0, 0.25"))
    assert str(negative.values[0]) == "-0.0"  # type: ignore[index]
    with pytest.raises(ReceiptError, match="do not open"):
        negative.verify(PK)


def test_draw_files_that_do_not_verify_are_refused() -> None:
    f = draw_file(2)
    with pytest.raises(ReceiptError, match="do not open"):
        dataclasses.replace(f, values=(-0.0, 0.25, 0.5078125)).verify(PK)
    with pytest.raises(ReceiptError, match="serial 3 is not the signed receipt's 2"):
        dataclasses.replace(f, receipt=dataclasses.replace(f.receipt, serial=3)).verify(PK)
    with pytest.raises(ReceiptError, match="values are integers"):
        dataclasses.replace(f, kind=R.ValueKind.INTEGERS, values=(1, 2, 3)).verify(PK)
    assert f.inclusion is not None
    bad_proof = R.Inclusion(f.inclusion.signed_tree_head, f.inclusion.hashes[::-1])
    with pytest.raises(ReceiptError, match="inclusion proof"):
        dataclasses.replace(f, inclusion=bad_proof).verify(PK)


# --- RFC 9162 from its recursive definitions ------------------------------------------------


def mth(leaves: list[bytes]) -> bytes:
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return merkle.node_hash(mth(leaves[:k]), mth(leaves[k:]))


def path(m: int, leaves: list[bytes]) -> list[bytes]:
    if len(leaves) == 1:
        return []
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    if m < k:
        return path(m, leaves[:k]) + [mth(leaves[k:])]
    return path(m - k, leaves[k:]) + [mth(leaves[:k])]


def subproof(m: int, leaves: list[bytes], complete: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if complete else [mth(leaves)]
    k = 1 << ((n - 1).bit_length() - 1)
    if m <= k:
        return subproof(m, leaves[:k], complete) + [mth(leaves[k:])]
    return subproof(m - k, leaves[k:], False) + [mth(leaves[:k])]


LEAVES = [hashlib.sha256(bytes([0, i])).digest() for i in range(17)]


def test_roots_inclusion_and_consistency_match_rfc_9162_definitions() -> None:
    for n in range(len(LEAVES) + 1):
        leaves = LEAVES[:n]
        root = merkle.root(leaves)
        assert root == mth(leaves)
        for m in range(n):
            merkle.verify_inclusion(leaves[m], m, n, path(m, leaves), root)
            with pytest.raises(ReceiptError):  # another leaf's place
                merkle.verify_inclusion(leaves[m], m ^ 1, max(n, (m ^ 1) + 1), path(m, leaves), root)
            with pytest.raises(ReceiptError):  # the root of another tree
                merkle.verify_inclusion(leaves[m], m, n, path(m, leaves), mth(LEAVES[: n - 1]))
        for m in range(n + 1):
            proof = subproof(m, leaves, True) if 0 < m < n else []
            merkle.verify_consistency(m, n, mth(leaves[:m]), root, proof)
            for what, bad in tampered_proofs(proof) if proof else []:
                with pytest.raises(ReceiptError):
                    merkle.verify_consistency(m, n, mth(leaves[:m]), root, bad)
                    pytest.fail(f"{m}->{n} {what}: accepted")
    with pytest.raises(ReceiptError, match="empty tree"):
        merkle.verify_consistency(0, 3, b"\x00" * 32, mth(LEAVES[:3]), [])
    with pytest.raises(ReceiptError, match="not in the tree"):
        merkle.verify_inclusion(LEAVES[0], 3, 3, [], mth(LEAVES[:3]))
