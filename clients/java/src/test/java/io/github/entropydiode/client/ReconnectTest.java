package io.github.entropydiode.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The reconnect rule against a real gateway that dies mid-stream and comes back on the same port:
 * the reader gets exactly the bytes it asked for, none twice.
 */
class ReconnectTest {
  private static final int TOTAL = 8 << 20;
  private static final int BEFORE_KILL = 1 << 20;

  /** Reads TOTAL bytes; after BEFORE_KILL, stops the gateway with {@code stop} and starts it
   * again after {@code downMs} from another thread. Returns the bytes and the stream. */
  private static byte[] readAcrossRestart(DevGateway gw, boolean sigkill, long downMs, int[] reconnects)
      throws Exception {
    AtomicReference<Throwable> restartFailure = new AtomicReference<>();
    try (EntropyClient client = gw.client();
        RandomStream in = client.stream(TOTAL)) {
      ByteArrayOutputStream out = new ByteArrayOutputStream(TOTAL);
      out.write(in.readNBytes(BEFORE_KILL));
      if (sigkill) {
        gw.kill9();
      } else {
        gw.terminate();
      }
      Thread restarter =
          new Thread(
              () -> {
                try {
                  Thread.sleep(downMs);
                  gw.restart();
                } catch (Throwable t) {
                  restartFailure.set(t);
                }
              });
      restarter.start();
      in.transferTo(out);
      restarter.join();
      if (restartFailure.get() != null) {
        throw new AssertionError("restart failed", restartFailure.get());
      }
      reconnects[0] = in.reconnects();
      return out.toByteArray();
    }
  }

  @ParameterizedTest(name = "kill -9, back after {0} ms")
  @ValueSource(longs = {200, 2000, 5000})
  void aKilledGatewayThatComesBackCostsNoByteAndRepeatsNone(long downMs) throws Exception {
    try (DevGateway gw = DevGateway.start()) {
      int[] reconnects = {0};
      byte[] all = readAcrossRestart(gw, true, downMs, reconnects);
      assertEquals(TOTAL, all.length, gw.logTail());
      assertEquals(-1, Repeats.firstRepeat(all), "a 16-byte run arrived twice");
      assertTrue(reconnects[0] >= 1, "the stream did reconnect");
    }
  }

  @Test
  void aGatewayStoppedWithSigtermAndStartedAgainCostsNoByte() throws Exception {
    try (DevGateway gw = DevGateway.start()) {
      int[] reconnects = {0};
      byte[] all = readAcrossRestart(gw, false, 500, reconnects);
      assertEquals(TOTAL, all.length, gw.logTail());
      assertEquals(-1, Repeats.firstRepeat(all), "a 16-byte run arrived twice");
      assertTrue(reconnects[0] >= 1, "the stream did reconnect");
    }
  }

  @Test
  void aGatewayThatStaysDownEndsTheStreamAfterTheBudget() throws Exception {
    try (DevGateway gw = DevGateway.start();
        EntropyClient client = gw.client();
        RandomStream in =
            client.stream(
                TOTAL, StreamOptions.defaults().withReconnectBudget(Duration.ofMillis(1500)))) {
      in.readNBytes(BEFORE_KILL);
      gw.kill9();
      IOException e = assertThrows(IOException.class, () -> in.transferTo(java.io.OutputStream.nullOutputStream()));
      assertTrue(e.getCause() instanceof EntropyException, String.valueOf(e.getCause()));
      assertTrue(((EntropyException) e.getCause()).isRetryable(), e.getMessage());
      assertTrue(e.getMessage().contains("gave up reconnecting"), e.getMessage());
      assertTrue(in.reconnects() >= 1, e.getMessage());
    }
  }
}
