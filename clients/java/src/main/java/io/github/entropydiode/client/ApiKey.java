package io.github.entropydiode.client;

/** Checks API keys before they are used, without ever putting one in a message. */
final class ApiKey {
  /** The longest key the gateway accepts, in bytes. */
  static final int MAX_BYTES = 512;

  private ApiKey() {}

  /**
   * Returns {@code key} if it is 1..={@value #MAX_BYTES} visible ASCII characters (0x21..0x7e).
   *
   * @throws IllegalArgumentException saying what is wrong, never what the key is
   */
  static String validate(String key) {
    if (key == null || key.isEmpty()) {
      throw new IllegalArgumentException(
          "API key is missing: pass one, or set ENTROPY_API_KEY");
    }
    if (key.length() > MAX_BYTES) {
      throw new IllegalArgumentException(
          "API key is " + key.length() + " characters, at most " + MAX_BYTES);
    }
    for (int i = 0; i < key.length(); i++) {
      char c = key.charAt(i);
      if (c < 0x21 || c > 0x7e) {
        String what = c == '\n' || c == '\r' ? "a line break" : c == ' ' ? "a space" : "a character";
        throw new IllegalArgumentException(
            "API key holds "
                + what
                + " at position "
                + i
                + ": keys are 1 to "
                + MAX_BYTES
                + " visible ASCII characters (0x21-0x7e); check for a trailing newline");
      }
    }
    return key;
  }
}
