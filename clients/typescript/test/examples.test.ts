// Every example runs against the live gateway and prints what it promises.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { type Gateway, startGateway } from "./support";

const run = promisify(execFile);
const EXAMPLES = path.resolve(__dirname, "../examples"); // dist/examples
const UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}";
const EXPECTED: Record<string, RegExp> = {
  "dice.js": /^([1-6] ){9}[1-6]\n$/,
  "password.js": /^\S{20}\n$/,
  "uuids.js": new RegExp(`^(${UUID4}\\n){5}$`),
  "seed-prng.js": /^seed=[0-9a-f]{32} \[ [\d.]+, [\d.]+, [\d.]+ \]\n$/,
  "stream-to-file.js": /^wrote 8388608 bytes to .*\n$/,
  // Against the dev gateway: one OS source, so the quantum-only call fails (naming the pool).
  "provenance.js":
    /^[0-9a-f]{64} \[ 'OS' \] \[ 'dev-collector' \] \d+ chunk\(s\)\nno quantum source: .*QUANTUM.*\nquality (passed|failed: .*), min-entropy \d\.\d{3} bits\/byte\n$/,
};

let gw: Gateway;
const tmp = mkdtempSync(path.join(tmpdir(), "entropy-examples-"));
before(async () => {
  gw = await startGateway();
});
after(async () => {
  await gw.stop();
  rmSync(tmp, { recursive: true, force: true });
});

test("every example is covered", () => {
  const names = readdirSync(EXAMPLES).filter((f) => f.endsWith(".js"));
  assert.deepEqual(names.sort(), Object.keys(EXPECTED).sort());
});

for (const [name, pattern] of Object.entries(EXPECTED)) {
  test(`example ${name}`, async () => {
    const out = path.join(tmp, "out.bin");
    const { stdout } = await run(process.execPath, [path.join(EXAMPLES, name), out], {
      env: { ...process.env, ENTROPY_ENDPOINT: gw.target, ENTROPY_API_KEY: gw.apiKey },
      timeout: 60_000,
    });
    assert.match(stdout, pattern);
    if (name === "stream-to-file.js") assert.equal(statSync(out).size, 8 << 20);
  });
}
