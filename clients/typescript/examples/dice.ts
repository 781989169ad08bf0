// Roll ten six-sided dice (unbiased: the gateway uses rejection sampling).
import { EntropyClient } from "../src";

const endpoint = process.env.ENTROPY_ENDPOINT ?? "127.0.0.1:50051";
// A dev gateway is plaintext; leave out `insecure` for a TLS gateway.
const client = new EntropyClient(endpoint, process.env.ENTROPY_API_KEY ?? "", { insecure: true });
client
  .getIntegers(1, 6, 10)
  .then((rolls) => console.log(rolls.join(" ")))
  .finally(() => client.close());
