// The promise API: one method per EntropyService call, plain TypeScript types in and out.

import { type ChannelCredentials, type ChannelOptions, connectivityState, credentials, Metadata } from "@grpc/grpc-js";
import type { DescMessage, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import { readFileSync } from "node:fs";
import type { Readable } from "node:stream";

import { validateApiKey } from "./apikey.js";
import { type Endpoint, formatEndpoint, grpcTarget, parseEndpoint } from "./endpoint.js";
import { fromServiceError, invalidArgument } from "./errors.js";
import { EntropyService } from "./gen/entropy/v1/entropy_pb.js";
import { grpcClient, type GrpcClient, type UnaryMethod } from "./grpc.js";
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
import { type Usage, usageFromPb } from "./usage.js";

/** Deadline (ms) of a unary call by default. The gateway itself answers UNAVAILABLE after its
 * max_wait_ms (2 s by default) when the pool runs dry, so this only bounds network trouble. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Where `EntropyClient.fromEnv` connects when neither an argument nor ENTROPY_ENDPOINT says. */
export const DEFAULT_ENDPOINT = "127.0.0.1:50051";

/** The channel's own reconnect backoff, capped so that a gateway that is back is used within
 * about a second (grpc-js would otherwise wait up to 120 s between connection attempts). Your
 * `channelOptions` win. */
export const DEFAULT_CHANNEL_OPTIONS: Readonly<ChannelOptions> = Object.freeze({
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 1000,
});

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT32_MAX = 2 ** 32 - 1;

export interface ClientOptions {
  /** PEM file of the CA(s) to trust for TLS instead of the system roots. Makes a scheme-less
   * endpoint TLS even on loopback; refused with an http:// endpoint. */
  caFile?: string;
  /** Plaintext whatever the endpoint says (as `http://`). Prefer writing the scheme. */
  insecure?: boolean;
  /** Your own channel credentials (client certificates, ...); override the endpoint's TLS rule,
   * `insecure` and `caFile`. */
  credentials?: ChannelCredentials;
  /** Deadline of each unary call in ms, unless the call gives its own; 0: none. */
  timeoutMs?: number;
  /** Passed to grpc-js (window sizes, keepalive, ...), over DEFAULT_CHANNEL_OPTIONS. */
  channelOptions?: ChannelOptions;
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

/** `EntropyClient.fromEnv` options: each given value wins over its environment variable. */
export interface EnvClientOptions extends ClientOptions {
  /** Default: ENTROPY_ENDPOINT, else 127.0.0.1:50051. */
  endpoint?: string;
  /** Default: ENTROPY_API_KEY (required one way or the other). */
  apiKey?: string;
}

export interface CallOptions {
  /** Deadline of this call in ms (overrides the client's; 0: none). */
  timeoutMs?: number;
  /** Aborting cancels the call; it then rejects with `signal.reason` (a DOMException named
   * "AbortError", or "TimeoutError" for `AbortSignal.timeout(ms)`). */
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
  data: Buffer;
  provenance: Provenance;
}

/**
 * A connection to an Entropy Diode gateway.
 *
 * ```ts
 * const client = EntropyClient.fromEnv(); // ENTROPY_ENDPOINT, ENTROPY_API_KEY, ENTROPY_CA_FILE
 * const rolls = await client.getIntegers(1, 6, 10);
 * client.close();
 * ```
 *
 * Every method rejects with a subclass of EntropyError on failure, or with the abort signal's
 * reason when you abort it.
 */
export class EntropyClient {
  /** Where this client connects, as `http://host:port` or `https://host:port` (or as given,
   * with your own `credentials`). */
  readonly endpoint: string;
  /** The source kinds every entropy call accepts unless it says otherwise (empty: any). */
  readonly acceptKinds: readonly SourceKind[];
  /** How every entropy call's bytes are made unless it says otherwise (Construction.RAW by
   * default). */
  readonly construction: Construction;
  private readonly rpc: GrpcClient<(typeof EntropyService)["method"]>;
  private readonly metadata: Metadata;
  private readonly streamMetadata: Metadata;
  private readonly timeoutMs: number;

  /**
   * `endpoint` in the syntax of clients/README.md (`host[:port]`, `http://...`, `https://...`,
   * `[v6]:port`; port 50051 by default; plaintext only on loopback or with http://). The key is
   * checked here (1 to 512 visible ASCII characters): a bad endpoint or key throws an
   * InvalidArgumentError that never holds the key.
   */
  constructor(endpoint: string, apiKey: string, options: ClientOptions = {}) {
    const key = validateApiKey(apiKey);
    this.acceptKinds = Object.freeze(checkKinds(options.acceptKinds ?? []));
    this.construction = checkConstruction(options.construction ?? Construction.RAW);
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(Number.isFinite(timeoutMs) && timeoutMs >= 0)) {
      throw invalidArgument(`timeoutMs is ${timeoutMs}, must be a number >= 0 (0: none)`);
    }
    if (options.insecure && options.caFile !== undefined) {
      throw invalidArgument("insecure (plaintext) and caFile (TLS) contradict each other");
    }
    const parsed: Endpoint = parseEndpoint(endpoint, options.caFile !== undefined);
    if (options.insecure) parsed.tls = false;
    this.endpoint = formatEndpoint(parsed);
    const creds = options.credentials ?? channelCredentials(parsed.tls, options.caFile);
    this.rpc = grpcClient(EntropyService, grpcTarget(parsed), creds, {
      ...DEFAULT_CHANNEL_OPTIONS,
      ...options.channelOptions,
    });
    // Sent as call metadata on every call: the gateway never takes keys from fields or URLs.
    this.metadata = new Metadata();
    this.metadata.set("authorization", `Bearer ${key}`);
    // Stream attempts wait for the channel to be ready rather than failing fast on "connection
    // refused"; the stream's attempt timeout bounds the wait.
    this.streamMetadata = new Metadata({ waitForReady: true });
    this.streamMetadata.set("authorization", `Bearer ${key}`);
    this.timeoutMs = timeoutMs;
  }

  /** A client from the environment: ENTROPY_ENDPOINT (default 127.0.0.1:50051),
   * ENTROPY_API_KEY (required), ENTROPY_CA_FILE (optional). Values in `options` win. */
  static fromEnv(options: EnvClientOptions = {}, env: NodeJS.ProcessEnv = process.env): EntropyClient {
    const { endpoint, apiKey, ...rest } = options;
    const caFile = rest.caFile ?? (env.ENTROPY_CA_FILE || undefined);
    return new EntropyClient(
      endpoint ?? (env.ENTROPY_ENDPOINT || DEFAULT_ENDPOINT),
      apiKey ?? env.ENTROPY_API_KEY ?? "",
      rest.insecure || rest.credentials ? rest : { ...rest, caFile },
    );
  }

  /** Exactly `numBytes` random bytes (1..=1048576). */
  async getBytes(numBytes: number, options?: CallOptions): Promise<Buffer> {
    return (await this.draw(numBytes, options)).data;
  }

  /** Exactly `numBytes` random bytes (1..=1048576) and where they came from. */
  async draw(numBytes: number, options?: CallOptions): Promise<Draw> {
    const req = { numBytes: uint32("numBytes", numBytes), encoding: 0, ...callWant(this, options) };
    const res = await this.unary(this.rpc.getRandom, req, options);
    return { data: Buffer.from(res.data), provenance: provenanceFromPb(res.provenance) };
  }

  /** Has the gateway draw `sampleBytes` (2500..=4194304) from its pool, never to be served to
   * anyone, and report how random they look. Needs a key with the `quality:check` scope; the
   * bytes count against the key's quota. */
  async checkQuality(sampleBytes: number, options?: CallOptions): Promise<QualityReport> {
    const req = { sampleBytes: uint32("sampleBytes", sampleBytes), ...callWant(this, options) };
    return qualityFromPb(await this.unary(this.rpc.checkQuality, req, options));
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
    const res = await this.unary(this.rpc.getIntegers, req, options);
    // Bounds that are safe integers keep every value in between safe too.
    return typeof min === "number" ? res.values.map(Number) : res.values;
  }

  /** `count` (1..=10000) uniform floats in [0, 1), 53 random bits each. */
  async getFloats(count = 1, options?: CallOptions): Promise<number[]> {
    const req = { count: uint32("count", count), ...callWant(this, options) };
    const res = await this.unary(this.rpc.getFloats, req, options);
    return res.values;
  }

  /** `count` (1..=10000) random version 4 UUIDs, canonical lowercase. */
  async getUuids(count = 1, options?: CallOptions): Promise<string[]> {
    const req = { count: uint32("count", count), ...callWant(this, options) };
    const res = await this.unary(this.rpc.getUuids, req, options);
    return res.uuids;
  }

  /** The gateway's pool, counters and sources. */
  async status(options?: CallOptions): Promise<Status> {
    return statusFromPb(await this.unary(this.rpc.getStatus, {}, options));
  }

  /** This client's key's limits and what is left of each now: calls and bytes per second (with
   * when they refill), streams open, bytes drawn and not yet read. Any valid key may ask, about
   * itself only; asking costs none of it. */
  async usage(options?: CallOptions): Promise<Usage> {
    return usageFromPb(await this.unary(this.rpc.getUsage, {}, options));
  }

  /** StreamRandom as an async iterable of chunks with `read(n)`; reconnects after transport
   * errors by the time-based rule without losing or repeating bytes. See RandomStream. */
  stream(options: StreamOptions = {}): RandomStream {
    // No call deadline: a stream lives as long as its consumer. Each read is bounded by the
    // stream's attempt and stall timeouts and its reconnect budget instead.
    return new RandomStream(
      (req) => this.rpc.streamRandom(req, this.streamMetadata.clone()),
      { ...options, ...callWant(this, options) },
      () => {
        const state = this.rpc.getChannel().getConnectivityState(false);
        return state === connectivityState.READY ? undefined : connectivityState[state];
      },
    );
  }

  /** The same stream as a Node Readable of Buffers (pipe it to a file, a hash, ...). */
  readable(options: StreamOptions = {}): Readable {
    return this.stream(options).toReadable();
  }

  /** Closes the channel; calls in flight fail with CANCELLED. */
  close(): void {
    this.rpc.close();
  }

  private unary<I extends DescMessage, O extends DescMessage>(
    method: UnaryMethod<I, O>,
    req: MessageInitShape<I>,
    options: CallOptions = {},
  ): Promise<MessageShape<O>> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const callOptions = timeoutMs > 0 ? { deadline: Date.now() + timeoutMs } : {};
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<MessageShape<O>>((resolve, reject) => {
      let settled = false;
      const onAbort = () => {
        if (settled) return;
        settled = true;
        call.cancel();
        reject(signal?.reason);
      };
      const call = method.call(this.rpc, req, this.metadata.clone(), callOptions, (err, res) => {
        signal?.removeEventListener("abort", onAbort);
        if (settled) return; // aborted: already rejected with the signal's reason
        settled = true;
        if (err) reject(fromServiceError(err));
        else resolve(res);
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

function channelCredentials(tls: boolean, caFile: string | undefined): ChannelCredentials {
  if (!tls) return credentials.createInsecure();
  if (caFile === undefined) return credentials.createSsl();
  let pem: Buffer;
  try {
    pem = readFileSync(caFile);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    throw invalidArgument(`CA file ${JSON.stringify(caFile)}: cannot read it (${code})`);
  }
  try {
    return credentials.createSsl(pem);
  } catch (e) {
    throw invalidArgument(`CA file ${JSON.stringify(caFile)}: not PEM certificates (${(e as Error).message})`);
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
