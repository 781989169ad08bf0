// Five random (version 4) UUIDs.
import { EntropyClient } from "../src";

const endpoint = process.env.ENTROPY_ENDPOINT ?? "127.0.0.1:50051";
const client = new EntropyClient(endpoint, process.env.ENTROPY_API_KEY ?? "", { insecure: true });
client
  .getUuids(5)
  .then((ids) => ids.forEach((id) => console.log(id)))
  .finally(() => client.close());
