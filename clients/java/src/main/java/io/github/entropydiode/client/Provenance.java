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
 */
public record Provenance(
    List<SourceKind> kinds,
    boolean mixed,
    List<String> collectorIds,
    ChunkRef firstChunk,
    ChunkRef lastChunk,
    long chunkCount,
    long oldestByteAgeMs) {

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
        m.getOldestByteAgeMs());
  }
}
