// The promise API over gRPC-Web: one method per EntropyService call, plain TypeScript types in
// and out, the same shape as the Node client.

import { type CallOptions as ConnectCallOptions, type Client, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";

import { baseUrl } from "./endpoint.js";
import { fromCallError, invalidArgument } from "./errors.js";
import { EntropyService } from "./gen/entropy/v1/entropy_pb.js";
import { validateKey } from "./key.js";
import {
  callWant,
  checkConstruction,
  checkKinds,
  Construction,
  type Provenance,
  provenanceFromPb,
  type QualityReport,
  qualityFromPb,
} from "./provenance.js";
import { type SourceKind, type Status, statusFromPb } from "./status.js";
import { RandomStream, type StreamOptions } from "./stream.js";

/** Deadline (ms) of a unary call by default. */
export const DEFAULT_TIMEOUT_MS = 30_000;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT32_MAX = 2 ** 32 - 1;

export interface ClientOptions {
  /** Deadline of each unary call in ms, unless the call gives its own; 0: none. */
  timeoutMs?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof globalThis.fetch;
  /** The source kinds every entropy call accepts unless it says otherwise (its own
   * `acceptKinds`); empty or undefined: any. A filter the pool cannot serve rejects with
   * FailedPreconditionError. */
  acceptKinds?: readonly SourceKind[];
  /** How every entropy call's bytes are made unless it says otherwise (its own `construction`):
   * Construction.RAW (the default: pool bytes), or Construction.DRBG /
   * DRBG_PREDICTION_RESISTANT (DRBG output seeded from the pool, labelled in each provenance's
   * `drbg`; needs the key's `entropy:drbg` scope, PermissionDeniedError otherwise). */
  construction?: Construction;
}

export interface CallOptions {
  /** Deadline of this call in ms (overrides the client's). */
  timeoutMs?: number;
  /** Aborting cancels the call; it then rejects with the signal's reason (an AbortError, or a
   * TimeoutError for AbortSignal.timeout), as fetch does. */
  signal?: AbortSignal;
  /** The source kinds this call accepts (entropy calls only), instead of the client's
   * `acceptKinds`; `[]`: any. */
  acceptKinds?: readonly SourceKind[];
  /** How this call's bytes are made (entropy calls only), instead of the client's
   * `construction`. */
  construction?: Construction;
}

/** Random bytes and where they came from (`EntropyClient.draw`). */
export interface Draw {
  data: Uint8Array;
  provenance: Provenance;
}

/**
 * A gateway reached over gRPC-Web (its `grpc_web_enabled` must be on, with this page's origin in
 * `grpc_web_allowed_origins`).
 *
 * ```ts
 * const client = new EntropyClient("https://gw.example:50051", apiKey);
 * const dice = await client.getIntegers(1, 6, 10);
 * ```
 *
 * Every method rejects with a subclass of EntropyError on failure.
 */
export class EntropyClient {
  /** The source kinds every entropy call accepts unless it says otherwise (empty: any). */
  readonly acceptKinds: readonly SourceKind[];
  /** How every entropy call's bytes are made unless it says otherwise (Construction.RAW by
   * default). */
  readonly construction: Construction;
  private readonly rpc: Client<typeof EntropyService>;
  private readonly headers: Headers;
  private readonly timeoutMs: number;

  /** `endpoint`: `host:port`, `http://host:port` or `https://host:port` (default port 50051).
   * The key is checked here (1 to 512 visible ASCII characters) and never echoed. */
  constructor(endpoint: string, apiKey: string, options: ClientOptions = {}) {
    const key = validateKey(apiKey);
    this.acceptKinds = Object.freeze(checkKinds(options.acceptKinds ?? []));
    this.construction = checkConstruction(options.construction ?? Construction.RAW);
    const transport = createGrpcWebTransport({
      baseUrl: baseUrl(endpoint),
      useBinaryFormat: true,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    this.rpc = createClient(EntropyService, transport);
    // A request header the page sets: never a cookie, never a URL.
    this.headers = new Headers({ authorization: `Bearer ${key}` });
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** Exactly `numBytes` random bytes (1..=1048576). */
  async getBytes(numBytes: number, options?: CallOptions): Promise<Uint8Array> {
    return (await this.draw(numBytes, options)).data;
  }

  /** Exactly `numBytes` random bytes (1..=1048576) and where they came from. */
  async draw(numBytes: number, options?: CallOptions): Promise<Draw> {
    const req = { numBytes: uint32("numBytes", numBytes), ...callWant(this, options) };
    const res = await this.unary((o) => this.rpc.getRandom(req, o), options);
    return { data: res.data, provenance: provenanceFromPb(res.provenance) };
  }

  /** Has the gateway draw `sampleBytes` (2500..=4194304) from its pool, never to be served to
   * anyone, and report how random they look. Needs a key with the `quality:check` scope; the
   * bytes count against the key's quota. */
  async checkQuality(sampleBytes: number, options?: CallOptions): Promise<QualityReport> {
    const req = { sampleBytes: uint32("sampleBytes", sampleBytes), ...callWant(this, options) };
    return qualityFromPb(await this.unary((o) => this.rpc.checkQuality(req, o), options));
  }

  /** `count` (1..=10000) uniform integers in [min, max], both inclusive. Pass numbers (safe
   * integers) to get numbers, or bigints for the full int64 range. */
  getIntegers(min: number, max: number, count?: number, options?: CallOptions): Promise<number[]>;
  getIntegers(min: bigint, max: bigint, count?: number, options?: CallOptions): Promise<bigint[]>;
  async getIntegers(
    min: number | bigint,
    max: number | bigint,
    count = 1,
    options?: CallOptions,
  ): Promise<number[] | bigint[]> {
    const req = {
      min: int64("min", min),
      max: int64("max", max),
      count: uint32("count", count),
      ...callWant(this, options),
    };
    const res = await this.unary((o) => this.rpc.getIntegers(req, o), options);
    return typeof min === "number" ? res.values.map(Number) : res.values;
  }

  /** `count` (1..=10000) uniform floats in [0, 1), 53 random bits each. */
  async getFloats(count = 1, options?: CallOptions): Promise<number[]> {
    const req = { count: uint32("count", count), ...callWant(this, options) };
    return (await this.unary((o) => this.rpc.getFloats(req, o), options)).values;
  }

  /** `count` (1..=10000) random version 4 UUIDs, canonical lowercase. */
  async getUuids(count = 1, options?: CallOptions): Promise<string[]> {
    const req = { count: uint32("count", count), ...callWant(this, options) };
    return (await this.unary((o) => this.rpc.getUuids(req, o), options)).uuids;
  }

  /** The gateway's pool, counters and sources. */
  async status(options?: CallOptions): Promise<Status> {
    return statusFromPb(await this.unary((o) => this.rpc.getStatus({}, o), options));
  }

  /** StreamRandom as an async iterable of chunks with `read(n)`, reconnecting after transport
   * errors without losing or repeating bytes (see RandomStream). */
  stream(options: StreamOptions = {}): RandomStream {
    return new RandomStream(
      (request, signal) => this.rpc.streamRandom(request, { headers: this.headers, signal, timeoutMs: 0 }),
      { ...options, ...callWant(this, options) },
    );
  }

  private async unary<T>(call: (o: ConnectCallOptions) => Promise<T>, options: CallOptions = {}): Promise<T> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    try {
      return await call({
        headers: this.headers,
        timeoutMs: timeoutMs > 0 ? timeoutMs : 0,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (e) {
      throw fromCallError(e, options.signal);
    }
  }
}

function uint32(field: string, n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > UINT32_MAX) {
    throw invalidArgument(`${field} is ${n}, must be an integer in 0..=${UINT32_MAX}`);
  }
  return n;
}

function int64(field: string, n: number | bigint): bigint {
  if (typeof n === "number" && !Number.isSafeInteger(n)) {
    throw invalidArgument(`${field} is ${n}, not a safe integer: pass a bigint`);
  }
  const v = BigInt(n);
  if (v < INT64_MIN || v > INT64_MAX) throw invalidArgument(`${field} is ${v}, outside int64`);
  return v;
}
