package io.github.entropydiode.client;

import entropy.v1.Entropy.GetUsageResponse;
import entropy.v1.Entropy.HeldUsage;
import entropy.v1.Entropy.RateUsage;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The calling key's limits and what is left of each (GetUsage), as plain Java values. A rate
 * limit the key does not have is empty; counts and durations are uint64 on the wire and fit a
 * {@code long}.
 *
 * @param keyName the key's name in the gateway's keys file (never the secret)
 * @param requests {@code requests_per_second}: each unary call and stream opened takes one
 *     (GetUsage none)
 * @param bytes {@code bytes_per_second}: pool bytes
 * @param drbgBytes {@code drbg_bytes_per_second}: DRBG output
 * @param streams {@code max_streams}
 * @param undeliveredBytes {@code max_undelivered_bytes} (never unlimited)
 */
public record KeyUsage(
    String keyName,
    Optional<Rate> requests,
    Optional<Rate> bytes,
    Optional<Rate> drbgBytes,
    Held streams,
    Held undeliveredBytes) {

  /**
   * One rate limit: a token bucket holding at most {@code burst} units, refilled {@code
   * perSecond} a second, evenly. Durations are whole milliseconds, rounded up.
   *
   * @param perSecond units refilled per second
   * @param burst the most units the bucket holds: the most one call can take at once
   * @param remaining units that could be taken now
   * @param nextRefillMs until one more unit is there; 0 when full
   * @param fullInMs until the bucket is full again if nothing more is taken; 0 when full
   */
  public record Rate(long perSecond, long burst, long remaining, long nextRefillMs, long fullInMs) {}

  /**
   * A limit on what the key holds at once (streams open, bytes drawn and not yet read): units
   * come back when the key lets them go, not over time.
   *
   * @param limit the limit; empty when the key has none
   * @param inUse held now
   * @param remaining what may still be taken; empty when unlimited
   */
  public record Held(OptionalLong limit, long inUse, OptionalLong remaining) {}

  static KeyUsage fromProto(GetUsageResponse m) {
    return new KeyUsage(
        m.getKeyName(),
        rate(m.getRequests()),
        rate(m.getBytes()),
        rate(m.getDrbgBytes()),
        held(m.getStreams()),
        held(m.getUndeliveredBytes()));
  }

  private static Optional<Rate> rate(RateUsage r) {
    if (r.getUnlimited()) {
      return Optional.empty();
    }
    return Optional.of(
        new Rate(r.getPerSecond(), r.getBurst(), r.getRemaining(), r.getNextRefillMs(), r.getFullInMs()));
  }

  private static Held held(HeldUsage h) {
    if (h.getUnlimited()) {
      return new Held(OptionalLong.empty(), h.getInUse(), OptionalLong.empty());
    }
    return new Held(OptionalLong.of(h.getLimit()), h.getInUse(), OptionalLong.of(h.getRemaining()));
  }
}
