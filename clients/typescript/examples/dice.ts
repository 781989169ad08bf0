// Roll ten six-sided dice (unbiased: the gateway uses rejection sampling).
import { EntropyClient } from "../src";

// ENTROPY_ENDPOINT (default 127.0.0.1:50051, plaintext on loopback), ENTROPY_API_KEY, and
// ENTROPY_CA_FILE for a gateway with its own CA.
const client = EntropyClient.fromEnv();
client
  .getIntegers(1, 6, 10)
  .then((rolls) => console.log(rolls.join(" ")))
  .finally(() => client.close());
