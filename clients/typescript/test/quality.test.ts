// Issue #15 against a live dev gateway (one OS source, collector "dev-collector"): quality checks,
// provenance, the source filter (acceptKinds) and FAILED_PRECONDITION, the pool by class in the
// status; and the `quality:check` scope on a gateway with a keys file.

import { status } from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, test } from "node:test";

import {
  type CallOptions,
  EntropyClient,
  EntropyError,
  FailedPreconditionError,
  InvalidArgumentError,
  PermissionDeniedError,
  type QualityReport,
  SourceKind,
  UnavailableError,
} from "../src";
import { assertNoRepeatedBlock, freePort, type Gateway, gatewayBin, startGateway } from "./support";

const { QUANTUM, HARDWARE, OS } = SourceKind;

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
    assert.equal(e.code, status.FAILED_PRECONDITION);
    assert.match(e.details, /QUANTUM/, name);
    assert.match(e.details, /OS/, name);
    return true;
  };
}

describe("checkQuality", () => {
  test("4096 dev bytes pass", async () => {
    const r = await client.checkQuality(4096);
    assertDevQuality(r, 4096);
    assert.equal(r.fips140_2.blocks, 1n);
  });

  test("both bounds are accepted", async () => {
    const low = await client.checkQuality(2500);
    assert.equal(low.sampleBytes, 2500n);
    assert.equal(low.fips140_2.blocks, 1n);
    assert.deepEqual(low.provenance.kinds, [OS]);
    const high = await client.checkQuality(4_194_304);
    assert.equal(high.sampleBytes, 4_194_304n);
    assert.equal(high.fips140_2.blocks, 1677n);
    assert.ok(high.pi.points > 0n && high.piOsReference.points === high.pi.points);
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
    assertNoRepeatedBlock(Buffer.concat(parts.map((d) => d.data)));
  });

  test("a stream reports its provenance", async () => {
    const s = client.stream({ totalBytes: 200_000, chunkBytes: 50_000 });
    const before = s.provenance;
    assert.equal(before, undefined);
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
    const c = new EntropyClient(gw.target, gw.apiKey, { insecure: true, acceptKinds: [QUANTUM] });
    try {
      for (const [name, call] of entropyCalls(c)) await assert.rejects(call(), failedPrecondition(name));
      assert.equal((await c.getBytes(8, { acceptKinds: [] })).length, 8);
      assert.equal((await c.getBytes(8, { acceptKinds: [OS] })).length, 8);
      assert.ok((await c.status()).serving); // GetStatus has no filter
    } finally {
      c.close();
    }
  });

  test("a QUANTUM-only stream ends with FailedPreconditionError without retrying", async () => {
    const c = new EntropyClient(gw.target, gw.apiKey, { insecure: true, acceptKinds: [QUANTUM] });
    try {
      const s = c.stream({ chunkBytes: 1024 }); // endless: only the error ends it
      await assert.rejects(s.read(10_000), failedPrecondition("stream"));
      assert.equal(s.streamsOpened, 1);
      assert.equal(s.reconnects, 0);
      assert.equal(s.received, 0);
      let got = 0;
      await assert.rejects(async () => {
        for await (const chunk of c.stream({ chunkBytes: 1024 })) got += chunk.length;
      }, failedPrecondition("for await"));
      assert.equal(got, 0);
    } finally {
      c.close();
    }
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
});

describe("status", () => {
  test("the pool by class, expiry", async () => {
    const s = await client.status();
    assert.equal(s.poolByClass.length, 1, JSON.stringify(s.poolByClass, (_, v) => (typeof v === "bigint" ? `${v}` : v)));
    assert.deepEqual(s.poolByClass[0]?.kinds, [OS]);
    assert.equal(s.expiredBytesTotal, 0n);
    assert.equal(s.maxByteAgeMs, 0n);
  });
});

describe("the quality:check scope (a gateway with a keys file and no collector)", () => {
  let dir: string;
  let proc: ChildProcess;
  let target: string;
  const plain = `plain-${randomBytes(8).toString("hex")}`;
  const quality = `quality-${randomBytes(8).toString("hex")}`;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "entropy-keys-"));
    const entry = (name: string, secret: string, scopes: string) =>
      `[[key]]\nname = "${name}"\nsha256 = "${createHash("sha256").update(secret).digest("hex")}"\n${scopes}\n`;
    writeFileSync(
      path.join(dir, "keys.toml"),
      entry("plain", plain, "") + // the default scopes: entropy:read, status:read
        entry("quality", quality, 'scopes = ["entropy:read", "status:read", "quality:check"]'),
    );
    mkdirSync(path.join(dir, "mac"));
    writeFileSync(path.join(dir, "mac", "k1.key"), `${randomBytes(32).toString("hex")}\n`);
    target = `127.0.0.1:${await freePort()}`;
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ENTROPY_")));
    const log = path.join(dir, "gateway.log");
    proc = spawn(
      gatewayBin(),
      [
        "--listen-addr", target,
        "--api-keys-file", path.join(dir, "keys.toml"),
        "--ingest-keys-dir", path.join(dir, "mac"),
        "--state-dir", path.join(dir, "gateway-state"),
        "--ingest-listen-addr", `127.0.0.1:${await freePort()}`,
        "--gateway-id", "ts-scope-test",
        "--metrics-listen-addr", "",
        "--pool-capacity-bytes", String(1 << 20),
        "--max-wait-ms", "300",
      ],
      { env, stdio: ["ignore", "ignore", "pipe"] },
    );
    const stderr: Buffer[] = [];
    proc.stderr?.on("data", (d: Buffer) => stderr.push(d));
    // Never serving (no collector): up once GetStatus answers.
    const c = new EntropyClient(target, plain, { insecure: true, timeoutMs: 1000 });
    try {
      for (let i = 0; ; i++) {
        try {
          await c.status();
          break;
        } catch (e) {
          if (!(e instanceof EntropyError) || proc.exitCode !== null || i > 200) {
            writeFileSync(log, Buffer.concat(stderr));
            throw new Error(`keys-file gateway did not come up (exit ${proc.exitCode}): ${readFileSync(log, "utf8").slice(-2000)}`);
          }
          await sleep(100);
        }
      }
    } finally {
      c.close();
    }
  });

  after(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((resolve) => proc.once("exit", resolve));
      proc.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test("a key without it is PermissionDeniedError naming quality:check; one with it gets past", async () => {
    const without = new EntropyClient(target, plain, { insecure: true });
    const withScope = new EntropyClient(target, quality, { insecure: true });
    try {
      await assert.rejects(without.checkQuality(4096), (e: unknown) => {
        assert.ok(e instanceof PermissionDeniedError, String(e));
        assert.match(e.details, /quality:check/);
        return true;
      });
      // The empty pool then answers UNAVAILABLE after the gateway's maximum wait, as any draw.
      await assert.rejects(withScope.checkQuality(4096), UnavailableError);
    } finally {
      without.close();
      withScope.close();
    }
  });
});
