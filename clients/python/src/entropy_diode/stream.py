"""A file-like reader over StreamRandom that survives transport errors.

The reader is an `io.BufferedIOBase`, so `read(n)` returns exactly n bytes (fewer only at the
end of a bounded stream) and it works wherever a binary file does (`shutil.copyfileobj`, ...).
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator
from typing import Protocol

import grpc

from . import errors
from ._common import StreamState
from ._gen.entropy.v1 import entropy_pb2 as pb

__all__ = ["StreamReader"]


class StreamCall(Protocol):
    """What a grpc unary-stream call gives back: an iterator of messages that can be cancelled."""

    def __next__(self) -> pb.StreamRandomResponse: ...

    def cancel(self) -> bool: ...


class StreamReader(io.BufferedIOBase):
    """Random bytes from StreamRandom, read like a file. Made by `EntropyClient.reader()`.

    On UNAVAILABLE (a dropped connection, a restarting gateway) it opens a new stream for
    exactly the bytes still owed, after a short backoff, up to `MAX_RECONNECTS` times in a row.
    Bytes already received are kept, so the caller never loses or sees twice a byte.
    """

    def __init__(
        self,
        open_stream: Callable[[pb.StreamRandomRequest], StreamCall],
        total_bytes: int | None,
        chunk_bytes: int = 0,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__()
        self._open = open_stream
        self._state = StreamState(total_bytes, chunk_bytes)
        self._call: StreamCall | None = None
        self._sleep = sleep

    @property
    def streams_opened(self) -> int:
        """How many StreamRandom calls this reader has made (1 + reconnects)."""
        return self._state.opens

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        """Exactly `size` bytes, or fewer at the end of a bounded stream (b"" at its end).
        `read()` with no size reads a bounded stream to its end."""
        self._check_open()
        if size is None or size < 0:
            if self._state.total is None:
                raise ValueError("read() of an endless stream needs a size")
            while self._fill():
                pass
            return self._state.take(len(self._state.buffer))
        while len(self._state.buffer) < size and self._fill():
            pass
        return self._state.take(size)

    def read1(self, size: int = -1) -> bytes:
        """What is buffered, receiving one message first if nothing is."""
        self._check_open()
        if not self._state.buffer:
            self._fill()
        return self._state.take(len(self._state.buffer) if size < 0 else size)

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def chunks(self) -> Iterator[bytes]:
        """The bytes as they arrive, one piece per message, until a bounded stream ends."""
        while chunk := self.read1():
            yield chunk

    def close(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None
        super().close()

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on a closed StreamReader")

    def _fill(self) -> bool:
        """Receive one more message into the buffer; False once a bounded stream is complete."""
        state = self._state
        while not state.exhausted:
            if self._call is None:
                self._call = self._open(state.request())
            try:
                msg = next(self._call)
            except StopIteration:
                self._call = None
                raise state.ended_early() from None
            except grpc.RpcError as e:
                self._call = None
                delay = state.retry_delay(e)
                if delay is None:
                    raise errors.from_rpc_error(e) from None
                self._sleep(delay)
                continue
            state.accept(msg.data)
            if state.exhausted:
                # Everything owed has arrived; the server is about to close with OK anyway.
                self._call.cancel()
                self._call = None
            return True
        return False
