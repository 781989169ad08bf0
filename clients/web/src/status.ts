// Copied from clients/typescript/src/status.ts by clients/generate.sh: edit that file, not this one.
// GetStatus as plain objects, so callers never handle generated message types: the one
// definition of Status for both TypeScript clients. The Node client compiles it here; the
// browser client (../web) gets a copy from ../generate.sh, checked by ../test.sh like generated
// code, so their status types cannot drift. It maps every field of GetStatusResponse (proto/
// entropy/v1/entropy.proto): clients/typescript/test/provenance.test.ts checks that against the
// generated schema.

import type { GetStatusResponse } from "./gen/entropy/v1/entropy_pb.js";
import { Mixing, SourceHealth, SourceKind as SourceKindPb } from "./gen/entropy/v1/provenance_pb.js";

/** What kind of source bytes came from; the values are the wire's (proto `SourceKind`). Only
 * QUANTUM is quantum. Used in `acceptKinds` and reported in provenance and `poolByClass`; a kind
 * this client does not know (from a newer gateway) is reported as its number. */
export const SourceKind = Object.freeze({ QUANTUM: 1, HARDWARE: 2, OS: 3 } as const);
export type SourceKind = (typeof SourceKind)[keyof typeof SourceKind];

/** "QUANTUM", "HARDWARE" or "OS"; a kind this client does not know as its number. */
export function sourceKindName(kind: number): string {
  const entry = Object.entries(SourceKind).find(([, value]) => value === kind);
  return entry === undefined ? String(kind) : entry[0];
}

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
  /** Why the gateway is not serving, in one line; empty while it is. */
  notServingReason: string;
  /** The pool's bytes by class (the kinds of the sources behind them), largest first. */
  poolByClass: ClassLevel[];
  /** Bytes wiped unserved because they stayed in the pool longer than `maxByteAgeMs`. */
  expiredBytesTotal: bigint;
  /** The longest a byte may stay in the pool (ms); 0: no limit. */
  maxByteAgeMs: bigint;
  /** Bytes wiped unserved to make room for another class of sources (classes share the pool). */
  evictedBytesTotal: bigint;
  /** Bytes drawn for callers that never received them (stream reset, connection closed or
   * stalled), wiped, never served to anyone. */
  discardedBytesTotal: bigint;
  /** Bytes drawn as CheckQuality samples: tested and wiped, never served. */
  qualityTestedBytesTotal: bigint;
  /** DRBG output served (calls that asked for a DRBG construction); not in servedBytesTotal. */
  drbgServedBytesTotal: bigint;
  /** Pool bytes drawn to seed and reseed DRBG instances, wiped once used, never served. */
  drbgSeedBytesTotal: bigint;
}

/** Bytes in the pool of one class: the kinds of the sources behind them, each once. */
export interface ClassLevel {
  kinds: SourceKind[];
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
      kind: label(SourceKindPb[s.kind], s.kind),
      health: label(SourceHealth[s.health], s.health),
      contributedBytesTotal: s.contributedBytesTotal,
      lastReportAgeMs: s.lastReportAgeMs,
      lastMixing: label(Mixing[s.lastMixing], s.lastMixing),
    })),
    serving: m.serving,
    notServingReason: m.notServingReason,
    poolByClass: m.poolByClass.map((c) => ({ kinds: c.kinds as number[] as SourceKind[], bytes: c.bytes })),
    expiredBytesTotal: m.expiredBytesTotal,
    maxByteAgeMs: m.maxByteAgeMs,
    evictedBytesTotal: m.evictedBytesTotal,
    discardedBytesTotal: m.discardedBytesTotal,
    qualityTestedBytesTotal: m.qualityTestedBytesTotal,
    drbgServedBytesTotal: m.drbgServedBytesTotal,
    drbgSeedBytesTotal: m.drbgSeedBytesTotal,
  };
}

/** QUANTUM (protobuf-es drops the enum's prefix) -> "quantum"; a value this client does not
 * know stays visible as its number. */
function label(name: string | undefined, value: number): string {
  return name === undefined ? String(value) : name.toLowerCase();
}
