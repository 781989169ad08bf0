// StreamRandom as an async iterable with read(n) and a Node Readable, reconnecting after
// transport errors without losing or repeating bytes.

import { status } from "@grpc/grpc-js";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";

import { EntropyError, fromServiceError, invalidArgument } from "./errors";
import type { StreamRandomRequest, StreamRandomResponse } from "./gen/entropy/v1/entropy";

/** Failed attempts in a row before a stream gives up. Any delivered chunk resets the count, so
 * a long stream survives any number of separate hiccups. */
export const MAX_RECONNECTS = 5;

export interface StreamOptions {
  /** Bytes in all. Undefined: endless, until the consumer stops (break, cancel(), signal). */
  totalBytes?: number;
  /** Bytes per message; 0 or undefined: the server's default, 16 KiB. At most 1 MiB. */
  chunkBytes?: number;
  /** Aborting cancels the stream. */
  signal?: AbortSignal;
}

/** What a grpc-js server-streaming call offers that RandomStream needs. */
export interface StreamCall extends AsyncIterable<StreamRandomResponse> {
  cancel(): void;
  on(event: "error", listener: (err: Error) => void): unknown;
}

/**
 * Random bytes from StreamRandom. Iterate it (`for await (const chunk of stream)`) for chunks as
 * they arrive, or `await stream.read(n)` for exactly n bytes; `toReadable()` gives a Node
 * Readable. Use one style per stream.
 *
 * After UNAVAILABLE (a dropped connection, a restarting gateway) it opens a new stream for
 * exactly the bytes still owed, after a short backoff, up to MAX_RECONNECTS times in a row.
 * Bytes already received are kept, so the caller never loses a byte or sees one twice. Other
 * errors are thrown as they are.
 */
export class RandomStream implements AsyncIterable<Buffer> {
  private readonly total: number | undefined;
  private readonly chunkBytes: number;
  private readonly signal: AbortSignal | undefined;
  private received = 0;
  private buffer: Buffer[] = [];
  private bufferedBytes = 0;
  private call: StreamCall | undefined;
  private messages: AsyncIterator<StreamRandomResponse> | undefined;
  private failures = 0;
  private opens = 0;
  private cancelled = false;

  constructor(
    private readonly open: (req: StreamRandomRequest) => StreamCall,
    options: StreamOptions = {},
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
    this.signal = options.signal;
    this.signal?.addEventListener("abort", () => this.cancel(), { once: true });
  }

  /** How many StreamRandom calls this stream has made (1 + reconnects). */
  get streamsOpened(): number {
    return this.opens;
  }

  /** Exactly `n` bytes, or fewer at the end of a bounded stream (empty once it is over). */
  async read(n: number): Promise<Buffer> {
    if (this.cancelled) throw new EntropyError(status.CANCELLED, "stream cancelled");
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

  /** A Node Readable of Buffers over this stream; destroying it cancels the stream. */
  toReadable(): Readable {
    return Readable.from(this, { objectMode: false });
  }

  /** Stops the stream and drops what is buffered. Later reads reject with CANCELLED. */
  cancel(): void {
    this.cancelled = true;
    this.buffer = [];
    this.bufferedBytes = 0;
    this.drop();
  }

  private get exhausted(): boolean {
    return this.total !== undefined && this.received >= this.total;
  }

  /** The next message's bytes (reconnecting as needed), or undefined at the end. */
  private async pull(): Promise<Buffer | undefined> {
    while (!this.exhausted) {
      if (this.cancelled) throw new EntropyError(status.CANCELLED, "stream cancelled");
      this.messages ??= this.reopen();
      let next: IteratorResult<StreamRandomResponse>;
      try {
        next = await this.messages.next();
      } catch (err) {
        this.drop();
        const e = fromServiceError(err as Error);
        if (this.cancelled || e.code !== status.UNAVAILABLE || this.failures >= MAX_RECONNECTS) throw e;
        this.failures++;
        await this.backoff(Math.min(50 * 2 ** this.failures, 1000));
        continue;
      }
      if (next.done) {
        this.drop();
        // The server closed the stream with OK before sending everything: a server bug, reported
        // rather than papered over by reconnecting.
        throw new EntropyError(
          status.INTERNAL,
          `stream ended with OK after ${this.received} of ${this.total ?? "unlimited"} bytes`,
        );
      }
      const data = Buffer.from(next.value.data);
      if (this.total !== undefined && this.received + data.length > this.total) {
        this.drop();
        throw new EntropyError(status.INTERNAL, `server sent more than totalBytes (${this.total})`);
      }
      this.received += data.length;
      this.failures = 0;
      if (this.exhausted) this.drop(); // all owed has arrived; the server is closing with OK
      return data;
    }
    return undefined;
  }

  private reopen(): AsyncIterator<StreamRandomResponse> {
    this.opens++;
    const remaining = this.total === undefined ? 0 : this.total - this.received; // 0: endless
    this.call = this.open({ chunkBytes: this.chunkBytes, totalBytes: BigInt(remaining) });
    // The iterator reports errors; this listener only keeps a late error (after cancel()) from
    // being an unhandled 'error' event.
    this.call.on("error", () => {});
    return this.call[Symbol.asyncIterator]();
  }

  private drop(): void {
    this.call?.cancel();
    this.call = undefined;
    this.messages = undefined;
  }

  private async backoff(ms: number): Promise<void> {
    try {
      await sleep(ms, undefined, { signal: this.signal });
    } catch {
      throw new EntropyError(status.CANCELLED, "stream cancelled");
    }
  }
}
