// API keys are checked before use and never put into a message.

/** The longest key the gateway accepts, in bytes. */
export const MAX_KEY_BYTES = 512;

/** `key` if it is 1..=512 visible ASCII characters (0x21..0x7e); a TypeError saying what is
 * wrong, never what the key is, otherwise. */
export function validateKey(key: string | undefined): string {
  if (!key) throw new TypeError("API key is missing");
  if (key.length > MAX_KEY_BYTES) {
    throw new TypeError(`API key is ${key.length} characters, at most ${MAX_KEY_BYTES}`);
  }
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) {
      const what = c === 0x0a || c === 0x0d ? "a line break" : c === 0x20 ? "a space" : "a character";
      throw new TypeError(
        `API key holds ${what} at position ${i}: keys are 1 to ${MAX_KEY_BYTES} visible ASCII ` +
          "characters (0x21-0x7e); check for a trailing newline",
      );
    }
  }
  return key;
}
