// acceptKinds, provenance, quality reports and FAILED_PRECONDITION against a scripted server:
// what each call sends, how every field of the answer reaches the caller, and that a stream does
// not retry FAILED_PRECONDITION. (The same against a live gateway: quality.test.ts.)

import { Metadata, status } from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  type CallOptions,
  type ClientOptions,
  Construction,
  EntropyClient,
  FailedPreconditionError,
  InvalidArgumentError,
  type Provenance,
  SourceKind,
  sourceKindName,
} from "../src";
import { create, type DescMessage, fromBinary, isFieldSet, type Message, toBinary } from "@bufbuild/protobuf";

import { type CheckQualityResponse, CheckQualityResponseSchema, GetStatusResponseSchema } from "../src/gen/entropy/v1/entropy_pb.js";
import {
  type DrawProvenance,
  DrawProvenanceSchema,
  type SourceHealth,
  type SourceKind as SourceKindPb,
} from "../src/gen/entropy/v1/provenance_pb.js";
import { provenanceFromPb, qualityFromPb } from "../src/provenance";
import { FakeEntropy, type Step } from "./support";

const { QUANTUM, HARDWARE, OS } = SourceKind;
const FAST = { initialBackoffMs: 5, maxBackoffMs: 20 };

/** What support.ts's fakeProvenance(sequence) must become. */
function expectedProvenance(sequence: number): Provenance {
  return {
    kinds: [QUANTUM, OS],
    mixed: true,
    collectorIds: ["fake-a", "fake-b"],
    firstChunk: { collectorId: "fake-a", epoch: 7n, sequence: BigInt(sequence), signedAtUnixMs: 1_700_000_000_000n },
    lastChunk: { collectorId: "fake-b", epoch: 2n ** 64n - 1n, sequence: BigInt(sequence + 1), signedAtUnixMs: -5n },
    chunkCount: 2,
    oldestByteAgeMs: 42n,
    construction: 1,
    drbg: undefined,
  };
}

/** A client of a fresh scripted server; closes both after `body`. */
async function withFake<T>(
  body: (c: EntropyClient, fake: FakeEntropy) => Promise<T>,
  options: ClientOptions = {},
  fake = new FakeEntropy(),
): Promise<T> {
  const c = new EntropyClient(await fake.start(), "k", options);
  try {
    return await body(c, fake);
  } finally {
    c.close();
    fake.stop();
  }
}

async function everyCall(c: EntropyClient, options?: CallOptions): Promise<void> {
  await c.getBytes(8, options);
  await c.draw(8, options);
  await c.getIntegers(1, 6, 2, options);
  await c.getFloats(2, options);
  await c.getUuids(2, options);
  await c.checkQuality(2500, options);
  const s = c.stream({ totalBytes: 100, chunkBytes: 50, acceptKinds: options?.acceptKinds, construction: options?.construction });
  assert.equal((await s.read(100)).length, 100);
}

const METHODS = ["GetRandom", "GetRandom", "GetIntegers", "GetFloats", "GetUuids", "CheckQuality", "StreamRandom"];

describe("acceptKinds", () => {
  test("the client's default is sent on every entropy call, GetStatus has none", async () => {
    await withFake(
      async (c, fake) => {
        assert.deepEqual(c.acceptKinds, [QUANTUM, OS]);
        await everyCall(c);
        await c.status();
        assert.deepEqual(fake.kinds, [...METHODS.map((m) => [m, [1, 3]]), ["GetStatus", []]]);
      },
      { acceptKinds: [QUANTUM, OS] },
    );
  });

  test("a call's own filter wins, and [] means any", async () => {
    await withFake(
      async (c, fake) => {
        await everyCall(c, { acceptKinds: [HARDWARE, OS] });
        await everyCall(c, { acceptKinds: [] });
        assert.deepEqual(fake.kinds, [...METHODS.map((m) => [m, [2, 3]]), ...METHODS.map((m) => [m, []])]);
      },
      { acceptKinds: [QUANTUM] },
    );
  });

  test("no filter sends nothing", async () => {
    await withFake(async (c, fake) => {
      assert.deepEqual(c.acceptKinds, []);
      await everyCall(c);
      assert.deepEqual(fake.kinds, METHODS.map((m) => [m, []]));
    });
  });

  test("integers go to the server as they are: which kinds exist is the gateway's to say", async () => {
    await withFake(async (c, fake) => {
      await c.getBytes(1, { acceptKinds: [0, 9] as unknown as SourceKind[] });
      assert.deepEqual(fake.kinds, [["GetRandom", [0, 9]]]);
    });
  });

  test("a filter that cannot be encoded is refused before sending", async () => {
    const cases: Array<[unknown, string]> = [
      [OS, "acceptKinds must be an array of SourceKind, not number (for one kind: [SourceKind.QUANTUM])"],
      [[OS, "quantum"], 'acceptKinds[1] is "quantum", not a SourceKind'],
      [[1.5], "acceptKinds[0] is 1.5, not a SourceKind"],
      [[2 ** 31], "acceptKinds[0] is 2147483648, not a SourceKind"],
    ];
    for (const [kinds, message] of cases) {
      const bad = kinds as SourceKind[];
      const refused = (e: unknown) => e instanceof InvalidArgumentError && e.details === message;
      assert.throws(() => new EntropyClient("127.0.0.1:9", "k", { acceptKinds: bad }), refused);
      await withFake(async (c, fake) => {
        await assert.rejects(c.getUuids(1, { acceptKinds: bad }), refused);
        await assert.rejects(c.checkQuality(2500, { acceptKinds: bad }), refused);
        assert.throws(() => c.stream({ acceptKinds: bad }), refused);
        assert.deepEqual(fake.kinds, []);
      });
    }
  });

  test("the filter is sent again on every reconnect", async () => {
    const script: Step[] = [{ chunks: 2, code: status.UNAVAILABLE }, { chunks: 0, code: status.UNAVAILABLE }];
    await withFake(
      async (c, fake) => {
        const s = c.stream({ totalBytes: 1000, chunkBytes: 100, ...FAST });
        assert.equal((await s.read(1000)).length, 1000);
        assert.equal(s.reconnects, 2);
        assert.deepEqual(fake.requests, [[100, 1000], [100, 800], [100, 800]]);
        assert.deepEqual(fake.kinds, Array(3).fill(["StreamRandom", [1]]));
      },
      { acceptKinds: [QUANTUM] },
      new FakeEntropy(script, 100),
    );
  });
});

describe("construction", () => {
  const { RAW, DRBG, DRBG_PREDICTION_RESISTANT } = Construction;

  test("the client's default is sent on every entropy call, a call's own wins, RAW by default", async () => {
    await withFake(
      async (c, fake) => {
        await everyCall(c);
        await everyCall(c, { construction: DRBG_PREDICTION_RESISTANT });
        await everyCall(c, { construction: RAW });
        await c.status();
        assert.deepEqual(fake.constructions, [
          ...METHODS.map((m) => [m, DRBG]),
          ...METHODS.map((m) => [m, DRBG_PREDICTION_RESISTANT]),
          ...METHODS.map((m) => [m, RAW]),
          ["GetStatus", 0],
        ]);
      },
      { construction: DRBG },
    );
    await withFake(async (c, fake) => {
      assert.equal(c.construction, RAW);
      await everyCall(c);
      assert.deepEqual(fake.constructions, METHODS.map((m) => [m, RAW]));
    });
  });

  test("it is sent again on every reconnect", async () => {
    const script: Step[] = [{ chunks: 2, code: status.UNAVAILABLE }, { chunks: 0, code: status.UNAVAILABLE }];
    await withFake(
      async (c, fake) => {
        const s = c.stream({ totalBytes: 1000, chunkBytes: 100, ...FAST });
        assert.equal((await s.read(1000)).length, 1000);
        assert.equal(s.reconnects, 2);
        assert.deepEqual(fake.constructions, Array(3).fill(["StreamRandom", DRBG]));
      },
      { construction: DRBG },
      new FakeEntropy(script, 100),
    );
  });
});

describe("provenance", () => {
  test("draw returns the bytes and every field of their provenance", async () => {
    await withFake(async (c) => {
      const d = await c.draw(24);
      assert.ok(Buffer.isBuffer(d.data));
      assert.equal(d.data.length, 24);
      assert.deepEqual(d.provenance, expectedProvenance(24));
    });
  });

  test("a kind this client does not know stays visible as its number; absent chunks are undefined", () => {
    const kinds = [3, 9] as number[] as DrawProvenance["kinds"];
    const p = provenanceFromPb(create(DrawProvenanceSchema, { kinds, mixed: false, collectorIds: [], chunkCount: 0, oldestByteAgeMs: 0n }));
    assert.deepEqual(p.kinds, [OS, 9]);
    assert.deepEqual(p.kinds.map(sourceKindName), ["OS", "9"]);
    assert.deepEqual([QUANTUM, HARDWARE].map(sourceKindName), ["QUANTUM", "HARDWARE"]);
    assert.equal(p.firstChunk, undefined);
    assert.equal(p.lastChunk, undefined);
  });

  test("a stream reports the provenance of the last message received", async () => {
    await withFake(
      async (c) => {
        const s = c.stream({ totalBytes: 1000, chunkBytes: 100 });
        assert.equal(s.provenance, undefined); // nothing received yet
        await s.read(150);
        assert.deepEqual(s.provenance, expectedProvenance(200)); // two messages so far
        await s.read(850);
        assert.deepEqual(s.provenance, expectedProvenance(1000));
      },
      {},
      new FakeEntropy([], 100),
    );
  });
});

describe("FAILED_PRECONDITION", () => {
  for (const chunks of [0, 2]) {
    test(`a stream ends with FailedPreconditionError, not retried (${chunks} messages first)`, async () => {
      const script: Step[] = [{ chunks, code: status.FAILED_PRECONDITION }];
      await withFake(
        async (c, fake) => {
          const s = c.stream({ totalBytes: 1000, chunkBytes: 100, ...FAST });
          assert.ok((await s.read(chunks * 100)).equals(fake.sent)); // what arrived is delivered
          await assert.rejects(s.read(1), (e: unknown) => {
            assert.ok(e instanceof FailedPreconditionError, String(e));
            assert.equal(e.code, status.FAILED_PRECONDITION);
            assert.equal(e.details, "injected by the test");
            return true;
          });
          assert.equal(s.streamsOpened, 1);
          assert.equal(s.reconnects, 0);
          assert.equal(fake.requests.length, 1);
        },
        {},
        new FakeEntropy(script, 100),
      );
    });
  }

  test("a for-await loop over the stream throws it, not retried", async () => {
    await withFake(
      async (c, fake) => {
        const s = c.stream({ chunkBytes: 100, ...FAST });
        let got = 0;
        await assert.rejects(async () => {
          for await (const chunk of s) got += chunk.length;
        }, FailedPreconditionError);
        assert.equal(got, 100);
        assert.equal(fake.requests.length, 1);
      },
      {},
      new FakeEntropy([{ chunks: 1, code: status.FAILED_PRECONDITION }], 100),
    );
  });

  test("on a unary call it is its own class", async () => {
    const fake = new FakeEntropy();
    fake.unaryError = { code: status.FAILED_PRECONDITION, details: "the pool holds OS", trailers: new Metadata() };
    await withFake(
      async (c) => {
        for (const call of [() => c.draw(1), () => c.checkQuality(2500), () => c.getIntegers(1, 2)]) {
          await assert.rejects(call(), (e: unknown) => {
            assert.ok(e instanceof FailedPreconditionError);
            assert.equal(e.constructor, FailedPreconditionError);
            assert.equal(e.details, "the pool holds OS");
            return true;
          });
        }
      },
      {},
      fake,
    );
  });
});

function qualityResponse(serialCorrelation: number | undefined): CheckQualityResponse {
  return create(CheckQualityResponseSchema, {
    sampleBytes: 5000n,
    provenance: { kinds: [HARDWARE], mixed: false, collectorIds: ["c"], chunkCount: 1, oldestByteAgeMs: 0n },
    shannonEntropyBitsPerByte: 7.9,
    minEntropyBitsPerByte: 7.1,
    chiSquare: 301.5,
    chiSquarePValue: 0.02,
    mean: 126.25,
    serialCorrelation,
    pi: { estimate: 3.2, error: 0.058, standardError: 0.05, points: 833n },
    piOsReference: { estimate: 3.1, error: -0.04, standardError: 0.05, points: 833n },
    fips1402: { blocks: 2n, monobitFailures: 1n, pokerFailures: 2n, runsFailures: 3n, longRunFailures: 4n, blocksFailed: 2n },
    passed: false,
    failures: ["monobit: 1 of 2 blocks failed"],
    thresholds: ["monobit: 9725 < ones < 10275", "chi-square p-value >= 0.001"],
  });
}

describe("checkQuality and status", () => {
  for (const serial of [undefined, 0, -0.25]) {
    test(`checkQuality reports every field (serial correlation ${serial})`, async () => {
      const fake = new FakeEntropy();
      // Through the wire format, as the server sends it.
      fake.quality = fromBinary(CheckQualityResponseSchema, toBinary(CheckQualityResponseSchema, qualityResponse(serial)));
      await withFake(
        async (c, f) => {
          const r = await c.checkQuality(5000, { acceptKinds: [HARDWARE] });
          assert.deepEqual(f.kinds, [["CheckQuality", [2]]]);
          assert.equal(r.sampleBytes, 5000n);
          assert.deepEqual(r.provenance.kinds, [HARDWARE]);
          assert.equal(r.provenance.chunkCount, 1);
          assert.deepEqual(
            [r.shannonEntropyBitsPerByte, r.minEntropyBitsPerByte, r.chiSquare, r.chiSquarePValue, r.mean],
            [7.9, 7.1, 301.5, 0.02, 126.25],
          );
          assert.equal(r.serialCorrelation, serial); // undefined when the server sent none, 0 kept
          assert.deepEqual(r.pi, { estimate: 3.2, error: 0.058, standardError: 0.05, points: 833n });
          assert.deepEqual(r.piOsReference, { estimate: 3.1, error: -0.04, standardError: 0.05, points: 833n });
          assert.deepEqual(r.fips140_2, {
            blocks: 2n,
            monobitFailures: 1n,
            pokerFailures: 2n,
            runsFailures: 3n,
            longRunFailures: 4n,
            blocksFailed: 2n,
          });
          assert.equal(r.passed, false);
          assert.deepEqual(r.failures, ["monobit: 1 of 2 blocks failed"]);
          assert.deepEqual(r.thresholds, ["monobit: 9725 < ones < 10275", "chi-square p-value >= 0.001"]);
        },
        {},
        fake,
      );
    });
  }

  test("qualityFromPb maps every field of CheckQualityResponse and of the messages in it", () => {
    // Every field set (proto3: to a value other than its default), so a field added to the proto
    // fails this test until provenance.ts maps it; the browser client's copy of that file is
    // checked to be identical by clients/test.sh, so this covers it too.
    const chunk = (sequence: bigint) => ({ collectorId: "c", epoch: 1n, sequence, signedAtUnixMs: 2n });
    const sent = qualityResponse(0.5);
    sent.provenance = create(DrawProvenanceSchema, {
      kinds: [HARDWARE],
      mixed: true,
      collectorIds: ["c"],
      firstChunk: chunk(3n),
      lastChunk: chunk(4n),
      chunkCount: 2,
      oldestByteAgeMs: 5n,
      construction: 2,
      drbg: {
        mechanism: 1,
        securityStrengthBits: 256,
        instanceId: "00112233445566778899aabbccddeeff",
        reseedCount: 6n,
        bytesSinceReseed: 7n,
        seedBytes: 8n,
        predictionResistance: true,
      },
    });
    sent.passed = true;
    // The one field whose name the mapping changes: `fips1402` is `fips140_2` in the proto.
    const renamed: Record<string, string> = { fips1402: "fips140_2" };
    const everyField = (schema: DescMessage, message: Message, mapped: unknown, at: string): void => {
      assert.ok(typeof mapped === "object" && mapped !== null, `${at}: ${String(mapped)}`);
      const names = schema.fields.map((f) => renamed[f.localName] ?? f.localName);
      assert.deepEqual(Object.keys(mapped).sort(), names.sort(), at);
      for (const field of schema.fields) {
        assert.ok(isFieldSet(message, field), `${at}.${field.name} not set`);
        if (field.fieldKind === "message") {
          const name = renamed[field.localName] ?? field.localName;
          const inner = (message as unknown as Record<string, Message>)[field.localName] as Message;
          everyField(field.message, inner, (mapped as Record<string, unknown>)[name], `${at}.${field.name}`);
        }
      }
    };
    everyField(CheckQualityResponseSchema, sent, qualityFromPb(sent), "CheckQualityResponse");
  });

  test("status maps every field of GetStatusResponse, through the wire", async () => {
    const fake = new FakeEntropy();
    const sent = create(GetStatusResponseSchema, {
      poolBytes: 1n,
      poolCapacityBytes: 2n,
      poolLowWatermarkBytes: 3n,
      waiters: 4n,
      ingestedBytesTotal: 5n,
      servedBytesTotal: 6n,
      chunksAcceptedTotal: 7n,
      chunksRejectedTotal: 8n,
      uptimeMs: 9n,
      lastChunkAgeMs: 10n,
      sources: [
        { collectorId: "c1", name: "qrng", kind: QUANTUM, health: 1, contributedBytesTotal: 11n, lastReportAgeMs: 12n, lastMixing: 2 },
        { collectorId: "c2", name: "new", kind: 9 as SourceKindPb, health: 99 as SourceHealth, contributedBytesTotal: 0n, lastReportAgeMs: 0n, lastMixing: 0 },
      ],
      serving: true,
      chunksDeferredTotal: 13n,
      notServingReason: "not serving: shutting down",
      poolByClass: [
        { kinds: [QUANTUM, OS], bytes: 9000n },
        { kinds: [OS], bytes: 100n },
      ],
      expiredBytesTotal: 16n,
      maxByteAgeMs: 60_000n,
      evictedBytesTotal: 18n,
      discardedBytesTotal: 19n,
      qualityTestedBytesTotal: 20n,
      drbgServedBytesTotal: 21n,
      drbgSeedBytesTotal: 22n,
    });
    // Every field is set here, so a field added to the proto fails this test until it is mapped.
    for (const field of GetStatusResponseSchema.fields) assert.ok(isFieldSet(sent, field), `${field.name} not set`);
    fake.status = sent;
    await withFake(
      async (c) => {
        const s = await c.status();
        assert.deepEqual(Object.keys(s).sort(), GetStatusResponseSchema.fields.map((f) => f.localName).sort());
        assert.deepEqual(s, {
          poolBytes: 1n,
          poolCapacityBytes: 2n,
          poolLowWatermarkBytes: 3n,
          waiters: 4n,
          ingestedBytesTotal: 5n,
          servedBytesTotal: 6n,
          chunksAcceptedTotal: 7n,
          chunksRejectedTotal: 8n,
          uptimeMs: 9n,
          lastChunkAgeMs: 10n,
          sources: [
            { collectorId: "c1", name: "qrng", kind: "quantum", health: "healthy", contributedBytesTotal: 11n, lastReportAgeMs: 12n, lastMixing: "xor" },
            // Values this client does not know stay visible as their numbers.
            { collectorId: "c2", name: "new", kind: "9", health: "99", contributedBytesTotal: 0n, lastReportAgeMs: 0n, lastMixing: "unspecified" },
          ],
          serving: true,
          chunksDeferredTotal: 13n,
          notServingReason: "not serving: shutting down",
          poolByClass: [
            { kinds: [QUANTUM, OS], bytes: 9000n },
            { kinds: [OS], bytes: 100n },
          ],
          expiredBytesTotal: 16n,
          maxByteAgeMs: 60_000n,
          evictedBytesTotal: 18n,
          discardedBytesTotal: 19n,
          qualityTestedBytesTotal: 20n,
          drbgServedBytesTotal: 21n,
          drbgSeedBytesTotal: 22n,
        });
      },
      {},
      fake,
    );
  });
  test("an empty status: lastChunkAgeMs undefined, no sources or classes", async () => {
    const fake = new FakeEntropy();
    await withFake(
      async (c) => {
        const s = await c.status();
        assert.equal(s.lastChunkAgeMs, undefined);
        assert.deepEqual([s.sources, s.poolByClass, s.notServingReason], [[], [], ""]);
      },
      {},
      fake,
    );
  });
});
