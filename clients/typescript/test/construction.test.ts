// DRBG constructions against a live dev gateway (its key holds `entropy:drbg`; one OS source,
// collector "dev-collector"): what a DRBG call's provenance says, RAW by default, the call's own
// `construction` over the client's, one instance per stream and a new one, still DRBG, after a
// reconnect through a proxy that cuts the connection, and values refused before sending or by
// the gateway.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { type CallOptions, Construction, EntropyClient, InvalidArgumentError, type Provenance, SourceKind } from "../src";
import { assertNoRepeatedBlock, CutProxy, type Gateway, MIB, startGateway } from "./support";

let gw: Gateway;
let raw: EntropyClient;
let drbg: EntropyClient;

before(async () => {
  gw = await startGateway();
  raw = new EntropyClient(gw.target, gw.apiKey, { insecure: true });
  drbg = new EntropyClient(gw.target, gw.apiKey, { insecure: true, construction: Construction.DRBG });
});
after(async () => {
  raw.close();
  drbg.close();
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
  assert.equal(p.firstChunk?.collectorId, "dev-collector");
  return p.drbg.instanceId;
}

function assertRaw(p: Provenance | undefined): void {
  assert.ok(p !== undefined, "no provenance");
  assert.equal(p.construction, Construction.RAW);
  assert.equal(p.drbg, undefined);
  assert.deepEqual(p.collectorIds, ["dev-collector"]);
}

describe("construction", () => {
  test("a DRBG draw is labelled: CTR_DRBG, 256 bits, its own instance, seeded by the dev collector", async () => {
    assert.equal(drbg.construction, Construction.DRBG);
    const a = await drbg.draw(4096);
    assert.equal(a.data.length, 4096);
    const first = assertDrbg(a.provenance);
    assert.equal(a.provenance.drbg?.reseedCount, 0n);
    assert.equal(a.provenance.drbg?.bytesSinceReseed, 0n);
    // Every unary call has an instance of its own.
    const b = await drbg.draw(4096);
    assert.notEqual(assertDrbg(b.provenance), first);
    assertNoRepeatedBlock(Buffer.concat([a.data, b.data]));
  });

  test("every entropy call takes it", async () => {
    assert.equal((await drbg.getIntegers(1, 6, 100)).length, 100);
    assert.equal((await drbg.getFloats(100)).length, 100);
    assert.equal(new Set(await drbg.getUuids(100)).size, 100);
    const q = await drbg.checkQuality(10_000);
    assert.equal(q.passed, true, q.failures.join("; "));
    assertDrbg(q.provenance);
  });

  test("prediction resistance is labelled", async () => {
    const d = await raw.draw(100_000, { construction: Construction.DRBG_PREDICTION_RESISTANT });
    assertDrbg(d.provenance, Construction.DRBG_PREDICTION_RESISTANT);
  });

  test("by default a call is RAW, with no label", async () => {
    assert.equal(raw.construction, Construction.RAW);
    assertRaw((await raw.draw(32)).provenance);
    assertRaw((await raw.checkQuality(2500)).provenance);
    const s = raw.stream({ totalBytes: 10_000 });
    assert.equal((await s.read(10_000)).length, 10_000);
    assertRaw(s.provenance);
  });

  test("a call's own construction beats the client's", async () => {
    assertRaw((await drbg.draw(32, { construction: Construction.RAW })).provenance);
    assertDrbg((await raw.draw(32, { construction: Construction.DRBG })).provenance);
    assertRaw((await drbg.checkQuality(2500, { construction: Construction.RAW })).provenance);
    const s = drbg.stream({ totalBytes: 10_000, construction: Construction.RAW });
    assert.equal((await s.read(10_000)).length, 10_000);
    assertRaw(s.provenance);
    const t = raw.stream({ totalBytes: 10_000, construction: Construction.DRBG });
    assert.equal((await t.read(10_000)).length, 10_000);
    assertDrbg(t.provenance);
  });

  test("a value that cannot be encoded is refused before sending, naming construction", async () => {
    const refused = (e: unknown) =>
      e instanceof InvalidArgumentError && /^construction is .*, not a Construction/.test(e.details);
    for (const bad of ["drbg", 1.5, 2 ** 31] as unknown as Construction[]) {
      assert.throws(() => new EntropyClient(gw.target, gw.apiKey, { construction: bad }), refused);
      const options: CallOptions = { construction: bad };
      await assert.rejects(raw.draw(32, options), refused);
      await assert.rejects(raw.getUuids(1, options), refused);
      await assert.rejects(raw.checkQuality(2500, options), refused);
      assert.throws(() => raw.stream({ construction: bad }), refused);
    }
  });

  test("a value the gateway does not know is its INVALID_ARGUMENT naming construction", async () => {
    const unknown = 9 as Construction;
    const named = (e: unknown) => e instanceof InvalidArgumentError && e.details.includes("construction");
    await assert.rejects(raw.getBytes(32, { construction: unknown }), named);
    await assert.rejects(raw.stream({ totalBytes: 100, construction: unknown }).read(100), named);
  });

  test("a DRBG stream: one instance on every message, and DRBG again after a reconnect", async () => {
    const total = 4 * MIB;
    // The first connection carries at most 2 MiB, so the stream cannot finish before the cut.
    const proxy = await CutProxy.start(gw.target, 2 * MIB);
    const c = new EntropyClient(proxy.target, gw.apiKey, { insecure: true, construction: Construction.DRBG });
    try {
      const s = c.stream({ totalBytes: total, chunkBytes: 64 * 1024 });
      // The instance of each StreamRandom call (1 + reconnects), as its messages name it.
      const instances = new Map<number, Set<string>>();
      const parts: Buffer[] = [];
      let received = 0;
      let cut = false;
      for await (const chunk of s) {
        parts.push(chunk);
        received += chunk.length;
        const id = assertDrbg(s.provenance);
        const ids = instances.get(s.streamsOpened) ?? new Set();
        instances.set(s.streamsOpened, ids.add(id));
        if (!cut && received >= MIB) {
          proxy.cut();
          cut = true;
        }
      }
      const data = Buffer.concat(parts);
      assert.equal(data.length, total);
      assertNoRepeatedBlock(data);
      assert.ok(s.reconnects >= 1, `${s.reconnects} reconnects`);
      // Messages after the cut came from a later call: asked for DRBG again, a new instance.
      const perCall = [...instances.values()];
      assert.ok(perCall.length >= 2, `messages from ${perCall.length} calls`);
      for (const ids of perCall) assert.equal(ids.size, 1, `one call, instances ${[...ids]}`);
      const all = perCall.map((ids) => [...ids][0]);
      assert.equal(new Set(all).size, all.length, "an instance reused across calls");
    } finally {
      c.close();
      proxy.close();
    }
  });
});
