package io.github.entropydiode.client;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * What kind of physical process an entropy source draws on. Only {@link #QUANTUM} is quantum; the
 * others are labelled as what they are. Give kinds to {@link EntropyClient.Builder#acceptKinds},
 * {@link StreamOptions#withAcceptKinds} or {@link EntropyClient#checkQuality(int, SourceKind...)}
 * to accept only bytes from sources of those kinds.
 */
public enum SourceKind {
  /** A quantum random number generator (an ID Quantique Quantis appliance or card, ...). */
  QUANTUM(1),
  /** A non-quantum hardware noise source, such as /dev/hwrng (a TPM or a virtio RNG). */
  HARDWARE(2),
  /** The operating system's CSPRNG (getrandom). Not quantum. */
  OS(3),
  /**
   * A kind this version of the client does not know, reported by a newer gateway. It only
   * appears in what the gateway reports; an accept list refuses it.
   */
  UNKNOWN(-1);

  private final int number;

  SourceKind(int number) {
    this.number = number;
  }

  /** The kind's number on the wire ({@code entropy.v1.SourceKind}); -1 for {@link #UNKNOWN}. */
  public int number() {
    return number;
  }

  /** "quantum", "hardware", "os" or "unknown", as the gateway's status labels sources. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The kind for a wire number; {@link #UNKNOWN} for one this client does not know. */
  static SourceKind fromNumber(int number) {
    for (SourceKind k : values()) {
      if (k.number == number && k != UNKNOWN) {
        return k;
      }
    }
    return UNKNOWN;
  }

  /** Wire kinds as an unmodifiable list of SourceKind, in the order given. */
  static List<SourceKind> fromNumbers(List<Integer> numbers) {
    List<SourceKind> out = new ArrayList<>(numbers.size());
    for (int n : numbers) {
      out.add(fromNumber(n));
    }
    return Collections.unmodifiableList(out);
  }

  /**
   * An accept list as wire numbers, in the order given (empty: any kind).
   *
   * @throws IllegalArgumentException for a null or {@link #UNKNOWN} entry, naming its position
   */
  static List<Integer> toNumbers(String what, SourceKind... kinds) {
    Objects.requireNonNull(kinds, what);
    List<Integer> out = new ArrayList<>(kinds.length);
    for (int i = 0; i < kinds.length; i++) {
      if (kinds[i] == null || kinds[i] == UNKNOWN) {
        throw new IllegalArgumentException(
            what + "[" + i + "] is " + kinds[i] + ": accept QUANTUM, HARDWARE or OS");
      }
      out.add(kinds[i].number);
    }
    return Collections.unmodifiableList(out);
  }
}
