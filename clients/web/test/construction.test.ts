// DRBG constructions over gRPC-Web against a live dev gateway (its key holds `entropy:drbg`; one
// OS source, collector "dev-collector"): the label on DRBG output, RAW by default, the call's own
// `construction` over the client's, values refused, and a DRBG stream that keeps one instance per
// call and asks for DRBG again after the gateway is killed and started again.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import { Construction, EntropyClient, InvalidArgumentError, type Provenance, SourceKind } from "../src/index.js";
import { Gateway, firstRepeat } from "./support.js";

let gw: Gateway;
let raw: EntropyClient;
let drbg: EntropyClient;

before(async () => {
  gw = await Gateway.start([]);
  raw = new EntropyClient(gw.endpoint, gw.apiKey);
  drbg = new EntropyClient(gw.endpoint, gw.apiKey, { construction: Construction.DRBG });
});
after(async () => {
  await gw.stop();
});

/** DRBG output of the dev gateway: labelled, its seeds from the dev collector's OS source. */
function assertDrbg(p: Provenance | undefined, construction: Construction = Construction.DRBG): string {
  assert.ok(p !== undefined, "no provenance");
  assert.equal(p.construction, construction);
  assert.ok(p.drbg !== undefined, "no drbg label");
  assert.equal(p.drbg.mechanism, 1); // CTR_DRBG with AES-256
  assert.equal(p.drbg.securityStrengthBits, 256);
  assert.match(p.drbg.instanceId, /^[0-9a-f]{32}$/);
  assert.equal(p.drbg.predictionResistance, construction === Construction.DRBG_PREDICTION_RESISTANT);
  assert.ok(p.drbg.seedBytes >= 48n, `${p.drbg.seedBytes} seed bytes`);
  assert.deepEqual(p.collectorIds, ["dev-collector"]);
  assert.deepEqual(p.kinds, [SourceKind.OS]);
  return p.drbg.instanceId;
}

function assertRaw(p: Provenance | undefined): void {
  assert.ok(p !== undefined, "no provenance");
  assert.equal(p.construction, Construction.RAW);
  assert.equal(p.drbg, undefined);
  assert.deepEqual(p.collectorIds, ["dev-collector"]);
}

test("a DRBG draw is labelled: CTR_DRBG, 256 bits, its own instance, seeded by the dev collector", async () => {
  assert.equal(drbg.construction, Construction.DRBG);
  const a = await drbg.draw(4096);
  assert.equal(a.data.length, 4096);
  const first = assertDrbg(a.provenance);
  const b = await drbg.draw(4096);
  assert.notEqual(assertDrbg(b.provenance), first, "two unary calls shared an instance");
  assertDrbg((await drbg.checkQuality(10_000)).provenance);
  assertDrbg((await raw.draw(100_000, { construction: Construction.DRBG_PREDICTION_RESISTANT })).provenance, 3);
});

test("by default a call is RAW, with no label; a call's own construction beats the client's", async () => {
  assert.equal(raw.construction, Construction.RAW);
  assertRaw((await raw.draw(32)).provenance);
  assertRaw((await drbg.draw(32, { construction: Construction.RAW })).provenance);
  assertDrbg((await raw.draw(32, { construction: Construction.DRBG })).provenance);
  const s = drbg.stream({ totalBytes: 10_000, construction: Construction.RAW });
  assert.equal((await s.read(10_000)).length, 10_000);
  assertRaw(s.provenance);
  const t = raw.stream({ totalBytes: 10_000, construction: Construction.DRBG });
  assert.equal((await t.read(10_000)).length, 10_000);
  assertDrbg(t.provenance);
});

test("a bad construction is refused naming it: before sending, or by the gateway", async () => {
  const refused = (e: unknown) => e instanceof InvalidArgumentError && /^construction is .*, not a Construction/.test(e.details);
  for (const bad of ["drbg", 1.5] as unknown as Construction[]) {
    assert.throws(() => new EntropyClient(gw.endpoint, gw.apiKey, { construction: bad }), refused);
    await assert.rejects(raw.draw(32, { construction: bad }), refused);
    assert.throws(() => raw.stream({ construction: bad }), refused);
  }
  const named = (e: unknown) => e instanceof InvalidArgumentError && e.details.includes("construction");
  await assert.rejects(raw.getBytes(32, { construction: 9 as Construction }), named);
});

test("a DRBG stream: one instance per call, and DRBG again after a gateway killed with -9", async () => {
  // As client.test.ts's restart test: more than the socket buffers and read-ahead hold.
  const total = 64 * 1024 * 1024;
  const stream = drbg.stream({ totalBytes: total });
  // The instance named by each call's messages (call i: after i reconnects).
  const instances = new Map<number, Set<string>>();
  const parts: Uint8Array[] = [];
  let received = 0;
  let back: Promise<void> | undefined;
  for await (const chunk of stream) {
    parts.push(chunk);
    received += chunk.length;
    const id = assertDrbg(stream.provenance);
    instances.set(stream.reconnects, (instances.get(stream.reconnects) ?? new Set()).add(id));
    if (back === undefined && received >= 1024 * 1024) {
      await gw.kill9();
      back = (async () => {
        await sleep(500);
        await gw.restart();
      })();
    }
  }
  await back;
  const all = Buffer.concat(parts);
  assert.equal(all.length, total);
  assert.equal(firstRepeat(all), -1, "a 16-byte run arrived twice");
  assert.ok(stream.reconnects >= 1, "it did reconnect");
  const perCall = [...instances.values()];
  assert.ok(perCall.length >= 2, `messages from ${perCall.length} calls`);
  for (const ids of perCall) assert.equal(ids.size, 1, `one call, instances ${[...ids]}`);
  const ids = perCall.map((s) => [...s][0]);
  assert.equal(new Set(ids).size, ids.length, "an instance reused across calls");
});
