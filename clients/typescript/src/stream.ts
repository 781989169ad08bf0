// StreamRandom as an async iterable with read(n) and a Node Readable, reconnecting after
// transport errors by the time-based rule of clients/README.md without losing or repeating bytes.

import type { MessageInitShape } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { Readable } from "node:stream";

import { DeadlineExceededError, EntropyError, fromServiceError, invalidArgument, UnavailableError } from "./errors.js";
import type { StreamRandomRequestSchema, StreamRandomResponse } from "./gen/entropy/v1/entropy_pb.js";
import type { DrawProvenance } from "./gen/entropy/v1/provenance_pb.js";
import { checkConstruction, checkKinds, Construction, type Provenance, provenanceFromPb } from "./provenance.js";
import type { SourceKind } from "./status.js";

/** How long a stream keeps reconnecting after a failure by default (ms). */
export const DEFAULT_RECONNECT_BUDGET_MS = 30_000;
/** How long one new stream may take to deliver its first message by default (ms). */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 2_000;
/** How long a flowing stream may go without a message by default (ms). */
export const DEFAULT_STALL_TIMEOUT_MS = 10_000;
/** The first backoff delay between attempts by default (ms). */
export const DEFAULT_INITIAL_BACKOFF_MS = 50;
/** The longest backoff delay between attempts by default (ms). */
export const DEFAULT_MAX_BACKOFF_MS = 1_000;

export interface StreamOptions {
  /** Bytes in all. Undefined: endless, until the consumer stops (break, cancel(), signal). */
  totalBytes?: number;
  /** Bytes per message; 0 or undefined: the server's default, 16 KiB. At most 1 MiB. */
  chunkBytes?: number;
  /** Aborting stops the stream: pending and later reads reject with `signal.reason` (a
   * DOMException named "AbortError", or "TimeoutError" for `AbortSignal.timeout`). */
  signal?: AbortSignal;
  /** How long after a failure the stream keeps trying (ms); 0: forever (daemons). Starts again
   * once bytes flow. Default 30 s. */
  reconnectBudgetMs?: number;
  /** How long one new stream may take to deliver its first message, connecting included (ms).
   * Default 2 s. */
  attemptTimeoutMs?: number;
  /** How long a flowing stream may go without a message while a read waits, before it counts as
   * broken (ms). Default 10 s. */
  stallTimeoutMs?: number;
  /** Backoff between attempts: from this (ms), doubling... Default 50 ms. */
  initialBackoffMs?: number;
  /** ...up to this (ms); each delay drawn uniformly from the upper half of its ceiling. Default
   * 1 s. */
  maxBackoffMs?: number;
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

/** What a grpc-js server-streaming call offers that RandomStream needs. */
export interface StreamCall extends AsyncIterable<StreamRandomResponse> {
  cancel(): void;
  on(event: "error", listener: (err: Error) => void): unknown;
}

/** One StreamRandom call and how long it may take to deliver its first message. */
interface Attempt {
  call: StreamCall;
  messages: AsyncIterator<StreamRandomResponse>;
  timeoutMs: number;
  /** Whether the reconnect budget left less than the attempt timeout. */
  cutShort: boolean;
  gotMessage: boolean;
}

const TIMED_OUT = Symbol("timed out");

/**
 * Random bytes from StreamRandom. Iterate it (`for await (const chunk of stream)`) for chunks as
 * they arrive, or `await stream.read(n)` for exactly n bytes; `toReadable()` gives a Node
 * Readable. Use one style per stream.
 *
 * The reconnect rule: after a transport failure (UNAVAILABLE, the server shutting down, an
 * attempt or a stall timing out) it opens a new stream for exactly the bytes still owed, each
 * attempt waiting for the channel to be ready for at most `attemptTimeoutMs`, with a jittered
 * backoff between attempts, for at most `reconnectBudgetMs` from the failure (0: forever). Bytes
 * already received are kept, and the gateway never serves a byte twice, so the caller never
 * loses a byte or sees one twice. Any other status (a bad key, a quota, FailedPreconditionError
 * for `acceptKinds` the pool cannot serve) is thrown at once; when
 * the budget runs out the last error is thrown (UnavailableError, or DeadlineExceededError for a
 * timeout), saying how long it tried and what it received. A later read tries again with a new
 * budget, and bytes already received are still delivered.
 *
 * Cancellation is the platform's: after `cancel()` or an abort of `signal`, pending and later
 * reads reject with the abort reason (a DOMException named "AbortError" or "TimeoutError"), and
 * the Readable is destroyed with it.
 */
export class RandomStream implements AsyncIterable<Buffer> {
  private readonly total: number | undefined;
  private readonly chunkBytes: number;
  private readonly budgetMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly stallTimeoutMs: number;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly acceptKinds: SourceKind[];
  private readonly construction: Construction;
  /** The last message's provenance as received, converted when asked for. */
  private lastProvenance: DrawProvenance | undefined;
  private convertedProvenance: Provenance | undefined;
  /** Aborted by cancel() or the caller's signal; its reason is what reads reject with. */
  private readonly stop = new AbortController();
  private receivedBytes = 0;
  private buffer: Buffer[] = [];
  private bufferedBytes = 0;
  private attempt: Attempt | undefined;
  private opens = 0;
  private reconnectCount = 0;
  /** performance.now() of the first failure of the current outage; undefined while flowing. */
  private brokenSince: number | undefined;
  /** Failed attempts in the current outage, and the last one's error. */
  private failures = 0;
  private lastError: EntropyError | undefined;

  /**
   * @param open starts one StreamRandom call (wait-for-ready)
   * @param notConnected the channel's state when it is not connected (e.g. "TRANSIENT_FAILURE"),
   *   undefined when it is: an attempt that timed out without a connection is reported as
   *   UNAVAILABLE (the gateway cannot be reached), one that had a connection as DEADLINE_EXCEEDED
   */
  constructor(
    private readonly open: (req: MessageInitShape<typeof StreamRandomRequestSchema>) => StreamCall,
    options: StreamOptions = {},
    private readonly notConnected: () => string | undefined = () => undefined,
  ) {
    const { totalBytes, chunkBytes = 0 } = options;
    if (totalBytes !== undefined && !(Number.isSafeInteger(totalBytes) && totalBytes >= 0)) {
      throw invalidArgument(`totalBytes is ${totalBytes}, must be a non-negative integer`);
    }
    if (!(Number.isInteger(chunkBytes) && chunkBytes >= 0 && chunkBytes < 2 ** 32)) {
      throw invalidArgument(`chunkBytes is ${chunkBytes}, must be a uint32`);
    }
    this.total = totalBytes;
    this.chunkBytes = chunkBytes;
    this.acceptKinds = checkKinds(options.acceptKinds ?? []);
    this.construction = checkConstruction(options.construction ?? Construction.RAW);
    this.budgetMs = millis("reconnectBudgetMs", options.reconnectBudgetMs, DEFAULT_RECONNECT_BUDGET_MS, 0);
    this.attemptTimeoutMs = millis("attemptTimeoutMs", options.attemptTimeoutMs, DEFAULT_ATTEMPT_TIMEOUT_MS, 1);
    this.stallTimeoutMs = millis("stallTimeoutMs", options.stallTimeoutMs, DEFAULT_STALL_TIMEOUT_MS, 1);
    this.initialBackoffMs = millis("initialBackoffMs", options.initialBackoffMs, DEFAULT_INITIAL_BACKOFF_MS, 1);
    this.maxBackoffMs = millis("maxBackoffMs", options.maxBackoffMs, DEFAULT_MAX_BACKOFF_MS, 1);
    if (this.maxBackoffMs < this.initialBackoffMs) {
      throw invalidArgument(`maxBackoffMs (${this.maxBackoffMs}) is below initialBackoffMs (${this.initialBackoffMs})`);
    }
    const signal = options.signal;
    if (signal?.aborted) {
      this.cancel(signal.reason);
    } else if (signal) {
      const onAbort = () => this.cancel(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      // A long-lived signal shared by many streams must not collect their listeners.
      this.unlisten = () => signal.removeEventListener("abort", onAbort);
    }
  }

  private unlisten: () => void = () => {};

  /** How many StreamRandom calls this stream has made (1 + reconnects, or 0 before the first
   * read). */
  get streamsOpened(): number {
    return this.opens;
  }

  /** How many new streams were opened after a failure. */
  get reconnects(): number {
    return this.reconnectCount;
  }

  /** Bytes received from the gateway so far (returned or buffered here). */
  get received(): number {
    return this.receivedBytes;
  }

  /** Where the bytes of the last message received came from (undefined before the first). That
   * message's bytes may still be buffered, not yet returned by `read`. */
  get provenance(): Provenance | undefined {
    if (this.convertedProvenance === undefined && this.lastProvenance !== undefined) {
      this.convertedProvenance = provenanceFromPb(this.lastProvenance);
    }
    return this.convertedProvenance;
  }

  /** Exactly `n` bytes, or fewer at the end of a bounded stream (empty once it is over). */
  async read(n: number): Promise<Buffer> {
    if (!(Number.isSafeInteger(n) && n >= 0)) throw invalidArgument(`read(${n}): n must be a non-negative integer`);
    this.throwIfStopped();
    while (this.bufferedBytes < n) {
      const chunk = await this.pull();
      if (chunk === undefined) break;
      this.buffer.push(chunk);
      this.bufferedBytes += chunk.length;
    }
    const all = Buffer.concat(this.buffer, this.bufferedBytes);
    const out = all.subarray(0, n);
    this.buffer = all.length > n ? [all.subarray(n)] : [];
    this.bufferedBytes = all.length - out.length;
    return out;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer, void, undefined> {
    try {
      if (this.bufferedBytes > 0) yield await this.read(this.bufferedBytes); // left by read(n)
      for (let chunk = await this.pull(); chunk !== undefined; chunk = await this.pull()) {
        yield chunk;
      }
    } finally {
      this.cancel(); // the consumer stopped early (break, throw) or the stream is over
    }
  }

  /** A Node Readable of Buffers over this stream; destroying it cancels the stream, and an abort
   * destroys it with the signal's reason. */
  toReadable(): Readable {
    const chunks = this[Symbol.asyncIterator]();
    const readable = new Readable({
      read: () => {
        chunks.next().then(
          (r) => void readable.push(r.done ? null : r.value),
          (e: unknown) => readable.destroy(e as Error),
        );
      },
      // At once, even while a read waits on the network (Readable.from would wait for it).
      destroy: (err, callback) => {
        this.cancel(err ?? undefined);
        callback(err);
      },
    });
    return readable;
  }

  /** Stops the stream and drops what is buffered. Pending and later reads reject with `reason`
   * (default: a DOMException named "AbortError"). Calling it again does nothing. */
  cancel(reason?: unknown): void {
    if (!this.stop.signal.aborted) {
      this.stop.abort(reason ?? new DOMException("the stream was cancelled", "AbortError"));
    }
    this.buffer = [];
    this.bufferedBytes = 0;
    this.drop();
    this.unlisten();
  }

  private get exhausted(): boolean {
    return this.total !== undefined && this.receivedBytes >= this.total;
  }

  private throwIfStopped(): void {
    if (this.stop.signal.aborted) throw this.stop.signal.reason;
  }

  /** The next message's bytes (reconnecting as needed), or undefined at the end. */
  private async pull(): Promise<Buffer | undefined> {
    while (!this.exhausted) {
      this.throwIfStopped();
      const a = (this.attempt ??= this.reopen());
      const waitMs = a.gotMessage ? this.stallTimeoutMs : a.timeoutMs;
      let next: IteratorResult<StreamRandomResponse> | typeof TIMED_OUT;
      try {
        next = await this.within(a.messages.next(), waitMs);
      } catch (err) {
        this.drop();
        this.throwIfStopped();
        await this.retryOrThrow(fromServiceError(err as Error), false);
        continue;
      }
      if (next === TIMED_OUT) {
        const channel = a.gotMessage ? undefined : this.notConnected();
        this.drop();
        // An attempt cut short by the end of the budget says little: the error before it is the
        // one worth reporting.
        if (a.cutShort && this.lastError !== undefined) {
          this.failures++;
          this.giveUp(this.lastError);
        }
        const what = a.gotMessage ? "no message" : "no first message";
        await this.retryOrThrow(
          channel === undefined
            ? new DeadlineExceededError(status.DEADLINE_EXCEEDED, `${what} within ${Math.round(waitMs)} ms`)
            : new UnavailableError(
                status.UNAVAILABLE,
                `no connection to the gateway within ${Math.round(waitMs)} ms (channel ${channel})`,
              ),
          true,
        );
        continue;
      }
      if (next.done) {
        this.drop();
        // The server closed the stream with OK before sending everything: a server bug, reported
        // rather than papered over by reconnecting (a gateway shutting down says UNAVAILABLE).
        throw new EntropyError(
          status.INTERNAL,
          `stream ended with OK after ${this.receivedBytes} of ${this.total ?? "unlimited"} bytes`,
        );
      }
      const data = Buffer.from(next.value.data);
      if (this.total !== undefined && this.receivedBytes + data.length > this.total) {
        this.drop();
        throw new EntropyError(status.INTERNAL, `server sent more than totalBytes (${this.total})`);
      }
      a.gotMessage = true;
      this.receivedBytes += data.length;
      this.lastProvenance = next.value.provenance;
      this.convertedProvenance = undefined;
      if (data.length > 0) {
        this.brokenSince = undefined; // bytes flow: the next outage gets a whole budget
        this.failures = 0;
        this.lastError = undefined;
      }
      if (this.exhausted) {
        this.drop(); // all owed has arrived; the server is closing with OK
        this.unlisten();
      }
      return data;
    }
    return undefined;
  }

  /** Waits the backoff if the rule allows another attempt; throws `error` (or the stop reason)
   * otherwise. */
  private async retryOrThrow(error: EntropyError, timedOut: boolean): Promise<void> {
    if (!timedOut && error.code !== status.UNAVAILABLE && !cutShort(error)) throw error;
    this.brokenSince ??= performance.now();
    this.failures++;
    this.lastError = error;
    this.giveUpIfSpent(error);
    const ceiling = Math.min(this.maxBackoffMs, this.initialBackoffMs * 2 ** Math.min(this.failures - 1, 30));
    let delay = ceiling / 2 + Math.random() * (ceiling / 2);
    if (this.budgetMs > 0) delay = Math.min(delay, this.budgetLeftMs());
    await this.within(new Promise<void>(() => {}), delay);
    this.giveUpIfSpent(error); // rather than an attempt with no time left
  }

  private budgetLeftMs(): number {
    return this.budgetMs - (performance.now() - (this.brokenSince ?? performance.now()));
  }

  /** Throws `error`, saying how long the stream tried and what it received, once the reconnect
   * budget of this outage is spent. */
  private giveUpIfSpent(error: EntropyError): void {
    if (this.budgetMs > 0 && this.brokenSince !== undefined && this.budgetLeftMs() <= 0) this.giveUp(error);
  }

  private giveUp(error: EntropyError): never {
    const spentMs = performance.now() - (this.brokenSince ?? performance.now());
    const failures = this.failures;
    // A later read starts a new outage with a whole budget; what arrived stays buffered.
    this.brokenSince = undefined;
    this.failures = 0;
    this.lastError = undefined;
    const details =
      `gave up reconnecting after ${Math.round(spentMs)} ms (${failures} failed attempts; ` +
      `reconnect budget ${this.budgetMs} ms), ${this.receivedBytes} bytes received: ${error.details}`;
    const Cls = error.constructor as new (code: status, details: string) => EntropyError;
    throw new Cls(error.code, details);
  }

  /** Opens a stream for the bytes still owed. */
  private reopen(): Attempt {
    let timeoutMs = this.attemptTimeoutMs;
    if (this.brokenSince !== undefined) {
      this.reconnectCount++;
      if (this.budgetMs > 0) timeoutMs = Math.max(1, Math.min(timeoutMs, this.budgetLeftMs()));
    }
    const cutShort = timeoutMs < this.attemptTimeoutMs;
    this.opens++;
    const remaining = this.total === undefined ? 0 : this.total - this.receivedBytes; // 0: endless
    const call = this.open({ chunkBytes: this.chunkBytes, totalBytes: BigInt(remaining), acceptKinds: this.acceptKinds, construction: this.construction });
    // The iterator reports errors; this listener only keeps a late error (after cancel()) from
    // being an unhandled 'error' event.
    call.on("error", () => {});
    return { call, messages: call[Symbol.asyncIterator](), timeoutMs, cutShort, gotMessage: false };
  }

  private drop(): void {
    if (this.attempt === undefined) return;
    const { call, messages } = this.attempt;
    this.attempt = undefined;
    call.cancel();
    // A read abandoned by a timeout or an abort may still settle; nobody awaits it any more.
    messages.return?.().catch(() => {});
  }

  /** `p`, or TIMED_OUT after `ms`, or a rejection with the stop reason once the stream is
   * cancelled or aborted, whichever comes first. */
  private within<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
    const stop = this.stop.signal;
    return new Promise<T | typeof TIMED_OUT>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        stop.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        done();
        reject(stop.reason);
      };
      const timer = setTimeout(() => {
        done();
        resolve(TIMED_OUT);
      }, Math.min(ms, 2 ** 31 - 1));
      if (stop.aborted) return onAbort();
      stop.addEventListener("abort", onAbort, { once: true });
      p.then(
        (v) => {
          done();
          resolve(v);
        },
        (e: unknown) => {
          done();
          reject(e);
        },
      );
    });
  }
}

function millis(name: string, value: number | undefined, fallback: number, min: number): number {
  const v = value ?? fallback;
  if (!(Number.isFinite(v) && v >= min)) throw invalidArgument(`${name} is ${value}, must be a number >= ${min}`);
  return v;
}

/** How grpc-js words a stream that ended without a gRPC status: something between the client
 * and the gateway (a load balancer that lost its upstream) ended it with an empty DATA frame, or
 * reset it. Nothing ended the call on purpose, so a reader resumes. */
const CUT_SHORT_MARKERS = ["Call ended without gRPC status", "Received RST_STREAM"];

/** True when `error` is a stream cut short on the way (no status from the gateway): a transport
 * failure like UNAVAILABLE. The gateway itself never ends a stream that way. */
export function cutShort(error: EntropyError): boolean {
  return (
    (error.code === status.INTERNAL || error.code === status.UNKNOWN) &&
    CUT_SHORT_MARKERS.some((m) => error.details.includes(m))
  );
}
