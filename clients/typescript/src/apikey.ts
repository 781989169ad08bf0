// API keys are checked before they are used, and never put in a message.

import { invalidArgument } from "./errors.js";

/** The longest key the gateway accepts, in characters (visible ASCII, so also bytes). */
export const MAX_API_KEY_LENGTH = 512;

/** Returns `key` if it is 1..=512 visible ASCII characters (0x21..0x7e); otherwise throws an
 * InvalidArgumentError saying which rule and at what position, never what the key is. */
export function validateApiKey(key: unknown): string {
  if (key === undefined || key === null || key === "") {
    throw invalidArgument("API key is missing: pass one, or set ENTROPY_API_KEY");
  }
  if (typeof key !== "string") throw invalidArgument(`API key must be a string, not ${typeof key}`);
  if (key.length > MAX_API_KEY_LENGTH) {
    throw invalidArgument(`API key is ${key.length} characters long, at most ${MAX_API_KEY_LENGTH}`);
  }
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c >= 0x21 && c <= 0x7e) continue;
    const what =
      c === 0x0a || c === 0x0d
        ? "a line break"
        : c === 0x20
          ? "a space"
          : c === 0x09
            ? "a tab"
            : c < 0x20 || c === 0x7f
              ? "a control character"
              : "a non-ASCII character";
    const trailing = i === key.length - 1 ? " (the last one: check for a trailing newline)" : "";
    throw invalidArgument(
      `API key holds ${what} at position ${i} (counting from 0)${trailing}: ` +
        `keys are 1 to ${MAX_API_KEY_LENGTH} visible ASCII characters (0x21..0x7e)`,
    );
  }
  return key;
}
