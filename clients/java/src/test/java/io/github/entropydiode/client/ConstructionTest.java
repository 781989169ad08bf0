package io.github.entropydiode.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * DRBG constructions against a real dev gateway (its key holds {@code entropy:drbg}; one OS
 * source, collector "dev-collector"): the label on DRBG output, RAW by default, a stream's or
 * check's own construction over the client's, values refused naming the option, and a DRBG stream
 * that keeps one instance per call and asks for DRBG again after the gateway is killed and started
 * again.
 */
class ConstructionTest {
  private static DevGateway gateway;
  private static EntropyClient raw;
  private static EntropyClient drbg;

  @BeforeAll
  static void start() throws Exception {
    gateway = DevGateway.start();
    raw = gateway.client();
    drbg = drbgClient(gateway);
  }

  @AfterAll
  static void stop() throws Exception {
    raw.close();
    drbg.close();
    gateway.close();
  }

  private static EntropyClient drbgClient(DevGateway gw) {
    return EntropyClient.builder()
        .endpoint(gw.endpoint())
        .apiKey(gw.apiKey)
        .construction(Construction.DRBG)
        .build();
  }

  /** DRBG output of the dev gateway: labelled, its seeds from the dev collector's OS source. */
  private static String assertDrbg(Provenance p, Construction construction) {
    assertNotNull(p, "no provenance");
    assertEquals(construction, p.construction());
    Provenance.DrbgLabel d = p.drbg();
    assertNotNull(d, "no drbg label");
    assertEquals(1, d.mechanism()); // CTR_DRBG with AES-256
    assertEquals(256, d.securityStrengthBits());
    assertTrue(d.instanceId().matches("[0-9a-f]{32}"), d.instanceId());
    assertEquals(construction == Construction.DRBG_PREDICTION_RESISTANT, d.predictionResistance());
    assertTrue(d.seedBytes() >= 48, d.seedBytes() + " seed bytes");
    assertEquals(List.of("dev-collector"), p.collectorIds());
    assertEquals(List.of(SourceKind.OS), p.kinds());
    assertEquals("dev-collector", p.firstChunk().collectorId());
    return d.instanceId();
  }

  private static void assertRaw(Provenance p) {
    assertNotNull(p, "no provenance");
    assertEquals(Construction.RAW, p.construction());
    assertNull(p.drbg());
    assertEquals(List.of("dev-collector"), p.collectorIds());
  }

  @Test
  void aDrbgDrawIsLabelledWithAnInstanceOfItsOwn() {
    assertEquals(Construction.DRBG, drbg.construction());
    Draw a = drbg.draw(4096);
    assertEquals(4096, a.data().length);
    String first = assertDrbg(a.provenance(), Construction.DRBG);
    assertEquals(0, a.provenance().drbg().reseedCount());
    assertNotEquals(first, assertDrbg(drbg.draw(4096).provenance(), Construction.DRBG));
    assertEquals(100, drbg.getIntegers(1, 6, 100).length);
    assertEquals(100, drbg.getFloats(100).length);
    assertEquals(100, new HashSet<>(drbg.getUuids(100)).size());
    QualityReport q = drbg.checkQuality(10_000);
    assertTrue(q.passed(), String.join("; ", q.failures()));
    assertDrbg(q.provenance(), Construction.DRBG);
  }

  @Test
  void byDefaultACallIsRawWithNoLabel() throws Exception {
    assertEquals(Construction.RAW, raw.construction());
    assertRaw(raw.draw(32).provenance());
    assertRaw(raw.checkQuality(2500).provenance());
    try (RandomStream in = raw.stream(10_000)) {
      assertEquals(10_000, in.readAllBytes().length);
      assertRaw(in.provenance());
    }
  }

  @Test
  void aStreamsOrChecksOwnConstructionBeatsTheClients() throws Exception {
    assertRaw(drbg.checkQuality(2500, Construction.RAW).provenance());
    assertDrbg(
        raw.checkQuality(2500, Construction.DRBG_PREDICTION_RESISTANT).provenance(),
        Construction.DRBG_PREDICTION_RESISTANT);
    StreamOptions rawStream = StreamOptions.defaults().withConstruction(Construction.RAW);
    assertEquals(Construction.RAW, rawStream.construction().orElseThrow());
    assertTrue(StreamOptions.defaults().construction().isEmpty());
    try (RandomStream in = drbg.stream(10_000, rawStream)) {
      assertEquals(10_000, in.readAllBytes().length);
      assertRaw(in.provenance());
    }
    try (RandomStream in =
        raw.stream(10_000, StreamOptions.defaults().withConstruction(Construction.DRBG))) {
      assertEquals(10_000, in.readAllBytes().length);
      assertDrbg(in.provenance(), Construction.DRBG);
    }
  }

  @Test
  void nullOrUnknownIsRefusedNamingTheOption() {
    for (Construction bad : new Construction[] {null, Construction.UNKNOWN}) {
      IllegalArgumentException builder =
          assertThrows(
              IllegalArgumentException.class, () -> EntropyClient.builder().construction(bad));
      assertTrue(builder.getMessage().startsWith("construction is " + bad), builder.getMessage());
      IllegalArgumentException stream =
          assertThrows(
              IllegalArgumentException.class,
              () -> StreamOptions.defaults().withConstruction(bad));
      assertTrue(stream.getMessage().startsWith("construction is "), stream.getMessage());
      InvalidArgumentException check =
          assertThrows(InvalidArgumentException.class, () -> raw.checkQuality(2500, bad));
      assertTrue(check.getMessage().contains("construction is "), check.getMessage());
    }
    assertEquals(Construction.RAW, Construction.fromNumber(0)); // not set: RAW
    assertEquals(Construction.UNKNOWN, Construction.fromNumber(9));
  }

  @Test
  void aDrbgStreamKeepsOneInstancePerCallAndAsksForDrbgAgainAfterARestart() throws Exception {
    int total = 8 << 20;
    int chunk = 64 << 10;
    AtomicReference<Throwable> restartFailure = new AtomicReference<>();
    try (DevGateway gw = DevGateway.start();
        EntropyClient client = drbgClient(gw);
        RandomStream in = client.stream(total, StreamOptions.defaults().withChunkBytes(chunk))) {
      // The instance named by each call's messages (call i: after i reconnects).
      Map<Integer, Set<String>> instances = new LinkedHashMap<>();
      ByteArrayOutputStream out = new ByteArrayOutputStream(total);
      Thread restarter = null;
      for (byte[] part = in.readNBytes(chunk); part.length > 0; part = in.readNBytes(chunk)) {
        out.write(part);
        String id = assertDrbg(in.provenance(), Construction.DRBG);
        instances.computeIfAbsent(in.reconnects(), k -> new HashSet<>()).add(id);
        if (restarter == null && out.size() >= 1 << 20) {
          gw.kill9();
          restarter =
              new Thread(
                  () -> {
                    try {
                      Thread.sleep(500);
                      gw.restart();
                    } catch (Throwable t) {
                      restartFailure.set(t);
                    }
                  });
          restarter.start();
        }
      }
      assertNotNull(restarter);
      restarter.join();
      if (restartFailure.get() != null) {
        throw new AssertionError("restart failed", restartFailure.get());
      }
      byte[] all = out.toByteArray();
      assertEquals(total, all.length, gw.logTail());
      assertEquals(-1, Repeats.firstRepeat(all), "a 16-byte run arrived twice");
      assertTrue(in.reconnects() >= 1, "the stream did reconnect");
      List<Set<String>> perCall = new ArrayList<>(instances.values());
      assertTrue(perCall.size() >= 2, "messages from " + perCall.size() + " calls");
      Set<String> ids = new HashSet<>();
      for (Set<String> call : perCall) {
        assertEquals(1, call.size(), "one call, instances " + call);
        assertFalse(ids.contains(call.iterator().next()), "an instance reused across calls");
        ids.addAll(call);
      }
    }
  }
}
