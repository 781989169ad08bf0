package io.github.entropydiode.client;

import entropy.v1.Provenance.DrawProvenance;
import java.util.List;

/**
 * Where the bytes of one response came from. A response's bytes come from chunks of one class:
 * chunks whose contributing sources have the same set of kinds.
 *
 * @param kinds the kinds of the sources behind the bytes, each once, in enum order: one for a
 *     single-kind source or mix, two or three when a collector mixed kinds (a QUANTUM source XORed
 *     with the OS source reports QUANTUM and OS)
 * @param mixed true when any of the chunks mixed two or more sources (XOR or HKDF)
 * @param collectorIds the collectors whose chunks the bytes came from, each once, in the order
 *     first served
 * @param firstChunk the chunk the first byte came from
 * @param lastChunk the chunk the last byte came from (the same as {@code firstChunk} when there
 *     was one)
 * @param chunkCount how many chunks the bytes came from
 * @param oldestByteAgeMs how long the oldest of the bytes had been in the gateway's pool, ms
 * @param construction how the bytes were made: {@link Construction#RAW} (pool bytes), or a DRBG
 *     construction, for which the fields above describe the pool bytes that seeded its instance
 *     (every seed since its instantiation; the age is the oldest seed byte's when it was drawn)
 * @param drbg the DRBG instance that made the bytes; null for RAW
 */
public record Provenance(
    List<SourceKind> kinds,
    boolean mixed,
    List<String> collectorIds,
    ChunkRef firstChunk,
    ChunkRef lastChunk,
    long chunkCount,
    long oldestByteAgeMs,
    Construction construction,
    DrbgLabel drbg) {

  /**
   * One chunk, as its collector signed it.
   *
   * @param collectorId the collector that signed it
   * @param epoch the collector's run (a fresh random number each start)
   * @param sequence its sequence number within that run
   * @param signedAtUnixMs when the collector signed it (Unix ms, the collector's clock)
   */
  public record ChunkRef(String collectorId, long epoch, long sequence, long signedAtUnixMs) {
    static ChunkRef fromProto(entropy.v1.Provenance.ChunkRef m) {
      return new ChunkRef(m.getCollectorId(), m.getEpoch(), m.getSequence(), m.getSignedAtUnixMs());
    }
  }

  /**
   * The DRBG instance that made a response's bytes (the proto's {@code DrbgLabel}).
   *
   * @param mechanism the proto's {@code DrbgMechanism}: 1 is CTR_DRBG with AES-256 and the
   *     derivation function (SP 800-90A Rev. 1, 10.2.1)
   * @param securityStrengthBits its security strength in bits (256)
   * @param instanceId 32 hex digits, random per instance: every message of one stream carries the
   *     same, every unary call has its own
   * @param reseedCount reseeds since it was instantiated (0: seeded once)
   * @param bytesSinceReseed bytes it produced since it was last seeded, before these
   * @param seedBytes pool bytes drawn to seed it so far, none of them served to anyone
   * @param predictionResistance true when it reseeds before every generate request
   */
  public record DrbgLabel(
      int mechanism,
      int securityStrengthBits,
      String instanceId,
      long reseedCount,
      long bytesSinceReseed,
      long seedBytes,
      boolean predictionResistance) {
    static DrbgLabel fromProto(boolean present, entropy.v1.Provenance.DrbgLabel m) {
      if (!present) {
        return null;
      }
      return new DrbgLabel(
          m.getMechanismValue(),
          m.getSecurityStrengthBits(),
          m.getInstanceId(),
          m.getReseedCount(),
          m.getBytesSinceReseed(),
          m.getSeedBytes(),
          m.getPredictionResistance());
    }
  }

  /** The provenance of a response, or null when it carried none (a gateway older than #15). */
  static Provenance fromProto(boolean present, DrawProvenance m) {
    if (!present) {
      return null;
    }
    return new Provenance(
        SourceKind.fromNumbers(m.getKindsValueList()),
        m.getMixed(),
        List.copyOf(m.getCollectorIdsList()),
        ChunkRef.fromProto(m.getFirstChunk()),
        ChunkRef.fromProto(m.getLastChunk()),
        Integer.toUnsignedLong(m.getChunkCount()),
        m.getOldestByteAgeMs(),
        Construction.fromNumber(m.getConstructionValue()),
        DrbgLabel.fromProto(m.hasDrbg(), m.getDrbg()));
  }
}
