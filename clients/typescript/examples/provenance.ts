// Bytes with their provenance, a source filter (quantum only), and a quality check of the pool.
import { EntropyClient, FailedPreconditionError, SourceKind, sourceKindName } from "../src";

async function main(client: EntropyClient): Promise<void> {
  const { data, provenance: p } = await client.draw(32);
  console.log(data.toString("hex"), p.kinds.map(sourceKindName), p.collectorIds, `${p.chunkCount} chunk(s)`);
  try {
    const key = await client.getBytes(32, { acceptKinds: [SourceKind.QUANTUM] }); // quantum only
    console.log("quantum key:", key.toString("hex"));
  } catch (e) {
    if (!(e instanceof FailedPreconditionError)) throw e;
    console.log("no quantum source:", e.details); // what the pool holds instead
  }
  const r = await client.checkQuality(4096); // needs the quality:check scope
  const verdict = r.passed ? "passed" : `failed: ${r.failures.join("; ")}`;
  console.log(`quality ${verdict}, min-entropy ${r.minEntropyBitsPerByte.toFixed(3)} bits/byte`);
}

const client = EntropyClient.fromEnv(); // ENTROPY_ENDPOINT, ENTROPY_API_KEY, ENTROPY_CA_FILE
main(client).finally(() => client.close());
