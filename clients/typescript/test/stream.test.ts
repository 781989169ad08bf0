// RandomStream: exact lengths and no repeats against a live gateway, a real transport failure
// through a proxy, the time-based reconnect rule byte for byte against a scripted server, and
// language-native cancellation. (Gateway restarts: restart.test.ts.)

import { status } from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, test } from "node:test";

import {
  DeadlineExceededError,
  EntropyClient,
  EntropyError,
  PermissionDeniedError,
  type StreamOptions,
  UnavailableError,
} from "../src";
import {
  assertNoRepeatedBlock,
  blackHole,
  CutProxy,
  FakeEntropy,
  freePort,
  type Gateway,
  MIB,
  startGateway,
  type Step,
} from "./support";
import { cutShort, RandomStream, type StreamCall } from "../src/stream";
import type { StreamRandomResponse } from "../src/gen/entropy/v1/entropy_pb.js";

/** A StreamRandom call whose first message fails with `error`, or never comes. */
function scriptedCall(error?: Error): StreamCall {
  return {
    cancel() {},
    on() {},
    [Symbol.asyncIterator]: (): AsyncIterator<StreamRandomResponse> => ({
      next: () => (error ? Promise.reject(error) : new Promise(() => {})),
    }),
  };
}

/** A rejection with the platform's abort error, not an EntropyError. */
function abortError(name = "AbortError") {
  return (e: unknown) => {
    assert.ok(!(e instanceof EntropyError), `an EntropyError: ${String(e)}`);
    assert.ok(e instanceof DOMException, `not a DOMException: ${String(e)}`);
    assert.equal(e.name, name);
    return true;
  };
}

let gw: Gateway;
let client: EntropyClient;

before(async () => {
  gw = await startGateway();
  client = new EntropyClient(gw.target, gw.apiKey, { insecure: true });
});
after(async () => {
  client.close();
  await gw.stop();
});

describe("live stream", () => {
  test("read(n) delivers exactly totalBytes in odd sizes", async () => {
    const s = client.stream({ totalBytes: MIB, chunkBytes: 64 * 1024 });
    const parts: Buffer[] = [];
    for (let part = await s.read(1000); part.length > 0; part = await s.read(1000)) parts.push(part);
    assert.ok(parts.slice(0, -1).every((p) => p.length === 1000));
    const data = Buffer.concat(parts);
    assert.equal(data.length, MIB);
    assert.equal(s.streamsOpened, 1);
    assertNoRepeatedBlock(data);
  });

  test("the async iterator yields chunks of chunkBytes", async () => {
    const sizes: number[] = [];
    for await (const chunk of client.stream({ totalBytes: 100_000, chunkBytes: 30_000 })) {
      sizes.push(chunk.length);
    }
    assert.deepEqual(sizes, [30_000, 30_000, 30_000, 10_000]);
  });

  test("breaking out of an endless stream stops it", async () => {
    const s = client.stream({ chunkBytes: 8192 });
    const seen: Buffer[] = [];
    for await (const chunk of s) {
      seen.push(chunk);
      if (seen.length === 20) break;
    }
    assertNoRepeatedBlock(Buffer.concat(seen));
    await assert.rejects(s.read(1), abortError());
  });

  test("the Readable pipes exactly totalBytes", async () => {
    const parts: Buffer[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        parts.push(chunk);
        done();
      },
    });
    await pipeline(client.readable({ totalBytes: 300_000, chunkBytes: 16_384 }), sink);
    const data = Buffer.concat(parts);
    assert.equal(data.length, 300_000);
    assertNoRepeatedBlock(data);
  });

  test("an abort signal cancels the stream", async () => {
    const ac = new AbortController();
    const s = client.stream({ chunkBytes: 4096, signal: ac.signal });
    assert.equal((await s.read(10_000)).length, 10_000);
    ac.abort();
    await assert.rejects(s.read(1), abortError());
  });

  test("one signal for many streams keeps no listener from finished ones", async () => {
    const ac = new AbortController();
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    try {
      for (let i = 0; i < 30; i++) {
        const s = client.stream({ totalBytes: 1000, signal: ac.signal });
        assert.equal((await s.read(1000)).length, 1000);
      }
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(warnings.map(String), []);
    } finally {
      process.off("warning", onWarning);
    }
  });

  test("totalBytes 0 is empty without a call", async () => {
    const s = client.stream({ totalBytes: 0 });
    assert.equal((await s.read(10)).length, 0);
    assert.equal(s.streamsOpened, 0);
  });

  test("reconnects after the connection is cut", async () => {
    const total = 4 * MIB;
    // The first connection carries at most 2 MiB, so the stream cannot finish before the cut.
    const proxy = await CutProxy.start(gw.target, 2 * MIB);
    const c = new EntropyClient(proxy.target, gw.apiKey, { insecure: true });
    try {
      const s = c.stream({ totalBytes: total, chunkBytes: 64 * 1024 });
      const first = await s.read(MIB);
      proxy.cut();
      const rest = await s.read(total);
      assert.equal((await s.read(1)).length, 0);
      assert.ok(s.streamsOpened >= 2, `${s.streamsOpened} streams`);
      assert.ok(proxy.connections >= 2);
      const data = Buffer.concat([first, rest]);
      assert.equal(data.length, total);
      assertNoRepeatedBlock(data);
    } finally {
      c.close();
      proxy.close();
    }
  });
});

describe("reconnect rule (scripted server)", () => {
  const UNAVAILABLE = status.UNAVAILABLE;
  const fails = (n: number, chunks = 0): Step[] => Array.from({ length: n }, () => ({ chunks, code: UNAVAILABLE }));

  async function readAll(
    script: Step[],
    chunkSize: number,
    totalBytes: number | undefined,
    n: number,
    options: StreamOptions = {},
  ) {
    const fake = new FakeEntropy(script, chunkSize);
    const c = new EntropyClient(await fake.start(), "k");
    const s = c.stream({ totalBytes, chunkBytes: chunkSize, ...options });
    const started = performance.now();
    try {
      return { data: await s.read(n), fake, opened: s.streamsOpened, reconnects: s.reconnects, started };
    } finally {
      s.cancel();
      c.close();
      fake.stop();
    }
  }

  test("resumes for exactly the remaining bytes", async () => {
    const script = [{ chunks: 3, code: UNAVAILABLE }, { chunks: 2, code: UNAVAILABLE }];
    const { data, fake, reconnects } = await readAll(script, 1000, 10_000, 10_000);
    assert.deepEqual(fake.requests, [[1000, 10_000], [1000, 7000], [1000, 5000]]);
    assert.ok(data.equals(fake.sent)); // nothing lost, nothing twice, in order
    assert.equal(reconnects, 2);
  });

  test("a failure with nothing sent is retried too", async () => {
    const { data, fake } = await readAll(fails(2), 500, 2000, 2000);
    assert.deepEqual(fake.requests, [[500, 2000], [500, 2000], [500, 2000]]);
    assert.equal(data.length, 2000);
    assert.ok(data.equals(fake.sent));
  });

  test("endless streams reopen endless", async () => {
    const { data, fake } = await readAll([{ chunks: 2, code: UNAVAILABLE }], 100, undefined, 600);
    assert.equal(data.length, 600);
    assert.deepEqual(fake.requests.slice(0, 2), [[100, 0], [100, 0]]);
    assert.ok(fake.sent.subarray(0, 600).equals(data)); // later chunks may be in flight, unread
  });

  test("gives up when the reconnect budget runs out: the last error, how long, what arrived", async () => {
    const fake = new FakeEntropy([{ chunks: 2, code: UNAVAILABLE }, ...fails(1000)], 100);
    const c = new EntropyClient(await fake.start(), "k");
    try {
      const s = c.stream({ totalBytes: 1000, chunkBytes: 100, reconnectBudgetMs: 400 });
      const started = performance.now();
      let message = "";
      await assert.rejects(s.read(1000), (e: unknown) => {
        assert.ok(e instanceof UnavailableError, String(e));
        message = e.details;
        return true;
      });
      const elapsed = performance.now() - started;
      const m = /^gave up reconnecting after (\d+) ms \((\d+) failed attempts; reconnect budget 400 ms\), 200 bytes received: injected by the test$/.exec(message);
      assert.ok(m, message);
      assert.ok(Number(m[1]) >= 400 && Number(m[1]) < 1000, message);
      assert.ok(Number(m[2]) >= 3, message); // 50 ms doubling backoff: several attempts in 400 ms
      // Every attempt counted; the last, cut short by the budget, may not have reached the server.
      assert.ok([Number(m[2]), Number(m[2]) - 1].includes(fake.requests.length), `${fake.requests.length} requests`);
      assert.equal(s.streamsOpened, Number(m[2]));
      assert.ok(elapsed >= 400 && elapsed < 1500, `${elapsed} ms`);
      // Nothing received is lost: a later read tries again (a new budget) and still has the 200.
      await sleep(100); // an attempt cancelled at the deadline may still reach the server
      const before = fake.sent.length;
      fake.script.length = 0; // the gateway is back
      const data = await s.read(1000);
      assert.equal(data.length, 1000);
      assert.equal(before, 200);
      assert.ok(data.equals(fake.sent));
      assert.deepEqual(fake.requests.at(-1), [100, 800]);
    } finally {
      c.close();
      fake.stop();
    }
  });

  test("giving up reports the gateway's answer, not a timeout the budget cut short", async (t) => {
    // The gateway answers UNAVAILABLE; the backoff runs to the end of the budget, so the next
    // attempt gets only what is left of it (a millisecond) and times out locally. That says
    // nothing about the gateway, so giving up reports UNAVAILABLE (CI saw DEADLINE_EXCEEDED in
    // the Python reader on a busy machine). Clock-driven: the timers and the clock are mocked.
    let now = 100_000;
    t.mock.method(performance, "now", () => now);
    t.mock.method(Math, "random", () => 0); // backoff: the lower end of its ceiling
    t.mock.timers.enable({ apis: ["setTimeout"] });
    const advance = async (ms: number) => {
      now += ms;
      t.mock.timers.tick(ms);
      await new Promise((resolve) => setImmediate(resolve)); // let the stream react
    };
    const answer = Object.assign(new Error("14 UNAVAILABLE: gateway restarting"), {
      code: UNAVAILABLE,
      details: "gateway restarting",
    });
    const calls: StreamCall[] = [scriptedCall(answer), scriptedCall()];
    const s = new RandomStream(() => calls.shift() ?? scriptedCall(), {
      totalBytes: 100,
      reconnectBudgetMs: 500,
      attemptTimeoutMs: 5_000,
      initialBackoffMs: 998, // 499 ms with jitter 0, just under the budget
      maxBackoffMs: 998,
    });
    const outcome = s.read(100).then(
      () => undefined,
      (e: unknown) => e,
    );
    await advance(0); // the first attempt fails: the backoff starts
    await advance(499); // the second attempt opens with 1 ms of the budget left
    assert.equal(s.streamsOpened, 2);
    await advance(1); // and times out
    const e = await outcome;
    assert.ok(e instanceof UnavailableError, String(e));
    assert.equal(
      e.details,
      "gave up reconnecting after 500 ms (2 failed attempts; reconnect budget 500 ms), 0 bytes received: gateway restarting",
    );
  });

  test("bytes flowing start the budget again", async () => {
    // 20 outages of ~20-40 ms each, 100 bytes between them: far more than the 150 ms budget in
    // all, but each outage is well within it.
    const total = 100 * 21;
    const opts = { reconnectBudgetMs: 150, initialBackoffMs: 40, maxBackoffMs: 40 };
    const { data, fake, opened, started } = await readAll(fails(20, 1), 100, total, total, opts);
    assert.ok(data.equals(fake.sent));
    assert.equal(opened, 21);
    assert.ok(performance.now() - started > 150);
  });

  test("budget 0 keeps trying; a short budget on the same outage gives up", async () => {
    const opts = { initialBackoffMs: 100, maxBackoffMs: 100 }; // 12 failures: 0.6 to 1.2 s
    const { data, fake } = await readAll(fails(12), 100, 500, 500, { ...opts, reconnectBudgetMs: 0 });
    assert.equal(fake.requests.length, 13);
    assert.ok(data.equals(fake.sent));
    await assert.rejects(readAll(fails(12), 100, 500, 500, { ...opts, reconnectBudgetMs: 300 }), UnavailableError);
  });

  test("an attempt with no first message within attemptTimeoutMs is abandoned and retried", async () => {
    const { data, fake, started } = await readAll([{ chunks: 0, hang: true }], 100, 1000, 1000, {
      attemptTimeoutMs: 300,
    });
    assert.ok(performance.now() - started >= 300);
    assert.deepEqual(fake.requests, [[100, 1000], [100, 1000]]);
    assert.ok(data.equals(fake.sent));
  });

  test("a connected gateway that sends nothing ends in DeadlineExceededError after the budget", async () => {
    const script = Array.from({ length: 100 }, () => ({ chunks: 0, hang: true }));
    const opts = { attemptTimeoutMs: 200, reconnectBudgetMs: 500 };
    await assert.rejects(readAll(script, 100, 1000, 1000, opts), (e: unknown) => {
      assert.ok(e instanceof DeadlineExceededError, String(e));
      assert.match(e.details, /^gave up reconnecting after \d+ ms \(\d+ failed attempts; reconnect budget 500 ms\), 0 bytes received: no first message within \d+ ms$/);
      return true;
    });
  });

  test("a stream that stalls for stallTimeoutMs is abandoned and resumed", async () => {
    const { data, fake, started } = await readAll([{ chunks: 3, hang: true }], 100, 1000, 1000, {
      stallTimeoutMs: 300,
    });
    assert.ok(performance.now() - started >= 300);
    assert.deepEqual(fake.requests, [[100, 1000], [100, 700]]);
    assert.ok(data.equals(fake.sent));
  });

  test("a server that never answers HTTP/2 is unreachable: UnavailableError after the budget", async () => {
    const hole = await blackHole();
    const c = new EntropyClient(hole.target, "k");
    try {
      const s = c.stream({ totalBytes: 100, attemptTimeoutMs: 200, reconnectBudgetMs: 700 });
      const started = performance.now();
      await assert.rejects(s.read(100), (e: unknown) => {
        assert.ok(e instanceof UnavailableError, String(e));
        assert.match(e.details, /^gave up reconnecting after \d+ ms \(\d+ failed attempts; reconnect budget 700 ms\), 0 bytes received: no connection to the gateway within \d+ ms \(channel (CONNECTING|TRANSIENT_FAILURE)\)$/);
        return true;
      });
      const elapsed = performance.now() - started;
      assert.ok(elapsed >= 700 && elapsed < 1500, `${elapsed} ms`);
      assert.ok(s.streamsOpened >= 3, `${s.streamsOpened}`);
    } finally {
      c.close();
      hole.close();
    }
  });

  test("waits for a gateway that is not up yet (wait-for-ready), in the same attempt", async () => {
    const port = await freePort();
    const c = new EntropyClient(`127.0.0.1:${port}`, "k");
    const fake = new FakeEntropy([], 100);
    try {
      const s = c.stream({ totalBytes: 1000, chunkBytes: 100 });
      const pending = s.read(1000);
      await sleep(700); // connection refused all this time
      await fake.start(port);
      assert.ok((await pending).equals(fake.sent));
      assert.equal(s.reconnects, 0);
      assert.equal(s.streamsOpened, 1);
    } finally {
      c.close();
      fake.stop();
    }
  });

  test("a gateway that is back is used within about a second (channel backoff capped)", async () => {
    const port = await freePort();
    const c = new EntropyClient(`127.0.0.1:${port}`, "k");
    const first = new FakeEntropy([{ chunks: 2, hang: true }], 100);
    const second = new FakeEntropy([], 100);
    try {
      await first.start(port);
      const s = c.stream({ totalBytes: 1000, chunkBytes: 100 });
      assert.equal((await s.read(200)).length, 200);
      const pending = s.read(800);
      first.stop();
      await sleep(3000); // long enough for grpc-js's own backoff (1 s, x1.6, ...) to pass 2 s
      await second.start(port);
      const back = performance.now();
      assert.ok((await pending).equals(second.sent));
      const ms = performance.now() - back;
      assert.ok(ms < 1500, `${ms} ms after the gateway was back`);
      assert.deepEqual(second.requests, [[100, 800]]);
    } finally {
      c.close();
      first.stop();
      second.stop();
    }
  });

  test("other errors are thrown without reconnecting, after what arrived", async () => {
    const fake = new FakeEntropy([{ chunks: 2, code: status.PERMISSION_DENIED }], 100);
    const c = new EntropyClient(await fake.start(), "k");
    try {
      const s = c.stream({ totalBytes: 1000, chunkBytes: 100 });
      assert.ok((await s.read(200)).equals(fake.sent));
      await assert.rejects(s.read(1), PermissionDeniedError);
      assert.equal(s.streamsOpened, 1);
    } finally {
      c.close();
      fake.stop();
    }
  });

  test("a stream that ends early with OK is an error", async () => {
    await assert.rejects(readAll([{ chunks: 2 }], 100, 1000, 1000), /ended with OK after 200 of 1000/);
  });

  test("the knobs are checked", () => {
    const s = () => new EntropyClient("127.0.0.1:9", "k");
    for (const bad of [
      { reconnectBudgetMs: -1 },
      { attemptTimeoutMs: 0 },
      { stallTimeoutMs: Number.NaN },
      { initialBackoffMs: 0 },
      { initialBackoffMs: 500, maxBackoffMs: 100 },
    ]) {
      assert.throws(() => s().stream(bad), /INVALID_ARGUMENT/, JSON.stringify(bad));
    }
  });
});

describe("cancellation is the platform's (scripted server)", () => {
  /** A stream that delivers `chunks` messages of 100 bytes and then waits forever. */
  async function stalled(chunks: number, options: StreamOptions) {
    const fake = new FakeEntropy([{ chunks, hang: true }], 100);
    const c = new EntropyClient(await fake.start(), "k");
    const s = c.stream({ totalBytes: 10_000, chunkBytes: 100, stallTimeoutMs: 60_000, ...options });
    return {
      s,
      c,
      close: () => {
        s.cancel();
        c.close();
        fake.stop();
      },
    };
  }

  test("read(n): an abort rejects the waiting read with AbortError, and every later one", async () => {
    const ac = new AbortController();
    const { s, close } = await stalled(1, { signal: ac.signal });
    try {
      assert.equal((await s.read(100)).length, 100);
      const pending = s.read(100);
      setTimeout(() => ac.abort(), 100);
      await assert.rejects(pending, abortError());
      await assert.rejects(s.read(1), abortError());
    } finally {
      close();
    }
  });

  test("read(n): AbortSignal.timeout rejects with TimeoutError", async () => {
    const { s, close } = await stalled(1, { signal: AbortSignal.timeout(300) });
    try {
      const started = performance.now();
      await assert.rejects(s.read(1000), abortError("TimeoutError"));
      assert.ok(performance.now() - started < 2000);
    } finally {
      close();
    }
  });

  test("read(n): a reason of your own comes back as it is", async () => {
    const ac = new AbortController();
    const reason = new Error("shutting down the app");
    const { s, close } = await stalled(0, { signal: ac.signal });
    try {
      const pending = s.read(10);
      setTimeout(() => ac.abort(reason), 50);
      await assert.rejects(pending, (e: unknown) => e === reason);
    } finally {
      close();
    }
  });

  test("async iterator: an abort ends the loop with AbortError", async () => {
    const ac = new AbortController();
    const { s, close } = await stalled(3, { signal: ac.signal });
    try {
      let chunks = 0;
      await assert.rejects(async () => {
        for await (const chunk of s) {
          assert.equal(chunk.length, 100);
          if (++chunks === 3) setTimeout(() => ac.abort(), 50);
        }
      }, abortError());
      assert.equal(chunks, 3);
    } finally {
      close();
    }
  });

  test("async iterator: AbortSignal.timeout ends the loop with TimeoutError", async () => {
    const { s, close } = await stalled(2, { signal: AbortSignal.timeout(300) });
    try {
      await assert.rejects(async () => {
        for await (const _ of s) void _;
      }, abortError("TimeoutError"));
    } finally {
      close();
    }
  });

  test("Readable: an abort destroys it with AbortError", async () => {
    const ac = new AbortController();
    const { s, close } = await stalled(2, { signal: ac.signal });
    try {
      const r = s.toReadable();
      let got = 0;
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          got += chunk.length;
          if (got === 200) setTimeout(() => ac.abort(), 50);
          done();
        },
      });
      await assert.rejects(pipeline(r, sink), abortError());
      assert.ok(r.destroyed);
      assert.equal(got, 200);
    } finally {
      close();
    }
  });

  test("Readable: AbortSignal.timeout destroys it with TimeoutError", async () => {
    const { s, close } = await stalled(1, { signal: AbortSignal.timeout(300) });
    try {
      const sink = new Writable({ write: (_c, _e, done) => done() });
      await assert.rejects(pipeline(s.toReadable(), sink), abortError("TimeoutError"));
    } finally {
      close();
    }
  });

  test("Readable: destroying it while a read waits cancels the call at once", async () => {
    const fake = new FakeEntropy([{ chunks: 1, hang: true }], 100);
    const c = new EntropyClient(await fake.start(), "k");
    try {
      const s = c.stream({ totalBytes: 10_000, chunkBytes: 100 });
      const r = s.toReadable();
      await new Promise<void>((resolve) => r.once("data", () => resolve()));
      await sleep(100); // the next read is waiting on the stalled call
      r.destroy();
      for (let i = 0; i < 50 && fake.cancelledCalls === 0; i++) await sleep(10);
      assert.equal(fake.cancelledCalls, 1);
      await assert.rejects(s.read(1), abortError());
    } finally {
      c.close();
      fake.stop();
    }
  });

  test("an abort during the reconnect backoff is prompt", async () => {
    const fake = new FakeEntropy(
      Array.from({ length: 100 }, () => ({ chunks: 0, code: status.UNAVAILABLE })),
      100,
    );
    const c = new EntropyClient(await fake.start(), "k");
    try {
      const s = c.stream({
        totalBytes: 100,
        signal: AbortSignal.timeout(500),
        initialBackoffMs: 10_000,
        maxBackoffMs: 10_000,
      });
      const started = performance.now();
      await assert.rejects(s.read(100), abortError("TimeoutError"));
      assert.ok(performance.now() - started < 2000);
      assert.equal(fake.requests.length, 1);
    } finally {
      c.close();
      fake.stop();
    }
  });

  test("an already aborted signal: the first read rejects without a call", async () => {
    const { s, close } = await stalled(1, { signal: AbortSignal.abort() });
    try {
      await assert.rejects(s.read(1), abortError());
      assert.equal(s.streamsOpened, 0);
    } finally {
      close();
    }
  });

  test("cancel() rejects a waiting read with AbortError", async () => {
    const { s, close } = await stalled(0, {});
    try {
      const pending = s.read(10);
      setTimeout(() => s.cancel(), 50);
      await assert.rejects(pending, abortError());
    } finally {
      close();
    }
  });
});

describe("streams cut short on the way", () => {
  test("are resumed: grpc-js's words for a stream ended without a status", () => {
    // What grpc-js says when a load balancer that lost its upstream ends the stream with an
    // empty DATA frame (HAProxy does; seen in scripts/lab/scaleout.py), or resets it.
    assert.ok(cutShort(new EntropyError(status.INTERNAL, "Received RST_STREAM with code 0 (Call ended without gRPC status)")));
    assert.ok(cutShort(new EntropyError(status.INTERNAL, "Received RST_STREAM with code 2 triggered by internal client error")));
  });
  test("real INTERNAL and UNKNOWN errors are not", () => {
    assert.ok(!cutShort(new EntropyError(status.INTERNAL, "something broke inside")));
    assert.ok(!cutShort(new EntropyError(status.PERMISSION_DENIED, "Call ended without gRPC status")));
  });
});
