package io.github.entropydiode.client;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;

/** Finds bytes that arrived twice: for random data a repeated 16-byte run has probability
 * ~2^-128 per pair, so any repeat means bytes were served (or returned) twice. */
final class Repeats {
  private Repeats() {}

  private record Block(long hi, long lo) {}

  /** The offset of a 16-byte window that also occurs elsewhere in {@code data}, or -1. Every
   * aligned block is indexed, then every window at every offset is looked up, so a repeated run
   * of 31+ bytes is found wherever it sits. */
  static long firstRepeat(byte[] data) {
    ByteBuffer buf = ByteBuffer.wrap(data);
    Map<Block, Integer> aligned = new HashMap<>();
    for (int i = 0; i + 16 <= data.length; i += 16) {
      aligned.putIfAbsent(new Block(buf.getLong(i), buf.getLong(i + 8)), i);
    }
    for (int i = 0; i + 16 <= data.length; i++) {
      Integer at = aligned.get(new Block(buf.getLong(i), buf.getLong(i + 8)));
      if (at != null && at != i) {
        return i;
      }
    }
    return -1;
  }
}
