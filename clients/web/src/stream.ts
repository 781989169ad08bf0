// StreamRandom as an async iterable that survives a gateway restart, by the reconnect rule every
// Entropy Diode client follows.

import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";

import { DeadlineExceededError, EntropyError, UnavailableError, fromCallError, invalidArgument } from "./errors.js";
import type { StreamRandomRequestSchema, StreamRandomResponse } from "./gen/entropy/v1/entropy_pb.js";
import type { DrawProvenance } from "./gen/entropy/v1/provenance_pb.js";
import { checkConstruction, checkKinds, Construction, type Provenance, provenanceFromPb } from "./provenance.js";
import type { SourceKind } from "./status.js";

export interface StreamOptions {
  /** Bytes in all; 0 (the default): endless, until the consumer stops. */
  totalBytes?: number | bigint;
  /** Bytes per message, 1..=1048576 (default 65536). */
  chunkBytes?: number;
  /** How long one outage may last before the stream gives up, in ms (default 30000; 0:
   * forever). It starts again once bytes flow. */
  reconnectBudgetMs?: number;
  /** How long one attempt may take to deliver its first message, in ms (default 2000). */
  attemptTimeoutMs?: number;
  /** How long a flowing stream may send nothing while the consumer waits, in ms (default
   * 10000), before it counts as broken. */
  stallTimeoutMs?: number;
  /** Aborting ends the stream; it then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The source kinds this stream accepts, sent on every stream it opens (reconnects too);
   * `[]`: any. Default: the client's `acceptKinds`. A filter the pool cannot serve ends the
   * stream with FailedPreconditionError, which is not retried. */
  acceptKinds?: readonly SourceKind[];
  /** How this stream's bytes are made, sent on every stream it opens (reconnects too). Default:
   * the client's `construction`. A DRBG construction gets one DRBG instance per StreamRandom
   * call: every message of it carries the same `provenance.drbg.instanceId`, and a reconnect
   * gets a new instance. */
  construction?: Construction;
}

/** Opens one StreamRandom call for `request` (its `totalBytes` 0: endless). */
export type OpenStream = (
  request: MessageInitShape<typeof StreamRandomRequestSchema>,
  signal: AbortSignal,
) => AsyncIterable<StreamRandomResponse>;

/**
 * Random bytes as `for await (const chunk of stream)` or `await stream.read(n)`.
 *
 * After a transport error it opens a new stream for exactly the bytes still owed: each attempt
 * must deliver its first message within `attemptTimeoutMs`, attempts are spaced by exponential
 * backoff with jitter (50 ms doubling to 1 s), and the whole outage may last `reconnectBudgetMs`.
 * Nothing received is lost and nothing is repeated, because the gateway never serves a byte
 * twice. Refusals (a bad key, a quota, FailedPreconditionError for `acceptKinds` the pool cannot
 * serve) end the stream at once with their EntropyError.
 */
export class RandomStream implements AsyncIterable<Uint8Array> {
  /** Bytes received so far. */
  received = 0n;
  /** New streams opened after a failure. */
  reconnects = 0;

  private readonly total: bigint;
  private readonly chunkBytes: number;
  private readonly budgetMs: number;
  private readonly attemptMs: number;
  private readonly stallMs: number;
  private readonly signal: AbortSignal | undefined;
  private readonly acceptKinds: SourceKind[];
  private readonly construction: Construction;
  /** The last message's provenance as received, converted when asked for. */
  private lastProvenance: DrawProvenance | undefined;
  private convertedProvenance: Provenance | undefined;
  private iterator: AsyncGenerator<Uint8Array> | undefined;
  private leftover: Uint8Array = new Uint8Array(0);

  constructor(
    private readonly open: OpenStream,
    options: StreamOptions = {},
  ) {
    this.total = BigInt(options.totalBytes ?? 0);
    if (this.total < 0n) throw invalidArgument(`totalBytes is ${this.total}, must be >= 0 (0: endless)`);
    this.chunkBytes = options.chunkBytes ?? 65536;
    if (!Number.isInteger(this.chunkBytes) || this.chunkBytes < 1 || this.chunkBytes > 1 << 20) {
      throw invalidArgument(`chunkBytes is ${this.chunkBytes}, must be 1..=1048576`);
    }
    this.budgetMs = options.reconnectBudgetMs ?? 30_000;
    this.attemptMs = options.attemptTimeoutMs ?? 2_000;
    this.stallMs = options.stallTimeoutMs ?? 10_000;
    this.signal = options.signal;
    this.acceptKinds = checkKinds(options.acceptKinds ?? []);
    this.construction = checkConstruction(options.construction ?? Construction.RAW);
  }

  /** Where the bytes of the last message received came from (undefined before the first). That
   * message's bytes may still be buffered, not yet returned by `read`. */
  get provenance(): Provenance | undefined {
    if (this.convertedProvenance === undefined && this.lastProvenance !== undefined) {
      this.convertedProvenance = provenanceFromPb(this.lastProvenance);
    }
    return this.convertedProvenance;
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    this.iterator ??= this.chunks();
    return this.iterator;
  }

  /** The next `n` bytes; fewer only at the end of a bounded stream. */
  async read(n: number): Promise<Uint8Array> {
    const out = new Uint8Array(n);
    let filled = 0;
    this.iterator ??= this.chunks();
    while (filled < n) {
      if (this.leftover.length === 0) {
        const next = await this.iterator.next();
        if (next.done) break;
        this.leftover = next.value;
      }
      const take = Math.min(n - filled, this.leftover.length);
      out.set(this.leftover.subarray(0, take), filled);
      this.leftover = this.leftover.subarray(take);
      filled += take;
    }
    return out.subarray(0, filled);
  }

  /** Ends the stream (the call in flight is cancelled). */
  async close(): Promise<void> {
    this.iterator ??= this.chunks();
    await this.iterator.return(undefined);
  }

  private async *chunks(): AsyncGenerator<Uint8Array> {
    let brokenSince: number | undefined;
    let failures = 0;
    while (this.total === 0n || this.received < this.total) {
      this.signal?.throwIfAborted();
      const attempt = new AbortController();
      const forward = () => attempt.abort(this.signal?.reason);
      this.signal?.addEventListener("abort", forward, { once: true });
      let timer: ReturnType<typeof setTimeout> | undefined;
      let timedOut = false;
      const arm = (ms: number) => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          timedOut = true;
          attempt.abort();
        }, ms);
      };
      let firstMs = this.attemptMs;
      if (brokenSince !== undefined) {
        this.reconnects++;
        if (this.budgetMs > 0) firstMs = Math.max(1, Math.min(firstMs, this.budgetMs - (Date.now() - brokenSince)));
      }
      let error: unknown;
      let gotMessage = false;
      try {
        arm(firstMs);
        const owed = this.total === 0n ? 0n : this.total - this.received;
        const request = { totalBytes: owed, chunkBytes: this.chunkBytes, acceptKinds: this.acceptKinds, construction: this.construction };
        for await (const message of this.open(request, attempt.signal)) {
          clearTimeout(timer);
          this.lastProvenance = message.provenance;
          this.convertedProvenance = undefined;
          let data = message.data;
          if (this.total > 0n && BigInt(data.length) > this.total - this.received) {
            data = data.subarray(0, Number(this.total - this.received)); // never more than asked
          }
          if (data.length > 0) {
            gotMessage = true;
            brokenSince = undefined;
            failures = 0;
            this.received += BigInt(data.length);
            yield data;
          }
          arm(this.stallMs);
        }
        if (this.total === 0n || this.received >= this.total) return;
        error = new UnavailableError(Code.Unavailable, `the stream ended after ${this.received} of ${this.total} bytes`);
      } catch (e) {
        if (this.signal?.aborted) throw this.signal.reason;
        error = timedOut
          ? new DeadlineExceededError(Code.DeadlineExceeded, `${gotMessage ? "no message" : "no first message"} in time`)
          : fromCallError(e);
      } finally {
        clearTimeout(timer);
        this.signal?.removeEventListener("abort", forward);
        attempt.abort();
      }
      const retryable =
        error instanceof EntropyError && (error.code === Code.Unavailable || error.code === Code.DeadlineExceeded);
      if (!retryable) throw error;
      brokenSince ??= Date.now();
      const spent = Date.now() - brokenSince;
      if (this.budgetMs > 0 && spent >= this.budgetMs) {
        const e = error as EntropyError;
        throw new UnavailableError(
          Code.Unavailable,
          `gave up reconnecting after ${spent} ms (${failures} failed attempts, budget ${this.budgetMs} ms), ` +
            `${this.received} bytes received: ${e.message}`,
          { cause: e },
        );
      }
      const ceiling = Math.min(1000, 50 * 2 ** Math.min(failures, 20));
      failures++;
      let delay = ceiling / 2 + Math.random() * (ceiling / 2);
      if (this.budgetMs > 0) delay = Math.min(delay, this.budgetMs - spent);
      await sleep(delay, this.signal);
    }
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      signal?.removeEventListener("abort", abort);
      resolve();
    };
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", abort, { once: true });
  });
}
