"""The clients' receipt calls against a scripted gateway serving the spec's test vectors:
`receipt=True` sets the request's field and returns the values with their receipt (which the
verifier accepts), `draw` carries a receipt, a gateway that sends none when asked is an error,
and the ReceiptLogService calls (public key, head, proofs, paged listing) map to what the
verifier checks; errors map to the package's exceptions. Both clients, the same way."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest

from entropy_diode import (
    AsyncEntropyClient,
    Draw,
    EntropyClient,
    EntropyError,
    FailedPreconditionError,
    InvalidArgumentError,
    PermissionDeniedError,
    PublicKeyInfo,
    Receipted,
)
from entropy_diode import receipts as R
from entropy_diode._gen.entropy.v1 import entropy_pb2 as pb
from entropy_diode._gen.entropy.v1 import entropy_pb2_grpc as pb_grpc
from fakes import FakeEntropy, FakeServer, fake_provenance
from test_receipts import DRAWS, HEAD2, HEAD4, PK, SIGNED, VECTORS, values_of


def draw_receipt(i: int) -> pb.DrawReceipt:
    return pb.DrawReceipt(
        signed_receipt=SIGNED[i], salt=bytes.fromhex(DRAWS[i]["salt"]), serial=DRAWS[i]["serial"]
    )


@dataclass
class ReceiptingFake(FakeEntropy):
    """Answers each draw with a vector's values and receipt (when `send_receipts`); records
    every draw's `receipt` field."""

    send_receipts: bool = True
    asked: list[tuple[str, bool]] = field(default_factory=list)

    def _answer(self, method: str, request: Any, i: int, resp: Any) -> Any:
        self.asked.append((method, request.receipt))
        if self.send_receipts:
            resp.receipt.CopyFrom(draw_receipt(i))
        resp.provenance.CopyFrom(fake_provenance(i))
        return resp

    def GetRandom(self, request: Any, context: grpc.ServicerContext) -> pb.GetRandomResponse:
        data = values_of(DRAWS[1])
        assert isinstance(data, bytes)
        return self._answer("GetRandom", request, 1, pb.GetRandomResponse(data=data))

    def GetIntegers(self, request: Any, context: grpc.ServicerContext) -> pb.GetIntegersResponse:
        resp = pb.GetIntegersResponse(values=DRAWS[0]["values"]["values"])
        return self._answer("GetIntegers", request, 0, resp)

    def GetFloats(self, request: Any, context: grpc.ServicerContext) -> pb.GetFloatsResponse:
        resp = pb.GetFloatsResponse(values=values_of(DRAWS[2]))  # type: ignore[arg-type]
        return self._answer("GetFloats", request, 2, resp)

    def GetUuids(self, request: Any, context: grpc.ServicerContext) -> pb.GetUuidsResponse:
        resp = pb.GetUuidsResponse(uuids=[str(u) for u in values_of(DRAWS[3])])  # type: ignore[union-attr]
        return self._answer("GetUuids", request, 3, resp)


@dataclass
class FakeLog(pb_grpc.ReceiptLogServiceServicer):
    """The vectors' log of four receipts, listed `page` at a time; `error` fails every call."""

    page: int = 3
    error: grpc.StatusCode | None = None
    listed: list[tuple[int, int]] = field(default_factory=list)

    def _check(self, context: grpc.ServicerContext) -> None:
        if self.error is not None:
            context.abort(self.error, "scripted")

    def GetPublicKey(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._check(context)
        return pb.GetPublicKeyResponse(
            public_key=PK, key_id=bytes.fromhex(VECTORS["key_id"]), gateway_id="gw-test"
        )

    def GetSignedTreeHead(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._check(context)
        return pb.GetSignedTreeHeadResponse(signed_tree_head=HEAD4, tree_size=4)

    def GetInclusionProof(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._check(context)
        case = next(c for c in VECTORS["inclusion_proofs"] if c["serial"] == request.serial)
        assert request.tree_size == case["tree_size"]
        return pb.GetInclusionProofResponse(hashes=[bytes.fromhex(h) for h in case["proof"]])

    def GetConsistencyProof(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._check(context)
        (case,) = VECTORS["consistency_proofs"]
        assert (request.old_size, request.new_size) == (case["old_size"], case["new_size"])
        return pb.GetConsistencyProofResponse(hashes=[bytes.fromhex(h) for h in case["proof"]])

    def ListReceipts(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._check(context)
        self.listed.append((request.start_serial, request.max_receipts))
        n = min(self.page, request.max_receipts or 1000)
        page = SIGNED[request.start_serial : request.start_serial + n]
        return pb.ListReceiptsResponse(
            signed_receipts=page, next_serial=request.start_serial + len(page), tree_size=4
        )


@pytest.fixture
def served() -> Iterator[tuple[str, ReceiptingFake, FakeLog]]:
    fake, log = ReceiptingFake(), FakeLog()
    with FakeServer(fake, log) as target:
        yield target, fake, log


def check_draws(results: dict[str, Any]) -> None:
    ints = results["get_integers"]
    assert isinstance(ints, Receipted) and ints.values == [3, 11, 19, 27, 38, 45]
    assert results["get_bytes"].values == bytes.fromhex(DRAWS[1]["values"]["hex"])
    assert results["get_floats"].values == [0.0, 0.25, 0.5078125]
    assert results["get_uuids"].values == [uuid.UUID(hex=DRAWS[3]["values"]["hex"][0])]
    for name in ("get_bytes", "get_integers", "get_floats", "get_uuids"):
        r = results[name]
        sr = R.verify_receipted(r, PK)  # the signature, and the values open the commitment
        assert sr.receipt.serial == r.receipt.serial
        assert r.provenance.first_chunk is not None
        # And the draw file a caller would hand over verifies the same.
        assert R.DrawFile.parse(R.DrawFile.of(r).to_json()).verify(PK).receipt == sr
    draw = results["draw"]
    assert isinstance(draw, Draw) and draw.receipt is not None and draw.receipt.serial == 1
    assert R.verify_receipted(draw, PK) == R.DrawFile.of(draw).verify(PK).receipt
    plain = results["plain"]
    assert plain == [3, 11, 19, 27, 38, 45]  # without receipt=True: the plain list, as ever


EXPECTED_ASKED = [
    ("GetRandom", True), ("GetIntegers", True), ("GetFloats", True), ("GetUuids", True),
    ("GetRandom", True), ("GetIntegers", False),
]


def test_receipt_true_asks_and_returns_the_values_with_their_receipt(
    served: tuple[str, ReceiptingFake, FakeLog],
) -> None:
    target, fake, _ = served
    with EntropyClient(target, "k") as c:
        results = {
            "get_bytes": c.get_bytes(16, receipt=True),
            "get_integers": c.get_integers(1, 49, 6, receipt=True),
            "get_floats": c.get_floats(3, receipt=True),
            "get_uuids": c.get_uuids(1, receipt=True),
            "draw": c.draw(16, receipt=True),
            "plain": c.get_integers(1, 49, 6),
        }
    check_draws(results)
    assert fake.asked == EXPECTED_ASKED


async def test_the_async_client_does_the_same(
    served: tuple[str, ReceiptingFake, FakeLog],
) -> None:
    target, fake, _ = served
    async with AsyncEntropyClient(target, "k") as c:
        results = {
            "get_bytes": await c.get_bytes(16, receipt=True),
            "get_integers": await c.get_integers(1, 49, 6, receipt=True),
            "get_floats": await c.get_floats(3, receipt=True),
            "get_uuids": await c.get_uuids(1, receipt=True),
            "draw": await c.draw(16, receipt=True),
            "plain": await c.get_integers(1, 49, 6),
        }
    check_draws(results)
    assert fake.asked == EXPECTED_ASKED


def test_a_receipt_sent_unasked_is_kept_by_draw() -> None:
    # A key holding entropy:receipts gets one with every draw.
    fake = ReceiptingFake()
    with FakeServer(fake) as target, EntropyClient(target, "k") as c:
        assert c.draw(16).receipt is not None
    assert fake.asked == [("GetRandom", False)]


async def test_a_gateway_that_sends_no_receipt_when_asked_is_an_error() -> None:
    fake = ReceiptingFake(send_receipts=False)
    with FakeServer(fake) as target:
        with EntropyClient(target, "k") as c:
            unreceipted = c.draw(16)
            assert unreceipted.receipt is None
            with pytest.raises(R.ReceiptError, match="carries no receipt"):
                R.DrawFile.of(unreceipted)
            with pytest.raises(EntropyError, match="without the receipt") as e:
                c.get_integers(1, 49, 6, receipt=True)
            assert e.value.code == grpc.StatusCode.UNIMPLEMENTED
            with pytest.raises(EntropyError, match="without the receipt"):
                c.draw(16, receipt=True)
        async with AsyncEntropyClient(target, "k") as ac:
            with pytest.raises(EntropyError, match="without the receipt"):
                await ac.get_uuids(1, receipt=True)


def test_receipt_must_be_a_bool(served: tuple[str, ReceiptingFake, FakeLog]) -> None:
    target, fake, _ = served
    with EntropyClient(target, "k") as c:
        with pytest.raises(InvalidArgumentError, match="receipt is 'yes', not a bool"):
            c.get_floats(3, receipt="yes")  # type: ignore[call-overload]
    assert fake.asked == []  # refused before anything was sent


def test_the_receipt_log_calls(served: tuple[str, ReceiptingFake, FakeLog]) -> None:
    target, _, log = served
    with EntropyClient(target, "k") as c:
        info = c.public_key()
        assert info == PublicKeyInfo(PK, R.key_id(PK), "gw-test")
        head = c.signed_tree_head()
        assert R.verify_tree_head(head, info.public_key).head.size == 4
        for serial in range(4):
            R.verify_inclusion(SIGNED[serial], c.inclusion_proof(serial, 4), head, PK)
        R.verify_consistency(HEAD2, head, c.consistency_proof(2, 4), PK)
        page = c.list_receipts(1, 2)
        assert page.signed_receipts == tuple(SIGNED[1:3]) and page.next_serial == 3
        everything = c.list_all_receipts(head.head.size)
        assert everything == SIGNED
        assert log.listed == [(1, 2), (0, 1000), (3, 1000)]  # paged: three, then the last one
        audit = R.audit(everything, head, PK, key_name="lottery-operator")
        assert [s.receipt.serial for s in audit.receipts] == [0, 3]
        assert c.list_all_receipts(2) == SIGNED[:2]  # up to an older head: cut at its size


async def test_the_async_receipt_log_calls(served: tuple[str, ReceiptingFake, FakeLog]) -> None:
    target, _, log = served
    async with AsyncEntropyClient(target, "k") as c:
        assert (await c.public_key()).public_key == PK
        head = await c.signed_tree_head()
        R.verify_inclusion(SIGNED[3], await c.inclusion_proof(3, 4), head, PK)
        R.verify_consistency(HEAD2, head, await c.consistency_proof(2, 4), PK)
        assert (await c.list_receipts(0, 1)).signed_receipts == (SIGNED[0],)
        assert await c.list_all_receipts(4) == SIGNED


def test_listing_past_what_the_gateway_has_signed_stops_with_an_error(
    served: tuple[str, ReceiptingFake, FakeLog],
) -> None:
    target, _, _ = served
    with EntropyClient(target, "k") as c:
        with pytest.raises(FailedPreconditionError, match="does not reach 6"):
            c.list_all_receipts(6)


@pytest.mark.parametrize(
    "code,exc",
    [
        (grpc.StatusCode.FAILED_PRECONDITION, FailedPreconditionError),
        (grpc.StatusCode.PERMISSION_DENIED, PermissionDeniedError),
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidArgumentError),
    ],
)
def test_log_errors_map_to_the_packages_exceptions(code: grpc.StatusCode, exc: type) -> None:
    log = FakeLog(error=code)
    with FakeServer(FakeEntropy(), log) as target, EntropyClient(target, "k") as c:
        for call in (
            c.public_key,
            c.signed_tree_head,
            lambda: c.inclusion_proof(0, 4),
            lambda: c.consistency_proof(2, 4),
            lambda: c.list_receipts(0),
            lambda: c.list_all_receipts(4),
        ):
            with pytest.raises(exc, match="scripted"):
                call()
