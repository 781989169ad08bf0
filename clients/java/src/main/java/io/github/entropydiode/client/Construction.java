package io.github.entropydiode.client;

/**
 * How a response's bytes are made. Give one to {@link EntropyClient.Builder#construction},
 * {@link StreamOptions#withConstruction} or {@link EntropyClient#checkQuality(int, Construction)};
 * each response's {@link Provenance#construction()} says which it got.
 */
public enum Construction {
  /**
   * Pool bytes as the collectors delivered them, each byte to one caller, once. The default,
   * forever: a client that does not ask for a DRBG construction never gets DRBG output.
   */
  RAW(1),
  /**
   * The output of an SP 800-90A CTR_DRBG (AES-256, 256-bit strength) instance of the call's own
   * (one per unary call, one per stream), seeded and reseeded with pool bytes drawn for the
   * caller, never shared. Far more bytes than the sources make, but computationally, not
   * physically, random (the repository's docs/security.md, "DRBG output"). Needs the key's
   * {@code entropy:drbg} scope ({@link PermissionDeniedException} otherwise). Each response names
   * the instance: {@link Provenance#drbg()}.
   */
  DRBG(2),
  /** As {@link #DRBG}, reseeded from the pool before every 64 KiB of output. */
  DRBG_PREDICTION_RESISTANT(3),
  /**
   * A construction this version of the client does not know, reported by a newer gateway. It only
   * appears in what the gateway reports; asking for it is refused.
   */
  UNKNOWN(-1);

  private final int number;

  Construction(int number) {
    this.number = number;
  }

  /** The construction's number on the wire ({@code entropy.v1.Construction}); -1 for UNKNOWN. */
  public int number() {
    return number;
  }

  /** The construction for a wire number: 0 (not set) is RAW, as the proto defines it. */
  static Construction fromNumber(int number) {
    if (number == 0) {
      return RAW;
    }
    for (Construction c : values()) {
      if (c.number == number && c != UNKNOWN) {
        return c;
      }
    }
    return UNKNOWN;
  }

  /**
   * A construction to ask for, as its wire number.
   *
   * @throws IllegalArgumentException for null or {@link #UNKNOWN}, naming {@code what}
   */
  static int toNumber(String what, Construction construction) {
    if (construction == null || construction == UNKNOWN) {
      throw new IllegalArgumentException(
          what + " is " + construction + ": ask for RAW, DRBG or DRBG_PREDICTION_RESISTANT");
    }
    return construction.number;
  }
}
