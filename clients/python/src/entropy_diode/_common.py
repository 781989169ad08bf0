"""What the sync and asyncio clients and their stream readers share below the calls themselves
(those are mapped once, in _calls.py): credentials, metadata, checked request messages, and the
bookkeeping that lets a stream reader reconnect without losing or repeating bytes."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from . import errors
from ._gen.entropy.v1 import entropy_pb2 as pb
from ._gen.entropy.v1 import provenance_pb2
from .config import Endpoint, StreamOptions, check_api_key, parse_endpoint
from .types import Construction, Provenance, SourceKind, provenance_from_pb

DEFAULT_TIMEOUT = 30.0
"""Seconds a unary call may take by default. The gateway itself answers UNAVAILABLE after its
`max_wait_ms` (2 s by default) when the pool runs dry, so this only bounds network trouble."""

CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)
"""Channel options every client adds (unless the caller sets the same key). grpcio has no way
to reset a channel's reconnect backoff, which would otherwise grow to 120 s after a gateway
restart; capping it at 1 s means a gateway that is back is used within about a second.
(`grpc.min_reconnect_backoff_ms` is left alone: despite its name it is the shortest time a
connection attempt is given, 20 s by default, and a slow TLS handshake needs it.)"""

RECONNECT_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
"""Statuses a stream reader reconnects after: transport failures and the server's shutdown
surface as UNAVAILABLE, and a stream that gives no message within the attempt or stall timeout
as DEADLINE_EXCEEDED (the reader's own; streams carry no gRPC deadline). Anything else (a bad
key, a quota, a bad argument, FAILED_PRECONDITION for `accept_kinds` the pool cannot serve)
would fail again the same way."""

CUT_SHORT_MARKERS = ("Stream removed", "Received RST_STREAM")
"""How grpcio (C-core) words a stream that ended without a gRPC status: something between the
client and the gateway (a load balancer that lost its upstream) ended it with an empty DATA
frame or reset it. Nothing ended the call on purpose, so the reader resumes."""


def cut_short(err: errors.EntropyError) -> bool:
    """True when `err` is a stream cut short on the way (no status from the gateway), a transport
    failure like UNAVAILABLE. The gateway itself never ends a stream that way."""
    return err.code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL) and any(
        m in err.details for m in CUT_SHORT_MARKERS
    )

M = TypeVar("M", bound=Message)


@dataclass(frozen=True)
class Connection:
    """What a client needs to open its channel: the grpc target, credentials (None:
    plaintext), channel options, and the call metadata carrying the key."""

    endpoint: Endpoint
    credentials: grpc.ChannelCredentials | None
    options: tuple[tuple[str, Any], ...]
    metadata: tuple[tuple[str, str], ...]


def connection(
    endpoint: str,
    api_key: str | None,
    ca_file: str | os.PathLike[str] | None,
    credentials: grpc.ChannelCredentials | None,
    options: Sequence[tuple[str, Any]],
) -> Connection:
    """Check everything a client is constructed with, so a bad endpoint, key or CA file fails
    here and not at the first call."""
    if ca_file is not None and credentials is not None:
        raise errors.InvalidArgumentError(
            grpc.StatusCode.INVALID_ARGUMENT, "give ca_file or credentials, not both"
        )
    parsed = parse_endpoint(endpoint, have_ca_file=ca_file is not None or credentials is not None)
    metadata = auth_metadata(check_api_key(api_key))
    creds: grpc.ChannelCredentials | None = None
    if credentials is not None:
        creds = credentials
    elif ca_file is not None:
        creds = grpc.ssl_channel_credentials(root_certificates=read_ca_file(ca_file))
    elif parsed.tls:
        creds = grpc.ssl_channel_credentials()
    given = {key for key, _ in options}
    merged = tuple(options) + tuple(kv for kv in CHANNEL_OPTIONS if kv[0] not in given)
    return Connection(parsed, creds, merged, metadata)


def read_ca_file(path: str | os.PathLike[str]) -> bytes:
    try:
        with open(path, "rb") as f:
            pem = f.read()
    except OSError as e:
        raise errors.InvalidArgumentError(
            grpc.StatusCode.INVALID_ARGUMENT, f"CA file {os.fspath(path)!r}: {e.strerror}"
        ) from None
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise errors.InvalidArgumentError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"CA file {os.fspath(path)!r} holds no PEM certificate",
        )
    return pem


def auth_metadata(api_key: str) -> tuple[tuple[str, str], ...]:
    # Sent as call metadata on every call: the gateway never takes keys from fields or URLs.
    # (Call credentials would refuse plaintext channels, which dev mode uses.)
    return (("authorization", f"Bearer {api_key}"),)


def build(cls: type[M], **fields: Any) -> M:
    """A request message; a value protobuf cannot hold (a negative count, an int beyond int64)
    raises InvalidArgumentError like the server's own range checks, not a bare ValueError."""
    try:
        return cls(**fields)
    except (ValueError, TypeError) as e:
        raise errors.InvalidArgumentError(
            grpc.StatusCode.INVALID_ARGUMENT, f"{cls.DESCRIPTOR.name}: {e}"
        ) from None


def check_kinds(kinds: Iterable[SourceKind]) -> tuple[int, ...]:
    """`accept_kinds` as sent: a list of SourceKind (ints). Which kinds the gateway knows is
    its to say (INVALID_ARGUMENT naming `accept_kinds[i]`); here only the shape is checked."""
    if isinstance(kinds, (int, str, bytes)):
        raise errors.InvalidArgumentError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"accept_kinds must be a list of SourceKind, not {type(kinds).__name__}"
            " (for one kind: [SourceKind.QUANTUM])",
        )
    out = []
    for i, kind in enumerate(kinds):
        if not isinstance(kind, int) or isinstance(kind, bool):
            raise errors.InvalidArgumentError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"accept_kinds[{i}] is {kind!r}, not a SourceKind",
            )
        out.append(int(kind))
    return tuple(out)


def check_construction(construction: Construction) -> int:
    """`construction` as sent: a Construction (an int). Which values the gateway knows is its
    to say (INVALID_ARGUMENT naming `construction`); here only that it is one, so a string
    or a bool does not become a number by accident."""
    if (
        not isinstance(construction, int)
        or isinstance(construction, bool)
        or not -(2**31) <= construction < 2**31  # the wire's int32
    ):
        raise errors.InvalidArgumentError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"construction is {construction!r}, not a Construction"
            " (Construction.RAW, DRBG or DRBG_PREDICTION_RESISTANT)",
        )
    return int(construction)


@dataclass(frozen=True)
class Want:
    """What an entropy call or stream asks for besides its size, checked: the source kinds it
    accepts (`accept_kinds`; empty: any) and how its bytes are made (`construction`; 0: RAW).
    A stream reader sends the same on every stream it opens, reconnects included."""

    accept_kinds: tuple[int, ...] = ()
    construction: int = 0

    def fields(self) -> dict[str, Any]:
        """The request fields every entropy request carries."""
        return {"accept_kinds": list(self.accept_kinds), "construction": self.construction}


class StreamState:
    """Bytes received but not yet handed out, how many the server has sent, and the reconnect
    rule's clock.

    `total_bytes` None means an endless stream. After a transport error the reader asks for
    exactly `total_bytes - received` more on a new stream: bytes already received (returned or
    still buffered) are never asked for again, and nothing buffered is dropped.
    """

    def __init__(
        self,
        total_bytes: int | None,
        chunk_bytes: int,
        options: StreamOptions,
        clock: Callable[[], float] = time.monotonic,
        want: Want = Want(),
    ) -> None:
        if total_bytes is not None and total_bytes < 0:
            raise ValueError("total_bytes must be >= 0 (or None for an endless stream)")
        self.total = total_bytes
        self.chunk_bytes = chunk_bytes
        self.want = want
        self.options = options
        self.clock = clock
        self.received = 0
        self.buffer = bytearray()
        self.opens = 0
        self.reconnects = 0
        # The outage: since when no bytes flow (None: they do), and the attempts that failed.
        self.broken_since: float | None = None
        self.failures = 0
        self.last_error: errors.EntropyError | None = None
        # The last attempt's timeout when only the budget's end made it shorter than usual.
        self.clamped_timeout: errors.EntropyError | None = None
        # Whether the current stream has delivered a message (then the stall timeout applies).
        self.flowing = False
        # The provenance of the last message received, converted when asked for.
        self._provenance_pb: provenance_pb2.DrawProvenance | None = None
        self._provenance: Provenance | None = None

    @property
    def exhausted(self) -> bool:
        """Everything asked for has arrived (the buffer may still hold some of it)."""
        return self.total is not None and self.received >= self.total

    def request(self) -> pb.StreamRandomRequest:
        """The request for a new stream: exactly the bytes still owed. Raises instead when the
        reconnect budget ran out (during the backoff before this attempt)."""
        self.check_budget()
        self.opens += 1
        if self.broken_since is not None:
            self.reconnects += 1
        self.flowing = False
        remaining = 0 if self.total is None else self.total - self.received
        return build(
            pb.StreamRandomRequest,
            chunk_bytes=self.chunk_bytes,
            total_bytes=remaining,
            **self.want.fields(),
        )

    def wait_timeout(self) -> float:
        """How long to wait for the current stream's next message: the stall timeout once it
        flows, else the attempt timeout (no longer than what is left of the budget)."""
        if self.flowing:
            return self.options.stall_timeout
        timeout = self.options.attempt_timeout
        budget = self.options.reconnect_budget
        if self.broken_since is not None and budget > 0:
            left = budget - (self.clock() - self.broken_since)
            timeout = max(0.001, min(timeout, left))
        return timeout

    def timed_out(self, waited: float) -> errors.EntropyError:
        """The error for a stream that gave no message within `waited` seconds."""
        what = "no message (stalled)" if self.flowing else "no first message"
        err = errors.DeadlineExceededError(
            grpc.StatusCode.DEADLINE_EXCEEDED, f"{what} within {waited:.3g} s"
        )
        # Cut short by what was left of the budget, the attempt says nothing about the gateway:
        # giving up then reports the gateway's last answer, not this local timeout.
        self.clamped_timeout = err if not self.flowing and waited < self.options.attempt_timeout else None
        return err

    @property
    def provenance(self) -> Provenance | None:
        """Where the last message received came from (None before the first)."""
        if self._provenance is None and self._provenance_pb is not None:
            self._provenance = provenance_from_pb(self._provenance_pb)
        return self._provenance

    def accept_message(self, msg: pb.StreamRandomResponse) -> None:
        self.accept(msg.data)
        # (Absent only from a gateway too old to say: then nothing is known of this message.)
        self._provenance_pb = msg.provenance if msg.HasField("provenance") else None
        self._provenance = None

    def accept(self, data: bytes) -> None:
        if self.total is not None and self.received + len(data) > self.total:
            raise errors.EntropyError(
                grpc.StatusCode.INTERNAL,
                f"server sent {self.received + len(data)} bytes on a stream of {self.total}",
            )
        self.received += len(data)
        self.buffer += data
        self.flowing = True
        if data:
            self.broken_since = None
            self.failures = 0

    def ended_early(self) -> errors.EntropyError:
        """The server closed the stream with OK before sending everything: a server bug, not a
        transport hiccup, so it is reported rather than papered over."""
        return errors.EntropyError(
            grpc.StatusCode.INTERNAL,
            f"stream ended with OK after {self.received} of {self.total or 'unlimited'} bytes",
        )

    def retry_delay(self, err: errors.EntropyError) -> float:
        """Seconds to wait before the next attempt after `err`; raises `err` when it is final
        (not a transport failure), and `gave_up()` once the reconnect budget is spent."""
        if err.code not in RECONNECT_CODES and not cut_short(err):
            raise err
        now = self.clock()
        if self.broken_since is None:
            self.broken_since = now
        self.failures += 1
        if err is not self.clamped_timeout or self.last_error is None:
            self.last_error = err
        self.check_budget(now)
        delay = self.options.backoff(self.failures - 1)
        budget = self.options.reconnect_budget
        if budget > 0:
            delay = min(delay, budget - (now - self.broken_since))
        return delay

    def check_budget(self, now: float | None = None) -> None:
        """Raise, if the reconnect budget of the current outage is spent, the last error
        rewritten to say how long the reader tried and how much it had received."""
        budget = self.options.reconnect_budget
        if self.broken_since is None or self.last_error is None or budget <= 0:
            return
        spent = (self.clock() if now is None else now) - self.broken_since
        if spent >= budget:
            err = self.last_error
            raise errors.from_status(
                err.code,
                f"gave up reconnecting after {spent:.1f} s ({self.failures} failed attempts;"
                f" reconnect budget {budget:g} s), {self.received} bytes received: {err.details}",
            ) from err

    def take(self, n: int) -> bytes:
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out
