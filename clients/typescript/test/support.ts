// Shared by the test files: a live dev gateway, a scripted fake server, a proxy whose
// connections can be cut, and a server that never answers.

import * as grpc from "@grpc/grpc-js";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as net from "node:net";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

import { create } from "@bufbuild/protobuf";

import { EntropyClient } from "../src";
import {
  type CheckQualityResponse,
  CheckQualityResponseSchema,
  EntropyService,
  type GetFloatsRequest,
  type GetIntegersRequest,
  type GetRandomRequest,
  type GetStatusResponse,
  GetStatusResponseSchema,
  type GetUuidsRequest,
  type StreamRandomRequest,
  type StreamRandomResponse,
  StreamRandomResponseSchema,
} from "../src/gen/entropy/v1/entropy_pb.js";
import { type DrawProvenance, DrawProvenanceSchema, SourceKind as Kind } from "../src/gen/entropy/v1/provenance_pb.js";
import { serviceDefinition } from "../src/grpc";

export const MIB = 1 << 20;

export interface Gateway {
  target: string;
  apiKey: string;
  /** The pool capacity it was started with; undefined for an external gateway. */
  poolCapacity: bigint | undefined;
  stop(): Promise<void>;
}

/** The gateway binary: $GATEWAY_BIN, default the repo's target/release/entropy-gateway. */
export function gatewayBin(): string {
  // Compiled to dist/test/, so the repo root is four levels up.
  return process.env.GATEWAY_BIN || path.resolve(__dirname, "../../../../target/release/entropy-gateway");
}

/** A dev gateway process we started and can kill. */
export interface DevGateway extends Gateway {
  /** Sends `signal` and resolves once the process has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/** A live dev gateway from $GATEWAY_BIN on `port` (default a free one) with `apiKey` (default a
 * random one), or the one in ENTROPY_TEST_ENDPOINT / ENTROPY_TEST_API_KEY. Resolves once it is
 * serving. */
export async function startGateway(opts: { port?: number; apiKey?: string } = {}): Promise<Gateway> {
  const external = process.env.ENTROPY_TEST_ENDPOINT;
  if (external && opts.port === undefined) {
    const gw = { target: external, apiKey: process.env.ENTROPY_TEST_API_KEY ?? "", poolCapacity: undefined };
    await waitServing(gw.target, gw.apiKey);
    return { ...gw, stop: async () => {} };
  }
  return startDevGateway(opts);
}

/** Always a dev gateway of our own (for tests that kill it). */
export async function startDevGateway(
  opts: { port?: number; apiKey?: string; tls?: { cert: string; key: string; ca: string } } = {},
): Promise<DevGateway> {
  const target = `127.0.0.1:${opts.port ?? (await freePort())}`;
  const apiKey = opts.apiKey ?? `ts-test-${randomBytes(8).toString("hex")}`;
  const poolCapacity = 16n * 1024n * 1024n;
  const proc: ChildProcess = spawn(
    gatewayBin(),
    [
      "--dev",
      "--listen-addr",
      target,
      "--pool-capacity-bytes",
      String(poolCapacity),
      "--metrics-listen-addr",
      "",
      ...(opts.tls ? ["--tls-cert-file", opts.tls.cert, "--tls-key-file", opts.tls.key] : []),
    ],
    { env: { ...process.env, ENTROPY_DEV_API_KEY: apiKey }, stdio: "ignore" },
  );
  const spawnFailed = new Promise<never>((_, reject) =>
    proc.once("error", (e) => reject(new Error(`cannot start the gateway ${gatewayBin()} (set GATEWAY_BIN): ${e.message}`))),
  );
  spawnFailed.catch(() => {});
  const exited = new Promise<void>((resolve) => {
    proc.once("exit", () => resolve());
    proc.once("error", () => resolve());
  });
  const kill = async (signal: NodeJS.Signals) => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  };
  const stop = () => kill("SIGTERM");
  try {
    await Promise.race([waitServing(target, apiKey, opts.tls?.ca), spawnFailed]);
  } catch (e) {
    await stop();
    throw e;
  }
  return { target, apiKey, poolCapacity, stop, kill };
}

async function waitServing(target: string, apiKey: string, caFile?: string): Promise<void> {
  const options = caFile === undefined ? { insecure: true } : { caFile };
  const client = new EntropyClient(target, apiKey, { ...options, timeoutMs: 1000 });
  try {
    for (let i = 0; i < 200; i++) {
      try {
        if ((await client.status()).serving) return;
      } catch {
        // not up yet
      }
      await sleep(100);
    }
    throw new Error(`gateway at ${target} not serving after 20 s`);
  } finally {
    client.close();
  }
}

/** A throwaway CA and a gateway certificate for localhost and 127.0.0.1, written into `dir` by
 * `entropy-gateway dev-certs`. */
export async function devCerts(dir: string): Promise<{ cert: string; key: string; ca: string }> {
  await new Promise<void>((resolve, reject) =>
    execFile(gatewayBin(), ["dev-certs", "--out", dir], (err) => (err ? reject(err) : resolve())),
  );
  return { cert: path.join(dir, "gateway.pem"), key: path.join(dir, "gateway.key"), ca: path.join(dir, "ca.pem") };
}

const handedOut = new Set<number>();

/** Where freePort draws ports: TEST_PORT_RANGE, else 10000..32767. */
function portRange(): [number, number] {
  const given = process.env.TEST_PORT_RANGE;
  if (!given) return [10000, 32767];
  const match = /^(\d+)-(\d+)$/.exec(given);
  if (!match || Number(match[2]) < Number(match[1])) {
    throw new Error(`TEST_PORT_RANGE must be LOW-HIGH, not ${given}`);
  }
  return [Number(match[1]), Number(match[2])];
}

/** A loopback port nothing listens on now, below the ephemeral range (so no outgoing
 * connection takes it before the gateway binds it) and never returned twice by this process
 * (bind-0-then-close may hand out the same port again). The repo's other test harnesses pick
 * ports by the same rule (scripts/lib/ports.py), and read TEST_PORT_RANGE=LOW-HIGH (inclusive)
 * the same way. */
export async function freePort(): Promise<number> {
  const [low, high] = portRange();
  for (let tries = 0; tries < 1000; tries++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (handedOut.has(port)) continue;
    const server = net.createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (!bound) continue;
    await new Promise((resolve) => server.close(resolve));
    handedOut.add(port);
    return port;
  }
  throw new Error("no free loopback port found in 1000 tries");
}

/** Throws if a 16-byte block of `data` appears twice: for random data a repeat has probability
 * ~2^-128 per pair, so one means bytes were served or returned twice. */
export function assertNoRepeatedBlock(data: Buffer): void {
  const seen = new Set<string>();
  for (let i = 0; i + 16 <= data.length; i += 16) {
    const block = data.toString("hex", i, i + 16);
    if (seen.has(block)) throw new Error(`16-byte block at offset ${i} appeared before`);
    seen.add(block);
  }
}

/** One scripted StreamRandom call: send `chunks` messages (undefined: all that was asked for),
 * then end with `code` (undefined: OK). */
export interface Step {
  chunks?: number;
  code?: grpc.status;
  /** After the chunks, send nothing more and never end (a stalled stream). */
  hang?: boolean;
}

/** A provenance no dev gateway reports: two kinds mixed, two collectors, chunks `sequence` and
 * `sequence + 1`. */
export function fakeProvenance(sequence: number): DrawProvenance {
  return create(DrawProvenanceSchema, {
    kinds: [Kind.QUANTUM, Kind.OS],
    mixed: true,
    collectorIds: ["fake-a", "fake-b"],
    firstChunk: { collectorId: "fake-a", epoch: 7n, sequence: BigInt(sequence), signedAtUnixMs: 1_700_000_000_000n },
    lastChunk: { collectorId: "fake-b", epoch: 2n ** 64n - 1n, sequence: BigInt(sequence + 1), signedAtUnixMs: -5n },
    chunkCount: 2,
    oldestByteAgeMs: 42n,
    construction: 1,
  });
}

/** A scripted EntropyService, for what a live gateway cannot be made to do on cue. It records
 * the `acceptKinds` and `construction` of every call. */
export class FakeEntropy {
  readonly requests: Array<[number, number]> = [];
  /** [method, acceptKinds] of every call, in order. */
  readonly kinds: Array<[string, number[]]> = [];
  /** [method, construction] of every call, in order (GetStatus: 0, it has none). */
  readonly constructions: Array<[string, number]> = [];
  /** What CheckQuality and GetStatus answer. */
  quality: CheckQualityResponse = create(CheckQualityResponseSchema);
  status: GetStatusResponse = create(GetStatusResponseSchema);
  sent = Buffer.alloc(0);
  /** Stalled calls (`hang`) the client cancelled. */
  cancelledCalls = 0;
  /** What every unary call (GetRandom, CheckQuality, GetIntegers, ...) fails with, if set. */
  unaryError: { code: grpc.status; details: string; trailers: grpc.Metadata } | undefined;
  private server = new grpc.Server();
  private active = new Set<grpc.ServerWritableStream<StreamRandomRequest, StreamRandomResponse>>();

  constructor(
    /** What the next StreamRandom calls do, in order; once empty, each sends all it was asked. */
    public script: Step[] = [],
    private chunkSize = 1000,
  ) {}

  /** Serves on 127.0.0.1:`port` (default a free one) and resolves to its address. */
  async start(onPort = 0): Promise<string> {
    // Records the call's acceptKinds and construction, then answers `ok()` or the scripted error.
    const unary =
      <Req, Res>(method: string, ok: (req: Req) => Res) =>
      (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>) => {
        const req = call.request as { acceptKinds?: number[]; construction?: number };
        this.kinds.push([method, [...(req.acceptKinds ?? [])]]);
        this.constructions.push([method, req.construction ?? 0]);
        if (this.unaryError) {
          const { code, details, trailers } = this.unaryError;
          callback({ code, details, metadata: trailers, name: "", message: details });
        } else {
          callback(null, ok(call.request));
        }
      };
    // Answers are init shapes: the service definition's serializers make the messages.
    const impl: grpc.UntypedServiceImplementation = {
      streamRandom: (call: grpc.ServerWritableStream<StreamRandomRequest, StreamRandomResponse>) => void this.stream(call),
      getRandom: unary("GetRandom", (req: GetRandomRequest) => ({
        data: randomBytes(req.numBytes),
        provenance: fakeProvenance(req.numBytes),
      })),
      getIntegers: unary("GetIntegers", (req: GetIntegersRequest) => ({ values: Array(req.count).fill(req.min) })),
      getFloats: unary("GetFloats", (req: GetFloatsRequest) => ({ values: Array(req.count).fill(0.5) })),
      getUuids: unary("GetUuids", (req: GetUuidsRequest) => ({
        uuids: Array(req.count).fill("5f0c3c1e-8f6e-4d3c-9a63-3b1e1c2d4e5f"),
      })),
      getStatus: unary("GetStatus", () => this.status),
      checkQuality: unary("CheckQuality", () => this.quality),
    };
    this.server.addService(serviceDefinition(EntropyService), impl);
    const port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(`127.0.0.1:${onPort}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    return `127.0.0.1:${port}`;
  }

  /** Ends the streams in flight with UNAVAILABLE, as a gateway shutting down does, and stops:
   * no new call is accepted from now on. */
  stop(): void {
    if (this.active.size === 0) return this.server.forceShutdown();
    for (const call of this.active) call.emit("error", { code: grpc.status.UNAVAILABLE, details: "server is shutting down" });
    this.active.clear();
    const force = setTimeout(() => this.server.forceShutdown(), 1000);
    this.server.tryShutdown(() => clearTimeout(force));
  }

  private async stream(call: grpc.ServerWritableStream<StreamRandomRequest, StreamRandomResponse>) {
    const req = call.request;
    this.requests.push([req.chunkBytes, Number(req.totalBytes)]);
    this.kinds.push(["StreamRandom", [...req.acceptKinds]]);
    this.constructions.push(["StreamRandom", req.construction]);
    const step = this.script.shift() ?? {};
    const size = req.chunkBytes || this.chunkSize;
    let left = req.totalBytes > 0n ? Number(req.totalBytes) : Infinity;
    for (let i = 0; i < (step.chunks ?? 10_000) && left > 0 && !call.cancelled; i++) {
      const data = randomBytes(Math.min(size, left));
      left -= data.length;
      this.sent = Buffer.concat([this.sent, data]);
      // Wait for each write to be flushed so every chunk goes out before the status.
      // Its chunk sequence is the bytes sent so far: a test can tell which message came last.
      const provenance = fakeProvenance(this.sent.length);
      await new Promise<void>((resolve) => call.write(create(StreamRandomResponseSchema, { data, provenance }), () => resolve()));
    }
    if (step.hang) {
      this.active.add(call); // until the client cancels or the server is stopped
      call.on("cancelled", () => {
        this.active.delete(call);
        this.cancelledCalls++;
      });
      return;
    }
    if (step.code === undefined) call.end();
    else call.emit("error", { code: step.code, details: "injected by the test" });
  }
}

/** Accepts connections and never answers: a server too slow for any deadline. */
export async function blackHole(): Promise<{ target: string; close(): void }> {
  const held: net.Socket[] = [];
  const server = net.createServer((s) => held.push(s));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    target: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () => {
      held.forEach((s) => s.destroy());
      server.close();
    },
  };
}

/** Relays 127.0.0.1 to `upstream`. The first connection passes at most `firstLimit` bytes
 * towards the client and then stalls, so a test knows a stream cannot have finished before it
 * calls cut(); later connections are unlimited. */
export class CutProxy {
  connections = 0;
  private sockets: net.Socket[] = [];
  private server: net.Server;

  private constructor(
    private upstream: string,
    private firstLimit: number,
  ) {
    this.server = net.createServer((down) => this.relay(down));
  }

  static async start(upstream: string, firstLimit: number): Promise<CutProxy> {
    const p = new CutProxy(upstream, firstLimit);
    await new Promise<void>((resolve) => p.server.listen(0, "127.0.0.1", resolve));
    return p;
  }

  get target(): string {
    return `127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  /** Resets every open connection; the listener stays up so clients can reconnect. */
  cut(): void {
    this.sockets.forEach((s) => s.resetAndDestroy());
    this.sockets = [];
  }

  close(): void {
    this.cut();
    this.server.close();
  }

  private relay(down: net.Socket): void {
    const [host, port] = this.upstream.split(":");
    const up = net.connect(Number(port), host);
    this.sockets.push(down, up);
    const limit = ++this.connections === 1 ? this.firstLimit : Infinity;
    let sent = 0;
    down.on("data", (d) => up.write(d));
    up.on("data", (d: Buffer) => {
      if (sent >= limit) return; // stalled: drop everything until cut()
      const part = d.subarray(0, limit - sent);
      sent += part.length;
      down.write(part);
    });
    for (const s of [down, up]) {
      s.on("error", () => {});
      s.on("close", () => {
        down.destroy();
        up.destroy();
      });
    }
  }
}
