// Five random (version 4) UUIDs.
import { EntropyClient } from "../src";

const client = EntropyClient.fromEnv();
client
  .getUuids(5)
  .then((ids) => ids.forEach((id) => console.log(id)))
  .finally(() => client.close());
