// The conformance program's `reader` and `throughput` modes (clients/README.md, "Reader
// programs") against a live gateway: the JSON they print and the bytes they write.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { assertNoRepeatedBlock, type Gateway, MIB, startGateway } from "./support";

const run = promisify(execFile);
const PROGRAM = path.resolve(__dirname, "../conformance/main.js"); // dist/conformance

let gw: Gateway;
const tmp = mkdtempSync(path.join(tmpdir(), "entropy-conformance-"));
before(async () => {
  gw = await startGateway();
});
after(async () => {
  await gw.stop();
  rmSync(tmp, { recursive: true, force: true });
});

async function program(args: string[], key = gw.apiKey): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [PROGRAM, ...args], {
    env: { ...process.env, ENTROPY_API_KEY: key },
    timeout: 60_000,
  });
  const lines = stdout.trim().split("\n");
  assert.equal(lines.length, 1, stdout);
  return JSON.parse(lines[0]) as Record<string, unknown>;
}

test("reader: exactly --total bytes appended to --out, one JSON line", async () => {
  const out = path.join(tmp, "reader.bin");
  writeFileSync(out, "");
  const total = MIB + 12345;
  const res = await program(["reader", "--endpoint", gw.target, "--total", String(total), "--chunk-bytes", "65536", "--out", out, "--pace-ms", "1"]);
  assert.deepEqual(res, { code: "OK", bytes: total, reconnects: 0, error: "" });
  const data = readFileSync(out);
  assert.equal(data.length, total);
  assertNoRepeatedBlock(data);
});

test("reader: a refused key is reported as its status, exit 0", async () => {
  const out = path.join(tmp, "refused.bin");
  const res = await program(["reader", "--endpoint", gw.target, "--total", "1000", "--chunk-bytes", "100", "--out", out, "--budget-ms", "1000"], "wrong-key");
  assert.equal(res.code, "UNAUTHENTICATED");
  assert.equal(res.bytes, 0);
  assert.match(String(res.error), /UnauthenticatedError/);
  assert.ok(!String(res.error).includes("wrong-key"));
});

for (const mode of ["reader", "stub"]) {
  test(`throughput --mode ${mode}`, async () => {
    const res = await program(["throughput", "--endpoint", gw.target, "--total", String(2 * MIB), "--chunk-bytes", "65536", "--mode", mode]);
    assert.equal(res.bytes, 2 * MIB);
    assert.ok(typeof res.seconds === "number" && res.seconds > 0 && res.seconds < 60, JSON.stringify(res));
  });
}
