// Copied from clients/typescript/src/provenance.ts by clients/generate.sh: edit that file, not this one.
// What an entropy call asks for besides its size (acceptKinds, construction), provenance and
// quality reports as plain objects, so callers never handle generated message types: the one
// mapping for both TypeScript clients. 64-bit wire
// fields are bigint, as in Status (status.ts, which also defines SourceKind). The Node client
// compiles it here; the browser client (../web) gets a copy from ../generate.sh, checked by
// ../test.sh like generated code, as status.ts. So it imports nothing Node-only: besides the
// generated code and status.ts (copied with it), only `invalidArgument` from ./errors.js, which
// each package defines with the same signature, so a bad filter is that package's own
// InvalidArgumentError (or a bad construction). It maps every field of DrawProvenance and CheckQualityResponse:
// clients/typescript/test/provenance.test.ts checks that against the generated schema.

import { invalidArgument } from "./errors.js";
import type { CheckQualityResponse, MonteCarloPi as MonteCarloPiPb } from "./gen/entropy/v1/entropy_pb.js";
import type {
  ChunkRef as ChunkRefPb,
  DrawProvenance,
  DrbgLabel as DrbgLabelPb,
} from "./gen/entropy/v1/provenance_pb.js";
import type { SourceKind } from "./status.js";

/** How a response's bytes are made; the values are the wire's (proto `Construction`). RAW, the
 * default: pool bytes, each served once. DRBG: the output of an SP 800-90A CTR_DRBG instance of
 * the call's own (one per unary call, one per stream), seeded and reseeded from the pool, far more
 * bytes than the sources make but computationally, not physically, random; it needs the key's
 * `entropy:drbg` scope (PermissionDeniedError otherwise). DRBG_PREDICTION_RESISTANT: as DRBG,
 * reseeded before every 64 KiB. Each response's provenance says which (`construction`, `drbg`). */
export const Construction = Object.freeze({ RAW: 1, DRBG: 2, DRBG_PREDICTION_RESISTANT: 3 } as const);
export type Construction = (typeof Construction)[keyof typeof Construction];

/** One chunk, as its collector signed it. */
export interface ChunkRef {
  collectorId: string;
  /** The collector's run (a fresh random number each start). */
  epoch: bigint;
  /** Its sequence number within that run. */
  sequence: bigint;
  /** When the collector signed it, Unix ms by the collector's clock. */
  signedAtUnixMs: bigint;
}

/** Where the bytes of one response came from. */
export interface Provenance {
  /** The kinds of the sources behind the bytes, each once, in enum order (two or three when the
   * collector mixed kinds: a QUANTUM source XORed with the OS source is [QUANTUM, OS]). */
  kinds: SourceKind[];
  /** True when any of the chunks mixed two or more sources (XOR or HKDF). */
  mixed: boolean;
  /** The collectors whose chunks the bytes came from, each once, in the order first served. */
  collectorIds: string[];
  /** The chunk of the first byte and of the last (undefined only from a gateway that did not
   * say). */
  firstChunk: ChunkRef | undefined;
  lastChunk: ChunkRef | undefined;
  /** How many chunks the bytes came from (0 from a gateway too old to report provenance). */
  chunkCount: number;
  /** How long the oldest of the bytes had been in the gateway's pool (ms). */
  oldestByteAgeMs: bigint;
  /** How the bytes were made, as the proto's `Construction`: 1 RAW (pool bytes), 2 DRBG, 3 DRBG
   * with prediction resistance; 0 from a gateway too old to say. For DRBG output the fields
   * above describe the pool bytes that seeded its instance. */
  construction: number;
  /** The DRBG instance that made the bytes (DRBG constructions only). */
  drbg: DrbgLabel | undefined;
}

/** The DRBG instance that made a response's bytes. */
export interface DrbgLabel {
  /** The proto's `DrbgMechanism`: 1 CTR_DRBG with AES-256 and the derivation function. */
  mechanism: number;
  /** Its security strength in bits (256). */
  securityStrengthBits: number;
  /** 32 hex digits, random per instance: one per unary call, one per stream. */
  instanceId: string;
  /** Reseeds since the instance was instantiated. */
  reseedCount: bigint;
  /** Bytes it produced since it was last seeded, before these. */
  bytesSinceReseed: bigint;
  /** Pool bytes drawn to seed it so far. */
  seedBytes: bigint;
  /** True when it reseeds before every generate request. */
  predictionResistance: boolean;
}

/** A Monte Carlo estimate of pi: `error` is estimate minus pi, `standardError` that of the
 * estimate for this many `points`. */
export interface MonteCarloPi {
  estimate: number;
  error: number;
  standardError: number;
  points: bigint;
}

/** FIPS 140-2 block tests: blocks tested, failures per test, blocks that failed any. */
export interface Fips1402 {
  blocks: bigint;
  monobitFailures: bigint;
  pokerFailures: bigint;
  runsFailures: bigint;
  longRunFailures: bigint;
  blocksFailed: bigint;
}

/** What CheckQuality found in a sample drawn from the pool (and wiped, never served): ent's
 * statistics, the SP 800-90B min-entropy estimate, FIPS 140-2 block tests, one verdict. */
export interface QualityReport {
  sampleBytes: bigint;
  provenance: Provenance;
  shannonEntropyBitsPerByte: number;
  minEntropyBitsPerByte: number;
  chiSquare: number;
  chiSquarePValue: number;
  mean: number;
  /** Undefined when it is undefined (every byte equal). */
  serialCorrelation: number | undefined;
  pi: MonteCarloPi;
  /** The same test on as many bytes of the gateway's OS CSPRNG, for comparison. */
  piOsReference: MonteCarloPi;
  fips140_2: Fips1402;
  /** True when every check passed. */
  passed: boolean;
  /** One line per failed check, naming the statistic, its value and its bound. */
  failures: string[];
  /** The checks and their bounds for this sample size, one line each. */
  thresholds: string[];
}

/** `acceptKinds` as sent. Which kinds the gateway knows is its to say (INVALID_ARGUMENT naming
 * `accept_kinds[i]`); here only what cannot be encoded is refused. */
export function checkKinds(kinds: readonly SourceKind[]): SourceKind[] {
  if (!Array.isArray(kinds)) {
    throw invalidArgument(`acceptKinds must be an array of SourceKind, not ${typeof kinds} (for one kind: [SourceKind.QUANTUM])`);
  }
  kinds.forEach((k: unknown, i) => {
    if (!(Number.isInteger(k) && (k as number) >= -(2 ** 31) && (k as number) < 2 ** 31)) {
      throw invalidArgument(`acceptKinds[${i}] is ${JSON.stringify(k) ?? String(k)}, not a SourceKind`);
    }
  });
  return [...kinds];
}

/** `construction` as sent. As with `acceptKinds`, which values exist is the gateway's to say
 * (INVALID_ARGUMENT naming `construction`); here only what cannot be encoded is refused. */
export function checkConstruction(construction: Construction): Construction {
  const c: unknown = construction;
  if (!(Number.isInteger(c) && (c as number) >= -(2 ** 31) && (c as number) < 2 ** 31)) {
    throw invalidArgument(
      `construction is ${JSON.stringify(c) ?? String(c)}, not a Construction (Construction.RAW, .DRBG or .DRBG_PREDICTION_RESISTANT)`,
    );
  }
  return construction;
}

/** What an entropy call or stream asks for besides its size. */
export interface Want {
  acceptKinds: readonly SourceKind[];
  construction: Construction;
}

/** The `acceptKinds` and `construction` of one call: its own where given (checked here), else
 * the client's (checked when the client was made). */
export function callWant(client: Want, call: Partial<Want> | undefined): { acceptKinds: SourceKind[]; construction: Construction } {
  return {
    acceptKinds: call?.acceptKinds === undefined ? [...client.acceptKinds] : checkKinds(call.acceptKinds),
    construction: call?.construction === undefined ? client.construction : checkConstruction(call.construction),
  };
}

function chunkFromPb(c: ChunkRefPb | undefined): ChunkRef | undefined {
  if (c === undefined) return undefined;
  return { collectorId: c.collectorId, epoch: c.epoch, sequence: c.sequence, signedAtUnixMs: c.signedAtUnixMs };
}

export function provenanceFromPb(p: DrawProvenance | undefined): Provenance {
  return {
    kinds: (p?.kinds ?? []) as number[] as SourceKind[],
    mixed: p?.mixed ?? false,
    collectorIds: p?.collectorIds ?? [],
    firstChunk: chunkFromPb(p?.firstChunk),
    lastChunk: chunkFromPb(p?.lastChunk),
    chunkCount: p?.chunkCount ?? 0,
    oldestByteAgeMs: p?.oldestByteAgeMs ?? 0n,
    construction: p?.construction ?? 0,
    drbg: drbgFromPb(p?.drbg),
  };
}

function drbgFromPb(d: DrbgLabelPb | undefined): DrbgLabel | undefined {
  if (d === undefined) return undefined;
  return {
    mechanism: d.mechanism,
    securityStrengthBits: d.securityStrengthBits,
    instanceId: d.instanceId,
    reseedCount: d.reseedCount,
    bytesSinceReseed: d.bytesSinceReseed,
    seedBytes: d.seedBytes,
    predictionResistance: d.predictionResistance,
  };
}

function piFromPb(p: MonteCarloPiPb | undefined): MonteCarloPi {
  return { estimate: p?.estimate ?? 0, error: p?.error ?? 0, standardError: p?.standardError ?? 0, points: p?.points ?? 0n };
}

export function qualityFromPb(m: CheckQualityResponse): QualityReport {
  const f = m.fips1402;
  return {
    sampleBytes: m.sampleBytes,
    provenance: provenanceFromPb(m.provenance),
    shannonEntropyBitsPerByte: m.shannonEntropyBitsPerByte,
    minEntropyBitsPerByte: m.minEntropyBitsPerByte,
    chiSquare: m.chiSquare,
    chiSquarePValue: m.chiSquarePValue,
    mean: m.mean,
    serialCorrelation: m.serialCorrelation,
    pi: piFromPb(m.pi),
    piOsReference: piFromPb(m.piOsReference),
    fips140_2: {
      blocks: f?.blocks ?? 0n,
      monobitFailures: f?.monobitFailures ?? 0n,
      pokerFailures: f?.pokerFailures ?? 0n,
      runsFailures: f?.runsFailures ?? 0n,
      longRunFailures: f?.longRunFailures ?? 0n,
      blocksFailed: f?.blocksFailed ?? 0n,
    },
    passed: m.passed,
    failures: m.failures,
    thresholds: m.thresholds,
  };
}
