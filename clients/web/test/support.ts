// Shared by the tests: a live dev gateway with gRPC-Web (and Connect, for connect.test.ts) on,
// that can be killed and started again on the same port, and a static server for the example
// page.

import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import * as http from "node:http";
import * as net from "node:net";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";

import { EntropyClient } from "../src/index.js";

/** clients/web (this file is compiled to dist/test/). */
export const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const POOL_CAPACITY = 16n * 1024n * 1024n;

const handedOut = new Set<number>();

/** Where freePort draws ports: TEST_PORT_RANGE, else 10000..32767. */
function portRange(): [number, number] {
  const given = process.env.TEST_PORT_RANGE;
  if (!given) return [10000, 32767];
  const match = /^(\d+)-(\d+)$/.exec(given);
  if (!match || Number(match[2]) < Number(match[1])) {
    throw new Error(`TEST_PORT_RANGE must be LOW-HIGH, not ${given}`);
  }
  return [Number(match[1]), Number(match[2])];
}

/** A loopback port nothing listens on now, below the ephemeral range (so no outgoing
 * connection takes it before the gateway binds it) and never returned twice by this process
 * (bind-0-then-close may hand out the same port again). The repo's other test harnesses pick
 * ports by the same rule (scripts/lib/ports.py), and read TEST_PORT_RANGE=LOW-HIGH (inclusive)
 * the same way. */
export async function freePort(): Promise<number> {
  const [low, high] = portRange();
  for (let tries = 0; tries < 1000; tries++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (handedOut.has(port)) continue;
    const server = net.createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (!bound) continue;
    await new Promise((resolve) => server.close(resolve));
    handedOut.add(port);
    return port;
  }
  throw new Error("no free loopback port found in 1000 tries");
}

export class Gateway {
  readonly apiKey = `web-test-${randomBytes(8).toString("hex")}`;
  private proc: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();

  private constructor(
    readonly port: number,
    readonly origins: string[],
  ) {}

  /** A dev gateway on a free port with gRPC-Web on for `origins`, serving. */
  static async start(origins: string[]): Promise<Gateway> {
    const gw = new Gateway(await freePort(), origins);
    await gw.restart();
    return gw;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts the process (again) on the same port and waits until it serves. */
  async restart(): Promise<void> {
    const bin =
      process.env.GATEWAY_BIN
        ? path.resolve(PACKAGE_DIR, process.env.GATEWAY_BIN)
        : path.resolve(PACKAGE_DIR, "../../target/release/entropy-gateway");
    const args = [
      "--dev",
      "--listen-addr",
      `127.0.0.1:${this.port}`,
      "--pool-capacity-bytes",
      String(POOL_CAPACITY),
      "--metrics-listen-addr",
      "",
      "--grpc-web-enabled",
      "true",
      "--connect-enabled",
      "true",
    ];
    if (this.origins.length > 0) args.push("--grpc-web-allowed-origins", this.origins.join(","));
    const proc = spawn(bin, args, {
      env: { ...process.env, ENTROPY_DEV_API_KEY: this.apiKey },
      stdio: ["ignore", "ignore", "inherit"],
    });
    this.proc = proc;
    this.exited = new Promise((resolve) => proc.once("exit", () => resolve()));
    const client = new EntropyClient(this.endpoint, this.apiKey, { timeoutMs: 1000 });
    for (let i = 0; i < 300; i++) {
      if (proc.exitCode !== null) throw new Error(`gateway exited with ${proc.exitCode}`);
      try {
        if ((await client.status()).serving) return;
      } catch {
        // not up yet
      }
      await sleep(50);
    }
    throw new Error("gateway did not serve within 15 s");
  }

  /** SIGKILL, and wait for the process to be gone. */
  async kill9(): Promise<void> {
    this.proc?.kill("SIGKILL");
    await this.exited;
  }

  async stop(): Promise<void> {
    if (this.proc?.exitCode !== null) return;
    this.proc.kill("SIGTERM");
    const timer = setTimeout(() => this.proc?.kill("SIGKILL"), 15_000);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Serves the built example page (dist/example: index.html at /, the bundle at /app.js) on a
 * free port. */
export async function servePage(): Promise<{ port: number; close(): Promise<void> }> {
  const files: Record<string, [string, string]> = {
    "/": [path.join(PACKAGE_DIR, "dist/example/index.html"), "text/html; charset=utf-8"],
    "/app.js": [path.join(PACKAGE_DIR, "dist/example/app.js"), "text/javascript"],
  };
  const server = http.createServer(async (req, res) => {
    const file = files[new URL(req.url ?? "/", "http://x").pathname];
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": file[1], "cache-control": "no-store" });
    res.end(await readFile(file[0]));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return { port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** The offset of a 16-byte window of `data` that also occurs elsewhere in it, or -1: every
 * aligned block goes into an open-addressing table (typed arrays: a Map of 10^6 entries is far
 * slower), then every window at every offset is looked up, so a repeated run of 31+ bytes is
 * found wherever it sits. */
export function firstRepeat(data: Uint8Array): number {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const blocks = Math.floor(data.length / 16);
  let size = 1;
  while (size < blocks * 2) size *= 2;
  const table = new Int32Array(size).fill(-1); // aligned offsets, -1 for empty
  const same = (a: number, b: number) => {
    for (let k = 0; k < 16; k++) if (data[a + k] !== data[b + k]) return false;
    return true;
  };
  /** The slot holding the aligned block equal to the window at `i`, or the empty one it would take. */
  const find = (i: number) => {
    let slot = (view.getUint32(i) ^ view.getUint32(i + 12)) & (size - 1);
    while (table[slot] !== -1 && !same(table[slot], i)) slot = (slot + 1) & (size - 1);
    return slot;
  };
  for (let i = 0; i + 16 <= data.length; i += 16) {
    const slot = find(i);
    if (table[slot] === -1) table[slot] = i;
  }
  for (let i = 0; i + 16 <= data.length; i++) {
    const at = table[find(i)];
    if (at !== -1 && at !== i) return i;
  }
  return -1;
}
