package io.github.entropydiode.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import entropy.v1.Entropy.CheckQualityRequest;
import entropy.v1.Entropy.GetRandomRequest;
import entropy.v1.EntropyServiceGrpc;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.MetadataUtils;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Issue #15 against a real dev gateway: one OS source, collector "dev-collector", a key with the
 * quality:check scope.
 */
class QualityTest {
  private static final String DEV_COLLECTOR = "dev-collector";
  private static final List<SourceKind> ONLY_OS = List.of(SourceKind.OS);
  /** "At once": well under the gateway's 2 s maximum wait, which a waiting call would take. */
  private static final long AT_ONCE_MS = 1500;

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

  private static EntropyClient clientAccepting(SourceKind... kinds) {
    return EntropyClient.builder()
        .endpoint(gateway.endpoint())
        .apiKey(gateway.apiKey)
        .acceptKinds(kinds)
        .build();
  }

  private static List<SourceKind> kindsOf(Provenance p) {
    return p == null ? null : p.kinds();
  }

  @Test
  void checkQualityPassesOnTheDevGateway() {
    QualityReport r = client.checkQuality(4096);
    assertTrue(r.passed(), r.toString());
    assertEquals(4096, r.sampleBytes());
    assertEquals(ONLY_OS, kindsOf(r.provenance()));
    assertEquals(1, r.fips1402().blocks(), "32768 bits hold one 20000-bit block");
    assertEquals(0, r.fips1402().blocksFailed());
    assertEquals(List.of(), r.failures());
    assertFalse(r.thresholds().isEmpty());
    assertTrue(r.pi().points() > 0, r.pi().toString());
    assertEquals(r.pi().points(), r.piOsReference().points());
    // Statistics of 4096 random bytes, with bounds far outside chance.
    assertTrue(r.shannonEntropyBitsPerByte() > 7.5 && r.shannonEntropyBitsPerByte() <= 8, r.toString());
    assertTrue(
        r.minEntropyBitsPerByte() > 0 && r.minEntropyBitsPerByte() <= r.shannonEntropyBitsPerByte(),
        r.toString());
    assertTrue(r.chiSquarePValue() >= 0 && r.chiSquarePValue() <= 1, r.toString());
    assertTrue(Math.abs(r.mean() - 127.5) < 15, r.toString());
    assertTrue(r.serialCorrelation().isPresent(), r.toString());
    assertTrue(Math.abs(r.serialCorrelation().getAsDouble()) < 0.2, r.toString());
    assertTrue(Math.abs(r.pi().estimate() - Math.PI) < 0.5, r.toString());
    assertEquals(r.pi().estimate() - Math.PI, r.pi().error(), 1e-9);
  }

  @Test
  void checkQualitySizeBoundsAreInvalidArgumentNamingTheBound() {
    Object[][] cases = {{100, "2500"}, {2499, "2500"}, {4194305, "4194304"}};
    for (Object[] c : cases) {
      InvalidArgumentException e =
          assertThrows(InvalidArgumentException.class, () -> client.checkQuality((int) c[0]));
      assertTrue(e.details().contains("sample_bytes"), c[0] + ": " + e.details());
      assertTrue(e.details().contains((String) c[1]), c[0] + ": " + e.details());
    }
    QualityReport smallest = client.checkQuality(2500);
    assertEquals(2500, smallest.sampleBytes());
    assertEquals(1, smallest.fips1402().blocks(), "2500 bytes are one FIPS 140-2 block exactly");
  }

  @Test
  void drawReturnsBytesWithTheirProvenance() {
    Draw d = client.draw(32);
    assertEquals(32, d.data().length);
    Provenance p = d.provenance();
    assertNotNull(p);
    assertEquals(ONLY_OS, p.kinds());
    assertFalse(p.mixed());
    assertEquals(List.of(DEV_COLLECTOR), p.collectorIds());
    assertTrue(p.chunkCount() >= 1, p.toString());
    assertEquals(DEV_COLLECTOR, p.firstChunk().collectorId());
    assertEquals(DEV_COLLECTOR, p.lastChunk().collectorId());
    assertTrue(p.firstChunk().sequence() <= p.lastChunk().sequence(), p.toString());
  }

  /** Runs {@code call} and fails if it takes longer than {@link #AT_ONCE_MS}. */
  private static <T extends Throwable> T refusedAtOnce(Class<T> type, String what, Executable call) {
    long start = System.nanoTime();
    T e = assertThrows(type, call, what);
    long ms = (System.nanoTime() - start) / 1_000_000;
    assertTrue(ms < AT_ONCE_MS, what + " took " + ms + " ms");
    return e;
  }

  @Test
  void quantumOnlyIsFailedPreconditionAtOnceNamingWhatThePoolHolds() {
    long servedBefore = client.status().servedBytesTotal();
    try (EntropyClient quantum = clientAccepting(SourceKind.QUANTUM)) {
      Map<String, Executable> calls = new LinkedHashMap<>();
      calls.put("getBytes", () -> quantum.getBytes(32));
      calls.put("draw", () -> quantum.draw(32));
      calls.put("getIntegers", () -> quantum.getIntegers(1, 6, 10));
      calls.put("getFloats", () -> quantum.getFloats(10));
      calls.put("getUuids", () -> quantum.getUuids(10));
      calls.put("checkQuality", () -> quantum.checkQuality(4096));
      calls.put(
          "checkQuality(QUANTUM) on an any-kind client",
          () -> client.checkQuality(4096, SourceKind.QUANTUM));
      for (Map.Entry<String, Executable> c : calls.entrySet()) {
        FailedPreconditionException e =
            refusedAtOnce(FailedPreconditionException.class, c.getKey(), c.getValue());
        assertTrue(
            e.details().contains("QUANTUM") && e.details().contains("OS"),
            c.getKey() + ": should name what was asked (QUANTUM) and what the pool holds (OS): "
                + e.details());
        assertFalse(e.isRetryable());
      }
    }
    assertEquals(servedBefore, client.status().servedBytesTotal(), "refused calls consumed bytes");
  }

  @Test
  void acceptedKindsThatThePoolHoldsAreServed() throws IOException {
    for (SourceKind[] kinds :
        new SourceKind[][] {{SourceKind.OS}, {SourceKind.QUANTUM, SourceKind.OS}}) {
      try (EntropyClient c = clientAccepting(kinds)) {
        Draw d = c.draw(64);
        assertEquals(64, d.data().length);
        assertEquals(ONLY_OS, kindsOf(d.provenance()));
        assertEquals(16, c.getBytes(16).length);
        assertEquals(5, c.getIntegers(1, 6, 5).length);
        assertEquals(5, c.getFloats(5).length);
        assertEquals(5, c.getUuids(5).size());
        assertEquals(ONLY_OS, kindsOf(c.checkQuality(2500).provenance()));
        try (RandomStream in = c.stream(100_000, StreamOptions.defaults().withChunkBytes(16384))) {
          assertEquals(100_000, in.readAllBytes().length);
          assertEquals(ONLY_OS, kindsOf(in.provenance()));
        }
      }
    }
  }

  @Test
  void aQuantumOnlyStreamEndsWithFailedPreconditionWithoutReconnecting() throws IOException {
    // A budget of zero would reconnect forever: the error must not count as transient at all.
    StreamOptions quantumForever =
        StreamOptions.defaults().withAcceptKinds(SourceKind.QUANTUM).withReconnectBudget(Duration.ZERO);
    try (EntropyClient quantumClient = clientAccepting(SourceKind.QUANTUM)) {
      Map<String, Supplier<RandomStream>> streams = new LinkedHashMap<>();
      streams.put("stream option", () -> client.stream(100_000, quantumForever));
      streams.put("client option", () -> quantumClient.stream(0));
      for (Map.Entry<String, Supplier<RandomStream>> s : streams.entrySet()) {
        try (RandomStream in = s.getValue().get()) {
          IOException e =
              refusedAtOnce(
                  IOException.class, s.getKey(), () -> in.transferTo(OutputStream.nullOutputStream()));
          assertTrue(
              e.getCause() instanceof FailedPreconditionException,
              s.getKey() + ": " + e.getCause());
          assertTrue(e.getMessage().contains("QUANTUM"), e.getMessage());
          assertEquals(0, in.reconnects(), s.getKey());
          assertEquals(0, in.received(), s.getKey());
        }
      }
      // A stream's own kinds win over the client's: OS on a quantum-only client is served.
      try (RandomStream in =
          quantumClient.stream(50_000, StreamOptions.defaults().withAcceptKinds(SourceKind.OS))) {
        assertEquals(50_000, in.readAllBytes().length);
      }
    }
  }

  @Test
  void theStreamReportsTheProvenanceOfWhatItRead() throws IOException {
    try (RandomStream in = client.stream(64 << 10, StreamOptions.defaults().withChunkBytes(16384))) {
      assertEquals(1000, in.readNBytes(1000).length);
      Provenance p = in.provenance();
      assertNotNull(p);
      assertEquals(ONLY_OS, p.kinds());
      assertEquals(List.of(DEV_COLLECTOR), p.collectorIds());
      assertTrue(p.chunkCount() >= 1 && p.firstChunk().sequence() <= p.lastChunk().sequence(), p.toString());
    }
  }

  /**
   * SOURCE_KIND_UNSPECIFIED cannot be written with {@link SourceKind} (the client refuses
   * UNKNOWN before sending), so the gateway's own check is shown through the generated stub.
   */
  @Test
  void unspecifiedKindIsInvalidArgumentNamingItsPosition() throws Exception {
    Metadata auth = new Metadata();
    auth.put(
        Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + gateway.apiKey);
    ManagedChannel channel =
        Grpc.newChannelBuilder(gateway.endpoint(), InsecureChannelCredentials.create())
            .intercept(MetadataUtils.newAttachHeadersInterceptor(auth))
            .build();
    try {
      EntropyServiceGrpc.EntropyServiceBlockingStub stub =
          EntropyServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
      Object[][] cases = {{List.of(0), "accept_kinds[0]"}, {List.of(3, 0), "accept_kinds[1]"}};
      for (Object[] c : cases) {
        @SuppressWarnings("unchecked")
        List<Integer> kinds = (List<Integer>) c[0];
        StatusRuntimeException random =
            assertThrows(
                StatusRuntimeException.class,
                () ->
                    stub.getRandom(
                        GetRandomRequest.newBuilder().setNumBytes(8).addAllAcceptKindsValue(kinds).build()));
        StatusRuntimeException quality =
            assertThrows(
                StatusRuntimeException.class,
                () ->
                    stub.checkQuality(
                        CheckQualityRequest.newBuilder()
                            .setSampleBytes(2500)
                            .addAllAcceptKindsValue(kinds)
                            .build()));
        for (StatusRuntimeException e : List.of(random, quality)) {
          assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), kinds + ": " + e);
          assertTrue(
              String.valueOf(e.getStatus().getDescription()).contains((String) c[1]),
              kinds + ": " + e.getStatus().getDescription());
          // The client's typed error for it:
          assertTrue(EntropyException.from(e) instanceof InvalidArgumentException);
        }
      }
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void statusReportsThePoolByClass() {
    GatewayStatus s = client.status();
    assertEquals(1, s.poolByClass().size(), s.poolByClass().toString());
    assertEquals(ONLY_OS, s.poolByClass().get(0).kinds());
    assertTrue(s.poolByClass().get(0).bytes() > 0, s.poolByClass().toString());
    assertEquals(0, s.expiredBytesTotal());
    assertEquals(0, s.maxByteAgeMs());
  }

  @Test
  void checkQualityNeedsItsScope() throws Exception {
    Map<String, String> scopes = new LinkedHashMap<>();
    scopes.put("plain", "");
    scopes.put("checker", "scopes = [\"entropy:read\", \"status:read\", \"quality:check\"]");
    try (KeyedGateway keyed = new KeyedGateway(scopes);
        EntropyClient plain = keyed.client("plain");
        EntropyClient checker =
            EntropyClient.builder()
                .endpoint(keyed.endpoint())
                .apiKey(keyed.keys.get("checker"))
                .timeout(Duration.ofMillis(500))
                .build()) {
      PermissionDeniedException e =
          assertThrows(PermissionDeniedException.class, () -> plain.checkQuality(4096));
      assertTrue(e.details().contains("quality:check"), e.details());
      // The scoped key gets past the scope check: an empty pool then answers otherwise.
      EntropyException other = assertThrows(EntropyException.class, () -> checker.checkQuality(4096));
      assertFalse(other instanceof PermissionDeniedException, other.toString());
    }
  }
}
