// GetStatus as plain objects, the same shape as the Node client's.

import type { GetStatusResponse } from "./gen/entropy/v1/entropy_pb.js";
import { Mixing, SourceHealth, SourceKind } from "./gen/entropy/v1/provenance_pb.js";

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
  chunksDeferredTotal: bigint;
  uptimeMs: bigint;
  /** Undefined when no chunk has been accepted yet. */
  lastChunkAgeMs: bigint | undefined;
  sources: Source[];
  serving: boolean;
  /** Why the gateway is not serving; empty while it is. */
  notServingReason: string;
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
      kind: label(SourceKind[s.kind], s.kind),
      health: label(SourceHealth[s.health], s.health),
      contributedBytesTotal: s.contributedBytesTotal,
      lastReportAgeMs: s.lastReportAgeMs,
      lastMixing: label(Mixing[s.lastMixing], s.lastMixing),
    })),
    serving: m.serving,
    notServingReason: m.notServingReason,
  };
}

/** QUANTUM (protobuf-es drops the enum prefix) -> "quantum"; an unknown value stays visible as
 * its number. */
function label(name: string | undefined, value: number): string {
  return name === undefined ? String(value) : name.toLowerCase();
}
