// The TypeScript client's conformance program (see clients/conformance/README.md): runs every
// case against the gateway at --endpoint (key in ENTROPY_API_KEY) and prints one JSON line per
// case. It reports what it observed; the driver judges it, the same way for every language.

import { status } from "@grpc/grpc-js";
import { parseArgs } from "node:util";

import { EntropyClient, EntropyError } from "../src";

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

main().catch((e: unknown) => {
  console.error(e);
  process.exit(2);
});
