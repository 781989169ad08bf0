// Seed a fast local PRNG (sfc32, 128-bit state) with quantum bits: reproducible (print and keep
// the seed) yet unpredictable. Node has no seedable PRNG built in; sfc32 is a few lines.
import { EntropyClient } from "../src";

function sfc32(a: number, b: number, c: number, d: number): () => number {
  return () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (((c << 21) | (c >>> 11)) + t) | 0;
    return (t >>> 0) / 2 ** 32;
  };
}

const client = EntropyClient.fromEnv();
client
  .getBytes(16)
  .then((seed) => {
    const [a, b, c, d] = [0, 4, 8, 12].map((i) => seed.readUInt32LE(i));
    const next = sfc32(a, b, c, d);
    console.log(`seed=${seed.toString("hex")}`, Array.from({ length: 3 }, next));
  })
  .finally(() => client.close());
