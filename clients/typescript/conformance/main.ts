// The TypeScript client's conformance program (see clients/conformance/README.md): runs every
// case against the gateway at --endpoint (key in ENTROPY_API_KEY) and prints one JSON line per
// case. It reports what it observed; the driver judges it, the same way for every language.
//
// Two more modes (clients/README.md, "Reader programs"), for conformance/restart.py and the
// throughput table:
//   main.js reader --endpoint E --total N --chunk-bytes C --out FILE [--pace-ms P] [--budget-ms B]
//   main.js throughput --endpoint E --total N --chunk-bytes C --mode reader|stub

import { credentials, Metadata, status } from "@grpc/grpc-js";
import { closeSync, openSync, readFileSync, writeSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";

import { EntropyClient, EntropyError, parseEndpoint } from "../src";
import { EntropyService } from "../src/gen/entropy/v1/entropy_pb.js";
import { grpcClient } from "../src/grpc";

type Observation = Record<string, unknown>;
const MIB = 1 << 20;

async function runCase(name: string, body: () => Promise<Observation>): Promise<void> {
  let out: Observation;
  try {
    out = { code: "OK", ...(await body()) };
  } catch (e) {
    out =
      e instanceof EntropyError
        ? { code: status[e.code], error: `${e.name}: ${e.details}` }
        : { code: "CLIENT_ERROR", error: String(e) }; // the client's own failure
  }
  process.stdout.write(JSON.stringify({ case: name, ...out }) + "\n");
}

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: { endpoint: { type: "string" }, "stall-endpoint": { type: "string" } },
  });
  const key = process.env.ENTROPY_API_KEY;
  if (!args.endpoint || !args["stall-endpoint"] || !key) {
    throw new Error("need --endpoint, --stall-endpoint and ENTROPY_API_KEY");
  }
  const c = new EntropyClient(args.endpoint, key, { insecure: true });
  const wrong = new EntropyClient(args.endpoint, `wrong-${key}`, { insecure: true });
  const stalled = new EntropyClient(args["stall-endpoint"], key, { insecure: true });
  const b64 = (b: Buffer) => b.toString("base64");

  await runCase("get_random_32", async () => ({ data_b64: b64(await c.getBytes(32)) }));
  await runCase("num_bytes_zero", async () => ({ data_b64: b64(await c.getBytes(0)) }));
  await runCase("num_bytes_too_big", async () => ({ data_b64: b64(await c.getBytes(MIB + 1)) }));
  await runCase("integers_min_above_max", async () => ({ values: await c.getIntegers(5, 1) }));
  await runCase("dice", async () => ({ values: await c.getIntegers(1, 6, 1000) }));
  await runCase("int64_full_range", async () => {
    const values = await c.getIntegers(-(2n ** 63n), 2n ** 63n - 1n, 100);
    return { values: values.map(String) }; // decimal strings: JSON numbers cannot hold int64
  });
  await runCase("floats", async () => ({ values: await c.getFloats(1000) }));
  await runCase("uuids", async () => ({ values: await c.getUuids(100) }));
  await runCase("stream_1mib", async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of c.stream({ totalBytes: MIB, chunkBytes: 64 * 1024 })) chunks.push(chunk);
    return { data_b64: b64(Buffer.concat(chunks)) };
  });
  await runCase("wrong_key", async () => ({ data_b64: b64(await wrong.getBytes(32)) }));
  await runCase("status", async () => ({
    pool_capacity_bytes: String((await c.status()).poolCapacityBytes),
  }));
  await runCase("deadline", async () => ({ data_b64: b64(await stalled.getBytes(32, { timeoutMs: 300 })) }));

  for (const client of [c, wrong, stalled]) client.close();
}

/** A whole number >= `min` from a flag, or a usage error. */
function count(name: string, value: string | undefined, min: number, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  const n = value === undefined || !/^[0-9]+$/.test(value) ? NaN : Number(value);
  if (!(Number.isSafeInteger(n) && n >= min)) throw new Error(`--${name} must be a whole number >= ${min}`);
  return n;
}

function apiKey(): string {
  const key = process.env.ENTROPY_API_KEY;
  if (!key) throw new Error("need ENTROPY_API_KEY");
  return key;
}

/** `reader`: exactly --total bytes through the library's stream reader in reads of
 * --chunk-bytes, each appended to --out as it arrives; one JSON line, exit 0. */
async function reader(argv: string[]): Promise<void> {
  const { values: args } = parseArgs({
    args: argv,
    options: {
      endpoint: { type: "string" },
      total: { type: "string" },
      "chunk-bytes": { type: "string" },
      out: { type: "string" },
      "pace-ms": { type: "string" },
      "budget-ms": { type: "string" },
    },
  });
  if (!args.endpoint || !args.out) throw new Error("reader needs --endpoint, --total, --chunk-bytes and --out");
  const total = count("total", args.total, 0);
  const chunk = count("chunk-bytes", args["chunk-bytes"], 1);
  const paceMs = count("pace-ms", args["pace-ms"], 0, 0);
  const budgetMs = args["budget-ms"] === undefined ? undefined : count("budget-ms", args["budget-ms"], 0);
  const fd = openSync(args.out, "a");
  let bytes = 0;
  let reconnects = 0;
  let result: { code: string; error: string };
  let client: EntropyClient | undefined;
  try {
    client = new EntropyClient(args.endpoint, apiKey(), { caFile: process.env.ENTROPY_CA_FILE || undefined });
    const s = client.stream({ totalBytes: total, chunkBytes: chunk, reconnectBudgetMs: budgetMs });
    try {
      while (bytes < total) {
        const part = await s.read(Math.min(chunk, total - bytes));
        if (part.length === 0) break;
        writeSync(fd, part);
        bytes += part.length;
        if (paceMs > 0) await sleep(paceMs);
      }
      result =
        bytes === total
          ? { code: "OK", error: "" }
          : { code: "CLIENT_ERROR", error: `the stream ended after ${bytes} of ${total} bytes` };
    } finally {
      reconnects = s.reconnects;
      s.cancel();
    }
  } catch (e) {
    result =
      e instanceof EntropyError
        ? { code: status[e.code] ?? String(e.code), error: `${e.name}: ${e.details}` }
        : { code: "CLIENT_ERROR", error: String(e) };
  } finally {
    closeSync(fd);
    client?.close();
  }
  process.stdout.write(JSON.stringify({ code: result.code, bytes, reconnects, error: result.error }) + "\n");
}

/** `throughput`: --total bytes as fast as they come, through the library's reader or the raw
 * generated stub with default channel options; prints {"bytes": n, "seconds": s}. */
async function throughput(argv: string[]): Promise<void> {
  const { values: args } = parseArgs({
    args: argv,
    options: {
      endpoint: { type: "string" },
      total: { type: "string" },
      "chunk-bytes": { type: "string" },
      mode: { type: "string" },
    },
  });
  if (!args.endpoint || (args.mode !== "reader" && args.mode !== "stub")) {
    throw new Error("throughput needs --endpoint, --total, --chunk-bytes and --mode reader|stub");
  }
  const total = count("total", args.total, 1);
  const chunk = count("chunk-bytes", args["chunk-bytes"], 1);
  const key = apiKey();
  let bytes = 0;
  let seconds: number;
  if (args.mode === "reader") {
    const client = new EntropyClient(args.endpoint, key);
    try {
      const started = performance.now();
      for await (const part of client.stream({ totalBytes: total, chunkBytes: chunk })) bytes += part.length;
      seconds = (performance.now() - started) / 1000;
    } finally {
      client.close();
    }
  } else {
    const caFile = process.env.ENTROPY_CA_FILE || undefined;
    const ep = parseEndpoint(args.endpoint, caFile !== undefined);
    const creds = !ep.tls
      ? credentials.createInsecure()
      : credentials.createSsl(caFile === undefined ? undefined : readFileSync(caFile));
    const host = ep.host.includes(":") ? `[${ep.host}]` : ep.host;
    const stub = grpcClient(EntropyService, `${host}:${ep.port}`, creds, {});
    const md = new Metadata();
    md.set("authorization", `Bearer ${key}`);
    try {
      const started = performance.now();
      for await (const m of stub.streamRandom({ chunkBytes: chunk, totalBytes: BigInt(total), acceptKinds: [] }, md)) {
        bytes += m.data.length;
      }
      seconds = (performance.now() - started) / 1000;
    } finally {
      stub.close();
    }
  }
  process.stdout.write(JSON.stringify({ bytes, seconds }) + "\n");
}

const [mode, ...rest] = process.argv.slice(2);
const run = mode === "reader" ? reader(rest) : mode === "throughput" ? throughput(rest) : main();
run.catch((e: unknown) => {
  console.error(e);
  process.exit(2);
});
