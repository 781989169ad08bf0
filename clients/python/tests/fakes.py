"""A scripted in-process EntropyService, for what a live gateway cannot be made to do on cue:
fail a stream after exactly k chunks, end it early, or answer with a given status."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field

import grpc

from entropy_diode._gen.entropy.v1 import entropy_pb2 as pb
from entropy_diode._gen.entropy.v1 import entropy_pb2_grpc as pb_grpc


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

    def StreamRandom(
        self, request: pb.StreamRandomRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.StreamRandomResponse]:
        self.requests.append((request.chunk_bytes, request.total_bytes))
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
            yield pb.StreamRandomResponse(data=data)
        until = time.monotonic() + step.hang
        while time.monotonic() < until and context.is_active():
            time.sleep(0.01)
        if step.end is not None:
            context.abort(step.end, "injected by the test")

    def GetRandom(
        self, request: pb.GetRandomRequest, context: grpc.ServicerContext
    ) -> pb.GetRandomResponse:
        if self.unary_error is not None:
            code, details, trailers = self.unary_error
            context.set_trailing_metadata(trailers)
            context.abort(code, details)
        return pb.GetRandomResponse(data=os.urandom(request.num_bytes))


class FakeServer:
    """`with FakeServer(fake) as target:` serves `fake` on 127.0.0.1 for the block."""

    def __init__(self, fake: FakeEntropy) -> None:
        self.fake = fake
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_EntropyServiceServicer_to_server(fake, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    def __enter__(self) -> str:
        self._server.start()
        return f"127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)
