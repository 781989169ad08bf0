"""Plain Python views of the gateway's status, so callers never handle protobuf messages."""

from __future__ import annotations

from dataclasses import dataclass

from ._gen.entropy.v1 import entropy_pb2, provenance_pb2

__all__ = ["Status", "SourceStatus"]


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
    )
