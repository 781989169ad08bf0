// The promise API: one method per EntropyService call, plain TypeScript types in and out.

import {
  type ChannelCredentials,
  type ChannelOptions,
  type ClientUnaryCall,
  credentials,
  Metadata,
  type ServiceError,
} from "@grpc/grpc-js";
import type { Readable } from "node:stream";

import { fromServiceError, invalidArgument } from "./errors";
import { EntropyServiceClient } from "./gen/entropy/v1/entropy";
import { type Status, statusFromPb } from "./status";
import { RandomStream, type StreamOptions } from "./stream";

/** Deadline (ms) of a unary call by default. The gateway itself answers UNAVAILABLE after its
 * max_wait_ms (2 s by default) when the pool runs dry, so this only bounds network trouble. */
export const DEFAULT_TIMEOUT_MS = 30_000;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT32_MAX = 2 ** 32 - 1;

export interface ClientOptions {
  /** Plaintext, as a --dev gateway speaks. Default: TLS with the system roots. */
  insecure?: boolean;
  /** Your own channel credentials (custom roots, client certificates); overrides `insecure`. */
  credentials?: ChannelCredentials;
  /** Deadline of each unary call in ms, unless the call gives its own; 0: none. */
  timeoutMs?: number;
  /** Passed to grpc-js (window sizes, keepalive, ...). */
  channelOptions?: ChannelOptions;
}

export interface CallOptions {
  /** Deadline of this call in ms (overrides the client's). */
  timeoutMs?: number;
  /** Aborting cancels the call; it then rejects with an EntropyError of code CANCELLED. */
  signal?: AbortSignal;
}

type Callback<Res> = (err: ServiceError | null, res: Res) => void;
type UnaryMethod<Req, Res> = (
  req: Req,
  metadata: Metadata,
  options: { deadline?: number },
  callback: Callback<Res>,
) => ClientUnaryCall;

/**
 * A connection to an Entropy Diode gateway.
 *
 * ```ts
 * const client = new EntropyClient("127.0.0.1:50051", apiKey, { insecure: true });
 * const rolls = await client.getIntegers(1, 6, 10);
 * client.close();
 * ```
 *
 * Every method rejects with a subclass of EntropyError on failure.
 */
export class EntropyClient {
  private readonly rpc: EntropyServiceClient;
  private readonly metadata: Metadata;
  private readonly timeoutMs: number;

  constructor(target: string, apiKey: string, options: ClientOptions = {}) {
    const creds =
      options.credentials ?? (options.insecure ? credentials.createInsecure() : credentials.createSsl());
    this.rpc = new EntropyServiceClient(target, creds, options.channelOptions);
    // Sent as call metadata on every call: the gateway never takes keys from fields or URLs.
    this.metadata = new Metadata();
    this.metadata.set("authorization", `Bearer ${apiKey}`);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** Exactly `numBytes` random bytes (1..=1048576). */
  async getBytes(numBytes: number, options?: CallOptions): Promise<Buffer> {
    const req = { numBytes: uint32("numBytes", numBytes), encoding: 0 };
    const res = await this.unary(this.rpc.getRandom, req, options);
    return Buffer.from(res.data);
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
    const req = { min: int64("min", min), max: int64("max", max), count: uint32("count", count) };
    const res = await this.unary(this.rpc.getIntegers, req, options);
    // Bounds that are safe integers keep every value in between safe too.
    return typeof min === "number" ? res.values.map(Number) : res.values;
  }

  /** `count` (1..=10000) uniform floats in [0, 1), 53 random bits each. */
  async getFloats(count = 1, options?: CallOptions): Promise<number[]> {
    const res = await this.unary(this.rpc.getFloats, { count: uint32("count", count) }, options);
    return res.values;
  }

  /** `count` (1..=10000) random version 4 UUIDs, canonical lowercase. */
  async getUuids(count = 1, options?: CallOptions): Promise<string[]> {
    const res = await this.unary(this.rpc.getUuids, { count: uint32("count", count) }, options);
    return res.uuids;
  }

  /** The gateway's pool, counters and sources. */
  async status(options?: CallOptions): Promise<Status> {
    return statusFromPb(await this.unary(this.rpc.getStatus, {}, options));
  }

  /** StreamRandom as an async iterable of chunks with `read(n)`; reconnects after transport
   * errors without losing or repeating bytes. See RandomStream. */
  stream(options: StreamOptions = {}): RandomStream {
    // No deadline: a stream lives as long as its consumer, which cancels it when done.
    return new RandomStream((req) => this.rpc.streamRandom(req, this.metadata.clone()), options);
  }

  /** The same stream as a Node Readable of Buffers (pipe it to a file, a hash, ...). */
  readable(options: StreamOptions = {}): Readable {
    return this.stream(options).toReadable();
  }

  /** Closes the channel; calls in flight fail with CANCELLED. */
  close(): void {
    this.rpc.close();
  }

  private unary<Req, Res>(method: UnaryMethod<Req, Res>, req: Req, options: CallOptions = {}): Promise<Res> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const callOptions = timeoutMs > 0 ? { deadline: Date.now() + timeoutMs } : {};
    return new Promise<Res>((resolve, reject) => {
      let call: ClientUnaryCall | undefined = undefined;
      const cancel = () => call?.cancel();
      call = method.call(this.rpc, req, this.metadata.clone(), callOptions, (err, res) => {
        options.signal?.removeEventListener("abort", cancel);
        if (err) reject(fromServiceError(err));
        else resolve(res);
      });
      if (options.signal?.aborted) cancel();
      else options.signal?.addEventListener("abort", cancel, { once: true });
    });
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
