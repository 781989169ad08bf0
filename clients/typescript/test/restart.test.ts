// A real gateway restart under a reading RandomStream: a dev gateway on a fixed port, killed
// mid-stream (kill -9, or SIGTERM: its graceful shutdown), a new one started on the same port
// after a delay. The reader must end with exactly the total and no 16-byte block twice.
// (clients/conformance/restart.py runs the longer delays across languages.)

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import { EntropyClient } from "../src";
import { assertNoRepeatedBlock, type DevGateway, freePort, MIB, startDevGateway } from "./support";

const TOTAL = 8 * MIB;

async function restartCase(signal: NodeJS.Signals, delayMs: number): Promise<void> {
  const port = await freePort();
  const apiKey = `ts-restart-${randomBytes(8).toString("hex")}`;
  let gw: DevGateway = await startDevGateway({ port, apiKey });
  const client = new EntropyClient(gw.target, apiKey);
  let second: Promise<DevGateway> | undefined;
  try {
    const s = client.stream({ totalBytes: TOTAL, chunkBytes: 16 * 1024 });
    const parts: Buffer[] = [await s.read(MIB)];
    // Still owed: most of it, so the kill lands mid-stream.
    assert.ok(s.received < TOTAL / 2, `${s.received} bytes already received`);
    // Reading goes on while the gateway dies: a SIGTERM drain ends our stream with UNAVAILABLE.
    let upAt = Infinity;
    second = gw
      .kill(signal)
      .then(() => sleep(delayMs))
      .then(() => startDevGateway({ port, apiKey }))
      .then((g) => {
        upAt = performance.now();
        return g;
      });
    for (let part = await s.read(256 * 1024); part.length > 0; part = await s.read(256 * 1024)) parts.push(part);
    const doneAt = performance.now();
    gw = await second;
    const data = Buffer.concat(parts);
    assert.equal(data.length, TOTAL);
    assertNoRepeatedBlock(data);
    assert.ok(s.reconnects >= 1, `${s.reconnects} reconnects`);
    // Used within about a second of the new gateway serving (it may even finish before the
    // harness notices that it serves).
    assert.ok(doneAt - upAt < 1500, `finished ${Math.round(doneAt - upAt)} ms after the gateway was back`);
  } finally {
    client.close();
    if (second) gw = await second.catch(() => gw);
    await gw.stop();
  }
}

test("kill -9, a new gateway 0.2 s later", () => restartCase("SIGKILL", 200));
test("kill -9, a new gateway 2 s later", () => restartCase("SIGKILL", 2000));
test("SIGTERM, a new gateway 0.2 s later", () => restartCase("SIGTERM", 200));
