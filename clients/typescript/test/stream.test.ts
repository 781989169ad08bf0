// RandomStream: exact lengths and no repeats against a live gateway, a real transport failure
// through a proxy, and the reconnect rule byte for byte against a scripted server.

import { status } from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { after, before, describe, test } from "node:test";

import { EntropyClient, EntropyError, MAX_RECONNECTS, PermissionDeniedError, UnavailableError } from "../src";
import {
  assertNoRepeatedBlock,
  CutProxy,
  FakeEntropy,
  type Gateway,
  MIB,
  startGateway,
  type Step,
} from "./support";

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
    await assert.rejects(s.read(1), (e: unknown) => e instanceof EntropyError && e.code === status.CANCELLED);
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
    await assert.rejects(s.read(1), (e: unknown) => e instanceof EntropyError && e.code === status.CANCELLED);
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
  async function readAll(script: Step[], chunkSize: number, totalBytes: number | undefined, n: number) {
    const fake = new FakeEntropy(script, chunkSize);
    const c = new EntropyClient(await fake.start(), "k", { insecure: true });
    const s = c.stream({ totalBytes, chunkBytes: chunkSize });
    try {
      return { data: await s.read(n), fake, opened: s.streamsOpened };
    } finally {
      s.cancel();
      c.close();
      fake.stop();
    }
  }
  const UNAVAILABLE = status.UNAVAILABLE;

  test("resumes for exactly the remaining bytes", async () => {
    const script = [{ chunks: 3, code: UNAVAILABLE }, { chunks: 2, code: UNAVAILABLE }];
    const { data, fake } = await readAll(script, 1000, 10_000, 10_000);
    assert.deepEqual(fake.requests, [[1000, 10_000], [1000, 7000], [1000, 5000]]);
    assert.ok(data.equals(fake.sent)); // nothing lost, nothing twice, in order
  });

  test("a failure with nothing sent is retried too", async () => {
    const script = [{ chunks: 0, code: UNAVAILABLE }, { chunks: 0, code: UNAVAILABLE }];
    const { data, fake } = await readAll(script, 500, 2000, 2000);
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

  test("gives up after MAX_RECONNECTS failures in a row", async () => {
    const script = Array.from({ length: MAX_RECONNECTS + 1 }, () => ({ chunks: 0, code: UNAVAILABLE }));
    const fake = new FakeEntropy(script, 100);
    const c = new EntropyClient(await fake.start(), "k", { insecure: true });
    try {
      await assert.rejects(c.stream({ totalBytes: 1000 }).read(1000), UnavailableError);
      assert.equal(fake.requests.length, MAX_RECONNECTS + 1);
    } finally {
      c.close();
      fake.stop();
    }
  });

  test("progress resets the attempt budget", async () => {
    const script = Array.from({ length: 2 * MAX_RECONNECTS }, () => ({ chunks: 1, code: UNAVAILABLE }));
    const total = 100 * (2 * MAX_RECONNECTS + 1);
    const { data, fake, opened } = await readAll(script, 100, total, total);
    assert.ok(data.equals(fake.sent));
    assert.equal(opened, 2 * MAX_RECONNECTS + 1);
  });

  test("other errors are thrown without reconnecting, after what arrived", async () => {
    const fake = new FakeEntropy([{ chunks: 2, code: status.PERMISSION_DENIED }], 100);
    const c = new EntropyClient(await fake.start(), "k", { insecure: true });
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
});
