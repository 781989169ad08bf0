// Stream 8 MiB of random bytes into a file (path from argv, default random.bin). The stream
// reconnects after a dropped connection without losing or repeating bytes.
import { createWriteStream, statSync } from "node:fs";
import { pipeline } from "node:stream/promises";

import { EntropyClient } from "../src";

const path = process.argv[2] ?? "random.bin";
const endpoint = process.env.ENTROPY_ENDPOINT ?? "127.0.0.1:50051";
const client = new EntropyClient(endpoint, process.env.ENTROPY_API_KEY ?? "", { insecure: true });
pipeline(client.readable({ totalBytes: 8 << 20, chunkBytes: 64 << 10 }), createWriteStream(path))
  .then(() => console.log(`wrote ${statSync(path).size} bytes to ${path}`))
  .finally(() => client.close());
