package io.github.entropydiode.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import entropy.v1.Entropy.CheckQualityResponse;
import entropy.v1.Entropy.ClassLevel;
import entropy.v1.Entropy.Fips1402;
import entropy.v1.Entropy.GetStatusResponse;
import entropy.v1.Entropy.MonteCarloPi;
import entropy.v1.Provenance.ChunkRef;
import entropy.v1.Provenance.DrawProvenance;
import io.grpc.Status;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalDouble;
import org.junit.jupiter.api.Test;

/**
 * Issue #15 against a scripted server: what the client sends as accept_kinds, and how it converts
 * provenance, quality reports, the status's classes and FAILED_PRECONDITION.
 */
class ProvenanceOfflineTest {
  static final DrawProvenance SCRIPTED =
      DrawProvenance.newBuilder()
          .addKindsValue(1)
          .addKindsValue(3)
          .setMixed(true)
          .addCollectorIds("c-1")
          .addCollectorIds("c-2")
          .setFirstChunk(
              ChunkRef.newBuilder()
                  .setCollectorId("c-1")
                  .setEpoch(7)
                  .setSequence(11)
                  .setSignedAtUnixMs(1_700_000_000_123L))
          .setLastChunk(
              ChunkRef.newBuilder().setCollectorId("c-2").setEpoch(8).setSequence(3).setSignedAtUnixMs(-5))
          .setChunkCount(4)
          .setOldestByteAgeMs(250)
          .build();

  static final Provenance EXPECTED =
      new Provenance(
          List.of(SourceKind.QUANTUM, SourceKind.OS),
          true,
          List.of("c-1", "c-2"),
          new Provenance.ChunkRef("c-1", 7, 11, 1_700_000_000_123L),
          new Provenance.ChunkRef("c-2", 8, 3, -5),
          4,
          250,
          Construction.RAW, // not set by the scripted server: RAW, as the proto says
          null);

  @Test
  void sourceKindsHaveTheProtoNumbersAndUnknownOnesStayVisible() {
    assertEquals(1, SourceKind.QUANTUM.number());
    assertEquals(2, SourceKind.HARDWARE.number());
    assertEquals(3, SourceKind.OS.number());
    assertEquals("quantum", SourceKind.QUANTUM.label());
    assertEquals(SourceKind.OS, SourceKind.fromNumber(3));
    assertEquals(SourceKind.UNKNOWN, SourceKind.fromNumber(42));
    assertEquals(SourceKind.UNKNOWN, SourceKind.fromNumber(-1));
  }

  @Test
  void acceptListsRefuseUnknownAndNullBeforeSending() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> EntropyClient.builder().acceptKinds(SourceKind.OS, SourceKind.UNKNOWN));
    assertTrue(e.getMessage().contains("acceptKinds[1]"), e.getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () -> StreamOptions.defaults().withAcceptKinds(SourceKind.QUANTUM, null));
    try (EntropyClient c = EntropyClient.builder().endpoint("127.0.0.1:1").apiKey("k").build()) {
      InvalidArgumentException q =
          assertThrows(
              InvalidArgumentException.class, () -> c.checkQuality(4096, SourceKind.UNKNOWN));
      assertTrue(q.details().contains("acceptKinds[0]"), q.details());
      assertThrows(InvalidArgumentException.class, () -> c.checkQuality(-1));
    }
    assertEquals(Optional.empty(), StreamOptions.defaults().acceptKinds());
    assertEquals(
        Optional.of(List.of(SourceKind.HARDWARE)),
        StreamOptions.defaults().withAcceptKinds(SourceKind.HARDWARE).withChunkBytes(10).acceptKinds(),
        "kept by the other with-methods");
  }

  @Test
  void acceptKindsAreSentOnEveryEntropyCallAndEveryReconnect() throws Exception {
    try (ScriptedGateway gw = new ScriptedGateway();
        EntropyClient c = gw.client(SourceKind.QUANTUM, SourceKind.OS)) {
      gw.quality = CheckQualityResponse.getDefaultInstance();
      gw.script.add(new ScriptedGateway.Step(1, Status.UNAVAILABLE.withDescription("cut")));
      assertEquals(List.of(SourceKind.QUANTUM, SourceKind.OS), c.acceptKinds());
      c.getBytes(8);
      c.draw(8);
      c.getIntegers(1, 6, 2);
      c.getFloats(2);
      c.getUuids(2);
      c.checkQuality(2500);
      c.checkQuality(2500, SourceKind.HARDWARE); // the call's kinds win
      c.checkQuality(2500, new SourceKind[0]); // an empty list: any kind, nothing sent
      StreamOptions small = StreamOptions.defaults().withChunkBytes(100);
      try (RandomStream in = c.stream(300, small)) {
        assertEquals(300, in.readAllBytes().length);
        assertEquals(1, in.reconnects(), "the first stream was cut after one message");
      }
      try (RandomStream in = c.stream(100, small.withAcceptKinds(SourceKind.HARDWARE))) {
        in.readAllBytes();
      }
      try (RandomStream in = c.stream(100, small.withAcceptKinds())) {
        in.readAllBytes();
      }
      String both = "[1, 3]";
      assertEquals(
          List.of(
              "GetRandom:" + both,
              "GetRandom:" + both,
              "GetIntegers:" + both,
              "GetFloats:" + both,
              "GetUuids:" + both,
              "CheckQuality:" + both,
              "CheckQuality:[2]",
              "CheckQuality:[]",
              "StreamRandom:" + both,
              "StreamRandom:" + both,
              "StreamRandom:[2]",
              "StreamRandom:[]"),
          List.copyOf(gw.kinds));
    }
  }

  @Test
  void withoutAcceptKindsNothingIsSent() throws Exception {
    try (ScriptedGateway gw = new ScriptedGateway();
        EntropyClient c = gw.client()) {
      gw.quality = CheckQualityResponse.getDefaultInstance();
      c.getBytes(8);
      c.checkQuality(2500);
      try (RandomStream in = c.stream(100)) {
        in.readAllBytes();
      }
      assertEquals(List.of(), c.acceptKinds());
      assertEquals(List.of("GetRandom:[]", "CheckQuality:[]", "StreamRandom:[]"), List.copyOf(gw.kinds));
    }
  }

  @Test
  void drawCarriesEveryProvenanceField() throws Exception {
    try (ScriptedGateway gw = new ScriptedGateway();
        EntropyClient c = gw.client()) {
      Draw none = c.draw(8);
      assertEquals(8, none.data().length);
      assertNull(none.provenance(), "a gateway that sends none: null, not a zero value");
      gw.provenance = SCRIPTED;
      Draw d = c.draw(48);
      assertEquals(48, d.data().length);
      assertEquals(EXPECTED, d.provenance());
    }
  }

  @Test
  void theQualityReportCarriesEveryField() throws Exception {
    try (ScriptedGateway gw = new ScriptedGateway();
        EntropyClient c = gw.client()) {
      gw.quality =
          CheckQualityResponse.newBuilder()
              .setSampleBytes(5000)
              .setProvenance(SCRIPTED)
              .setShannonEntropyBitsPerByte(7.96)
              .setMinEntropyBitsPerByte(7.5)
              .setChiSquare(250.5)
              .setChiSquarePValue(0.56)
              .setMean(127.25)
              .setSerialCorrelation(-0.0125)
              .setPi(MonteCarloPi.newBuilder().setEstimate(3.1).setError(-0.0416).setStandardError(0.05).setPoints(833))
              .setPiOsReference(
                  MonteCarloPi.newBuilder().setEstimate(3.2).setError(0.0584).setStandardError(0.051).setPoints(833))
              .setFips1402(
                  Fips1402.newBuilder()
                      .setBlocks(2)
                      .setMonobitFailures(1)
                      .setPokerFailures(2)
                      .setRunsFailures(3)
                      .setLongRunFailures(4)
                      .setBlocksFailed(5))
              .setPassed(false)
              .addFailures("monobit: 1 of 2 blocks")
              .addThresholds("a")
              .addThresholds("b")
              .build();
      QualityReport expected =
          new QualityReport(
              5000,
              EXPECTED,
              7.96,
              7.5,
              250.5,
              0.56,
              127.25,
              OptionalDouble.of(-0.0125),
              new QualityReport.MonteCarloPi(3.1, -0.0416, 0.05, 833),
              new QualityReport.MonteCarloPi(3.2, 0.0584, 0.051, 833),
              new QualityReport.Fips1402(2, 1, 2, 3, 4, 5),
              false,
              List.of("monobit: 1 of 2 blocks"),
              List.of("a", "b"));
      assertEquals(expected, c.checkQuality(5000));
      // Serial correlation undefined (every byte equal): absent on the wire, empty here, not 0.
      gw.quality = CheckQualityResponse.newBuilder().setSampleBytes(2500).build();
      assertEquals(OptionalDouble.empty(), c.checkQuality(2500).serialCorrelation());
    }
  }

  @Test
  void theStreamReportsTheProvenanceOfTheLastMessage() throws Exception {
    try (ScriptedGateway gw = new ScriptedGateway();
        EntropyClient c = gw.client();
        RandomStream in = c.stream(500, StreamOptions.defaults().withChunkBytes(100))) {
      gw.provenance = SCRIPTED;
      assertNull(in.provenance(), "before any message");
      byte[] buf = new byte[60]; // less than a message: the second read finishes the same one
      for (int message = 0; message < 5; message++) {
        for (int read = 0; read < 2; read++) {
          assertTrue(in.read(buf) > 0);
          Provenance p = in.provenance();
          assertEquals(message, p.firstChunk().sequence(), "message " + message + ", read " + read);
          assertEquals(message, p.lastChunk().sequence());
          assertEquals(EXPECTED.kinds(), p.kinds());
          assertEquals(4, p.chunkCount());
        }
      }
    }
  }

  @Test
  void failedPreconditionIsTypedNotRetryableAndEndsAStreamWithoutReconnecting() throws Exception {
    try (ScriptedGateway gw = new ScriptedGateway();
        EntropyClient c = gw.client()) {
      gw.unaryError = Status.FAILED_PRECONDITION.withDescription("the pool holds OS only");
      FailedPreconditionException e =
          assertThrows(FailedPreconditionException.class, () -> c.getBytes(8));
      assertEquals(Status.Code.FAILED_PRECONDITION, e.code());
      assertEquals("the pool holds OS only", e.details());
      assertFalse(e.isRetryable());
      assertThrows(FailedPreconditionException.class, () -> c.checkQuality(4096));
      assertThrows(FailedPreconditionException.class, () -> c.draw(8));

      // A stream: what came before is delivered, then the error, with no second call (a
      // reconnect would get the same answer), at once rather than after the budget (0: forever).
      gw.script.add(
          new ScriptedGateway.Step(2, Status.FAILED_PRECONDITION.withDescription("injected")));
      for (int i = 0; i < 100; i++) {
        gw.script.add(new ScriptedGateway.Step(-1, Status.OK)); // what a wrongful retry would get
      }
      gw.kinds.clear();
      try (RandomStream in =
          c.stream(
              1000,
              StreamOptions.defaults().withChunkBytes(100).withReconnectBudget(Duration.ZERO))) {
        long start = System.nanoTime();
        byte[] first = in.readNBytes(200);
        IOException io =
            assertThrows(IOException.class, () -> in.transferTo(OutputStream.nullOutputStream()));
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertEquals(200, first.length);
        assertTrue(io.getCause() instanceof FailedPreconditionException, String.valueOf(io.getCause()));
        assertTrue(io.getMessage().contains("injected"), io.getMessage());
        assertEquals(0, in.reconnects());
        assertEquals(200, in.received());
        assertEquals(1, gw.kinds.size(), "one StreamRandom call: " + gw.kinds);
        assertTrue(ms < 1000, "took " + ms + " ms");
      }
    }
  }

  @Test
  void statusCarriesThePoolByClass() throws Exception {
    try (ScriptedGateway gw = new ScriptedGateway();
        EntropyClient c = gw.client()) {
      gw.status =
          GetStatusResponse.newBuilder()
              .setPoolBytes(300)
              .addPoolByClass(ClassLevel.newBuilder().addKindsValue(1).addKindsValue(3).setBytes(200))
              .addPoolByClass(ClassLevel.newBuilder().addKindsValue(2).setBytes(100))
              .setExpiredBytesTotal(4096)
              .setMaxByteAgeMs(60_000)
              .build();
      GatewayStatus s = c.status();
      assertEquals(
          List.of(
              new GatewayStatus.ClassLevel(List.of(SourceKind.QUANTUM, SourceKind.OS), 200),
              new GatewayStatus.ClassLevel(List.of(SourceKind.HARDWARE), 100)),
          s.poolByClass());
      assertEquals(4096, s.expiredBytesTotal());
      assertEquals(60_000, s.maxByteAgeMs());
    }
  }
}
