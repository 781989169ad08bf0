// Stream 8 MiB of random bytes into a file (path from argv, default random.bin). The stream
// reconnects after a dropped connection without losing or repeating bytes.
import { createWriteStream, statSync } from "node:fs";
import { pipeline } from "node:stream/promises";

import { EntropyClient } from "../src";

const path = process.argv[2] ?? "random.bin";
const client = EntropyClient.fromEnv();
pipeline(client.readable({ totalBytes: 8 << 20, chunkBytes: 64 << 10 }), createWriteStream(path))
  .then(() => console.log(`wrote ${statSync(path).size} bytes to ${path}`))
  .finally(() => client.close());
