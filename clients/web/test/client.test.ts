// The browser client's calls, errors and stream, run in Node (whose fetch the client uses like a
// browser's) against a live dev gateway with gRPC-Web on. A Node client sends no Origin, so CORS
// does not apply here; browser.test.ts checks it in Chromium.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import {
  EntropyClient,
  InvalidArgumentError,
  SourceKind,
  UnauthenticatedError,
  UnavailableError,
  baseUrl,
} from "../src/index.js";
import { Gateway, POOL_CAPACITY, firstRepeat } from "./support.js";

let gw: Gateway;
let client: EntropyClient;

before(async () => {
  gw = await Gateway.start([]);
  client = new EntropyClient(gw.endpoint, gw.apiKey);
});
after(async () => {
  await gw.stop();
});

test("every call returns what it promises", async () => {
  assert.equal((await client.getBytes(32)).length, 32);
  const dice = await client.getIntegers(1, 6, 1000);
  assert.ok(dice.every((d) => d >= 1 && d <= 6));
  assert.equal(new Set(dice).size, 6);
  const wide = await client.getIntegers(-(2n ** 63n), 2n ** 63n - 1n, 100);
  assert.equal(new Set(wide).size, 100);
  for (const f of await client.getFloats(1000)) assert.ok(f >= 0 && f < 1 && Number.isInteger(f * 2 ** 53));
  const uuids = await client.getUuids(100);
  assert.equal(new Set(uuids).size, 100);
  for (const u of uuids) assert.match(u, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const status = await client.status();
  assert.equal(status.poolCapacityBytes, POOL_CAPACITY);
  assert.ok(status.serving);
  assert.deepEqual(new Set(status.sources.map((s) => s.kind)), new Set(["os"]));
  // The same Status as the Node client's (one definition): the fields each lacked before.
  assert.equal(status.notServingReason, "");
  assert.deepEqual(status.poolByClass.map((c) => c.kinds), [[SourceKind.OS]]);
  assert.equal(status.maxByteAgeMs, 0n);
  for (const n of [status.expiredBytesTotal, status.evictedBytesTotal, status.discardedBytesTotal, status.qualityTestedBytesTotal]) {
    assert.equal(typeof n, "bigint");
  }
});

test("errors carry the status and the server's message", async () => {
  await assert.rejects(client.getBytes(0), (e: unknown) => e instanceof InvalidArgumentError && e.details.includes("num_bytes"));
  await assert.rejects(client.getIntegers(5, 1, 1), (e: unknown) => e instanceof InvalidArgumentError && /min/.test(e.details));
  const wrong = new EntropyClient(gw.endpoint, `wrong-${gw.apiKey}`);
  await assert.rejects(wrong.getBytes(32), (e: unknown) => e instanceof UnauthenticatedError && e.codeName === "UNAUTHENTICATED");
  const nobody = new EntropyClient("127.0.0.1:1", "k");
  await assert.rejects(nobody.getBytes(32), (e: unknown) => e instanceof UnavailableError && e.retryable);
  await assert.rejects(client.getFloats(-1), InvalidArgumentError, "not encodable: refused before sending");
});

test("a caller's own abort rejects with the signal's reason", async () => {
  await assert.rejects(client.getBytes(32, { signal: AbortSignal.abort() }), { name: "AbortError" });
});

test("keys and endpoints are checked on construction; the key is never echoed", () => {
  const secret = "s3cret-key-value";
  for (const bad of [`${secret}\n`, `${secret} `, `${secret}\u00e9`, "x".repeat(513), ""]) {
    assert.throws(
      () => new EntropyClient("127.0.0.1:50051", bad),
      (e: unknown) => e instanceof TypeError && !e.message.includes(secret) && !e.message.includes("xxxx"),
    );
  }
  assert.equal(baseUrl("127.0.0.1"), "http://127.0.0.1:50051");
  assert.equal(baseUrl("gw.example:7000"), "http://gw.example:7000");
  assert.equal(baseUrl("https://gw.example/"), "https://gw.example:50051");
  assert.equal(baseUrl("http://[::1]:8080"), "http://[::1]:8080");
  for (const bad of ["grpc://x:1", "x:0", "x:70000", "http://x:1/path", ":1"]) {
    assert.throws(() => baseUrl(bad), (e: unknown) => e instanceof TypeError && e.message.includes(bad));
  }
});

test("a bounded stream arrives exactly, with no 16-byte run twice", async () => {
  const stream = client.stream({ totalBytes: 3 * 1024 * 1024, chunkBytes: 50_000 });
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  const all = Buffer.concat(parts);
  assert.equal(all.length, 3 * 1024 * 1024);
  assert.equal(firstRepeat(all), -1);
  assert.equal(stream.reconnects, 0);
});

test("the stream survives a gateway killed with -9 and back on the same port", async () => {
  // More than the socket buffers and the runtime's read-ahead hold: at 8 MiB a loaded machine
  // could deliver the whole stream before the kill, and nothing was left to reconnect for.
  const total = 64 * 1024 * 1024;
  const stream = client.stream({ totalBytes: total });
  const first = await stream.read(1024 * 1024);
  await gw.kill9();
  const back = (async () => {
    await sleep(1000);
    await gw.restart();
  })();
  const rest = await stream.read(total);
  await back;
  const all = Buffer.concat([first, rest]);
  assert.equal(all.length, total);
  assert.equal(firstRepeat(all), -1, "a 16-byte run arrived twice");
  assert.ok(stream.reconnects >= 1, "it did reconnect");
});
