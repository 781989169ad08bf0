package io.github.entropydiode.client;

import entropy.v1.Entropy.GetStatusResponse;
import entropy.v1.Entropy.SourceStatus;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;

/**
 * A snapshot of the gateway (GetStatus), as plain Java values. Counters are uint64 on the wire
 * and fit a {@code long} for any realistic uptime.
 *
 * @param poolBytes bytes in the pool now
 * @param poolCapacityBytes the most the pool holds
 * @param poolLowWatermarkBytes below this the gateway is not serving
 * @param waiters callers waiting for entropy now
 * @param ingestedBytesTotal bytes accepted into the pool since start
 * @param servedBytesTotal bytes handed out since start
 * @param chunksAcceptedTotal chunks accepted since start
 * @param chunksRejectedTotal chunks that failed verification or were replays
 * @param chunksDeferredTotal chunks refused only because the pool was full
 * @param uptimeMs milliseconds since start
 * @param lastChunkAgeMs milliseconds since the last accepted chunk; empty when none was
 * @param sources every source a collector reported, most recently seen first
 * @param serving whether the gateway is serving (the same rule as grpc.health.v1)
 * @param notServingReason why not, in one line; empty while serving
 * @param poolByClass the pool's bytes by class (the kinds of the sources behind them), largest
 *     first
 * @param expiredBytesTotal bytes wiped unserved because they were in the pool longer than
 *     {@code maxByteAgeMs}
 * @param maxByteAgeMs the longest a byte may stay in the pool, ms; 0: no limit
 */
public record GatewayStatus(
    long poolBytes,
    long poolCapacityBytes,
    long poolLowWatermarkBytes,
    long waiters,
    long ingestedBytesTotal,
    long servedBytesTotal,
    long chunksAcceptedTotal,
    long chunksRejectedTotal,
    long chunksDeferredTotal,
    long uptimeMs,
    OptionalLong lastChunkAgeMs,
    List<Source> sources,
    boolean serving,
    String notServingReason,
    List<ClassLevel> poolByClass,
    long expiredBytesTotal,
    long maxByteAgeMs) {

  /**
   * The pool's bytes of one class.
   *
   * @param kinds the kinds of the sources behind these bytes, each once, in enum order
   * @param bytes bytes ready to be served
   */
  public record ClassLevel(List<SourceKind> kinds, long bytes) {}

  /**
   * One entropy source. {@code kind} is "quantum", "hardware" or "os": only "quantum" sources are
   * quantum, and the others are labelled as what they are. A value this client does not know
   * shows as its number.
   *
   * @param collectorId the collector that reported it
   * @param name its name within that collector
   * @param kind "quantum", "hardware" or "os"
   * @param health "healthy", "starting", "quarantined" or "unreachable"
   * @param contributedBytesTotal bytes of accepted chunks it contributed to
   * @param lastReportAgeMs milliseconds since a chunk last reported it
   * @param lastMixing how its last chunk was mixed: "none", "xor" or "hkdf_sha256"
   */
  public record Source(
      String collectorId,
      String name,
      String kind,
      String health,
      long contributedBytesTotal,
      long lastReportAgeMs,
      String lastMixing) {}

  static GatewayStatus fromProto(GetStatusResponse m) {
    List<Source> sources = m.getSourcesList().stream().map(GatewayStatus::source).toList();
    return new GatewayStatus(
        m.getPoolBytes(),
        m.getPoolCapacityBytes(),
        m.getPoolLowWatermarkBytes(),
        m.getWaiters(),
        m.getIngestedBytesTotal(),
        m.getServedBytesTotal(),
        m.getChunksAcceptedTotal(),
        m.getChunksRejectedTotal(),
        m.getChunksDeferredTotal(),
        m.getUptimeMs(),
        m.hasLastChunkAgeMs() ? OptionalLong.of(m.getLastChunkAgeMs()) : OptionalLong.empty(),
        sources,
        m.getServing(),
        m.getNotServingReason(),
        m.getPoolByClassList().stream()
            .map(c -> new ClassLevel(SourceKind.fromNumbers(c.getKindsValueList()), c.getBytes()))
            .toList(),
        m.getExpiredBytesTotal(),
        m.getMaxByteAgeMs());
  }

  private static Source source(SourceStatus s) {
    return new Source(
        s.getCollectorId(),
        s.getName(),
        label(s.getKind().name(), "SOURCE_KIND_", s.getKindValue()),
        label(s.getHealth().name(), "SOURCE_HEALTH_", s.getHealthValue()),
        s.getContributedBytesTotal(),
        s.getLastReportAgeMs(),
        label(s.getLastMixing().name(), "MIXING_", s.getLastMixingValue()));
  }

  /** SOURCE_KIND_QUANTUM -> "quantum"; an unknown value stays visible as its number. */
  private static String label(String name, String prefix, int value) {
    if (name.equals("UNRECOGNIZED") || !name.startsWith(prefix)) {
      return Integer.toString(value);
    }
    return name.substring(prefix.length()).toLowerCase(Locale.ROOT);
  }
}
