package io.github.entropydiode.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.security.SecureRandom;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** SecureRandom through the JCA provider, against a real dev gateway. */
class ProviderTest {
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
  void secureRandomGetInstanceDrawsEveryByteFromTheGateway() throws Exception {
    SecureRandom random =
        SecureRandom.getInstance(EntropyProvider.ALGORITHM, new EntropyProvider(client));
    assertEquals(EntropyProvider.ALGORITHM, random.getAlgorithm());
    assertEquals(EntropyProvider.NAME, random.getProvider().getName());
    long before = client.status().servedBytesTotal();
    byte[] key = new byte[32];
    random.nextBytes(key);
    byte[] big = new byte[(1 << 20) + 100]; // two calls
    random.nextBytes(big);
    byte[] seed = random.generateSeed(16);
    assertEquals(16, seed.length);
    random.setSeed(new byte[] {1, 2, 3}); // adds nothing, and must not fail
    int[] faces = new int[6];
    for (int i = 0; i < 600; i++) {
      faces[random.nextInt(6)]++;
    }
    for (int count : faces) {
      assertTrue(count > 40 && count < 180, "each face near 100: " + java.util.Arrays.toString(faces));
    }
    long served = client.status().servedBytesTotal() - before;
    assertTrue(served >= 32 + big.length + 16 + 600 * 4, "served " + served);
    Set<String> blocks = new HashSet<>();
    for (int i = 0; i + 16 <= big.length; i += 16) {
      assertTrue(blocks.add(java.util.HexFormat.of().formatHex(big, i, i + 16)), "a block repeated");
    }
  }

  @Test
  void aFailedCallSurfacesAsTheClientsException() throws Exception {
    try (EntropyClient bad =
        EntropyClient.builder().endpoint(gateway.endpoint()).apiKey("not-a-key").build()) {
      SecureRandom random =
          SecureRandom.getInstance(EntropyProvider.ALGORITHM, new EntropyProvider(bad));
      assertThrows(UnauthenticatedException.class, () -> random.nextBytes(new byte[8]));
      assertThrows(IllegalArgumentException.class, () -> random.generateSeed(-1));
    }
  }
}
