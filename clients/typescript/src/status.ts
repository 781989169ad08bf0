// GetStatus as plain objects, so callers never handle generated message types.

import type { GetStatusResponse } from "./gen/entropy/v1/entropy";
import { Mixing, SourceHealth, SourceKind } from "./gen/entropy/v1/provenance";
import type { SourceKind as Kind } from "./provenance";

/** One entropy source the gateway has seen. `kind` is "quantum", "hardware" or "os": only
 * "quantum" sources are quantum, and the others are labelled as what they are. */
export interface Source {
  collectorId: string;
  name: string;
  kind: string;
  health: string;
  contributedBytesTotal: bigint;
  lastReportAgeMs: bigint;
  lastMixing: string;
}

/** A snapshot of the gateway. Counters are bigint (uint64 on the wire). */
export interface Status {
  poolBytes: bigint;
  poolCapacityBytes: bigint;
  poolLowWatermarkBytes: bigint;
  waiters: bigint;
  ingestedBytesTotal: bigint;
  servedBytesTotal: bigint;
  chunksAcceptedTotal: bigint;
  chunksRejectedTotal: bigint;
  /** Chunks refused only because the pool was full (the collector sends them again). */
  chunksDeferredTotal: bigint;
  uptimeMs: bigint;
  /** Undefined when no chunk has been accepted yet. */
  lastChunkAgeMs: bigint | undefined;
  sources: Source[];
  serving: boolean;
  /** The pool's bytes by class (the kinds of the sources behind them), largest first. */
  poolByClass: ClassLevel[];
  /** Bytes wiped unserved because they stayed in the pool longer than `maxByteAgeMs`. */
  expiredBytesTotal: bigint;
  /** The longest a byte may stay in the pool (ms); 0: no limit. */
  maxByteAgeMs: bigint;
}

/** Bytes in the pool of one class: the kinds of the sources behind them, each once. */
export interface ClassLevel {
  kinds: Kind[];
  bytes: bigint;
}

export function statusFromPb(m: GetStatusResponse): Status {
  return {
    poolBytes: m.poolBytes,
    poolCapacityBytes: m.poolCapacityBytes,
    poolLowWatermarkBytes: m.poolLowWatermarkBytes,
    waiters: m.waiters,
    ingestedBytesTotal: m.ingestedBytesTotal,
    servedBytesTotal: m.servedBytesTotal,
    chunksAcceptedTotal: m.chunksAcceptedTotal,
    chunksRejectedTotal: m.chunksRejectedTotal,
    chunksDeferredTotal: m.chunksDeferredTotal,
    uptimeMs: m.uptimeMs,
    lastChunkAgeMs: m.lastChunkAgeMs,
    sources: m.sources.map((s) => ({
      collectorId: s.collectorId,
      name: s.name,
      kind: label(SourceKind[s.kind], "SOURCE_KIND_", s.kind),
      health: label(SourceHealth[s.health], "SOURCE_HEALTH_", s.health),
      contributedBytesTotal: s.contributedBytesTotal,
      lastReportAgeMs: s.lastReportAgeMs,
      lastMixing: label(Mixing[s.lastMixing], "MIXING_", s.lastMixing),
    })),
    serving: m.serving,
    poolByClass: m.poolByClass.map((c) => ({ kinds: c.kinds as number[] as Kind[], bytes: c.bytes })),
    expiredBytesTotal: m.expiredBytesTotal,
    maxByteAgeMs: m.maxByteAgeMs,
  };
}

/** SOURCE_KIND_QUANTUM -> "quantum"; a value this client does not know stays visible as its
 * number. */
function label(name: string | undefined, prefix: string, value: number): string {
  if (name === undefined || name === "UNRECOGNIZED") return String(value);
  return name.slice(prefix.length).toLowerCase();
}
