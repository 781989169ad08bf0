package io.github.entropydiode.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import entropy.v1.Entropy.StreamRandomRequest;
import entropy.v1.Entropy.StreamRandomResponse;
import entropy.v1.EntropyServiceGrpc;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * What the reader reports when its reconnect budget runs out, against a scripted server: a live
 * gateway cannot be made to answer UNAVAILABLE and then stay silent on cue.
 */
class ReconnectBudgetTest {
  /** Answers the first StreamRandom call with UNAVAILABLE and never answers the later ones. */
  private static final class UnavailableThenSilent
      extends EntropyServiceGrpc.EntropyServiceImplBase {
    final AtomicInteger calls = new AtomicInteger();

    @Override
    public void streamRandom(
        StreamRandomRequest request, StreamObserver<StreamRandomResponse> responses) {
      if (calls.getAndIncrement() == 0) {
        responses.onError(
            Status.UNAVAILABLE.withDescription("gateway restarting").asRuntimeException());
      }
    }
  }

  @Test
  void givingUpReportsTheGatewaysAnswerNotATimeoutTheBudgetCutShort() throws Exception {
    // The gateway answers UNAVAILABLE; the backoff (100..200 ms) runs to the end of the 100 ms
    // budget, so the next attempt gets only what is left of it (a millisecond, against a 5 s
    // attempt timeout) and times out locally. That says nothing about the gateway, so giving up
    // reports UNAVAILABLE (CI saw DEADLINE_EXCEEDED in the Python reader on a busy machine).
    UnavailableThenSilent gateway = new UnavailableThenSilent();
    Server server =
        Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
            .addService(gateway)
            .build()
            .start();
    StreamOptions options =
        StreamOptions.defaults()
            .withReconnectBudget(Duration.ofMillis(100))
            .withAttemptTimeout(Duration.ofSeconds(5))
            .withBackoff(Duration.ofMillis(200), Duration.ofMillis(200));
    try (EntropyClient client =
            EntropyClient.builder().endpoint("127.0.0.1:" + server.getPort()).apiKey("k").build();
        RandomStream in = client.stream(1000, options)) {
      IOException e = assertThrows(IOException.class, () -> in.read(new byte[10]));
      assertTrue(e.getCause() instanceof UnavailableException, String.valueOf(e.getCause()));
      assertTrue(e.getMessage().startsWith("gave up reconnecting after "), e.getMessage());
      assertTrue(
          e.getMessage().endsWith("bytes received: UNAVAILABLE: gateway restarting"),
          e.getMessage());
      assertEquals(1, in.reconnects(), "the second attempt, cut short, was made");
    } finally {
      server.shutdownNow().awaitTermination();
    }
  }
}
