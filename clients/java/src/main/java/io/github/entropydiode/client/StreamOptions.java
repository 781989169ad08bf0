package io.github.entropydiode.client;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * How a {@link RandomStream} asks for bytes and how it reconnects. Immutable; each {@code with}
 * method returns a changed copy.
 *
 * <p>The reconnect rule (the same in every Entropy Diode client): after a transport error the
 * stream opens a new one for exactly the bytes still owed, waiting for the channel to be ready,
 * each attempt bounded by {@link #attemptTimeout()}, with exponential backoff and jitter between
 * attempts, for at most {@link #reconnectBudget()} from the failure ({@link Duration#ZERO}: no
 * limit, for daemons). The budget starts again once bytes flow.
 */
public final class StreamOptions {
  /** Bytes per message asked of the gateway by default. */
  public static final int DEFAULT_CHUNK_BYTES = 64 << 10;
  /** How long the stream keeps reconnecting after a failure by default. */
  public static final Duration DEFAULT_RECONNECT_BUDGET = Duration.ofSeconds(30);
  /** How long one attempt may take to deliver its first message by default. */
  public static final Duration DEFAULT_ATTEMPT_TIMEOUT = Duration.ofSeconds(2);
  /** How long a flowing stream may go without a message before it counts as broken. */
  public static final Duration DEFAULT_STALL_TIMEOUT = Duration.ofSeconds(10);

  private static final StreamOptions DEFAULTS =
      new StreamOptions(
          DEFAULT_CHUNK_BYTES,
          DEFAULT_RECONNECT_BUDGET,
          DEFAULT_ATTEMPT_TIMEOUT,
          DEFAULT_STALL_TIMEOUT,
          Duration.ofMillis(50),
          Duration.ofSeconds(1),
          null,
          null);

  private final int chunkBytes;
  private final Duration reconnectBudget;
  private final Duration attemptTimeout;
  private final Duration stallTimeout;
  private final Duration initialBackoff;
  private final Duration maxBackoff;
  /** accept_kinds as wire numbers; null: the client's. */
  private final List<Integer> acceptKinds;
  /** construction as its wire number; null: the client's. */
  private final Integer construction;

  private StreamOptions(
      int chunkBytes,
      Duration reconnectBudget,
      Duration attemptTimeout,
      Duration stallTimeout,
      Duration initialBackoff,
      Duration maxBackoff,
      List<Integer> acceptKinds,
      Integer construction) {
    this.chunkBytes = chunkBytes;
    this.reconnectBudget = reconnectBudget;
    this.attemptTimeout = attemptTimeout;
    this.stallTimeout = stallTimeout;
    this.initialBackoff = initialBackoff;
    this.maxBackoff = maxBackoff;
    this.acceptKinds = acceptKinds;
    this.construction = construction;
  }

  /** The defaults: 64 KiB messages, 30 s budget, 2 s per attempt, 10 s stall, 50 ms..1 s backoff. */
  public static StreamOptions defaults() {
    return DEFAULTS;
  }

  /**
   * Bytes per message, 1..=1048576 (the gateway's bound).
   *
   * @param chunkBytes bytes per message
   * @return a changed copy
   */
  public StreamOptions withChunkBytes(int chunkBytes) {
    if (chunkBytes < 1 || chunkBytes > 1 << 20) {
      throw new InvalidArgumentException(
          "chunkBytes is " + chunkBytes + ", must be 1..=1048576", null);
    }
    return new StreamOptions(
        chunkBytes, reconnectBudget, attemptTimeout, stallTimeout, initialBackoff, maxBackoff,
        acceptKinds, construction);
  }

  /**
   * How long to keep reconnecting after a failure; {@link Duration#ZERO} for no limit.
   *
   * @param budget the total time for one outage
   * @return a changed copy
   */
  public StreamOptions withReconnectBudget(Duration budget) {
    return new StreamOptions(
        chunkBytes, nonNegative("reconnectBudget", budget), attemptTimeout, stallTimeout,
        initialBackoff, maxBackoff, acceptKinds, construction);
  }

  /**
   * How long one attempt may take to deliver its first message (connecting included).
   *
   * @param timeout per attempt, positive
   * @return a changed copy
   */
  public StreamOptions withAttemptTimeout(Duration timeout) {
    return new StreamOptions(
        chunkBytes, reconnectBudget, positive("attemptTimeout", timeout), stallTimeout,
        initialBackoff, maxBackoff, acceptKinds, construction);
  }

  /**
   * How long a flowing stream may go without a message while the reader waits, before it counts
   * as broken (a gateway that stopped answering without closing the connection).
   *
   * @param timeout positive
   * @return a changed copy
   */
  public StreamOptions withStallTimeout(Duration timeout) {
    return new StreamOptions(
        chunkBytes, reconnectBudget, attemptTimeout, positive("stallTimeout", timeout),
        initialBackoff, maxBackoff, acceptKinds, construction);
  }

  /**
   * The backoff between attempts: {@code initial}, doubling up to {@code max}, each delay drawn
   * uniformly from its upper half (jitter).
   *
   * @param initial the first delay, positive
   * @param max the longest delay, at least {@code initial}
   * @return a changed copy
   */
  public StreamOptions withBackoff(Duration initial, Duration max) {
    positive("initial backoff", initial);
    if (positive("max backoff", max).compareTo(initial) < 0) {
      throw new IllegalArgumentException("max backoff must be at least the initial backoff");
    }
    return new StreamOptions(
        chunkBytes, reconnectBudget, attemptTimeout, stallTimeout, initial, max, acceptKinds,
        construction);
  }

  /**
   * The source kinds this stream accepts, on its first call and every reconnect, instead of the
   * client's ({@link EntropyClient.Builder#acceptKinds}); none: any kind. When the pool holds no
   * byte of an accepted class and none arrived lately, {@code read} throws at once with a
   * {@link FailedPreconditionException} as the cause: the stream does not reconnect for it.
   *
   * @param kinds QUANTUM, HARDWARE or OS
   * @return a changed copy
   * @throws IllegalArgumentException for a null or {@link SourceKind#UNKNOWN} entry
   */
  public StreamOptions withAcceptKinds(SourceKind... kinds) {
    return new StreamOptions(
        chunkBytes, reconnectBudget, attemptTimeout, stallTimeout, initialBackoff, maxBackoff,
        SourceKind.toNumbers("acceptKinds", kinds), construction);
  }

  /** The kinds set by {@link #withAcceptKinds}; empty when the client's apply. */
  public Optional<List<SourceKind>> acceptKinds() {
    return Optional.ofNullable(acceptKinds).map(SourceKind::fromNumbers);
  }

  /** accept_kinds to send: this stream's, else the client's. */
  List<Integer> acceptKindsOr(List<Integer> clients) {
    return acceptKinds != null ? acceptKinds : clients;
  }

  /**
   * How this stream's bytes are made, on its first call and every reconnect, instead of the
   * client's ({@link EntropyClient.Builder#construction}). A DRBG construction gets one DRBG
   * instance per StreamRandom call: every message of a call names the same instance
   * ({@link Provenance.DrbgLabel#instanceId()}), a reconnect gets a new one.
   *
   * @param construction RAW, DRBG or DRBG_PREDICTION_RESISTANT
   * @return a changed copy
   * @throws IllegalArgumentException for null or {@link Construction#UNKNOWN}
   */
  public StreamOptions withConstruction(Construction construction) {
    return new StreamOptions(
        chunkBytes, reconnectBudget, attemptTimeout, stallTimeout, initialBackoff, maxBackoff,
        acceptKinds, Construction.toNumber("construction", construction));
  }

  /** The construction set by {@link #withConstruction}; empty when the client's applies. */
  public Optional<Construction> construction() {
    return Optional.ofNullable(construction).map(Construction::fromNumber);
  }

  /** construction to send: this stream's, else the client's. */
  int constructionOr(int clients) {
    return construction != null ? construction : clients;
  }

  /** Bytes per message. */
  public int chunkBytes() {
    return chunkBytes;
  }

  /** The reconnect budget; zero means no limit. */
  public Duration reconnectBudget() {
    return reconnectBudget;
  }

  /** The per-attempt deadline for the first message. */
  public Duration attemptTimeout() {
    return attemptTimeout;
  }

  /** The longest wait for the next message of a flowing stream. */
  public Duration stallTimeout() {
    return stallTimeout;
  }

  /** The first backoff delay. */
  public Duration initialBackoff() {
    return initialBackoff;
  }

  /** The longest backoff delay. */
  public Duration maxBackoff() {
    return maxBackoff;
  }

  private static Duration nonNegative(String name, Duration d) {
    Objects.requireNonNull(d, name);
    if (d.isNegative()) {
      throw new IllegalArgumentException(name + " must not be negative");
    }
    return d;
  }

  private static Duration positive(String name, Duration d) {
    if (nonNegative(name, d).isZero()) {
      throw new IllegalArgumentException(name + " must be positive");
    }
    return d;
  }
}
