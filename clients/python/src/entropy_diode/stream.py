"""A file-like reader over StreamRandom that survives transport errors.

The reader is an `io.BufferedIOBase`, so `read(n)` returns exactly n bytes (fewer only at the
end of a bounded stream) and it works wherever a binary file does (`shutil.copyfileobj`, ...).

grpcio's response iterator cannot be waited on with a timeout, so each stream is drained by a
small background thread into a queue the reader waits on with one; the thread takes at most
`PREFETCH` messages ahead of the reader, so gRPC flow control still holds the rest back.
"""

from __future__ import annotations

import atexit
import io
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Protocol

import grpc

from . import errors
from ._common import StreamState, Want
from ._gen.entropy.v1 import entropy_pb2 as pb
from .config import StreamOptions
from .types import Provenance

__all__ = ["StreamReader"]

PREFETCH = 2
"""Messages taken from the stream ahead of the reader."""


class StreamCall(Protocol):
    """What a grpc unary-stream call gives back: an iterator of messages that can be cancelled."""

    def __next__(self) -> pb.StreamRandomResponse: ...

    def cancel(self) -> bool: ...


JOIN_TIMEOUT = 5.0
"""How long closing a stream waits for its thread to leave grpcio (a cancelled call wakes it
at once; the bound only keeps a broken grpcio from hanging close)."""

_END = object()
"""What an attempt's queue holds when the server ended the stream with OK."""


class _Attempt:
    """One StreamRandom call, drained by a daemon thread into a queue of events: messages,
    then `_END` or the RpcError that ended it."""

    def __init__(self, call: StreamCall) -> None:
        self.call = call
        self.events: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._credits = threading.Semaphore(PREFETCH)
        self._stopped = False
        self._thread = threading.Thread(target=self._pump, name="entropy-stream", daemon=True)
        self._thread.start()
        _live.add(self)

    def _pump(self) -> None:
        try:
            while True:
                self._credits.acquire()
                if self._stopped:
                    return
                self.events.put(next(self.call))
        except StopIteration:
            self.events.put(_END)
        except BaseException as e:  # noqa: BLE001 - handed to the reader, which decides
            self.events.put(e)

    def next(self, timeout: float) -> object:
        """The next event, or None if none came within `timeout` seconds."""
        try:
            event = self.events.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(event, pb.StreamRandomResponse):
            self._credits.release()
        return event

    def cancel(self) -> None:
        """Cancel the call and wait for the thread to leave it. A daemon thread still inside
        grpcio when the interpreter exits can die holding the call's lock, and the call's
        finalizer then waits for that lock forever: the process never exits."""
        _live.discard(self)
        self._stopped = True
        self.call.cancel()
        self._credits.release()
        if self._thread is not threading.current_thread():
            self._thread.join(JOIN_TIMEOUT)


_live: weakref.WeakSet[_Attempt] = weakref.WeakSet()
"""Attempts whose call may still be open: a reader left open at exit is cancelled by
`_cancel_live` before the interpreter stops its threads."""


@atexit.register
def _cancel_live() -> None:
    for attempt in list(_live):
        attempt.cancel()


class StreamReader(io.BufferedIOBase):
    """Random bytes from StreamRandom, read like a file. Made by `EntropyClient.reader()`.

    After a transport failure (UNAVAILABLE, the gateway shutting down or restarting, a stream
    that gives no message within the attempt or stall timeout) it opens a new stream for exactly
    the bytes still owed, following the reconnect rule of `StreamOptions`: jittered backoff,
    each attempt waiting for the channel to be ready, for at most the reconnect budget.
    Bytes already received are kept, so the caller never loses or sees twice a byte. Every
    read is bounded: when the rule gives up it raises the last error (`UnavailableError` or
    `DeadlineExceededError`, a `TimeoutError`) saying how long it tried; any other status
    (a bad key, a quota, `FailedPreconditionError` for `accept_kinds` the gateway's pool
    cannot serve, `PermissionDeniedError` for a DRBG construction without the scope) is raised
    at once. `accept_kinds` and `construction` are sent on every stream it opens (a DRBG
    stream gets a new instance on each). Not thread-safe: one reader at a time.
    """

    def __init__(
        self,
        open_stream: Callable[[pb.StreamRandomRequest], StreamCall],
        total_bytes: int | None,
        chunk_bytes: int = 0,
        *,
        options: StreamOptions | None = None,
        sleep: Callable[[float], None] = time.sleep,
        want: Want = Want(),
    ) -> None:
        super().__init__()
        self._open = open_stream
        self._state = StreamState(total_bytes, chunk_bytes, options or StreamOptions(), want=want)
        self._attempt: _Attempt | None = None
        self._sleep = sleep

    @property
    def streams_opened(self) -> int:
        """How many StreamRandom calls this reader has made (1 + reconnects)."""
        return self._state.opens

    @property
    def reconnects(self) -> int:
        """How many streams this reader opened after a failure."""
        return self._state.reconnects

    @property
    def received(self) -> int:
        """Bytes received from the gateway so far (returned or still buffered)."""
        return self._state.received

    @property
    def provenance(self) -> Provenance | None:
        """Where the bytes of the last message received came from (None before the first).
        That message's bytes may still be buffered, not yet returned by `read`."""
        return self._state.provenance

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
        self._drop()
        super().close()

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError("I/O operation on a closed StreamReader")

    def _drop(self) -> None:
        if self._attempt is not None:
            self._attempt.cancel()
            self._attempt = None

    def _fill(self) -> bool:
        """Receive one more message into the buffer; False once a bounded stream is complete."""
        state = self._state
        while not state.exhausted:
            if self._attempt is None:
                self._attempt = _Attempt(self._open(state.request()))
            timeout = state.wait_timeout()
            event = self._attempt.next(timeout)
            if isinstance(event, pb.StreamRandomResponse):
                state.accept_message(event)
                if state.exhausted:
                    # Everything owed has arrived; the server is about to close with OK anyway.
                    self._drop()
                return True
            self._drop()
            if event is _END:
                raise state.ended_early()
            if event is None:
                failure = state.timed_out(timeout)
            elif isinstance(event, grpc.RpcError):
                failure = errors.from_rpc_error(event)
            else:
                assert isinstance(event, BaseException)
                raise event
            self._sleep(state.retry_delay(failure))
        return False
