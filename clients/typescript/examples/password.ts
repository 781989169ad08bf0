// A 20-character password: each character an unbiased draw from the alphabet.
import { EntropyClient } from "../src";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&*+-=?@^_";
const client = EntropyClient.fromEnv();
client
  .getIntegers(0, ALPHABET.length - 1, 20)
  .then((picks) => console.log(picks.map((i) => ALPHABET[i]).join("")))
  .finally(() => client.close());
