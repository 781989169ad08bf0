package io.github.entropydiode.client;

import java.security.Provider;
import java.security.SecureRandom;
import java.security.SecureRandomSpi;
import java.util.Map;
import java.util.Objects;

/**
 * A JCA {@link Provider} whose {@link SecureRandom} algorithm {@value #ALGORITHM} draws every
 * byte from the gateway, so code written against {@code SecureRandom.getInstance} uses it
 * unchanged:
 *
 * <pre>{@code
 * EntropyClient client = EntropyClient.fromEnvironment();
 * SecureRandom random = SecureRandom.getInstance("EntropyDiode", new EntropyProvider(client));
 * byte[] key = new byte[32];
 * random.nextBytes(key);        // 32 bytes from the gateway, served to this caller once
 * }</pre>
 *
 * <p>Each {@code nextBytes} and {@code generateSeed} is one GetRandom call of exactly its bytes
 * (in calls of at most 1 MiB for more): nothing is cached or stretched, and a call that fails
 * throws the client's {@link EntropyException} (unchecked). {@code setSeed} adds nothing: the
 * gateway's bytes cannot be seeded, and a caller's seed is never mixed in. The provider is not
 * registered with {@link java.security.Security} (it needs a client); pass it to {@code
 * getInstance}, or register it yourself with {@code Security.addProvider}. Thread-safe.
 */
public final class EntropyProvider extends Provider {
  private static final long serialVersionUID = 1L;

  /** The provider's name. */
  public static final String NAME = "EntropyDiode";

  /** The SecureRandom algorithm it offers. */
  public static final String ALGORITHM = "EntropyDiode";

  /** A provider drawing on {@code client} (which stays the caller's to close). */
  public EntropyProvider(EntropyClient client) {
    super(NAME, "0.1.0", "Entropy Diode: SecureRandom bytes from a gateway, each served once");
    Objects.requireNonNull(client, "client");
    putService(
        new Service(
            this,
            "SecureRandom",
            ALGORITHM,
            Spi.class.getName(),
            null,
            Map.of("ThreadSafe", "true")) {
          @Override
          public Object newInstance(Object parameter) {
            return new Spi(client);
          }
        });
  }

  /** The SecureRandom engine: every byte from {@code client}. */
  static final class Spi extends SecureRandomSpi {
    private static final long serialVersionUID = 1L;
    private static final int MAX_CALL = 1 << 20; // GetRandom's largest num_bytes

    private final transient EntropyClient client;

    Spi(EntropyClient client) {
      this.client = client;
    }

    @Override
    protected void engineSetSeed(byte[] seed) {
      // Nothing to seed: every byte comes from the gateway.
    }

    @Override
    protected void engineNextBytes(byte[] bytes) {
      for (int at = 0; at < bytes.length; at += MAX_CALL) {
        int n = Math.min(MAX_CALL, bytes.length - at);
        System.arraycopy(client.getBytes(n), 0, bytes, at, n);
      }
    }

    @Override
    protected byte[] engineGenerateSeed(int numBytes) {
      if (numBytes < 0) {
        throw new IllegalArgumentException("numBytes is " + numBytes + "; it must be >= 0");
      }
      byte[] seed = new byte[numBytes];
      engineNextBytes(seed);
      return seed;
    }
  }
}
