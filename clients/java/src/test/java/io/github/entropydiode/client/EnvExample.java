package io.github.entropydiode.client;

import java.io.InputStream;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/** The README's five lines, configured from ENTROPY_ENDPOINT and ENTROPY_API_KEY (run by
 * ClientTest in a JVM of its own, with those variables set). */
public final class EnvExample {
  private EnvExample() {}

  /** Prints what the README's lines get.
   *
   * @param args unused
   */
  public static void main(String[] args) throws Exception {
    OutputStream file = OutputStream.nullOutputStream();
    try (EntropyClient client = EntropyClient.fromEnvironment()) {
      byte[] bytes = client.getBytes(32);
      long[] dice = client.getIntegers(1, 6, 10);
      List<UUID> ids = client.getUuids(3);
      long copied;
      try (InputStream in = client.stream(1 << 20)) {
        copied = in.transferTo(file);
      }
      System.out.println(bytes.length + " " + Arrays.toString(dice) + " " + ids.size() + " " + copied);
    }
  }
}
