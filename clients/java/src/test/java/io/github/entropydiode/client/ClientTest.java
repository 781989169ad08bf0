package io.github.entropydiode.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Every call against a real dev gateway: results, and errors per status with the server's
 * message. */
class ClientTest {
  private static DevGateway gateway;
  private static EntropyClient client;

  @BeforeAll
  static void start() throws Exception {
    gateway = DevGateway.start();
    client = gateway.client();
  }

  @AfterAll
  static void stop() throws Exception {
    client.close();
    gateway.close();
  }

  @Test
  void bytesAreExactlyWhatWasAsked() {
    assertEquals(32, client.getBytes(32).length);
    assertEquals(1 << 20, client.getBytes(1 << 20).length);
  }

  @Test
  void outOfRangeIsInvalidArgumentWithTheServersMessage() {
    InvalidArgumentException zero = assertThrows(InvalidArgumentException.class, () -> client.getBytes(0));
    assertTrue(zero.details().contains("num_bytes"), zero.details());
    InvalidArgumentException big =
        assertThrows(InvalidArgumentException.class, () -> client.getBytes((1 << 20) + 1));
    assertTrue(big.details().contains("1048576"), big.details());
    InvalidArgumentException range =
        assertThrows(InvalidArgumentException.class, () -> client.getIntegers(5, 1, 1));
    assertTrue(range.details().contains("min") && range.details().contains("max"), range.details());
    assertEquals(io.grpc.Status.Code.INVALID_ARGUMENT, range.code());
  }

  @Test
  void diceAreInRangeAndAllFacesShow() {
    long[] dice = client.getIntegers(1, 6, 1000);
    assertEquals(1000, dice.length);
    assertTrue(Arrays.stream(dice).allMatch(v -> v >= 1 && v <= 6));
    assertEquals(6, Arrays.stream(dice).distinct().count());
  }

  @Test
  void theFullLongRangeWorks() {
    long[] v = client.getIntegers(Long.MIN_VALUE, Long.MAX_VALUE, 100);
    assertTrue(Arrays.stream(v).anyMatch(x -> x < 0) && Arrays.stream(v).anyMatch(x -> x > 0));
    assertEquals(100, Arrays.stream(v).distinct().count());
  }

  @Test
  void floatsAreMultiplesOfTwoToTheMinus53InTheUnitInterval() {
    for (double f : client.getFloats(1000)) {
      assertTrue(f >= 0 && f < 1, Double.toString(f));
      double scaled = Math.scalb(f, 53);
      assertEquals(Math.rint(scaled), scaled, Double.toString(f));
    }
  }

  @Test
  void uuidsAreDistinctVersion4() {
    List<UUID> uuids = client.getUuids(100);
    assertEquals(100, new HashSet<>(uuids).size());
    for (UUID u : uuids) {
      assertEquals(4, u.version());
      assertEquals(2, u.variant());
    }
  }

  @Test
  void statusReportsThePoolAndLabelsTheDevSourceAsOs() {
    GatewayStatus s = client.status();
    assertEquals(DevGateway.POOL_CAPACITY, s.poolCapacityBytes());
    assertTrue(s.serving(), s.notServingReason());
    assertTrue(s.sources().stream().allMatch(src -> src.kind().equals("os")), s.sources().toString());
  }

  @Test
  void usageReadsTheKeysOwnLimitsAndCountsItsOpenStream() throws IOException {
    KeyUsage u = client.usage();
    assertEquals("dev", u.keyName());
    // The dev key has no rate or stream limit; the undelivered allowance always has one.
    assertTrue(u.requests().isEmpty() && u.bytes().isEmpty() && u.drbgBytes().isEmpty(), u.toString());
    assertTrue(u.streams().limit().isEmpty(), u.toString());
    assertEquals(32L << 20, u.undeliveredBytes().limit().orElseThrow());
    long before = u.streams().inUse();
    try (RandomStream stream = client.stream(0)) {
      assertEquals(4096, stream.readNBytes(4096).length);
      assertTrue(client.usage().streams().inUse() >= before + 1);
    }
    try (EntropyClient stranger =
        EntropyClient.builder().endpoint(gateway.endpoint()).apiKey("not-a-key").build()) {
      assertThrows(UnauthenticatedException.class, stranger::usage);
    }
  }

  @Test
  void theReadmeLinesRunFromTheEnvironmentVariables() throws Exception {
    ProcessBuilder pb =
        new ProcessBuilder(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp",
            System.getProperty("java.class.path"),
            EnvExample.class.getName());
    pb.environment().put("ENTROPY_ENDPOINT", "http://" + gateway.endpoint());
    pb.environment().put("ENTROPY_API_KEY", gateway.apiKey);
    pb.redirectError(ProcessBuilder.Redirect.INHERIT);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), out);
    assertTrue(out.strip().endsWith(" 3 1048576"), out);
    assertTrue(out.startsWith("32 ["), out);
  }

  @Test
  void aWrongKeyIsUnauthenticated() {
    try (EntropyClient wrong =
        EntropyClient.builder().endpoint(gateway.endpoint()).apiKey("wrong-" + gateway.apiKey).build()) {
      UnauthenticatedException e = assertThrows(UnauthenticatedException.class, () -> wrong.getBytes(32));
      assertTrue(e.details().contains("API key"), e.details());
      assertTrue(!e.getMessage().contains(gateway.apiKey), "never the key");
    }
  }

  @Test
  void aDeadlineIsDeadlineExceeded() throws Exception {
    // A server that accepts and never answers: a deadline against the live gateway would race.
    try (ServerSocket hole = new ServerSocket(0);
        EntropyClient c =
            EntropyClient.builder()
                .endpoint("127.0.0.1:" + hole.getLocalPort())
                .apiKey("k")
                .timeout(Duration.ofMillis(300))
                .build()) {
      List<Socket> held = new ArrayList<>();
      Thread acceptor =
          new Thread(
              () -> {
                try {
                  while (true) {
                    held.add(hole.accept());
                  }
                } catch (IOException e) {
                  // closed
                }
              });
      acceptor.setDaemon(true);
      acceptor.start();
      DeadlineExceededException e = assertThrows(DeadlineExceededException.class, () -> c.getBytes(32));
      assertTrue(e.isRetryable());
      hole.close();
      acceptor.join();
      for (Socket s : held) {
        s.close();
      }
    }
  }

  @Test
  void nothingListeningIsUnavailable() throws Exception {
    int port = DevGateway.freePort();
    try (EntropyClient c = EntropyClient.builder().endpoint("127.0.0.1:" + port).apiKey("k").build()) {
      UnavailableException e = assertThrows(UnavailableException.class, () -> c.getBytes(32));
      assertTrue(e.isRetryable());
    }
  }

  @Test
  void aBoundedStreamArrivesExactlyWithoutRepeats() throws IOException {
    try (RandomStream in = client.stream(3 << 20, StreamOptions.defaults().withChunkBytes(50_000))) {
      byte[] all = in.readAllBytes();
      assertEquals(3 << 20, all.length);
      assertEquals(-1, Repeats.firstRepeat(all));
      assertEquals(-1, in.read(), "stays at the end");
      assertEquals(0, in.reconnects());
    }
  }

  @Test
  void anEndlessStreamReadsUntilClosed() throws IOException {
    InputStream in = client.stream(0);
    byte[] first = in.readNBytes(300_000);
    assertEquals(300_000, first.length);
    in.close();
    assertThrows(IOException.class, in::read);
  }

  @Test
  void aStreamWhoseClientClosedFailsAtOnce() throws IOException {
    EntropyClient own = gateway.client();
    RandomStream in = own.stream(0);
    in.readNBytes(100_000);
    own.close();
    IOException e = assertThrows(IOException.class, () -> in.transferTo(OutputStream.nullOutputStream()));
    assertTrue(e.getMessage().contains("client was closed"), e.getMessage());
    assertEquals(0, in.reconnects(), "no reconnect on a closed client");
  }

  @Test
  void aStreamWithAWrongKeyFailsAtOnceWithTheStatusAsCause() {
    try (EntropyClient wrong =
            EntropyClient.builder().endpoint(gateway.endpoint()).apiKey("wrong-" + gateway.apiKey).build();
        RandomStream in = wrong.stream(1024)) {
      IOException e = assertThrows(IOException.class, in::read);
      assertTrue(e.getCause() instanceof UnauthenticatedException, String.valueOf(e.getCause()));
      assertEquals(0, in.reconnects(), "a refusal is not retried");
    }
  }
}
