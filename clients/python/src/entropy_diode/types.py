"""Plain Python views of what the gateway reports (status, provenance, quality reports), so
callers never handle protobuf messages."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ._gen.entropy.v1 import entropy_pb2, provenance_pb2

__all__ = [
    "ChunkRef",
    "ClassLevel",
    "Construction",
    "Draw",
    "DrawReceipt",
    "DrbgLabel",
    "Fips1402",
    "MonteCarloPi",
    "Provenance",
    "PublicKeyInfo",
    "QualityReport",
    "ReceiptPage",
    "Receipted",
    "SourceKind",
    "SourceStatus",
    "Status",
]


class SourceKind(enum.IntEnum):
    """What kind of source bytes came from (proto `SourceKind`); the values are the wire's.
    Only QUANTUM is quantum. A kind this client does not know (from a newer gateway) shows up
    as a member named UNKNOWN_<number> rather than failing."""

    QUANTUM = 1
    HARDWARE = 2
    OS = 3

    @classmethod
    def _missing_(cls, value: object) -> SourceKind | None:
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        member = int.__new__(cls, value)
        member._name_ = f"UNKNOWN_{value}"
        member._value_ = value
        return member


class Construction(enum.IntEnum):
    """How a response's bytes are made (proto `Construction`); the values are the wire's.

    RAW: pool bytes as the collectors delivered them, each served to one caller, once (the
    default, forever). DRBG: the output of an SP 800-90A CTR_DRBG instance of the call's own
    (one per unary call, one per stream), seeded and reseeded only with pool bytes drawn for the
    caller: far more bytes than the sources make, computationally rather than physically
    random. DRBG_PREDICTION_RESISTANT: the same, reseeded before every 64 KiB. Asking for a DRBG
    construction needs the key's `entropy:drbg` scope. UNSPECIFIED (0) asks for RAW, and in a
    provenance means a gateway too old to say. A value this client does not know shows up as
    a member named UNKNOWN_<number> rather than failing."""

    UNSPECIFIED = 0
    RAW = 1
    DRBG = 2
    DRBG_PREDICTION_RESISTANT = 3

    @classmethod
    def _missing_(cls, value: object) -> Construction | None:
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        member = int.__new__(cls, value)
        member._name_ = f"UNKNOWN_{value}"
        member._value_ = value
        return member


@dataclass(frozen=True)
class ChunkRef:
    """One chunk, as its collector signed it."""

    collector_id: str
    epoch: int
    sequence: int
    signed_at_unix_ms: int


@dataclass(frozen=True)
class Provenance:
    """Where the bytes of one response came from. `kinds`: the kinds of the sources behind
    them, each once, in enum order (two or three when the collector mixed kinds); `mixed`: any
    chunk mixed two or more sources; `collector_ids` in the order first served; the first and
    last chunk (None only from a gateway that did not say); how many chunks; and how long the
    oldest byte had been in the gateway's pool. A gateway too old to report provenance gives an
    empty one (no kinds, `chunk_count` 0). `construction` says how the bytes were made: RAW (pool
    bytes; `drbg` None), or DRBG / DRBG_PREDICTION_RESISTANT: the output of the DRBG instance
    `drbg`, whose seeds the fields above describe (UNSPECIFIED from a gateway too old to say)."""

    kinds: tuple[SourceKind, ...]
    mixed: bool
    collector_ids: tuple[str, ...]
    first_chunk: ChunkRef | None
    last_chunk: ChunkRef | None
    chunk_count: int
    oldest_byte_age_ms: int
    construction: Construction = Construction.UNSPECIFIED
    drbg: DrbgLabel | None = None


@dataclass(frozen=True)
class DrbgLabel:
    """The DRBG instance that made a response's bytes: `mechanism` is the proto's
    `DrbgMechanism` (1: CTR_DRBG, AES-256, derivation function), its security strength, an
    opaque id (one instance per unary call or stream), reseeds so far, bytes since the last
    seeding, pool bytes that seeded it, and whether it reseeds before every request."""

    mechanism: int
    security_strength_bits: int
    instance_id: str
    reseed_count: int
    bytes_since_reseed: int
    seed_bytes: int
    prediction_resistance: bool


@dataclass(frozen=True)
class DrawReceipt:
    """A draw's receipt as the gateway sent it: the signed receipt's bytes (leaf `serial` of
    the gateway's receipt log), the 32-byte salt that opens its commitment (sent to this caller
    only, kept by nobody else: keep it with the values), and the serial. Verify it with
    `entropy_diode.receipts` (docs/receipts.md)."""

    signed_receipt: bytes
    salt: bytes
    serial: int


@dataclass(frozen=True)
class Draw:
    """Random bytes and where they came from (`EntropyClient.draw`); `receipt` is the draw's
    receipt when one was asked for (`receipt=True`) or the key holds `entropy:receipts`."""

    data: bytes
    provenance: Provenance
    receipt: DrawReceipt | None = None


T = TypeVar("T")


@dataclass(frozen=True)
class Receipted(Generic[T]):
    """What a draw asked with `receipt=True` returns: the values as served (`bytes`, a list of
    ints, floats or `uuid.UUID`s: what the commitment covers), where they came from, and the
    receipt. `entropy_diode.receipts.verify_receipted` checks it; `receipts.DrawFile.of` makes
    the draw file to hand to an auditor."""

    values: T
    provenance: Provenance
    receipt: DrawReceipt


@dataclass(frozen=True)
class PublicKeyInfo:
    """ReceiptLogService.GetPublicKey: the 32-byte Ed25519 key that signs receipts and heads,
    its key id, and the gateway's id. Check the key against the one the operator published."""

    public_key: bytes
    key_id: bytes
    gateway_id: str


@dataclass(frozen=True)
class ReceiptPage:
    """One ListReceipts page: signed receipts with serials `start`, `start + 1`, ...; the
    serial to ask for next; the latest signed head's size when the page was read."""

    signed_receipts: tuple[bytes, ...]
    next_serial: int
    tree_size: int


@dataclass(frozen=True)
class MonteCarloPi:
    """A Monte Carlo estimate of pi: `error` is estimate minus pi, `standard_error` that of the
    estimate for this many `points`."""

    estimate: float
    error: float
    standard_error: float
    points: int


@dataclass(frozen=True)
class Fips1402:
    """FIPS 140-2 block tests: blocks tested, failures per test, and blocks that failed any."""

    blocks: int
    monobit_failures: int
    poker_failures: int
    runs_failures: int
    long_run_failures: int
    blocks_failed: int


@dataclass(frozen=True)
class QualityReport:
    """What CheckQuality found in a sample drawn from the pool (and wiped, never served):
    ent's statistics, the SP 800-90B min-entropy estimate, FIPS 140-2 block tests, and one
    verdict. `failures` has one line per failed check, `thresholds` one per check and its bound.
    `serial_correlation` is None when undefined (every byte equal). `pi_os_reference` is the
    same Monte Carlo test on as many bytes of the gateway's OS CSPRNG, for comparison."""

    sample_bytes: int
    provenance: Provenance
    shannon_entropy_bits_per_byte: float
    min_entropy_bits_per_byte: float
    chi_square: float
    chi_square_p_value: float
    mean: float
    serial_correlation: float | None
    pi: MonteCarloPi
    pi_os_reference: MonteCarloPi
    fips140_2: Fips1402
    passed: bool
    failures: tuple[str, ...]
    thresholds: tuple[str, ...]


@dataclass(frozen=True)
class ClassLevel:
    """Bytes in the pool of one class: the kinds of the sources behind them."""

    kinds: tuple[SourceKind, ...]
    bytes: int


@dataclass(frozen=True)
class SourceStatus:
    """One entropy source the gateway has seen. `kind` is "quantum", "hardware" or "os": only
    "quantum" sources are quantum, and the others are labelled as what they are."""

    collector_id: str
    name: str
    kind: str
    health: str
    contributed_bytes_total: int
    last_report_age_ms: int
    last_mixing: str


@dataclass(frozen=True)
class Status:
    """A snapshot of the gateway (GetStatus)."""

    pool_bytes: int
    pool_capacity_bytes: int
    pool_low_watermark_bytes: int
    waiters: int
    ingested_bytes_total: int
    served_bytes_total: int
    chunks_accepted_total: int
    chunks_rejected_total: int
    chunks_deferred_total: int
    uptime_ms: int
    last_chunk_age_ms: int | None
    sources: tuple[SourceStatus, ...]
    serving: bool
    # The pool's bytes by class, largest first.
    pool_by_class: tuple[ClassLevel, ...] = ()
    # Bytes wiped unserved because they stayed in the pool longer than `max_byte_age_ms`.
    expired_bytes_total: int = 0
    # The longest a byte may stay in the pool (ms); 0: no limit.
    max_byte_age_ms: int = 0
    # Why the gateway is not serving, in one line (as /readyz says it); empty while serving.
    not_serving_reason: str = ""
    # Bytes wiped unserved to make room for another class of sources (classes share the pool).
    evicted_bytes_total: int = 0
    # Bytes drawn for callers that never received them (stream reset, connection closed or
    # stalled), wiped, never served to anyone.
    discarded_bytes_total: int = 0
    # Bytes drawn as CheckQuality samples: tested and wiped, never served.
    quality_tested_bytes_total: int = 0
    # DRBG output served (calls that asked for a DRBG construction); not in served_bytes_total.
    drbg_served_bytes_total: int = 0
    # Pool bytes drawn to seed and reseed DRBG instances, wiped once used, never served.
    drbg_seed_bytes_total: int = 0


@dataclass(frozen=True)
class RateUsage:
    """One rate limit of the key (GetUsage): a token bucket holding at most `burst` units,
    refilled `per_second` a second, evenly. Durations are whole milliseconds, rounded up."""

    per_second: int
    # The most units the bucket holds, the most one call can take at once.
    burst: int
    # Units that could be taken now.
    remaining: int
    # Until one more unit is there; 0 when full.
    next_refill_ms: int
    # Until the bucket is full again if nothing more is taken; 0 when full.
    full_in_ms: int


@dataclass(frozen=True)
class HeldUsage:
    """A limit on what the key holds at once (GetUsage): streams open, bytes drawn and not yet
    read. Units come back when the key lets them go, not over time."""

    # None: the key has no such limit.
    limit: int | None
    in_use: int
    # None: unlimited.
    remaining: int | None


@dataclass(frozen=True)
class Usage:
    """The calling key's limits and what is left of each (GetUsage). A rate limit the key does
    not have is None."""

    key_name: str
    # requests_per_second: each unary call and stream opened takes one (GetUsage none).
    requests: RateUsage | None
    # bytes_per_second: pool bytes.
    bytes: RateUsage | None
    # drbg_bytes_per_second: DRBG output.
    drbg_bytes: RateUsage | None
    # max_streams.
    streams: HeldUsage
    # max_undelivered_bytes (never unlimited).
    undelivered_bytes: HeldUsage


def usage_from_pb(msg: entropy_pb2.GetUsageResponse) -> Usage:
    def rate(r: entropy_pb2.RateUsage) -> RateUsage | None:
        if r.unlimited:
            return None
        return RateUsage(
            per_second=r.per_second,
            burst=r.burst,
            remaining=r.remaining,
            next_refill_ms=r.next_refill_ms,
            full_in_ms=r.full_in_ms,
        )

    def held(h: entropy_pb2.HeldUsage) -> HeldUsage:
        if h.unlimited:
            return HeldUsage(limit=None, in_use=h.in_use, remaining=None)
        return HeldUsage(limit=h.limit, in_use=h.in_use, remaining=h.remaining)

    return Usage(
        key_name=msg.key_name,
        requests=rate(msg.requests),
        bytes=rate(msg.bytes),
        drbg_bytes=rate(msg.drbg_bytes),
        streams=held(msg.streams),
        undelivered_bytes=held(msg.undelivered_bytes),
    )


def _enum_label(enum: object, value: int, prefix: str) -> str:
    """SOURCE_KIND_QUANTUM -> "quantum"; a value this client does not know stays visible as
    its number rather than failing."""
    try:
        name: str = enum.Name(value)  # type: ignore[attr-defined]
    except ValueError:
        return str(value)
    return name.removeprefix(prefix).lower()


def status_from_pb(msg: entropy_pb2.GetStatusResponse) -> Status:
    return Status(
        pool_bytes=msg.pool_bytes,
        pool_capacity_bytes=msg.pool_capacity_bytes,
        pool_low_watermark_bytes=msg.pool_low_watermark_bytes,
        waiters=msg.waiters,
        ingested_bytes_total=msg.ingested_bytes_total,
        served_bytes_total=msg.served_bytes_total,
        chunks_accepted_total=msg.chunks_accepted_total,
        chunks_rejected_total=msg.chunks_rejected_total,
        chunks_deferred_total=msg.chunks_deferred_total,
        uptime_ms=msg.uptime_ms,
        last_chunk_age_ms=msg.last_chunk_age_ms if msg.HasField("last_chunk_age_ms") else None,
        sources=tuple(
            SourceStatus(
                collector_id=s.collector_id,
                name=s.name,
                kind=_enum_label(provenance_pb2.SourceKind, s.kind, "SOURCE_KIND_"),
                health=_enum_label(provenance_pb2.SourceHealth, s.health, "SOURCE_HEALTH_"),
                contributed_bytes_total=s.contributed_bytes_total,
                last_report_age_ms=s.last_report_age_ms,
                last_mixing=_enum_label(provenance_pb2.Mixing, s.last_mixing, "MIXING_"),
            )
            for s in msg.sources
        ),
        serving=msg.serving,
        pool_by_class=tuple(
            ClassLevel(kinds=kinds_from_pb(c.kinds), bytes=c.bytes) for c in msg.pool_by_class
        ),
        expired_bytes_total=msg.expired_bytes_total,
        max_byte_age_ms=msg.max_byte_age_ms,
        not_serving_reason=msg.not_serving_reason,
        evicted_bytes_total=msg.evicted_bytes_total,
        discarded_bytes_total=msg.discarded_bytes_total,
        quality_tested_bytes_total=msg.quality_tested_bytes_total,
        drbg_served_bytes_total=msg.drbg_served_bytes_total,
        drbg_seed_bytes_total=msg.drbg_seed_bytes_total,
    )


def kinds_from_pb(kinds: Iterable[int]) -> tuple[SourceKind, ...]:
    return tuple(SourceKind(k) for k in kinds)


def _chunk(msg: provenance_pb2.ChunkRef) -> ChunkRef:
    return ChunkRef(
        collector_id=msg.collector_id,
        epoch=msg.epoch,
        sequence=msg.sequence,
        signed_at_unix_ms=msg.signed_at_unix_ms,
    )


def provenance_from_pb(msg: provenance_pb2.DrawProvenance) -> Provenance:
    return Provenance(
        kinds=kinds_from_pb(msg.kinds),
        mixed=msg.mixed,
        collector_ids=tuple(msg.collector_ids),
        first_chunk=_chunk(msg.first_chunk) if msg.HasField("first_chunk") else None,
        last_chunk=_chunk(msg.last_chunk) if msg.HasField("last_chunk") else None,
        chunk_count=msg.chunk_count,
        oldest_byte_age_ms=msg.oldest_byte_age_ms,
        construction=Construction(msg.construction),
        drbg=_drbg(msg.drbg) if msg.HasField("drbg") else None,
    )


def _drbg(msg: provenance_pb2.DrbgLabel) -> DrbgLabel:
    return DrbgLabel(
        mechanism=msg.mechanism,
        security_strength_bits=msg.security_strength_bits,
        instance_id=msg.instance_id,
        reseed_count=msg.reseed_count,
        bytes_since_reseed=msg.bytes_since_reseed,
        seed_bytes=msg.seed_bytes,
        prediction_resistance=msg.prediction_resistance,
    )


def _pi(msg: entropy_pb2.MonteCarloPi) -> MonteCarloPi:
    return MonteCarloPi(
        estimate=msg.estimate,
        error=msg.error,
        standard_error=msg.standard_error,
        points=msg.points,
    )


def quality_from_pb(msg: entropy_pb2.CheckQualityResponse) -> QualityReport:
    f = msg.fips140_2
    return QualityReport(
        sample_bytes=msg.sample_bytes,
        provenance=provenance_from_pb(msg.provenance),
        shannon_entropy_bits_per_byte=msg.shannon_entropy_bits_per_byte,
        min_entropy_bits_per_byte=msg.min_entropy_bits_per_byte,
        chi_square=msg.chi_square,
        chi_square_p_value=msg.chi_square_p_value,
        mean=msg.mean,
        serial_correlation=(
            msg.serial_correlation if msg.HasField("serial_correlation") else None
        ),
        pi=_pi(msg.pi),
        pi_os_reference=_pi(msg.pi_os_reference),
        fips140_2=Fips1402(
            blocks=f.blocks,
            monobit_failures=f.monobit_failures,
            poker_failures=f.poker_failures,
            runs_failures=f.runs_failures,
            long_run_failures=f.long_run_failures,
            blocks_failed=f.blocks_failed,
        ),
        passed=msg.passed,
        failures=tuple(msg.failures),
        thresholds=tuple(msg.thresholds),
    )
