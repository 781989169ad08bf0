package io.github.entropydiode.client;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A gateway run from a keys file (not --dev): keys with chosen scopes, for the scope checks a dev
 * key cannot show. Nothing feeds it, so it never serves entropy, but it answers every call that
 * is refused before drawing, and GetStatus.
 */
final class KeyedGateway implements AutoCloseable {
  final int port;
  /** The secret of each key, by name. */
  final Map<String, String> keys = new LinkedHashMap<>();

  private final Path dir;
  private final Process process;

  /**
   * Starts one with a key per entry of {@code scopes} (name to extra TOML lines, "" for the
   * default scopes) and waits until it answers.
   */
  KeyedGateway(Map<String, String> scopes) throws Exception {
    dir = Files.createTempDirectory("keyed-gateway-");
    SecureRandom random = new SecureRandom();
    StringBuilder file = new StringBuilder();
    for (Map.Entry<String, String> e : scopes.entrySet()) {
      byte[] raw = new byte[16];
      random.nextBytes(raw);
      String secret = "java-" + e.getKey() + "-" + HexFormat.of().formatHex(raw);
      keys.put(e.getKey(), secret);
      String digest =
          HexFormat.of()
              .formatHex(
                  MessageDigest.getInstance("SHA-256")
                      .digest(secret.getBytes(StandardCharsets.US_ASCII)));
      file.append("[[key]]\nname = \"")
          .append(e.getKey())
          .append("\"\nsha256 = \"")
          .append(digest)
          .append("\"\n")
          .append(e.getValue())
          .append('\n');
    }
    Path keysFile = Files.writeString(dir.resolve("keys.toml"), file);
    Path ingest = Files.createDirectory(dir.resolve("ingest"));
    byte[] mac = new byte[32];
    random.nextBytes(mac);
    Files.writeString(ingest.resolve("test.key"), HexFormat.of().formatHex(mac));
    port = DevGateway.freePort();
    Path log = dir.resolve("gateway.log");
    ProcessBuilder pb =
        new ProcessBuilder(
            List.of(
                DevGateway.binary().toString(),
                "--api-keys-file",
                keysFile.toString(),
                "--ingest-keys-dir",
                ingest.toString(),
                "--state-dir",
                dir.resolve("gateway-state").toString(),
                "--gateway-id",
                "java-test",
                "--listen-addr",
                endpoint(),
                "--ingest-listen-addr",
                "127.0.0.1:" + DevGateway.freePort(),
                "--metrics-listen-addr",
                ""));
    pb.redirectErrorStream(true);
    pb.redirectOutput(log.toFile());
    process = pb.start();
    try {
      awaitAnswer(log);
    } catch (Exception e) {
      close();
      throw e;
    }
  }

  private void awaitAnswer(Path log) throws Exception {
    String anyKey = keys.values().iterator().next();
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    try (EntropyClient c =
        EntropyClient.builder().endpoint(endpoint()).apiKey(anyKey).timeout(Duration.ofSeconds(1)).build()) {
      while (System.nanoTime() < deadline) {
        if (!process.isAlive()) {
          throw new IllegalStateException("keyed gateway exited: " + Files.readString(log));
        }
        try {
          c.status();
          return;
        } catch (EntropyException e) {
          Thread.sleep(100); // not listening yet
        }
      }
    }
    throw new IllegalStateException("keyed gateway did not answer within 30 s: " + Files.readString(log));
  }

  String endpoint() {
    return "127.0.0.1:" + port;
  }

  EntropyClient client(String name) {
    return EntropyClient.builder().endpoint(endpoint()).apiKey(keys.get(name)).build();
  }

  @Override
  public void close() throws IOException {
    process.destroyForcibly();
    try {
      process.waitFor(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try (var files = Files.walk(dir)) {
      files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
