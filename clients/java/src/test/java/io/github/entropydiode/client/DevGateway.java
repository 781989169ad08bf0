package io.github.entropydiode.client;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code entropy-gateway --dev} from $GATEWAY_BIN (default the repo's
 * target/release/entropy-gateway) on a free loopback port, with a known key. It can be killed and
 * started again on the same port, for the reconnect tests.
 */
final class DevGateway implements AutoCloseable {
  static final long POOL_CAPACITY = 16L << 20;

  final int port;
  final String apiKey;
  private final Path log;
  private Process process;

  private DevGateway(int port) throws IOException {
    this.port = port;
    byte[] secret = new byte[12];
    new SecureRandom().nextBytes(secret);
    this.apiKey = "java-test-" + HexFormat.of().formatHex(secret);
    this.log = Files.createTempFile("entropy-gateway-", ".log");
  }

  /** Starts a gateway on a free port and waits until it serves. */
  static DevGateway start() throws Exception {
    DevGateway gw = new DevGateway(freePort());
    gw.restart();
    return gw;
  }

  private static final Set<Integer> HANDED_OUT = new HashSet<>();

  /**
   * A loopback port nothing listens on now, below the ephemeral range (so no outgoing connection
   * takes it before the gateway binds it) and never returned twice by this process
   * (bind-0-then-close may hand out the same port again). The repo's other test harnesses pick
   * ports by the same rule (scripts/lib/ports.py), and read TEST_PORT_RANGE=LOW-HIGH (inclusive)
   * the same way.
   */
  static synchronized int freePort() throws IOException {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    int[] range = portRange();
    for (int tries = 0; tries < 1000; tries++) {
      int port = random.nextInt(range[0], range[1] + 1);
      if (HANDED_OUT.contains(port)) {
        continue;
      }
      try (ServerSocket s = new ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
        HANDED_OUT.add(port);
        return s.getLocalPort();
      } catch (IOException taken) {
        // in use: try another
      }
    }
    throw new IOException("no free loopback port found in 1000 tries");
  }

  /** Where {@link #freePort} draws ports: TEST_PORT_RANGE, else 10000..32767. */
  private static int[] portRange() {
    String given = System.getenv("TEST_PORT_RANGE");
    if (given == null || given.isEmpty()) {
      return new int[] {10000, 32767};
    }
    String[] parts = given.split("-", 2);
    try {
      int low = Integer.parseInt(parts[0]);
      int high = Integer.parseInt(parts[1]);
      if (high >= low) {
        return new int[] {low, high};
      }
    } catch (NumberFormatException | ArrayIndexOutOfBoundsException bad) {
      // reported below
    }
    throw new IllegalArgumentException("TEST_PORT_RANGE must be LOW-HIGH, not " + given);
  }

  static Path binary() {
    String configured = System.getenv("GATEWAY_BIN");
    String base = System.getenv().getOrDefault("ENTROPY_JAVA_CLIENT_DIR", ".");
    Path bin =
        configured == null || configured.isEmpty()
            ? Path.of(base, "../../target/release/entropy-gateway")
            : Path.of(base).resolve(configured);
    if (!Files.isExecutable(bin)) {
      throw new IllegalStateException(
          "no gateway binary at " + bin + ": build it (cargo build --release -p entropy-gateway)"
              + " or set GATEWAY_BIN");
    }
    return bin.normalize();
  }

  String endpoint() {
    return "127.0.0.1:" + port;
  }

  EntropyClient client() {
    return EntropyClient.builder().endpoint(endpoint()).apiKey(apiKey).build();
  }

  /** Starts the gateway process (again) on the same port and waits until it serves. */
  void restart() throws Exception {
    ProcessBuilder pb =
        new ProcessBuilder(
            List.of(
                binary().toString(),
                "--dev",
                "--listen-addr",
                endpoint(),
                "--pool-capacity-bytes",
                Long.toString(POOL_CAPACITY),
                "--metrics-listen-addr",
                ""));
    pb.environment().put("ENTROPY_DEV_API_KEY", apiKey);
    pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    pb.redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
    process = pb.start();
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    try (EntropyClient c =
        EntropyClient.builder().endpoint(endpoint()).apiKey(apiKey).timeout(Duration.ofSeconds(1)).build()) {
      while (System.nanoTime() < deadline) {
        if (!process.isAlive()) {
          throw new IllegalStateException("gateway exited: " + Files.readString(log));
        }
        if (listening()) {
          try {
            if (c.status().serving()) {
              return;
            }
          } catch (EntropyException e) {
            // not serving yet
          }
        }
        Thread.sleep(50);
      }
    }
    throw new IllegalStateException("gateway did not serve within 30 s: " + Files.readString(log));
  }

  private boolean listening() {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** SIGKILL: the connection drops without a word. */
  void kill9() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }

  /** SIGTERM, as systemd stops it: open streams end with UNAVAILABLE, then the process exits. */
  void terminate() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor();
    }
  }

  @Override
  public void close() throws Exception {
    if (process != null && process.isAlive()) {
      terminate();
    }
    Files.deleteIfExists(log);
  }

  /** For diagnosis in a failed assertion. */
  String logTail() {
    try {
      String text = Files.readString(log);
      return text.substring(Math.max(0, text.length() - 2000));
    } catch (IOException e) {
      return e.toString();
    }
  }
}
