package io.github.entropydiode.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** What the client checks before it sends anything: endpoints, keys, arguments. */
class OfflineTest {
  @Test
  void everyEndpointFormParsesWithTheSameDefaultsAndTlsRule() {
    assertEquals(new Endpoint("127.0.0.1", 50051, false), Endpoint.parse("127.0.0.1:50051", false));
    // A bare remote host is TLS (the key must not cross the network in the clear); loopback is not.
    assertEquals(new Endpoint("gw.example", 50051, true), Endpoint.parse("gw.example", false));
    assertEquals(new Endpoint("localhost", 8080, false), Endpoint.parse("localhost:8080", false));
    assertEquals(new Endpoint("127.9.8.7", 50051, false), Endpoint.parse("127.9.8.7", false));
    assertEquals(new Endpoint("127.0.0.1.example", 50051, true), Endpoint.parse("127.0.0.1.example", false));
    assertEquals(new Endpoint("128.0.0.1", 50051, true), Endpoint.parse("128.0.0.1", false));
    assertEquals(new Endpoint("gw.example", 7000, false), Endpoint.parse("http://gw.example:7000", false));
    assertEquals(new Endpoint("gw.example", 50051, true), Endpoint.parse("https://gw.example", false));
    assertEquals(new Endpoint("gw.example", 50051, true), Endpoint.parse("https://gw.example:50051/", false));
    assertEquals(new Endpoint("::1", 50051, false), Endpoint.parse("[::1]:50051", false));
    assertEquals(new Endpoint("::1", 443, true), Endpoint.parse("https://[::1]:443", false));
    // A CA file means TLS for a scheme-less endpoint, loopback too.
    assertEquals(new Endpoint("gw.example", 9, true), Endpoint.parse("gw.example:9", true));
    assertEquals(new Endpoint("127.0.0.1", 9, true), Endpoint.parse("127.0.0.1:9", true));
    assertEquals("https://[::1]:443", Endpoint.parse("https://[::1]:443", false).toString());
  }

  @Test
  void badEndpointsAreRefusedWithTheReason() {
    String[][] cases = {
      {"grpc://gw:1", "scheme"},
      {"gw:0", "1..=65535"},
      {"gw:65536", "1..=65535"},
      {"gw:port", "1..=65535"},
      {"http://gw:1/path", "no path"},
      {"gw:1/x/", "no path"},
      {":50051", "no host"},
      {"[::1", "closing"},
      {"[::1]x", ":port"},
      {"gw example:1", "no path, no spaces"},
    };
    for (String[] c : cases) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> Endpoint.parse(c[0], false));
      assertTrue(e.getMessage().contains(c[1]), c[0] + ": " + e.getMessage());
      assertTrue(e.getMessage().contains(c[0]), "names the endpoint: " + e.getMessage());
    }
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> Endpoint.parse("http://gw:1", true));
    assertTrue(e.getMessage().contains("CA file"), e.getMessage());
  }

  @Test
  void keysAreCheckedOnConstructionAndNeverEchoed() {
    String secret = "s3cret-key-value";
    for (String bad : new String[] {secret + "\n", secret + " ", "\t" + secret, secret + "é", "x".repeat(513)}) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> EntropyClient.builder().endpoint("127.0.0.1:1").apiKey(bad).build());
      assertFalse(e.getMessage().contains(secret), "the key must not appear: " + e.getMessage());
      assertFalse(e.getMessage().contains("xxxxxxxx"), "the key must not appear: " + e.getMessage());
    }
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> EntropyClient.builder().endpoint("127.0.0.1:1").apiKey(secret + "\n").build());
    assertTrue(e.getMessage().contains("line break"), e.getMessage());
    IllegalArgumentException missing =
        assertThrows(
            IllegalArgumentException.class,
            () -> EntropyClient.builder().endpoint("127.0.0.1:1").apiKey("").build());
    assertTrue(missing.getMessage().contains("ENTROPY_API_KEY"), missing.getMessage());
    try (EntropyClient ok = EntropyClient.builder().endpoint("127.0.0.1:1").apiKey("x".repeat(512)).build()) {
      assertFalse(ok.toString().contains("xxx"), ok.toString());
    }
  }

  @Test
  void valuesThatCannotBeEncodedFailBeforeSending() {
    try (EntropyClient c = EntropyClient.builder().endpoint("127.0.0.1:1").apiKey("k").build()) {
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> c.getFloats(-1));
      assertTrue(e.details().contains("count"), e.getMessage());
      assertThrows(InvalidArgumentException.class, () -> c.stream(-5));
      assertThrows(InvalidArgumentException.class, () -> StreamOptions.defaults().withChunkBytes(0));
    }
    assertThrows(IllegalArgumentException.class, () -> StreamOptions.defaults().withAttemptTimeout(Duration.ZERO));
    assertThrows(
        IllegalArgumentException.class,
        () -> EntropyClient.builder().apiKey("k").endpoint("https://x").caFile(Path.of("/nonexistent/ca.pem")).build());
  }

  @Test
  void streamsCutShortOnTheWayAreResumedRealInternalErrorsAreNot() {
    // What grpc-java says when a load balancer that lost its upstream ends the stream with an
    // empty DATA frame (HAProxy does; seen in scripts/lab/scaleout.py), or resets it.
    assertTrue(RandomStream.cutShort(new EntropyException(
        io.grpc.Status.Code.INTERNAL, "Received unexpected EOS on empty DATA frame from server", null)));
    assertTrue(RandomStream.cutShort(new EntropyException(
        io.grpc.Status.Code.INTERNAL, "RST_STREAM closed stream. HTTP/2 error code: INTERNAL_ERROR", null)));
    assertFalse(RandomStream.cutShort(new EntropyException(
        io.grpc.Status.Code.INTERNAL, "something broke inside", null)));
    assertFalse(RandomStream.cutShort(new EntropyException(
        io.grpc.Status.Code.PERMISSION_DENIED, "unexpected EOS", null)));
  }
}
