"""A scripted in-process EntropyService, for what a live gateway cannot be made to do on cue:
fail a stream after exactly k chunks, end it early, answer with a given status, report a
provenance of several kinds and collectors, or a quality report that failed. It records the
`accept_kinds` and `construction` of every call."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field

import grpc

from entropy_diode._gen.entropy.v1 import entropy_pb2 as pb
from entropy_diode._gen.entropy.v1 import entropy_pb2_grpc as pb_grpc
from entropy_diode._gen.entropy.v1 import provenance_pb2 as ppb


def fake_provenance(sequence: int) -> ppb.DrawProvenance:
    """A provenance no dev gateway reports: two kinds mixed, two collectors, chunks
    `sequence` and `sequence + 1`."""
    return ppb.DrawProvenance(
        kinds=[ppb.SOURCE_KIND_QUANTUM, ppb.SOURCE_KIND_OS],
        mixed=True,
        collector_ids=["fake-a", "fake-b"],
        first_chunk=ppb.ChunkRef(
            collector_id="fake-a", epoch=7, sequence=sequence, signed_at_unix_ms=1_700_000_000_000
        ),
        last_chunk=ppb.ChunkRef(
            collector_id="fake-b", epoch=8, sequence=sequence + 1, signed_at_unix_ms=-5
        ),
        chunk_count=2,
        oldest_byte_age_ms=42,
    )


@dataclass
class Step:
    """What one StreamRandom call does: send `chunks` messages (None: all that was asked for),
    then hang for `hang` seconds (sending nothing, until the client cancels), then end with
    `end` (None: OK)."""

    chunks: int | None
    end: grpc.StatusCode | None = None
    hang: float = 0.0


@dataclass
class FakeEntropy(pb_grpc.EntropyServiceServicer):
    script: list[Step] = field(default_factory=list)
    chunk_size: int = 1000
    # (code, details, trailers) for every unary call; None answers normally.
    unary_error: tuple[grpc.StatusCode, str, tuple[tuple[str, str], ...]] | None = None
    requests: list[tuple[int, int]] = field(default_factory=list)
    sent: bytearray = field(default_factory=bytearray)
    # (method, accept_kinds) of every call, in order.
    kinds: list[tuple[str, list[int]]] = field(default_factory=list)
    # (method, construction) of every call, in order.
    constructions: list[tuple[str, int]] = field(default_factory=list)
    # What CheckQuality, GetStatus and GetUsage answer.
    quality: pb.CheckQualityResponse = field(default_factory=pb.CheckQualityResponse)
    status: pb.GetStatusResponse = field(default_factory=pb.GetStatusResponse)
    usage: pb.GetUsageResponse = field(default_factory=pb.GetUsageResponse)

    def _unary(self, method: str, request: object, context: grpc.ServicerContext) -> None:
        """Records the call's accept_kinds and construction; raises the scripted error, if any."""
        self.kinds.append((method, list(getattr(request, "accept_kinds", []))))
        self.constructions.append((method, getattr(request, "construction", 0)))
        if self.unary_error is not None:
            code, details, trailers = self.unary_error
            context.set_trailing_metadata(trailers)
            context.abort(code, details)

    def StreamRandom(
        self, request: pb.StreamRandomRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.StreamRandomResponse]:
        self.requests.append((request.chunk_bytes, request.total_bytes))
        self.kinds.append(("StreamRandom", list(request.accept_kinds)))
        self.constructions.append(("StreamRandom", request.construction))
        step = self.script.pop(0) if self.script else Step(None)
        size = request.chunk_bytes or self.chunk_size
        left = request.total_bytes or None
        count = step.chunks if step.chunks is not None else 10_000
        for _ in range(count):
            if left == 0 or not context.is_active():
                break
            data = os.urandom(size if left is None else min(size, left))
            if left is not None:
                left -= len(data)
            self.sent += data
            # Its chunk sequence is the bytes sent so far: a test can tell which message came last.
            yield pb.StreamRandomResponse(data=data, provenance=fake_provenance(len(self.sent)))
        until = time.monotonic() + step.hang
        while time.monotonic() < until and context.is_active():
            time.sleep(0.01)
        if step.end is not None:
            context.abort(step.end, "injected by the test")

    def GetRandom(
        self, request: pb.GetRandomRequest, context: grpc.ServicerContext
    ) -> pb.GetRandomResponse:
        self._unary("GetRandom", request, context)
        return pb.GetRandomResponse(
            data=os.urandom(request.num_bytes), provenance=fake_provenance(request.num_bytes)
        )

    def GetIntegers(
        self, request: pb.GetIntegersRequest, context: grpc.ServicerContext
    ) -> pb.GetIntegersResponse:
        self._unary("GetIntegers", request, context)
        return pb.GetIntegersResponse(values=[request.min] * request.count)

    def GetFloats(
        self, request: pb.GetFloatsRequest, context: grpc.ServicerContext
    ) -> pb.GetFloatsResponse:
        self._unary("GetFloats", request, context)
        return pb.GetFloatsResponse(values=[0.5] * request.count)

    def GetUuids(
        self, request: pb.GetUuidsRequest, context: grpc.ServicerContext
    ) -> pb.GetUuidsResponse:
        self._unary("GetUuids", request, context)
        return pb.GetUuidsResponse(uuids=["5f0c3c1e-8f6e-4d3c-9a63-3b1e1c2d4e5f"] * request.count)

    def GetStatus(
        self, request: pb.GetStatusRequest, context: grpc.ServicerContext
    ) -> pb.GetStatusResponse:
        self._unary("GetStatus", request, context)
        return self.status

    def CheckQuality(
        self, request: pb.CheckQualityRequest, context: grpc.ServicerContext
    ) -> pb.CheckQualityResponse:
        self._unary("CheckQuality", request, context)
        return self.quality

    def GetUsage(
        self, request: pb.GetUsageRequest, context: grpc.ServicerContext
    ) -> pb.GetUsageResponse:
        self._unary("GetUsage", request, context)
        return self.usage


class FakeServer:
    """`with FakeServer(fake) as target:` serves `fake` on 127.0.0.1 for the block, and
    `receipt_log` (a ReceiptLogService) beside it when given."""

    def __init__(
        self, fake: FakeEntropy, receipt_log: pb_grpc.ReceiptLogServiceServicer | None = None
    ) -> None:
        self.fake = fake
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_EntropyServiceServicer_to_server(fake, self._server)
        if receipt_log is not None:
            pb_grpc.add_ReceiptLogServiceServicer_to_server(receipt_log, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    def __enter__(self) -> str:
        self._server.start()
        return f"127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)
