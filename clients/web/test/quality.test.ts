// The browser client's quality checks, provenance, source filter (acceptKinds) and
// FAILED_PRECONDITION, run in Node against a live dev gateway with gRPC-Web on (one OS source,
// collector "dev-collector"; its key has every scope, quality:check included), as the Node
// client's quality.test.ts does over native gRPC. The mapping itself is the Node client's
// provenance.ts (a copy): its field-by-field checks are in that package's provenance.test.ts.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  type CallOptions,
  EntropyClient,
  FailedPreconditionError,
  InvalidArgumentError,
  type QualityReport,
  SourceKind,
} from "../src/index.js";
import { Gateway, firstRepeat } from "./support.js";

const { QUANTUM, HARDWARE, OS } = SourceKind;

let gw: Gateway;
let client: EntropyClient;

before(async () => {
  gw = await Gateway.start([]);
  client = new EntropyClient(gw.endpoint, gw.apiKey);
});
after(async () => {
  await gw.stop();
});

/** A client whose every HTTP request is counted: `requests()` says how many were sent. */
function counting(options: { acceptKinds?: readonly SourceKind[] } = {}): { c: EntropyClient; requests: () => number } {
  let n = 0;
  const fetch: typeof globalThis.fetch = (input, init) => {
    n++;
    return globalThis.fetch(input, init);
  };
  return { c: new EntropyClient(gw.endpoint, gw.apiKey, { ...options, fetch }), requests: () => n };
}

function assertDevQuality(r: QualityReport, sampleBytes: number): void {
  assert.equal(r.passed, true, r.failures.join("; "));
  assert.equal(r.sampleBytes, BigInt(sampleBytes));
  assert.deepEqual(r.provenance.kinds, [OS]);
  assert.deepEqual(r.provenance.collectorIds, ["dev-collector"]);
  assert.equal(r.fips140_2.blocks, BigInt(Math.floor((sampleBytes * 8) / 20_000)));
  assert.equal(r.fips140_2.blocksFailed, 0n);
  assert.deepEqual(r.failures, []);
  assert.ok(r.thresholds.length > 0 && r.thresholds.every((t) => typeof t === "string" && t.length > 0));
  assert.ok(r.pi.points > 0n);
  assert.equal(r.piOsReference.points, r.pi.points);
  assert.ok(0 < r.minEntropyBitsPerByte && r.minEntropyBitsPerByte <= r.shannonEntropyBitsPerByte);
  assert.ok(r.shannonEntropyBitsPerByte <= 8);
  assert.ok(r.chiSquarePValue >= 0 && r.chiSquarePValue <= 1);
  assert.ok(r.serialCorrelation !== undefined && Math.abs(r.serialCorrelation) <= 1);
}

/** Every call that draws entropy, with `options` (acceptKinds) or the client's default. */
function entropyCalls(c: EntropyClient, options?: CallOptions): Array<[string, () => Promise<unknown>]> {
  return [
    ["getBytes", () => c.getBytes(16, options)],
    ["draw", () => c.draw(16, options)],
    ["getIntegers", () => c.getIntegers(1, 6, 3, options)],
    ["getFloats", () => c.getFloats(3, options)],
    ["getUuids", () => c.getUuids(3, options)],
    ["checkQuality", () => c.checkQuality(2500, options)],
    [
      "stream",
      async () => {
        const data = await c.stream({ totalBytes: 1000, acceptKinds: options?.acceptKinds }).read(1000);
        assert.equal(data.length, 1000);
        return data;
      },
    ],
  ];
}

/** A rejection with FailedPreconditionError naming what the pool holds (OS) and the filter. */
function failedPrecondition(name: string) {
  return (e: unknown) => {
    assert.ok(e instanceof FailedPreconditionError, `${name}: ${String(e)}`);
    assert.equal(e.codeName, "FAILED_PRECONDITION");
    assert.equal(e.code, 9);
    assert.equal(e.retryable, false);
    assert.match(e.details, /QUANTUM/, name);
    assert.match(e.details, /OS/, name);
    return true;
  };
}

describe("checkQuality", () => {
  test("4096 dev bytes pass, and the report has every part", async () => {
    const r = await client.checkQuality(4096);
    assertDevQuality(r, 4096);
    assert.equal(r.fips140_2.blocks, 1n);
    assert.ok(r.provenance.chunkCount >= 1);
    assert.equal(r.provenance.firstChunk?.collectorId, "dev-collector");
  });

  test("the sample is tested, never served: the status counts it apart", async () => {
    const before = await client.status();
    await client.checkQuality(2500);
    const after = await client.status();
    assert.equal(after.qualityTestedBytesTotal - before.qualityTestedBytesTotal, 2500n);
    assert.equal(after.servedBytesTotal, before.servedBytesTotal);
  });

  test("out of bounds is InvalidArgumentError naming sample_bytes and the bound", async () => {
    for (const [n, bound] of [[100, "2500"], [2499, "2500"], [4_194_305, "4194304"]] as const) {
      await assert.rejects(client.checkQuality(n), (e: unknown) => {
        assert.ok(e instanceof InvalidArgumentError, String(e));
        assert.ok(e.details.includes("sample_bytes") && e.details.includes(bound), e.details);
        return true;
      });
    }
  });
});

describe("provenance", () => {
  test("draw(32) reports the dev collector's OS chunks", async () => {
    const { data, provenance: p } = await client.draw(32);
    assert.ok(data instanceof Uint8Array);
    assert.equal(data.length, 32);
    assert.deepEqual(p.kinds, [OS]);
    assert.equal(p.mixed, false);
    assert.deepEqual(p.collectorIds, ["dev-collector"]);
    assert.ok(p.chunkCount >= 1);
    assert.ok(p.firstChunk !== undefined && p.lastChunk !== undefined);
    assert.equal(p.firstChunk.collectorId, "dev-collector");
    assert.equal(p.lastChunk.collectorId, "dev-collector");
    assert.ok(p.firstChunk.sequence <= p.lastChunk.sequence);
    assert.equal(p.firstChunk.epoch, p.lastChunk.epoch); // one collector run
    assert.ok(p.firstChunk.signedAtUnixMs > 0n);
    assert.ok(p.oldestByteAgeMs >= 0n);
  });

  test("draws are distinct bytes", async () => {
    const parts = await Promise.all(Array.from({ length: 16 }, () => client.draw(4096)));
    assert.equal(firstRepeat(Buffer.concat(parts.map((d) => d.data))), -1);
  });

  test("a stream reports its provenance", async () => {
    const s = client.stream({ totalBytes: 200_000, chunkBytes: 50_000 });
    const before = s.provenance; // (a local: asserting on s.provenance would narrow it for good)
    assert.equal(before, undefined); // nothing received yet
    assert.equal((await s.read(200_000)).length, 200_000);
    const p = s.provenance;
    assert.ok(p !== undefined);
    assert.deepEqual(p.kinds, [OS]);
    assert.deepEqual(p.collectorIds, ["dev-collector"]);
    assert.equal(p.firstChunk?.collectorId, "dev-collector");
  });
});

describe("acceptKinds", () => {
  test("QUANTUM only on the dev gateway: FailedPreconditionError on every entropy call", async () => {
    for (const [name, call] of entropyCalls(client, { acceptKinds: [QUANTUM] })) {
      await assert.rejects(call(), failedPrecondition(name));
    }
  });

  test("a filter the pool can serve is served", async () => {
    for (const acceptKinds of [[OS], [QUANTUM, OS], [HARDWARE, OS], []]) {
      for (const [name, call] of entropyCalls(client, { acceptKinds })) {
        assert.ok(await call(), `${name} ${JSON.stringify(acceptKinds)}`);
      }
      const d = await client.draw(64, { acceptKinds });
      assert.equal(d.data.length, 64);
      assert.deepEqual(d.provenance.kinds, [OS]);
    }
  });

  test("the client's default applies, and a call may override it", async () => {
    const c = new EntropyClient(gw.endpoint, gw.apiKey, { acceptKinds: [QUANTUM] });
    assert.deepEqual(c.acceptKinds, [QUANTUM]);
    assert.ok(Object.isFrozen(c.acceptKinds));
    assert.deepEqual(client.acceptKinds, []);
    for (const [name, call] of entropyCalls(c)) await assert.rejects(call(), failedPrecondition(name));
    assert.equal((await c.getBytes(8, { acceptKinds: [] })).length, 8);
    assert.equal((await c.getBytes(8, { acceptKinds: [OS] })).length, 8);
    assert.equal((await c.stream({ totalBytes: 8, acceptKinds: [] }).read(8)).length, 8);
    assert.ok((await c.status()).serving); // GetStatus has no filter
  });

  test("a QUANTUM-only stream ends with FailedPreconditionError without retrying", async () => {
    const { c, requests } = counting({ acceptKinds: [QUANTUM] });
    const s = c.stream({ chunkBytes: 1024 }); // endless: only the error ends it
    await assert.rejects(s.read(10_000), failedPrecondition("stream"));
    assert.equal(requests(), 1, "one StreamRandom call, not retried");
    assert.equal(s.reconnects, 0);
    assert.equal(s.received, 0n);
    let got = 0;
    await assert.rejects(async () => {
      for await (const chunk of c.stream({ chunkBytes: 1024 })) got += chunk.length;
    }, failedPrecondition("for await"));
    assert.equal(got, 0);
    assert.equal(requests(), 2);
  });

  test("UNSPECIFIED or unknown kinds are InvalidArgumentError naming accept_kinds[i]", async () => {
    const cases: Array<[number[], string]> = [
      [[0], "accept_kinds[0]"],
      [[OS, 0], "accept_kinds[1]"],
      [[9], "accept_kinds[0]"],
    ];
    for (const [kinds, field] of cases) {
      for (const [name, call] of entropyCalls(client, { acceptKinds: kinds as SourceKind[] })) {
        await assert.rejects(call(), (e: unknown) => {
          assert.ok(e instanceof InvalidArgumentError, `${name}: ${String(e)}`);
          assert.ok(e.details.includes(field), `${name}: ${e.details}`);
          return true;
        });
      }
    }
  });

  test("a filter that cannot be encoded is refused before sending, as by the Node client", async () => {
    const cases: Array<[unknown, string]> = [
      [OS, "acceptKinds must be an array of SourceKind, not number (for one kind: [SourceKind.QUANTUM])"],
      [[OS, "quantum"], 'acceptKinds[1] is "quantum", not a SourceKind'],
      [[1.5], "acceptKinds[0] is 1.5, not a SourceKind"],
      [[2 ** 31], "acceptKinds[0] is 2147483648, not a SourceKind"],
    ];
    const { c, requests } = counting();
    for (const [kinds, message] of cases) {
      const bad = kinds as SourceKind[];
      const refused = (e: unknown) => e instanceof InvalidArgumentError && e.details === message;
      assert.throws(() => new EntropyClient(gw.endpoint, gw.apiKey, { acceptKinds: bad }), refused);
      for (const [name, call] of entropyCalls(c, { acceptKinds: bad }).filter(([name]) => name !== "stream")) {
        await assert.rejects(call(), refused, name);
      }
      assert.throws(() => c.stream({ acceptKinds: bad }), refused);
    }
    assert.equal(requests(), 0);
  });
});
